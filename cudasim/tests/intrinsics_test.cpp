// Integer and bit intrinsics, atomicInc/atomicDec, cache-hinted loads and stores, volatile
// kernel parameters, and the 16-bit float conversions, each run inside a kernel and checked
// against the result CUDA documents.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include "kernel_test_support.h"

namespace {

using namespace cudasim_tests;

__global__ void bit_intrinsics(unsigned long long* out) {
  int i = 0;
  out[i++] = __brev(0x00000001u);
  out[i++] = __brev(0x12345678u);
  out[i++] = __brevll(1ull);
  out[i++] = __byte_perm(0x33221100u, 0x77665544u, 0x7531u);
  out[i++] = __byte_perm(0x33221100u, 0x77665544u, 0xf9b1u);  // each selector's fourth bit is ignored
  out[i++] = __byte_perm(0x33221100u, 0u, 0x0123u);
  out[i++] = __funnelshift_l(0x89abcdefu, 0x01234567u, 8);
  out[i++] = __funnelshift_l(0x89abcdefu, 0x01234567u, 40);  // modulo 32
  out[i++] = __funnelshift_lc(0x89abcdefu, 0x01234567u, 40);  // clamped to 32
  out[i++] = __funnelshift_r(0x89abcdefu, 0x01234567u, 8);
  out[i++] = __funnelshift_r(0x89abcdefu, 0x01234567u, 40);
  out[i++] = __funnelshift_rc(0x89abcdefu, 0x01234567u, 40);
  out[i++] = __umulhi(0xffffffffu, 0xffffffffu);
  out[i++] = static_cast<unsigned long long>(static_cast<long long>(__mulhi(-2, 3)));
  out[i++] = static_cast<unsigned long long>(static_cast<long long>(__mulhi(0x40000000, 8)));
  out[i++] = __umul64hi(~0ull, ~0ull);
  out[i++] = static_cast<unsigned long long>(__mul64hi(-1ll, 1ll));
  out[i++] = static_cast<unsigned long long>(__mul64hi(1ll << 62, 8));
}

TEST(Intrinsics, BitsBytesFunnelShiftsAndHighProducts) {
  DeviceBuffer<unsigned long long> out(18);
  ASSERT_EQ(launch(bit_intrinsics, 1, 1, 0, out.ptr), cudaSuccess);
  const std::vector<unsigned long long> expected = {
      0x80000000u, 0x1e6a2c48u, 1ull << 63, 0x77553311u, 0x77113311u, 0x00112233u, 0x23456789u, 0x23456789u,
      0x89abcdefu, 0x6789abcdu, 0x6789abcdu, 0x01234567u, 0xfffffffeu, ~0ull, 2u, 0xfffffffffffffffeull, ~0ull, 2u};
  const auto h = out.read();
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(h[i], expected[i]) << "case " << i;
}

// 1000 threads step a counter that wraps at 6 (atomicInc) or from 0 to 6 (atomicDec).
__global__ void wrapping_counters(unsigned* inc, unsigned* dec, unsigned* dec_above) {
  atomicInc(inc, 6u);
  atomicDec(dec, 6u);
  if (blockIdx.x == 0 && threadIdx.x == 0) atomicDec(dec_above, 6u);
}

TEST(Intrinsics, AtomicIncAndDecWrap) {
  DeviceBuffer<unsigned> inc(1), dec(1), above(1);
  inc.write({0});
  dec.write({0});
  above.write({100});
  ASSERT_EQ(launch(wrapping_counters, 8, 125, 0, inc.ptr, dec.ptr, above.ptr), cudaSuccess);
  EXPECT_EQ(inc.read()[0], 1000u % 7u);
  EXPECT_EQ(dec.read()[0], (7u - 1000u % 7u) % 7u);
  EXPECT_EQ(above.read()[0], 6u) << "a value above val wraps to val";
}

__global__ void hinted_copy(const float4* in, float4* out, const __nv_bfloat16* hin, __half* hout, const int* iin, int* iout) {
  const unsigned i = threadIdx.x;
  __stcs(&out[i], __ldg(&in[i]));
  float4 v = __ldcs(&in[i]);
  v.x += 1.0f;
  __stwt(&out[i + 32], v);
  hout[i] = __float2half_rn(__bfloat162float(__ldcg(&hin[i])));
  __stcg(&iout[i], __ldlu(&iin[i]) + __ldca(&iin[i]) + __ldcv(&iin[i]));
  __stwb(&iout[i + 32], __ldg(&iin[i]));
}

TEST(Intrinsics, CacheHintedLoadsAndStoresMoveTheValue) {
  std::vector<float4> in(32);
  std::vector<__nv_bfloat16> hin(32);
  std::vector<int> iin(32);
  for (int i = 0; i < 32; ++i) {
    in[i] = float4{float(i), 2.0f * i, 3.0f * i, 4.0f * i};
    hin[i] = __float2bfloat16_rn(0.5f * i);
    iin[i] = i;
  }
  DeviceBuffer<float4> din(32), dout(64);
  DeviceBuffer<__nv_bfloat16> dh(32);
  DeviceBuffer<__half> dhout(32);
  DeviceBuffer<int> diin(32), diout(64);
  din.write(in);
  dh.write(hin);
  diin.write(iin);
  ASSERT_EQ(launch(hinted_copy, 1, 32, 0, din.ptr, dout.ptr, dh.ptr, dhout.ptr, diin.ptr, diout.ptr), cudaSuccess);
  const auto o = dout.read();
  const auto ho = dhout.read();
  const auto io = diout.read();
  for (int i = 0; i < 32; ++i) {
    EXPECT_EQ(o[i].w, 4.0f * i);
    EXPECT_EQ(o[i + 32].x, i + 1.0f);
    EXPECT_EQ(__half2float(ho[i]), 0.5f * i);
    EXPECT_EQ(io[i], 3 * i);
    EXPECT_EQ(io[i + 32], i);
  }
}

// Pointers to volatile data as kernel parameters (a volatile parameter by value is
// deprecated in C++20, which the simulator compiles kernels as).
__global__ void volatile_parameters(volatile int* flag, const volatile int* n, int* out) {
  while (*flag == 0) {
  }
  out[threadIdx.x] = *n + *flag;
}

TEST(Intrinsics, VolatileKernelParameters) {
  DeviceBuffer<int> flag(1), n(1), out(4);
  flag.write({2});
  n.write({40});
  ASSERT_EQ(launch(volatile_parameters, 1, 4, 0, flag.ptr, n.ptr, out.ptr), cudaSuccess);
  for (int v : out.read()) EXPECT_EQ(v, 42);
}

// --- 16-bit float conversions ----------------------------------------------------------------

__global__ void to_bfloat16(const float* in, unsigned short* out, int n) {
  for (int i = 0; i < n; ++i) {
    const __nv_bfloat16 b = __float2bfloat16_rn(in[i]);
    out[i] = std::bit_cast<unsigned short>(b);
  }
  const __nv_bfloat162 pair = __floats2bfloat162_rn(in[0], in[1]);
  out[n] = std::bit_cast<unsigned short>(pair.x);
  out[n + 1] = std::bit_cast<unsigned short>(pair.y);
}

__global__ void to_half(const float* in, unsigned short* out, int n) {
  for (int i = 0; i < n; ++i) out[i] = std::bit_cast<unsigned short>(__float2half_rn(in[i]));
}

__global__ void widen(const unsigned short* half_bits, const unsigned short* bf16_bits, unsigned* out, int n) {
  for (int i = 0; i < n; ++i) {
    out[2 * i] = std::bit_cast<unsigned>(__half2float(std::bit_cast<__half>(half_bits[i])));
    out[2 * i + 1] = std::bit_cast<unsigned>(__bfloat162float(std::bit_cast<__nv_bfloat16>(bf16_bits[i])));
  }
}

template <class T>
std::vector<T> run_conversion(void (*kernel)(const float*, unsigned short*, int), const std::vector<unsigned>& bits, size_t extra) {
  std::vector<float> in;
  for (unsigned b : bits) in.push_back(std::bit_cast<float>(b));
  DeviceBuffer<float> din(in.size());
  DeviceBuffer<unsigned short> dout(in.size() + extra);
  din.write(in);
  EXPECT_EQ(launch(kernel, 1, 1, 0, din.ptr, dout.ptr, static_cast<int>(in.size())), cudaSuccess);
  return dout.read();
}

// The bits sm_90 gives: round to nearest, ties to even; overflow to infinity; every NaN to
// the canonical 0x7fff (sign and payload dropped). Sources for the NaN rule:
// - NVIDIA's own stand-in for cvt.rn.bf16.f32 / cvt.rn.f16.f32 on the host, in CUDA 13.0's
//   cuda_bf16.hpp (__internal_float2bfloat16) and cuda_fp16.hpp (__internal_float2half):
//   any NaN gives 0x7fff; these are the functions the simulator runs;
// - the CUDA Math API names 0x7fff the canonical NaN of both types (CUDART_NAN_BF16,
//   https://docs.nvidia.com/cuda/cuda-math-api/cuda_math_api/group__CUDA__MATH__INTRINSIC__BFLOAT16__CONSTANTS.html;
//   CUDART_NAN_FP16, .../group__CUDA__MATH__INTRINSIC__HALF__CONSTANTS.html);
// - the PTX ISA (cvt, "Saturation modifiers") says "NaN results are converted to canonical
//   NaN" for the .relu forms only; for plain cvt.rn.{f16,bf16,bf16x2}.f32 it states no NaN
//   pattern. Not yet checked on an sm_90 device.
TEST(Conversions, FloatToBfloat16RoundsToNearestEvenWithCanonicalNan) {
  const std::vector<unsigned> in = {
      0x3f800000u,  // 1
      0x3f808000u,  // halfway between 0x3f80 and 0x3f81: to even
      0x3f818000u,  // halfway between 0x3f81 and 0x3f82: to even
      0x3f808001u,  // just above halfway
      0x7f7fffffu,  // FLT_MAX rounds to infinity
      0x7f800000u, 0xff800000u, 0x80000000u,
      0x00008000u,  // a subnormal halfway to the least bf16 subnormal: to even (zero)
      0x00018000u,  // halfway between subnormals 1 and 2: to even (2)
      0x7fc00000u, 0xffc00001u, 0x7f800001u, 0xffffffffu,  // NaNs of either sign, quiet and signalling
  };
  const std::vector<unsigned short> expected = {0x3f80, 0x3f80, 0x3f82, 0x3f81, 0x7f80, 0x7f80, 0xff80, 0x8000,
                                                0x0000, 0x0002, 0x7fff, 0x7fff, 0x7fff, 0x7fff};
  const auto out = run_conversion<unsigned short>(to_bfloat16, in, 2);
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(out[i], expected[i]) << std::hex << "input 0x" << in[i];
  EXPECT_EQ(out[in.size()], 0x3f80) << "__floats2bfloat162_rn(a, b): .x from a";
  EXPECT_EQ(out[in.size() + 1], 0x3f80) << ".y from b (0x3f808000, a tie, to even)";
}

TEST(Conversions, FloatToHalfRoundsToNearestEvenWithCanonicalNan) {
  const std::vector<unsigned> in = {
      0x3f800000u,  // 1
      0x477fe000u,  // 65504, the largest half
      0x477ff000u,  // 65520: halfway to 65536, to even, which is infinity
      0x477fefffu,  // just below: 65504
      0x33800000u,  // 2^-24, the least subnormal
      0x33000000u,  // 2^-25: halfway to zero, to even (zero)
      0x33400000u,  // 3 * 2^-26: above halfway, the least subnormal
      0x3f801000u,  // 1 + 2^-11: halfway between 1 and the next half, to even (1)
      0x3f803000u,  // 1 + 3 * 2^-11: halfway, to even (1 + 2^-9)
      0xff800000u, 0x7fc00000u, 0xffc00001u, 0x7f800001u,
  };
  const std::vector<unsigned short> expected = {0x3c00, 0x7bff, 0x7c00, 0x7bff, 0x0001, 0x0000, 0x0001,
                                                0x3c00, 0x3c02, 0xfc00, 0x7fff, 0x7fff, 0x7fff};
  const auto out = run_conversion<unsigned short>(to_half, in, 0);
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(out[i], expected[i]) << std::hex << "input 0x" << in[i];
}

// Widening is exact; a half NaN becomes the canonical float NaN 0x7fffffff (as NVIDIA's
// emulation of cvt.f32.f16 gives), a bfloat16 NaN keeps its bits (the conversion is a shift).
TEST(Conversions, WideningIsExact) {
  const std::vector<unsigned short> half_bits = {0x3c00, 0x0001, 0xfc00, 0x7e00, 0xfe01};
  const std::vector<unsigned short> bf16_bits = {0x3f80, 0x0001, 0xff80, 0x7fc0, 0xffc1};
  DeviceBuffer<unsigned short> h(5), b(5);
  DeviceBuffer<unsigned> out(10);
  h.write(half_bits);
  b.write(bf16_bits);
  ASSERT_EQ(launch(widen, 1, 1, 0, h.ptr, b.ptr, out.ptr, 5), cudaSuccess);
  const auto o = out.read();
  const std::vector<unsigned> half_expected = {0x3f800000u, 0x33800000u, 0xff800000u, 0x7fffffffu, 0x7fffffffu};
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(o[2 * i], half_expected[i]) << "half 0x" << std::hex << half_bits[i];
    EXPECT_EQ(o[2 * i + 1], unsigned{bf16_bits[i]} << 16) << "bfloat16 0x" << std::hex << bf16_bits[i];
  }
}

}  // namespace
