# NVIDIA's libraries that an nvcc build (-DWICK_CUDA=ON) links: the toolkit's runtime and
# cuBLAS (CUDAToolkit's imported targets), cuDNN and, with the distributed package, NCCL.
# Each is looked for by a cache variable of its own (a user can point it elsewhere with
# -DWICK_CUDNN_LIBRARY=... / -DWICK_NCCL_LIBRARY=...), and a missing one stops the
# configuration with the package to install: a library found only by the linker, after
# the CUDA kernels' long compile, is the failure this file exists to prevent.
#
# Then one small program that calls a function of each library is compiled and linked
# against exactly what wick_cuda_runtime will carry, still at configure time: a header
# from one NCCL and a library from another, a stub library or an empty variable shows
# here, not in the last step of the build.

set(_wick_cuda_lib_hints ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_DIR}/../lib
    ${CUDAToolkit_LIBRARY_ROOT}/lib ${CUDAToolkit_LIBRARY_ROOT}/lib64 /usr/local/cuda/lib /usr/local/cuda/lib64)

find_library(WICK_CUDNN_LIBRARY cudnn HINTS ${_wick_cuda_lib_hints} DOC "cuDNN, linked by the nvcc build")
if(NOT WICK_CUDNN_LIBRARY)
  message(FATAL_ERROR "wick: -DWICK_CUDA=ON needs cuDNN (libcudnn.so), which was not found beside the CUDA "
    "toolkit (${CUDAToolkit_LIBRARY_DIR}) nor on the system's library path. Install NVIDIA's cuDNN for "
    "CUDA ${CUDAToolkit_VERSION_MAJOR} (Debian/Ubuntu: the cudnn9-cuda-${CUDAToolkit_VERSION_MAJOR} package), "
    "or pass -DWICK_CUDNN_LIBRARY=/path/to/libcudnn.so, or build without CUDA (-DWICK_CUDA=OFF).")
endif()
set(_wick_cuda_link_libraries CUDA::cudart CUDA::cublas ${WICK_CUDNN_LIBRARY})
set(_wick_cuda_probe_defs)

if(WICK_DISTRIBUTED)
  find_library(WICK_NCCL_LIBRARY nccl HINTS ${_wick_cuda_lib_hints} DOC "NCCL, linked by the nvcc build's distributed package")
  find_path(WICK_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} DOC "the folder of nccl.h")
  if(NOT WICK_NCCL_LIBRARY OR NOT WICK_NCCL_INCLUDE_DIR)
    message(FATAL_ERROR "wick: the distributed package of a -DWICK_CUDA=ON build needs NCCL "
      "(libnccl.so: ${WICK_NCCL_LIBRARY}; nccl.h: ${WICK_NCCL_INCLUDE_DIR}). Install NVIDIA's NCCL "
      "(Debian/Ubuntu: libnccl2 and libnccl-dev), or pass -DWICK_NCCL_LIBRARY=/path/to/libnccl.so and "
      "-DWICK_NCCL_INCLUDE_DIR=/path/to/include, or build without the distributed package "
      "(-DWICK_DISTRIBUTED=OFF), or without CUDA (-DWICK_CUDA=OFF).")
  endif()
  list(APPEND _wick_cuda_link_libraries ${WICK_NCCL_LIBRARY})
  set(_wick_cuda_probe_defs -DWICK_PROBE_NCCL=1)
endif()

# The probe, cached by its inputs: reconfiguring an unchanged build folder does not relink it.
string(SHA1 _wick_cuda_probe_key "${_wick_cuda_link_libraries};${WICK_NCCL_INCLUDE_DIR};${CUDAToolkit_VERSION}")
if(NOT WICK_CUDA_LINK_PROBE STREQUAL _wick_cuda_probe_key)
  try_compile(_wick_cuda_links ${CMAKE_BINARY_DIR}/cuda_link_probe
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/cuda_link_probe.cpp
    COMPILE_DEFINITIONS ${_wick_cuda_probe_defs}
    CMAKE_FLAGS "-DINCLUDE_DIRECTORIES=${CUDAToolkit_INCLUDE_DIRS};${WICK_NCCL_INCLUDE_DIR}"
    LINK_LIBRARIES ${_wick_cuda_link_libraries}
    OUTPUT_VARIABLE _wick_cuda_probe_log)
  if(NOT _wick_cuda_links)
    message(FATAL_ERROR "wick: a program calling each of cudart, cuBLAS, cuDNN (and NCCL when "
      "WICK_DISTRIBUTED is ON) does not link against the libraries found "
      "(${_wick_cuda_link_libraries}); the linker said:\n${_wick_cuda_probe_log}")
  endif()
  set(WICK_CUDA_LINK_PROBE ${_wick_cuda_probe_key} CACHE INTERNAL "inputs of the last CUDA link probe that passed")
endif()
message(STATUS "wick: CUDA libraries: ${_wick_cuda_link_libraries} (a program calling each links)")

add_library(wick_cuda_runtime INTERFACE)
target_link_libraries(wick_cuda_runtime INTERFACE ${_wick_cuda_link_libraries})
if(WICK_DISTRIBUTED)
  target_include_directories(wick_cuda_runtime INTERFACE $<BUILD_INTERFACE:${WICK_NCCL_INCLUDE_DIR}>)
endif()
