// The sort kernel on CUDA against the CPU's, and the sort family built on it (wick/tensor/sort.h,
// wick/autograd/sorting.h) on the device: every dtype, both directions, rows of length 1, 2, odd,
// a power of two and over 1024, many short rows, sorted dims in the middle, non-contiguous
// inputs, ties, NaN and infinities, 0-d and empty shapes. Sorting is exact, so results must
// be equal (NaN matching NaN), indices included.
#include <wick/autograd/sorting.h>

#include "tests/support/cuda_compare.h"
#include "tests/support/cuda_debug.h"
#include "tests/support/dtype_sets.h"
#include "tests/support/sort_reference.h"

namespace wick::test {
namespace {

struct SortCase {
  Shape shape;
  int64_t dim;
  Layout layout;
};

const std::vector<SortCase> kSortCases = {
    {{1}, 0, Layout::Contiguous},      {{2}, 0, Layout::Offset},          {{7}, -1, Layout::Sliced},
    {{300, 5}, 1, Layout::Contiguous}, {{5, 33}, 1, Layout::Transposed},  {{3, 1500}, 1, Layout::Offset},
    {{2, 2048}, -1, Layout::Contiguous}, {{4, 6, 3}, 1, Layout::Transposed}, {{6, 1}, 1, Layout::Contiguous},
    {{}, 0, Layout::Contiguous},       {{0, 5}, 1, Layout::Contiguous},   {{3, 0}, 1, Layout::Contiguous},
};

TEST(CudaSort, MatchesCpuOnEveryDtypeShapeAndDirection) {
  WICK_REQUIRE_CUDA();
  AllocationChecks checks;
  uint64_t seed = 1;
  for (DType t : kAllDTypes)
    for (const SortCase& c : kSortCases)
      for (bool descending : {false, true}) {
        if (c.shape.size() < 2 && c.layout == Layout::Transposed) continue;
        const Tensor x = with_layout(random_with_ties(c.shape, t, seed++), c.layout);
        const std::string what = std::string(dtype_name(t)) + " " + shape_str(c.shape) + " dim " +
                                 std::to_string(c.dim) + (descending ? " descending" : " ascending");
        expect_cuda_matches_cpu(what + " values", {x},
                                [&](const std::vector<Tensor>& in) { return sort(in[0], c.dim, descending).first; }, 0,
                                0);
        expect_cuda_matches_cpu(what + " indices", {x},
                                [&](const std::vector<Tensor>& in) { return argsort(in[0], c.dim, descending); }, 0, 0);
      }
  // Continuous values: every key distinct, rows far from a power of two.
  const Tensor x = random({17, 1025}, DType::Float32, 99);
  expect_cuda_matches_cpu("distinct keys", {x}, [](const std::vector<Tensor>& in) { return argsort(in[0], 1, true); },
                          0, 0);
  EXPECT_EQ(checks.violations(), 0u);
}

TEST(CudaSort, SelectionsAndUniqueMatchCpu) {
  WICK_REQUIRE_CUDA();
  uint64_t seed = 100;
  for (DType t : kNumericTypes) {
    const Tensor x = with_layout(random_with_ties({5, 9}, t, seed++), Layout::Transposed);
    const std::string name = dtype_name(t);
    const std::vector<std::pair<std::string, std::function<std::pair<Tensor, Tensor>(const Tensor&)>>> ops = {
        {"topk", [](const Tensor& v) { return topk(v, 3, 1); }},
        {"topk smallest", [](const Tensor& v) { return topk(v, 2, 0, false); }},
        {"kthvalue", [](const Tensor& v) { return kthvalue(v, 4, 1, true); }},
        {"median", [](const Tensor& v) { return median(v, 1); }},
        {"nanmedian", [](const Tensor& v) { return nanmedian(v, 0, true); }},
        {"mode", [](const Tensor& v) { return mode(v, 1); }},
        {"unique", [](const Tensor& v) { return std::pair(unique(v, true).values, unique(v, true).inverse); }},
        {"unique counts", [](const Tensor& v) { return std::pair(unique(v, false, true, 1).values, unique(v, false, true, 1).counts); }},
        {"unique_consecutive",
         [](const Tensor& v) { return std::pair(unique_consecutive(v, true, true, 0).inverse, unique_consecutive(v, true, true).counts); }},
    };
    for (const auto& [op, f] : ops) {
      expect_cuda_matches_cpu(op + " " + name, {x}, [f = f](const std::vector<Tensor>& in) { return f(in[0]).first; }, 0, 0);
      expect_cuda_matches_cpu(op + " " + name + " second", {x}, [f = f](const std::vector<Tensor>& in) { return f(in[0]).second; },
                              0, 0);
    }
    expect_cuda_matches_cpu("median all " + name, {x}, [](const std::vector<Tensor>& in) { return median(in[0]); }, 0, 0);
  }
  const Tensor b = random_with_ties({4, 6}, DType::Bool, 7);
  expect_cuda_matches_cpu("mode bool", {b}, [](const std::vector<Tensor>& in) { return mode(in[0], 1).second; }, 0, 0);
  expect_cuda_matches_cpu("unique bool", {b}, [](const std::vector<Tensor>& in) { return unique(in[0], false, true).counts; },
                          0, 0);
}

// quantile and the Variable forms' gradients on the device (the gradient of
// sum(f(x) * w) for a fixed random w); arithmetic, so within the dtype's tolerance.
TEST(CudaSort, QuantileAndGradientsMatchCpu) {
  WICK_REQUIRE_CUDA();
  using Q = QuantileInterpolation;
  for (DType t : {DType::Float32, DType::Float64}) {
    const Tensor x = with_layout(random({4, 7}, t, 5), Layout::Sliced);
    const Tensor ties = random_with_ties({4, 7}, t, 6);
    const std::vector<std::pair<std::string, std::function<Variable(const Variable&)>>> ops = {
        {"sort", [](const Variable& v) { return sort(v, 0, true).first; }},
        {"topk", [](const Variable& v) { return topk(v, 3).first; }},
        {"kthvalue", [](const Variable& v) { return kthvalue(v, 2, 0).first; }},
        {"median", [](const Variable& v) { return median(v, 1, true).first; }},
        {"median all", [](const Variable& v) { return median(v); }},
        {"mode", [](const Variable& v) { return mode(v, 0).first; }},
        {"quantile", [](const Variable& v) { return quantile(v, 0.35, 1); }},
        {"quantile q tensor", [](const Variable& v) {
           return quantile(v, tensor<double>({0, 0.5, 1}).to(v.dtype()).to(v.data().device()), 0, true, Q::Midpoint);
         }},
        {"nanquantile nearest", [](const Variable& v) { return nanquantile(v, 0.6, std::nullopt, false, Q::Nearest); }},
    };
    for (const auto& [name, f] : ops) {
      const std::string what = name + " " + dtype_name(t);
      for (const Tensor& in : {x, ties})
        expect_cuda_matches_cpu(what, {in}, [f = f](const std::vector<Tensor>& v) { return f(Variable(v[0])).data(); });
      expect_cuda_matches_cpu(what + " gradient", {x}, [f = f](const std::vector<Tensor>& in) {
        Variable v(in[0].clone(), true);
        Variable y = f(v);
        sum(mul(y, Variable(random(y.shape(), y.dtype(), 9).to(in[0].device())))).backward();
        return v.grad().data();
      });
    }
  }
}

}  // namespace
}  // namespace wick::test
