// CUDA gemm (cuBLAS) against a float64 reference: every floating dtype, transposed and
// strided operands, broadcast batches, odd and empty sizes, TF32 off and on.
//
// Tolerances for a dot product of length K over values in [-2, 2] (|a * b| <= 4):
// float32 without TF32: rtol 1e-5 plus 4 * K * 2^-24 (float accumulation; TF32's input
// rounding alone, about 2^-11 per product, is far larger, so TF32 sneaking in would fail);
// TF32: 4 * sqrt(K) * 2^-9; float64: 4 * K * 2^-52; 16-bit: the output rounding (rtol) plus
// float accumulation, which holds only with reduced-precision reductions off: with them on
// (the default, as in PyTorch) cuBLAS may round split-K partial sums to 16 bits, so each
// element is held to 2^-7 times its own sum of |a_k b_k| (an H200 ran a bfloat16 5x1000x3
// product 2.7% off its float64 value that way).
#include <array>
#include <cmath>

#include "tests/support/cuda_compare.h"
#include "tests/support/cuda_debug.h"

#include <wick/tensor/dispatch.h>

namespace wick::test {
namespace {

struct MatmulTol {
  double rtol, atol;
};

MatmulTol gemm_tol(DType t, int64_t K, bool tf32) {
  const double k = static_cast<double>(std::max<int64_t>(K, 1));
  switch (t) {
    case DType::Float64: return {1e-12, 4 * k * 0x1p-52};
    case DType::Float32: return tf32 ? MatmulTol{2e-3, 4 * std::sqrt(k) * 0x1p-9} : MatmulTol{1e-5, 4 * k * 0x1p-24};
    case DType::Float16: return {2e-3, 4 * k * 0x1p-24 + 1e-3};
    case DType::BFloat16: return {1.6e-2, 4 * k * 0x1p-24 + 1e-2};
    default: return {0, 0};
  }
}

// Turns TF32 on for its lifetime, and off again even when a check fails.
class Tf32On {
 public:
  Tf32On() { cuda::set_allow_tf32(true); }
  ~Tf32On() { cuda::set_allow_tf32(false); }
  Tf32On(const Tf32On&) = delete;
  Tf32On& operator=(const Tf32On&) = delete;
};

// Runs `f` on CUDA copies of the inputs (same layouts) and checks it against `f` on their
// float64 CPU copies (the CPU kernel in double: independent of the CUDA code under test).
void expect_matches_f64(const std::string& what, const std::vector<Tensor>& inputs, const OpFn& f, MatmulTol tol) {
  SCOPED_TRACE(what);
  std::vector<Tensor> gpu, f64;
  for (const Tensor& t : inputs) {
    gpu.push_back(same_layout_on(t, Device::cuda()));
    f64.push_back(t.to(DType::Float64));
  }
  const Tensor got = f(gpu), want = f64.empty() ? Tensor() : f(f64);
  ASSERT_TRUE(got.is_cuda());
  ASSERT_EQ(got.dtype(), inputs[0].dtype());
  ASSERT_EQ(got.shape(), want.shape());
  EXPECT_TRUE(all_close(values(got), values(want), tol.rtol, tol.atol));
}

// A [rows, cols] operand stored row-major, column-major (a transposed buffer), or as a
// window of a wider buffer (leading dimension larger than the row).
enum class Store { RowMajor, ColumnMajor, Window };
const char* store_name(Store s) {
  return s == Store::RowMajor ? "row-major" : s == Store::ColumnMajor ? "column-major" : "window";
}

Tensor operand(int64_t rows, int64_t cols, DType t, uint64_t seed, Store s) {
  switch (s) {
    case Store::RowMajor: return random({rows, cols}, t, seed);
    case Store::ColumnMajor: return random({cols, rows}, t, seed).t();
    case Store::Window: return random({rows + 2, cols + 5}, t, seed).narrow(0, 1, rows).narrow(1, 3, cols);
  }
  return {};
}

const std::vector<std::array<int64_t, 3>> kSizes = {  // M, K, N
    {1, 1, 1}, {3, 17, 33}, {33, 1, 17}, {17, 33, 1}, {1, 64, 1}, {64, 128, 96}, {129, 257, 65}, {5, 1000, 3}};

void check_products(DType t, bool tf32) {
  uint64_t seed = 1;
  for (const auto& [M, K, N] : kSizes) {
    for (Store sa : {Store::RowMajor, Store::ColumnMajor, Store::Window}) {
      for (Store sb : {Store::RowMajor, Store::ColumnMajor, Store::Window}) {
        const Tensor a = operand(M, K, t, seed++, sa), b = operand(K, N, t, seed++, sb);
        expect_matches_f64(std::string(dtype_name(t)) + (tf32 ? " tf32 " : " ") + std::to_string(M) + "x" +
                               std::to_string(K) + "x" + std::to_string(N) + " a " + store_name(sa) + " b " +
                               store_name(sb),
                           {a, b}, [](const std::vector<Tensor>& in) { return mm(in[0], in[1]); },
                           gemm_tol(t, K, tf32));
      }
    }
  }
}

TEST(CudaMatmul, Float32WithoutTF32MatchesFloat64) {
  WICK_REQUIRE_CUDA();
  AllocationChecks checks;
  ASSERT_FALSE(cuda::allow_tf32());
  check_products(DType::Float32, false);
  EXPECT_EQ(checks.violations(), 0u);
}

TEST(CudaMatmul, Float32WithTF32) {
  WICK_REQUIRE_CUDA();
  {
    Tf32On on;
    check_products(DType::Float32, true);
  }
  // Off again: a handle made while TF32 was on must not keep using it.
  const Tensor a = random({129, 257}, DType::Float32, 3), b = random({257, 65}, DType::Float32, 4);
  expect_matches_f64("after tf32", {a, b}, [](const std::vector<Tensor>& in) { return mm(in[0], in[1]); },
                     gemm_tol(DType::Float32, 257, false));
}

// Turns reduced-precision reductions off for its lifetime, and on again even when a check fails.
class ReducedPrecisionReductionOff {
 public:
  ReducedPrecisionReductionOff() { cuda::set_allow_reduced_precision_reduction(false); }
  ~ReducedPrecisionReductionOff() { cuda::set_allow_reduced_precision_reduction(true); }
  ReducedPrecisionReductionOff(const ReducedPrecisionReductionOff&) = delete;
  ReducedPrecisionReductionOff& operator=(const ReducedPrecisionReductionOff&) = delete;
};

TEST(CudaMatmul, Float64Float16BFloat16) {
  WICK_REQUIRE_CUDA();
  AllocationChecks checks;
  ASSERT_TRUE(cuda::allow_reduced_precision_reduction());
  {
    ReducedPrecisionReductionOff off;
    for (DType t : {DType::Float64, DType::Float16, DType::BFloat16}) check_products(t, false);
  }
  EXPECT_EQ(checks.violations(), 0u);
}

// The default: 16-bit partial sums allowed. Each element within 2^-7 sum_k |a_ik b_kj| of
// the float64 product plus its own output rounding; a wrong layout or a lost partial product
// is off by far more (about sqrt(K) here).
TEST(CudaMatmul, ReducedPrecisionReductionStaysWithinItsBound) {
  WICK_REQUIRE_CUDA();
  ASSERT_TRUE(cuda::allow_reduced_precision_reduction());
  uint64_t seed = 100;
  for (DType t : {DType::Float16, DType::BFloat16}) {
    for (const auto& [M, K, N] : std::vector<std::array<int64_t, 3>>{{5, 1000, 3}, {64, 4096, 80}, {129, 257, 65}}) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " " + std::to_string(M) + "x" + std::to_string(K) + "x" + std::to_string(N));
      const Tensor a = random({M, K}, t, seed++), b = random({K, N}, t, seed++);
      const Tensor a64 = a.to(DType::Float64), b64 = b.to(DType::Float64);
      const std::vector<double> got = values(mm(a.to(Device::cuda()), b.to(Device::cuda())));
      const std::vector<double> want = values(mm(a64, b64)), scale = values(mm(abs(a64), abs(b64)));
      const double rounding = t == DType::BFloat16 ? 0x1p-8 : 0x1p-11;
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_LE(std::abs(got[i] - want[i]), 0x1p-7 * scale[i] + rounding * std::abs(want[i])) << "element " << i;
    }
  }
}

// Batches: folded into one tall product, broadcast (batch stride 0), broadcast over several
// batch dims, transposed matrices inside a batch, and a batch dim that is not outermost.
TEST(CudaMatmul, BatchedAndBroadcast) {
  WICK_REQUIRE_CUDA();
  AllocationChecks checks;
  for (DType t : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
    const MatmulTol tol = gemm_tol(t, 33, false);
    const auto mm_fn = [](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); };
    const std::string dt = dtype_name(t);
    expect_matches_f64(dt + " [4,17,33] @ [33,5]", {random({4, 17, 33}, t, 1), random({33, 5}, t, 2)}, mm_fn, tol);
    expect_matches_f64(dt + " [17,33] @ [4,33,5]", {random({17, 33}, t, 3), random({4, 33, 5}, t, 4)}, mm_fn, tol);
    expect_matches_f64(dt + " [1,17,33] @ [4,33,5]", {random({1, 17, 33}, t, 5), random({4, 33, 5}, t, 6)}, mm_fn, tol);
    expect_matches_f64(dt + " [3,1,17,33] @ [1,4,33,5]", {random({3, 1, 17, 33}, t, 7), random({1, 4, 33, 5}, t, 8)},
                       mm_fn, tol);
    expect_matches_f64(dt + " bmm transposed", {random({4, 33, 17}, t, 9).transpose(1, 2), random({4, 5, 33}, t, 10).transpose(1, 2)},
                       [](const std::vector<Tensor>& in) { return bmm(in[0], in[1]); }, tol);
    expect_matches_f64(dt + " bmm batch in the middle",
                       {random({17, 4, 33}, t, 11).permute({1, 0, 2}), random({33, 4, 5}, t, 12).permute({1, 0, 2})},
                       [](const std::vector<Tensor>& in) { return bmm(in[0], in[1]); }, tol);
    expect_matches_f64(dt + " expanded batch", {random({17, 33}, t, 13).expand({6, 17, 33}), random({6, 33, 5}, t, 14)},
                       [](const std::vector<Tensor>& in) { return bmm(in[0], in[1]); }, tol);
    expect_matches_f64(dt + " matrix-vector", {random({17, 33}, t, 15), random({33}, t, 16)}, mm_fn, tol);
    expect_matches_f64(dt + " dot", {random({33}, t, 17), random({33}, t, 18)}, mm_fn, tol);
  }
  EXPECT_EQ(checks.violations(), 0u);
}

// alpha and beta; beta == 0 must not read the output (AllocationChecks fills new memory
// with NaN, so a read would show), and input NaNs are ignored then too.
TEST(CudaMatmul, AlphaBetaAndEmptyK) {
  WICK_REQUIRE_CUDA();
  AllocationChecks checks;
  for (DType t : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
    const MatmulTol tol = gemm_tol(t, 33, false);
    const std::string dt = dtype_name(t);
    const Tensor a = random({17, 33}, t, 1), b = random({33, 5}, t, 2);
    expect_matches_f64(dt + " addmm beta 0.5 alpha 2", {random({17, 5}, t, 3), a, b},
                       [](const std::vector<Tensor>& in) { return addmm(in[0], in[1], in[2], 0.5, 2.0); }, tol);
    expect_matches_f64(dt + " addmm broadcast input", {random({5}, t, 4), a, b},
                       [](const std::vector<Tensor>& in) { return addmm(in[0], in[1], in[2], 1.0, -1.0); }, tol);
    expect_matches_f64(dt + " addmm beta 0 NaN input", {full({17, 5}, NAN, t), a, b},
                       [](const std::vector<Tensor>& in) { return addmm(in[0], in[1], in[2], 0.0, 1.0); }, tol);
    // K == 0: the product is zeros, addmm keeps beta * input.
    expect_matches_f64(dt + " empty K", {random({3, 0}, t, 5), random({0, 4}, t, 6)},
                       [](const std::vector<Tensor>& in) { return mm(in[0], in[1]); }, tol);
    expect_matches_f64(dt + " addmm empty K", {random({3, 4}, t, 7), random({3, 0}, t, 8), random({0, 4}, t, 9)},
                       [](const std::vector<Tensor>& in) { return addmm(in[0], in[1], in[2], 0.5, 1.0); }, tol);
    expect_matches_f64(dt + " empty M", {random({0, 3}, t, 10), random({3, 4}, t, 11)},
                       [](const std::vector<Tensor>& in) { return mm(in[0], in[1]); }, tol);
    expect_matches_f64(dt + " empty N", {random({2, 3}, t, 12), random({3, 0}, t, 13)},
                       [](const std::vector<Tensor>& in) { return mm(in[0], in[1]); }, tol);
  }
  EXPECT_EQ(checks.violations(), 0u);
}

// The slot itself: unsupported dtypes and operands that are neither row- nor column-major.
TEST(CudaMatmul, SlotErrors) {
  WICK_REQUIRE_CUDA();
  const KernelTable& k = kernels(Device::cuda());
  const Options i32(DType::Int32, Device::cuda()), f32(DType::Float32, Device::cuda());
  expect_error([&] { k.gemm(empty({1, 2, 2}, i32), zeros({1, 2, 2}, i32), zeros({1, 2, 2}, i32), 1, 0); },
               {"gemm", "cuda", "int32"});
  const Tensor strided = zeros({1, 4, 6}, f32).slice(2, 0, 6, 2).slice(1, 0, 4, 2);  // [1, 2, 3], strides (.., 12, 2)
  expect_error([&] { k.gemm(empty({1, 2, 2}, f32), strided, zeros({1, 3, 2}, f32), 1, 0); },
               {"gemm", "neither row- nor column-major", "[1, 2, 3]"});
}

}  // namespace
}  // namespace wick::test
