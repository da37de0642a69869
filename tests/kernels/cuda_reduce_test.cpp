// CUDA reductions with indices, softmax and the scans against the CPU kernels, on the same
// inputs and layouts, and the reductions' accuracy and special rules. The reductions over
// dims themselves are compared in the reduction table (tests/autograd/reduce_table_test.cpp);
// tolerances are explained in tests/support/reduce_reference.h.
#include <algorithm>
#include <cmath>
#include <functional>

#include "tests/support/cuda_compare.h"
#include "tests/support/cuda_debug.h"
#include "tests/support/reduce_reference.h"

#include <wick/tensor/cuda.h>
#include <wick/tensor/dispatch.h>

namespace wick::test {
namespace {

const std::vector<DType> kFloatTypes = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16};
const std::vector<DType> kReduceDtypes = {DType::Bool,    DType::UInt8,    DType::Int32,   DType::Int64,
                                      DType::Float16, DType::BFloat16, DType::Float32, DType::Float64};

// Integers in [-8, 8] sum exactly in float32 (every partial sum is an integer below 2^24),
// so any lost, doubled or misplaced element shows; and the bound on random reals.
TEST(CudaReduce, Float32SumOfAMillionElements) {
  WICK_REQUIRE_CUDA();
  AllocationChecks checks;
  const int64_t n = (int64_t{1} << 20) + 3;
  const Tensor ints = random({n}, DType::Int32, 5, -8, 8).to(DType::Float32);
  expect_cuda_matches_cpu("exact sum", {ints}, [](const std::vector<Tensor>& in) { return sum(in[0]); }, 0, 0);
  expect_cuda_matches_cpu("exact sum of rows", {ints.narrow(0, 0, 1024 * 1024).view({1024, 1024})},
                          [](const std::vector<Tensor>& in) { return sum(in[0], {0}); }, 0, 0);
  // Random reals: the float tree's worst case is about 170 * 2^-24 * sum |x| here (16
  // elements per lane, 16 warps, 129 chunks); the typical error is far smaller, and 1e-7 *
  // sum |x| (about 0.1) still leaves a 100x margin over it.
  const Tensor x = random({n}, DType::Float32, 6);
  double abs_sum = 0;
  for (double v : values(x)) abs_sum += std::fabs(v);
  expect_cuda_matches_cpu("random sum", {x}, [](const std::vector<Tensor>& in) { return sum(in[0]); }, 0,
                          1e-7 * abs_sum);
  EXPECT_EQ(checks.violations(), 0u);
}

// Welford: values 1e4 + U(-1, 1) have a variance of 1/3; a float sum of squares would lose it.
TEST(CudaReduce, VarIsStableAwayFromZero) {
  WICK_REQUIRE_CUDA();
  for (int64_t n : {int64_t{4097}, (int64_t{1} << 20) + 3}) {
    const Tensor x = random({n}, DType::Float32, 9, 1e4 - 1, 1e4 + 1);
    expect_cuda_matches_cpu("var of " + std::to_string(n), {x}, [](const std::vector<Tensor>& in) { return var(in[0]); },
                            1e-3, 0);
  }
  const Tensor rows = random({64, 4097}, DType::Float32, 10, 1e4 - 1, 1e4 + 1);
  for (int64_t dim : {0, 1})
    expect_cuda_matches_cpu("var rows dim " + std::to_string(dim), {rows},
                            [&](const std::vector<Tensor>& in) { return var(in[0], {dim}); }, 1e-3, 0);
}

// max() and min() of all elements with NaN and infinities (the reductions over dims meet
// these in the reduction table); a single element has no unbiased variance (0 / 0).
TEST(CudaReduce, SpecialValues) {
  WICK_REQUIRE_CUDA();
  AllocationChecks checks;
  for (DType t : kFloatTypes) {
    const Tensor x = special_value_rows().to(t);
    for (auto f : {+[](const Tensor& v) { return max(v); }, +[](const Tensor& v) { return min(v); }})
      expect_cuda_matches_cpu(std::string("max/min special ") + dtype_name(t), {x},
                              [&](const std::vector<Tensor>& in) { return f(in[0]); });
    expect_cuda_matches_cpu("var of one element", {x.narrow(1, 0, 1).contiguous()},
                            [](const std::vector<Tensor>& in) { return var(in[0], {1}); });
  }
  EXPECT_EQ(checks.violations(), 0u);
}

TEST(CudaReduce, MaxAndArgmaxOfOneOrFewElements) {
  WICK_REQUIRE_CUDA();
  AllocationChecks checks;
  for (DType t : {DType::Float32, DType::Int64, DType::Float16})
    for (const Shape& s : {Shape{}, Shape{1}, Shape{3, 1, 2}}) {
      const Tensor x = random(s, t, 11);
      expect_cuda_matches_cpu("max " + shape_str(s), {x}, [](const std::vector<Tensor>& in) { return max(in[0]); });
      expect_cuda_matches_cpu("argmax " + shape_str(s), {x}, [](const std::vector<Tensor>& in) { return argmax(in[0]); });
    }
  EXPECT_EQ(checks.violations(), 0u);
}

// Max and min with indices: ties (small integer ranges make many) go to the first index,
// NaN wins; every dim, layout and dtype, and long rows and columns.
TEST(CudaReduce, MaxMinWithIndex) {
  WICK_REQUIRE_CUDA();
  AllocationChecks checks;
  uint64_t seed = 200;
  const auto cases = [](int64_t dim) {
    return std::vector<std::pair<std::string, OpFn>>{
        {"max values", [dim](const std::vector<Tensor>& in) { return max(in[0], dim).first; }},
        {"max indices", [dim](const std::vector<Tensor>& in) { return max(in[0], dim).second; }},
        {"min values", [dim](const std::vector<Tensor>& in) { return min(in[0], dim, true).first; }},
        {"min indices", [dim](const std::vector<Tensor>& in) { return min(in[0], dim, true).second; }},
    };
  };
  for (DType t : kReduceDtypes) {
    for (Layout l : kAllLayouts) {
      // Values in [-2, 2]: integers tie a lot; floats get a few NaNs.
      Tensor x = random({5, 17, 33}, t, seed++, -2, 2);
      if (is_floating(t)) {
        std::vector<double> v = values(x);
        for (size_t i = 0; i < v.size(); i += 97) v[i] = NAN;
        x = tensor<double>(v, x.shape()).to(t);
      }
      x = with_layout(x, l);
      for (int64_t dim = 0; dim < 3; ++dim)
        for (const auto& [name, f] : cases(dim))
          expect_cuda_matches_cpu(name + " " + dtype_name(t) + " dim " + std::to_string(dim) + " " + layout_name(l),
                                  {x}, f);
    }
  }
  for (const Shape& s : {Shape{3, 4097}, Shape{4097, 3}, Shape{(int64_t{1} << 20) + 3}}) {
    const Tensor x = random(s, DType::Int32, seed++, -50, 50);  // ties across chunks
    for (int64_t dim = 0; dim < static_cast<int64_t>(s.size()); ++dim)
      for (const auto& [name, f] : cases(dim)) expect_cuda_matches_cpu(name + " " + shape_str(s), {x}, f);
    expect_cuda_matches_cpu("argmax flat " + shape_str(s), {x},
                            [](const std::vector<Tensor>& in) { return argmax(in[0]); });
    expect_cuda_matches_cpu("argmin flat " + shape_str(s), {x},
                            [](const std::vector<Tensor>& in) { return argmin(in[0]); });
  }
  EXPECT_EQ(checks.violations(), 0u);
}

// The unit-stride paths (a warp per row; rows split over blocks and finished by the last
// block, in one launch) against the CPU and against the generic kernel they bypass
// (KernelTuning::reduce_unit_stride off): row lengths around the pack and unroll
// boundaries, misaligned rows, few and many rows, every op with a unit-stride form.
TEST(CudaReduce, UnitStridePathsMatchTheCpuAndTheGenericKernel) {
  WICK_REQUIRE_CUDA();
  AllocationChecks checks;
  uint64_t seed = 700;
  const std::vector<std::pair<std::string, OpFn>> ops = {
      {"sum", [](const std::vector<Tensor>& in) { return sum(in[0], {-1}); }},
      {"mean", [](const std::vector<Tensor>& in) { return mean(in[0], {-1}); }},
      {"amax", [](const std::vector<Tensor>& in) { return amax(in[0], {-1}); }},
      {"var", [](const std::vector<Tensor>& in) { return var(in[0], {-1}); }},
      {"norm", [](const std::vector<Tensor>& in) { return norm(in[0], 2.0, {-1}); }},
      {"logsumexp", [](const std::vector<Tensor>& in) { return logsumexp(in[0], {-1}); }},
      {"argmax", [](const std::vector<Tensor>& in) { return max(in[0], -1).second; }},
      {"full sum", [](const std::vector<Tensor>& in) { return sum(in[0]); }},
      {"full max", [](const std::vector<Tensor>& in) { return max(in[0]); }},
  };
  // (rows, length): one row and a few long rows (split over blocks), many short rows and a
  // few short ones (a warp per row), lengths off the 16-byte pack and the 4-pack unroll.
  // float32 runs every op; the other dtypes the sum and the index form (their pack widths).
  const std::vector<std::pair<int64_t, int64_t>> shapes = {{1, 9001}, {3, 5003}, {50, 9}, {7, 100}, {2, 2049}, {7, 1}};
  for (DType t : {DType::Float32, DType::BFloat16, DType::Float64}) {
    const Tol tol = t == DType::Float32 ? Tol{1e-5, 1e-5} : Tol{default_rtol(t), default_atol(t)};
    for (const auto& [rows, n] : shapes) {
      // The second case starts one element into its storage: rows are misaligned.
      const Tensor full = random({rows * n + 1}, t, seed++, -2, 2);
      for (const Tensor& x : {full.narrow(0, 0, rows * n).view({rows, n}), full.narrow(0, 1, rows * n).view({rows, n})})
        for (const auto& [name, f] : ops) {
          if (t != DType::Float32 && name != "sum" && name != "argmax") continue;
          const std::string what = name + " " + dtype_name(t) + " " + shape_str(x.shape()) + " offset " +
                                   std::to_string(x.offset());
          expect_cuda_matches_cpu(what, {x}, f, tol.rtol, tol.atol);
          // The generic kernel gives the same values (up to the summation order).
          const Tensor xc = same_layout_on(x, Device::cuda());
          const Tensor fast = f({xc}).to(Device::cpu());
          cuda::KernelTuning generic;
          generic.reduce_unit_stride = false;
          cuda::set_kernel_tuning(generic);
          const Tensor slow = f({xc}).to(Device::cpu());
          cuda::set_kernel_tuning({});
          EXPECT_TRUE(all_close(values(fast), values(slow), tol.rtol, tol.atol)) << what;
        }
    }
  }
  EXPECT_EQ(checks.violations(), 0u);
}

// The column kernel (outputs unit-stride: a reduction over the rows of [R, C] or the middle
// dim of [A, R, C]) against the CPU and against the generic kernel it bypasses: packed and
// odd widths, misaligned views, rows split into chunks (finished by the last block of each
// column tile), every op, the index form with ties and NaN, and the same call twice (the
// tickets the first call leaves must be zero for the second).
TEST(CudaReduce, ColumnPathsMatchTheCpuAndTheGenericKernel) {
  WICK_REQUIRE_CUDA();
  AllocationChecks checks;
  uint64_t seed = 1700;
  const std::vector<std::pair<std::string, std::function<Tensor(const Tensor&, int64_t)>>> ops = {
      {"sum", [](const Tensor& x, int64_t d) { return sum(x, {d}); }},
      {"mean", [](const Tensor& x, int64_t d) { return mean(x, {d}); }},
      {"amin", [](const Tensor& x, int64_t d) { return amin(x, {d}); }},
      {"var", [](const Tensor& x, int64_t d) { return var(x, {d}); }},
      {"norm", [](const Tensor& x, int64_t d) { return norm(x, 2.0, {d}); }},
      {"logsumexp", [](const Tensor& x, int64_t d) { return logsumexp(x, {d}); }},
      {"argmax", [](const Tensor& x, int64_t d) { return max(x, d).second; }},
      {"prod", [](const Tensor& x, int64_t d) { return prod(x, {d}); }},
  };
  // (shape, reduced dim): split rows, few rows, odd widths, an outer dim, one column pack.
  const std::vector<std::pair<Shape, int64_t>> shapes = {{{3000, 16}, 0}, {{5, 48}, 0}, {{999, 3}, 0},
                                                         {{4, 260, 8}, 1}, {{2049, 8}, 0}, {{300, 1000}, 0}};
  for (DType t : {DType::Float32, DType::BFloat16, DType::Float64, DType::Int32, DType::UInt8}) {
    const Tol tol = t == DType::Float32 ? Tol{1e-5, 1e-5} : Tol{default_rtol(t), default_atol(t)};
    for (const auto& [shape, dim] : shapes) {
      int64_t numel = 1;
      for (int64_t d : shape) numel *= d;
      // Values in [-1, 1] keep products of long columns finite; integers in [-2, 2] tie.
      const Tensor full = random({numel + 1}, t, seed++, t == DType::UInt8 ? 0 : -1, t == DType::UInt8 ? 3 : 1);
      for (const Tensor& x : {full.narrow(0, 0, numel).view(shape), full.narrow(0, 1, numel).view(shape)})
        for (const auto& [name, f] : ops) {
          const bool floating = is_floating(t);
          if (!floating && name != "sum" && name != "argmax" && name != "amin") continue;
          if (t != DType::Float32 && (name == "var" || name == "norm" || name == "prod")) continue;
          if (name == "prod" && shape[static_cast<size_t>(dim)] > 300) continue;  // underflows to 0 on one side only
          const std::string what = name + " " + dtype_name(t) + " " + shape_str(x.shape()) + " dim " +
                                   std::to_string(dim) + " offset " + std::to_string(x.offset());
          expect_cuda_matches_cpu(what, {x}, [&](const std::vector<Tensor>& in) { return f(in[0], dim); }, tol.rtol,
                                  tol.atol);
          const Tensor xc = same_layout_on(x, Device::cuda());
          const Tensor fast = f(xc, dim).to(Device::cpu());
          const Tensor again = f(xc, dim).to(Device::cpu());
          EXPECT_TRUE(all_close(values(fast), values(again), 0, 0)) << what << ": a second call differs";
          cuda::KernelTuning generic;
          generic.reduce_unit_stride = false;
          cuda::set_kernel_tuning(generic);
          const Tensor slow = f(xc, dim).to(Device::cpu());
          cuda::set_kernel_tuning({});
          EXPECT_TRUE(all_close(values(fast), values(slow), tol.rtol, tol.atol)) << what;
        }
    }
  }
  // NaN and ties in columns: the first maximum's index, NaN wins, across chunks.
  std::vector<double> v = values(random({2500, 16}, DType::Int32, seed++, -3, 3));
  for (size_t i = 5; i < v.size(); i += 613) v[i] = NAN;
  const Tensor special = tensor<double>(v, {2500, 16});
  for (DType t : {DType::Float32, DType::BFloat16})
    for (const auto& [name, f] : ops) {
      if (name != "sum" && name != "argmax" && name != "amin" && name != "logsumexp") continue;
      expect_cuda_matches_cpu(name + " NaN columns " + dtype_name(t), {special.to(t)},
                              [&](const std::vector<Tensor>& in) { return f(in[0], 0); });
    }
  EXPECT_EQ(checks.violations(), 0u);
}

// The split reductions' tickets are kept per host thread and stream (zeroed once, left zero
// by every launch): those of destroyed streams are freed by the next reduction, and a stream
// gets correct results however many splits ran on it before.
TEST(CudaReduce, TicketsOfDestroyedStreamsAreFreed) {
  WICK_REQUIRE_CUDA();
  const Tensor x = random({1 << 16}, DType::Float32, 41).cuda();
  const Tensor cols = random({3000, 16}, DType::Float32, 42).cuda();
  const double want = values(sum(x.cpu()))[0];
  sum(x);  // the default stream's tickets
  cuda::synchronize();
  const size_t before = cuda::memory_stats().allocated;
  {
    std::vector<cuda::Stream> streams;
    for (int i = 0; i < 4; ++i) streams.push_back(cuda::Stream::create());
    for (const cuda::Stream& s : streams) {
      cuda::StreamGuard g(s);
      for (int k = 0; k < 3; ++k) {
        EXPECT_NEAR(values(sum(x))[0], want, 1e-3);
        EXPECT_TRUE(all_close(values(sum(cols, {0})), values(sum(cols.cpu(), {0})), 1e-5, 1e-5));
      }
      s.synchronize();
    }
  }
  sum(x);
  cuda::synchronize();
  EXPECT_EQ(cuda::memory_stats().allocated, before);
}

// Empty, 0-d and expanded (stride 0) inputs: an empty reduced range writes the identity
// without reading the input, and the process stays usable (a failed launch would leave a
// sticky error that breaks every later CUDA call).
TEST(CudaReduce, EmptyZeroDAndExpandedInputs) {
  WICK_REQUIRE_CUDA();
  AllocationChecks checks;
  const std::vector<std::pair<std::string, std::function<Tensor(const Tensor&)>>> ops = {
      {"sum", [](const Tensor& x) { return sum(x, {-3, -2, 3}, true); }},
      {"mean", [](const Tensor& x) { return mean(x, {-3, -2, 3}, true); }},
      {"prod", [](const Tensor& x) { return prod(x, {2}); }},
      {"var", [](const Tensor& x) { return var(x, {2}); }},
      {"norm", [](const Tensor& x) { return norm(x, 2.0, {2}); }},
      {"logsumexp", [](const Tensor& x) { return logsumexp(x, {2}); }},
      {"all", [](const Tensor& x) { return all(x, {2}); }},
      {"any", [](const Tensor& x) { return any(x, {2}); }},
      {"full sum", [](const Tensor& x) { return sum(x); }},
  };
  for (DType t : {DType::Float32, DType::BFloat16, DType::Int64}) {
    // An empty view with an offset: its address is the empty storage's (null) plus the offset.
    const Tensor empty_mid = zeros({8, 6, 0, 2}, t).narrow(0, 2, 6);
    const Tensor zero_d = full({}, Scalar(3.0), t);
    const Tensor expanded = random({6, 1, 5, 1}, t, 31, -2, 2).expand({6, 6, 5, 2});
    for (const Tensor& x : {empty_mid, expanded})
      for (const auto& [name, f] : ops) {
        if (!is_floating(t) && (name == "mean" || name == "var" || name == "norm" || name == "logsumexp")) continue;
        expect_cuda_matches_cpu(name + " " + dtype_name(t) + " " + shape_str(x.shape()) + " strides " +
                                    shape_str(x.strides()),
                                {x}, [&](const std::vector<Tensor>& in) { return f(in[0]); });
      }
    expect_cuda_matches_cpu(std::string("0-d sum ") + dtype_name(t), {zero_d},
                            [](const std::vector<Tensor>& in) { return sum(in[0]); });
    expect_cuda_matches_cpu(std::string("0-d sum over dim 0 ") + dtype_name(t), {zero_d},
                            [](const std::vector<Tensor>& in) { return sum(in[0], {0}); });
  }
  // Still usable.
  const Tensor after = add(ones({4}, Options(DType::Float32, Device::cuda())), Scalar(1.0)).to(Device::cpu());
  EXPECT_EQ(values(after), std::vector<double>(4, 2.0));
  EXPECT_EQ(checks.violations(), 0u);
}

// Kernel contract errors, called through the slot directly.
TEST(CudaReduce, UnsupportedDTypesThrow) {
  WICK_REQUIRE_CUDA();
  const KernelTable& k = kernels(Device::cuda());
  const Tensor xi = zeros({4}, Options(DType::Int32, Device::cuda()));
  const Tensor out = empty({1}, Options(DType::Int32, Device::cuda()));
  expect_error([&] { k.reduce(ReduceOp::Mean, out, xi, 1, 0); }, {"mean", "cuda", "int32"});
  expect_error([&] { k.reduce(ReduceOp::LogSumExp, out, xi, 1, 0); }, {"logsumexp", "cuda", "int32"});
  expect_error([&] { k.softmax(empty({4}, Options(DType::Int32, Device::cuda())), xi, 0, false); },
               {"softmax", "cuda", "int32"});
  const Tensor xf = zeros({4}, Options(DType::Float32, Device::cuda()));
  expect_error([&] { k.reduce_with_index(ReduceOp::Sum, empty({1}, xf.options()), empty({1}, Options(DType::Int64, Device::cuda())), xf, 0); },
               {"reduce_with_index", "sum", "no index form"});
  expect_error([&] { k.reduce(ReduceOp::Sum, empty({1}, xf.options()), xi, 1, 0); }, {"sum", "float32", "int64"});
}

// --- softmax and scans ---------------------------------------------------------------

TEST(CudaSoftmax, RowsColumnsAndLayouts) {
  WICK_REQUIRE_CUDA();
  AllocationChecks checks;
  uint64_t seed = 300;
  // Short rows (a warp each), long rows (a block each, up to 1024 threads), and every dim
  // of a 3-d tensor (columns for the non-last dims).
  const std::vector<std::pair<Shape, int64_t>> cases = {
      {{1}, 0},        {{3}, 0},          {{17, 33}, 1},     {{17, 33}, 0},   {{33, 1000}, 1},  {{8, 1025}, 1},
      {{8, 4097}, 1},  {{2, 20000}, 1},   {{5, 17, 33}, 0},  {{5, 17, 33}, 1}, {{5, 17, 33}, 2}, {{4097, 3}, 0},
      {{}, 0},         {{0, 5}, 1},       {{5, 0}, 1},
      // Rows held in registers: packed (16-byte aligned rows) and element by element, a
      // warp or a block per row, 1 to 8 slots per thread, and just past the limits.
      {{3, 8191}, 1},  {{3, 8192}, 1},    {{2, 8193}, 1},    {{2, 16384}, 1}, {{2, 32768}, 1},  {{2, 32776}, 1},
      // Rows in shared memory (packed rows past the registers' limit, up to 227 KiB as
      // float: float32 and 16-bit), and past that limit (two passes; float64 already).
      {{2, 16388}, 1}, {{2, 50000}, 1},   {{1, 60000}, 1},
      // Several rows of a block group per block (2048 and 4096 elements, a last block with
      // fewer rows), and 16-bit rows of 16392-32768 elements (512 threads, 8 packs each).
      {{5, 4096}, 1},  {{3, 2048}, 1},    {{7, 1032}, 1},    {{3, 16392}, 1}, {{2, 24584}, 1},
  };
  for (DType t : kFloatTypes) {
    // float32: the sum of exponentials is float here and double on the CPU, and log-softmax
    // values near 0 are differences of numbers near log(n) + max.
    const Tol tol = t == DType::Float32 ? Tol{1e-5, 1e-5} : Tol{default_rtol(t), default_atol(t)};
    for (const auto& [shape, dim] : cases) {
      for (Layout l : kAllLayouts) {
        const Tensor x = with_layout(random(shape, t, seed++, -8, 8), l);
        for (bool log : {false, true}) {
          expect_cuda_matches_cpu(std::string(log ? "log_softmax " : "softmax ") + dtype_name(t) + " " +
                                      shape_str(shape) + " dim " + std::to_string(dim) + " " + layout_name(l),
                                  {x}, [&](const std::vector<Tensor>& in) {
                                    return log ? log_softmax(in[0], dim) : softmax(in[0], dim);
                                  }, tol.rtol, tol.atol);
        }
      }
    }
  }
  EXPECT_EQ(checks.violations(), 0u);
}

// Rows in registers or shared memory against the two-pass kernel they replace
// (KernelTuning::softmax_in_registers off), with special values placed in the packed, the
// element-by-element, the block and the shared-memory paths.
TEST(CudaSoftmax, RegisterRowsMatchTheTwoPassKernel) {
  WICK_REQUIRE_CUDA();
  uint64_t seed = 900;
  for (DType t : {DType::Float32, DType::BFloat16, DType::Float64})
    for (const Shape& shape :
         {Shape{37, 10}, Shape{9, 1024}, Shape{3, 4097}, Shape{2, 6000}, Shape{1, 20000}, Shape{2, 40000}}) {
      std::vector<double> v = values(random(shape, DType::Float64, seed++, -30, 30));
      v[3] = -INFINITY;  // drops out
      if (v.size() > 5000) v[4999] = NAN;  // makes the first row NaN
      const Tensor x = tensor<double>(v, shape).to(t).to(Device::cuda());
      for (bool log : {false, true}) {
        const auto run = [&] { return (log ? log_softmax(x, 1) : softmax(x, 1)).to(Device::cpu()); };
        const Tensor fast = run();
        cuda::KernelTuning two_pass;
        two_pass.softmax_in_registers = false;
        cuda::set_kernel_tuning(two_pass);
        const Tensor slow = run();
        cuda::set_kernel_tuning({});
        // float32 log-softmax values near 0 are differences of numbers near 30.
        const double atol = t == DType::Float32 ? 1e-5 : default_atol(t);
        EXPECT_TRUE(all_close(values(fast), values(slow), default_rtol(t), atol))
            << (log ? "log_softmax " : "softmax ") << dtype_name(t) << " " << shape_str(shape);
      }
    }
}

// The special values in long rows (the 16-bit long-row kernel, the shared-memory kernel's
// running max and sum, the register rows of float32): an all -inf row, a row whose first
// thousands of elements are -inf (threads that meet only -inf), a lone +inf, a NaN, a NaN
// among -inf, and a row of one large value; softmax and log-softmax against the CPU.
TEST(CudaSoftmax, SpecialValuesInLongRows) {
  WICK_REQUIRE_CUDA();
  const double inf = INFINITY;
  for (int64_t n : {int64_t{20000}, int64_t{32768}, int64_t{40000}}) {
    std::vector<double> v = values(random({6, n}, DType::Float64, static_cast<uint64_t>(n), -5, 5));
    for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = -inf;                                  // row 0
    for (int64_t i = 0; i < 9000; ++i) v[static_cast<size_t>(n + i)] = -inf;                           // row 1
    v[static_cast<size_t>(2 * n + n / 2)] = inf;                                                       // row 2
    v[static_cast<size_t>(3 * n + 17)] = NAN;                                                          // row 3
    for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(4 * n + i)] = i == 123 ? NAN : -inf;         // row 4
    v[static_cast<size_t>(5 * n + n - 1)] = 80;                                                        // row 5
    const Tensor x = tensor<double>(v, {6, n});
    for (DType t : {DType::Float32, DType::BFloat16, DType::Float16})
      for (bool log : {false, true})
        expect_cuda_matches_cpu(std::string(log ? "log_softmax" : "softmax") + " special long " + dtype_name(t) + " " +
                                    std::to_string(n),
                                {x.to(t)},
                                [&](const std::vector<Tensor>& in) { return log ? log_softmax(in[0], 1) : softmax(in[0], 1); },
                                t == DType::Float32 ? 1e-5 : -1, t == DType::Float32 ? 1e-5 : -1);
  }
}

// -inf entries drop out, an all -inf row and any +inf or NaN make the row NaN (as on the CPU).
TEST(CudaSoftmax, SpecialValues) {
  WICK_REQUIRE_CUDA();
  const double inf = INFINITY;
  const Tensor x = tensor<double>({-inf, 1, 2, 3, -inf, -inf, -inf, -inf, inf, 1, 2, 3, 1, NAN, 2, 3}, {4, 4});
  for (DType t : kFloatTypes)
    for (int64_t dim : {0, 1})
      for (bool log : {false, true})
        expect_cuda_matches_cpu(std::string("special ") + dtype_name(t) + " dim " + std::to_string(dim), {x.to(t)},
                                [&](const std::vector<Tensor>& in) {
                                  return log ? log_softmax(in[0], dim) : softmax(in[0], dim);
                                },
                                t == DType::Float32 ? 1e-5 : -1, t == DType::Float32 ? 1e-5 : -1);
}

TEST(CudaCumsum, EveryDimDTypeAndLength) {
  WICK_REQUIRE_CUDA();
  AllocationChecks checks;
  uint64_t seed = 400;
  // Rows up to 2048 are scanned by a warp, longer ones by a block over several tiles.
  const std::vector<std::pair<Shape, int64_t>> cases = {
      {{1}, 0},          {{3}, 0},          {{17, 33}, 1},     {{17, 33}, 0},     {{4, 2048}, 1},
      {{4, 2049}, 1},    {{3, 10000}, 1},   {{5, 17, 33}, 0},  {{5, 17, 33}, 1},  {{5, 17, 33}, 2},
      {{}, 0},           {{0, 4}, 1},       {{1000, 7}, 0},
  };
  for (DType t : kReduceDtypes) {
    for (const auto& [shape, dim] : cases) {
      for (Layout l : kAllLayouts) {
        if (t != DType::Float32 && (l == Layout::Sliced || l == Layout::Offset)) continue;
        const Tensor x = with_layout(random(shape, t, seed++, -4, 4), l);
        const int64_t n = shape.empty() ? 1 : shape[dim];
        // Both sides accumulate float32 in double; 16-bit floats differ in their last place;
        // float64 prefix sums are added in another order (a scan tree against a serial loop),
        // so they differ by the rounding of n values of magnitude 4.
        const Tol tol = t == DType::Float16    ? Tol{2e-3, 1e-3}
                        : t == DType::BFloat16 ? Tol{1.6e-2, 1e-2}
                        : t == DType::Float64  ? fold_tol(t, n, 4)
                                               : fold_tol(t, 1, 1);
        expect_cuda_matches_cpu(std::string("cumsum ") + dtype_name(t) + " " + shape_str(shape) + " dim " +
                                    std::to_string(dim) + " " + layout_name(l) + " n " + std::to_string(n),
                                {x}, [&](const std::vector<Tensor>& in) { return cumsum(in[0], dim); }, tol.rtol,
                                tol.atol);
      }
    }
  }
  // Integers sum exactly: a long float32 row of small integers must match to the last bit.
  const Tensor ints = random({2, 100000}, DType::Int32, 9, -8, 8).to(DType::Float32);
  expect_cuda_matches_cpu("exact float cumsum", {ints}, [](const std::vector<Tensor>& in) { return cumsum(in[0], 1); },
                          0, 0);
  EXPECT_EQ(checks.violations(), 0u);
}

// The other scans on the cumsum kernel's paths: warp rows (<= 2048), block rows over several
// tiles (> 2048, and > 1024 threads' worth of elements), many rows, columns (non-last dims),
// 0-d and empty, every layout and every dtype each op takes.
TEST(CudaScan, CumprodCummaxCumminLogcumsumexp) {
  WICK_REQUIRE_CUDA();
  AllocationChecks checks;
  uint64_t seed = 500;
  const std::vector<std::pair<Shape, int64_t>> cases = {
      {{1}, 0},         {{3}, 0},          {{17, 33}, 1},    {{17, 33}, 0},     {{4, 1025}, 1},
      {{4, 2049}, 1},   {{3, 10000}, 1},   {{5, 17, 33}, 0}, {{5, 17, 33}, 1},  {{5, 17, 33}, 2},
      {{}, 0},          {{0, 4}, 1},       {{1000, 7}, 0},   {{1000, 7}, -1},   {{600, 40}, 1},
  };
  // The simulator runs every CUDA thread as a fiber: the long and many-row cases (the block
  // and multi-tile paths, which do not depend on the element type) run for one type of each
  // kind (the states are 4, 8 and 16 bytes), the short ones for every dtype.
  auto is_large = [](const Shape& s) { return numel_of(s) > 2000; };
  const std::vector<DType> large_types = {DType::Int32, DType::Float16, DType::Float32, DType::Float64};
  for (DType t : kReduceDtypes) {
    for (const auto& c : cases) {
      const Shape& shape = c.first;
      const int64_t dim = c.second;  // a plain variable: clang 14 cannot capture bindings
      if (is_large(shape) && std::find(large_types.begin(), large_types.end(), t) == large_types.end()) continue;
      for (Layout l : kAllLayouts) {
        if ((t != DType::Float32 || is_large(shape)) && (l == Layout::Sliced || l == Layout::Offset)) continue;
        const std::string where = std::string(dtype_name(t)) + " " + shape_str(shape) + " dim " +
                                  std::to_string(dim) + " " + layout_name(l);
        // Values near +-1 keep long products finite; small integers give cummax ties.
        const Tensor near_one = with_layout(random(shape, t, seed++, 0.9, 1.1), l);
        const Tensor few_values = with_layout(random(shape, DType::Int64, seed++, -3, 3).to(t), l);
        const int64_t n = shape.empty() ? 1 : shape[dim < 0 ? dim + shape.size() : dim];
        const Tol tol = t == DType::Float16    ? Tol{2e-3, 1e-3}
                        : t == DType::BFloat16 ? Tol{1.6e-2, 1e-2}
                        : t == DType::Float64  ? fold_tol(t, n, 1)
                                               : fold_tol(t, 1, 1);
        expect_cuda_matches_cpu("cumprod " + where, {near_one},
                                [&](const std::vector<Tensor>& in) { return cumprod(in[0], dim); }, tol.rtol, tol.atol);
        for (bool is_max : {true, false}) {
          // Values (small integers, exact in float64) and indices side by side.
          expect_cuda_matches_cpu(std::string(is_max ? "cummax " : "cummin ") + where, {few_values},
                                  [&](const std::vector<Tensor>& in) {
                                    auto r = is_max ? cummax(in[0], dim) : cummin(in[0], dim);
                                    return stack({r.first.to(DType::Float64), r.second.to(DType::Float64)});
                                  }, 0, 0);
        }
        if (is_floating(t)) {
          const Tensor x = with_layout(random(shape, t, seed++, -8, 8), l);
          expect_cuda_matches_cpu("logcumsumexp " + where, {x},
                                  [&](const std::vector<Tensor>& in) { return logcumsumexp(in[0], dim); },
                                  t == DType::Float16 || t == DType::BFloat16 ? tol.rtol : 1e-5,
                                  t == DType::Float64 ? 1e-12 : t == DType::Float32 ? 1e-5 : tol.atol);
        }
      }
    }
  }
  EXPECT_EQ(checks.violations(), 0u);
}

// NaN, infinities and ties where a warp or block boundary splits them: the combining steps
// must keep "the latest NaN" and "the last of equal values" across partial prefixes.
TEST(CudaScan, SpecialValuesAcrossTiles) {
  WICK_REQUIRE_CUDA();
  const double inf = INFINITY;
  for (int64_t n : {40, 3000}) {
    std::vector<double> v(static_cast<size_t>(2 * n));
    for (int64_t i = 0; i < n; ++i) {
      v[static_cast<size_t>(i)] = i % 7 == 3 ? 5 : i % 5;                    // ties
      v[static_cast<size_t>(n + i)] = i == n / 3 || i == n - 2 ? NAN : i == 1 ? -inf : i == n / 2 ? inf : i % 3;
    }
    const Tensor x = tensor<double>(v, {2, n});
    for (DType t : kFloatTypes) {
      const std::string what = std::string(dtype_name(t)) + " n " + std::to_string(n);
      for (int64_t dim : {1, 0}) {
        const Tensor xt = dim == 1 ? x.to(t) : x.to(t).t().contiguous();
        for (bool is_max : {true, false}) {
          expect_cuda_matches_cpu(std::string(is_max ? "cummax" : "cummin") + " special " + what, {xt},
                                  [&](const std::vector<Tensor>& in) {
                                    return (is_max ? cummax(in[0], dim) : cummin(in[0], dim)).second;
                                  }, 0, 0);
        }
        expect_cuda_matches_cpu("logcumsumexp special " + what, {xt},
                                [&](const std::vector<Tensor>& in) { return logcumsumexp(in[0], dim); },
                                t == DType::Float32 ? 1e-5 : -1, t == DType::Float32 ? 1e-5 : -1);
        expect_cuda_matches_cpu("cumprod special " + what, {xt},
                                [&](const std::vector<Tensor>& in) { return cumprod(in[0], dim); });
      }
    }
  }
}

TEST(CudaScan, RefusesIntegerLogcumsumexpInTheKernel) {
  WICK_REQUIRE_CUDA();
  const KernelTable& k = kernels(Device::cuda());
  const Tensor xi = zeros({4}, Options(DType::Int32, Device::cuda()));
  expect_error([&] { k.scan(ScanOp::LogSumExp, empty({4}, xi.options()), Tensor(), xi, 0); },
               {"logcumsumexp", "cuda", "int32"});
}

}  // namespace
}  // namespace wick::test
