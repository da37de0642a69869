# Runs wick_isa_digest (DIGEST) on this CPU and under qemu-x86_64 (QEMU) on a CPU with AVX2
# but no AVX-512 (-cpu max) and on one without AVX (-cpu qemu64): each run's loops take
# another of their run-time-chosen copies, and every digest line must equal this CPU's (but
# for lines marked "glibc" on the CPU without FMA: wick_isa_digest.cpp says why). The matrix
# products' copies (serial_gemm.h) fuse multiply-adds where the CPU has FMA, so every run
# takes their baseline one.
set(ENV{WICK_CPU_ISA} baseline)
execute_process(COMMAND ${DIGEST} OUTPUT_VARIABLE native ERROR_VARIABLE native_cpu RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "wick_isa_digest failed (${rc}): ${native_cpu}")
endif()
message(STATUS "this CPU (${native_cpu}):\n${native}")
foreach(cpu max qemu64)
  execute_process(COMMAND ${QEMU} -cpu ${cpu} ${DIGEST} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "wick_isa_digest under qemu -cpu ${cpu} failed (${rc}): ${err}")
  endif()
  set(expected "${native}")
  if(cpu STREQUAL "qemu64")
    string(REGEX REPLACE "glibc [^\n]*\n" "" expected "${expected}")
    string(REGEX REPLACE "glibc [^\n]*\n" "" out "${out}")
  endif()
  if(NOT out STREQUAL expected)
    message(FATAL_ERROR "qemu -cpu ${cpu} (${err}) computed other bits than this CPU:\n${out}")
  endif()
  message(STATUS "qemu -cpu ${cpu} (${err}): the same digests")
endforeach()
