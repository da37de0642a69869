// Configure-time probe (cmake/wick_cuda_libraries.cmake): one call into each NVIDIA library
// the nvcc build links, so that a library missing from the link line fails the
// configuration. It is linked, never run (the machine may have no GPU).
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#if WICK_PROBE_NCCL
#include <nccl.h>
#endif

int main() {
  int runtime = 0;
  cudaRuntimeGetVersion(&runtime);
  int cublas = 0;
  cublasGetProperty(MAJOR_VERSION, &cublas);
  long total = runtime + cublas + static_cast<long>(cudnnGetVersion());
#if WICK_PROBE_NCCL
  int nccl = 0;
  ncclGetVersion(&nccl);
  total += nccl + (ncclGetErrorString(ncclSuccess) != nullptr);
#endif
  return total == 0;
}
