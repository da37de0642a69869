// Checks that need the GPU's own arithmetic and take a second there: the device's cvt
// conversions (what wick/tensor/half.h uses on sm_80+) against wick's software conversions (what
// the host and the simulator use), for every float bit pattern (float -> bfloat16, float ->
// half) and every half bit pattern (half -> float). Exit status 1 on any mismatch.
//
//   wick_gpu_checks [--stride S]   every S-th float pattern (default 1: all 2^32)
//
// Under the CUDA simulator both sides are the software path, so the run only proves the
// program works (CI runs it with a large stride); tools/gpu-bench.sh runs it on a GPU.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <wick/tensor/half.h>

#include "kernels/cuda/launch.cuh"

namespace wick::bench {
namespace {

enum Check { kToBFloat16, kToHalf, kHalfToFloat, kChecks };
const char* const kNames[kChecks] = {"float -> bfloat16", "float -> half", "half -> float"};

struct Result {
  unsigned long long mismatches[kChecks];
  unsigned first_bad[kChecks];  // the smallest input bit pattern that differs
};

// Patterns first, first + stride, ... below 2^32; the first 65536 threads' patterns also
// check half -> float for the half with their index's bits.
__global__ void compare_conversions(unsigned long long count, unsigned long long stride, Result* r) {
  const unsigned long long step = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += step) {
    const uint32_t u = static_cast<uint32_t>(i * stride);
    float f;
    memcpy(&f, &u, 4);
    if (BFloat16(f).bits != detail::bfloat16_bits_soft(f)) {
      atomicAdd(&r->mismatches[kToBFloat16], 1ull);
      atomicMin(&r->first_bad[kToBFloat16], u);
    }
    if (Half(f).bits != detail::half_bits_soft(f)) {
      atomicAdd(&r->mismatches[kToHalf], 1ull);
      atomicMin(&r->first_bad[kToHalf], u);
    }
    if (i < 65536) {
      const uint16_t h = static_cast<uint16_t>(i);
      const float hw = Half::from_bits(h), sw = detail::half_to_float_soft(h);
      uint32_t a, b;
      memcpy(&a, &hw, 4);
      memcpy(&b, &sw, 4);
      if (a != b) {
        atomicAdd(&r->mismatches[kHalfToFloat], 1ull);
        atomicMin(&r->first_bad[kHalfToFloat], static_cast<unsigned>(h));
      }
    }
  }
}

int check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "wick_gpu_checks: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(2);
  }
  return 0;
}

}  // namespace
}  // namespace wick::bench

int main(int argc, char** argv) {
  using namespace wick::bench;
  unsigned long long stride = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--stride") == 0 && i + 1 < argc) stride = std::strtoull(argv[++i], nullptr, 10);
    else {
      std::fprintf(stderr, "usage: wick_gpu_checks [--stride S]\n");
      return 2;
    }
  }
  if (stride == 0) stride = 1;
  const unsigned long long count = ((1ull << 32) + stride - 1) / stride;
  Result host{};
  for (unsigned& f : host.first_bad) f = 0xffffffffu;
  Result* dev = nullptr;
  check(cudaMalloc(&dev, sizeof(Result)), "cudaMalloc");
  check(cudaMemcpy(dev, &host, sizeof(Result), cudaMemcpyHostToDevice), "cudaMemcpy");
  wick::cuda_kernels::launch_kernel("compare_conversions", &compare_conversions, dim3(4096), dim3(256), 0, nullptr,
                                    count, stride, dev);
  check(cudaGetLastError(), "launch");
  check(cudaMemcpy(&host, dev, sizeof(Result), cudaMemcpyDeviceToHost), "cudaMemcpy back");
  check(cudaFree(dev), "cudaFree");
  int failed = 0;
  for (int c = 0; c < kChecks; ++c) {
    const unsigned long long checked = c == kHalfToFloat ? (count < 65536 ? count : 65536) : count;
    std::printf("%-18s %llu patterns, %llu differ", kNames[c], checked, host.mismatches[c]);
    if (host.mismatches[c]) std::printf(" (first: input bits 0x%08x)", host.first_bad[c]);
    std::printf("\n");
    failed |= host.mismatches[c] != 0;
  }
  return failed;
}
