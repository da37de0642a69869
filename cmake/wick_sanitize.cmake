# WICK_SANITIZE and WICK_FUZZ (docs/testing.md).
#
# WICK_SANITIZE: a comma-separated list of sanitizers for every target of the build, e.g.
# "address,undefined". Any finding aborts the program (-fno-sanitize-recover=all), so a UBSan
# report fails the test that triggered it instead of scrolling past.
#
# WICK_FUZZ: builds the libFuzzer targets in fuzz/ (clang only). The library is compiled
# with libFuzzer's coverage instrumentation (fuzzer-no-link), which the test programs of the
# same build tolerate, so one sanitized clang build serves both the tests and the fuzzers.
# Without WICK_SANITIZE the fuzzers get address,undefined: a fuzzer that cannot see memory
# errors finds little.
set(WICK_SANITIZE "" CACHE STRING "Sanitizers for the whole build, e.g. address,undefined (empty: none)")
option(WICK_FUZZ "Build the libFuzzer targets in fuzz/ (requires clang, e.g. clang++-14)" OFF)

if(WICK_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "WICK_FUZZ=ON needs clang's libFuzzer: configure with -DCMAKE_CXX_COMPILER=clang++-14 "
                        "(this build uses ${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER})")
  endif()
  if(WICK_SANITIZE STREQUAL "")
    set(WICK_SANITIZE "address,undefined" CACHE STRING "Sanitizers for the whole build" FORCE)
  endif()
endif()

if(NOT WICK_SANITIZE STREQUAL "")
  if(WICK_HAS_CUDA AND NOT WICK_CUDA_SIM)
    message(FATAL_ERROR "WICK_SANITIZE is for host builds: use -DWICK_CUDA=OFF or SIM")
  endif()
  set(_wick_san -fsanitize=${WICK_SANITIZE} -fno-sanitize-recover=all -fno-omit-frame-pointer)
  if(WICK_SANITIZE MATCHES "undefined")
    # Conversions of NaN, infinities and out-of-range floating values to integers are
    # defined in wick (kernels/convert.h, Scalar, arange's count), and this check keeps them
    # so. Named explicitly: clang's "undefined" includes it, g++'s does not.
    list(APPEND _wick_san -fsanitize=float-cast-overflow)
  endif()
  add_compile_options(${_wick_san})
  add_link_options(-fsanitize=${WICK_SANITIZE})
  if(WICK_FUZZ)
    add_compile_options(-fsanitize=fuzzer-no-link)
  endif()
endif()
