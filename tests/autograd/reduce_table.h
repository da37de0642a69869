#pragma once
// The reductions over dims as one declared table (issue 13, section 1), like the unary
// table: each row gives the Tensor op, the Variable op (when differentiable), a float64
// fold as reference, its dtypes, the kernel it reaches, the tolerance of a CUDA result and
// the per-device marks. tests/autograd/reduce_table_test.cpp checks them;
// bench/op_table_bench.cpp times them on the CPU and CUDA.
#include <cmath>
#include <functional>
#include <vector>

#include "tests/support/dtype_sets.h"
#include "tests/support/reduce_reference.h"
#include "tests/support/row_params.h"

namespace wick::test {

// The result dtype: the input's, int64 for integer inputs (sum, prod), or bool (all/any;
// uint8 stays uint8, as PyTorch's).
enum class ReduceOut { Same, Widened, Truth };

using TolFn = Tol (*)(DType t, int64_t n);

// Sums of n terms of magnitude up to m.
template <int m>
Tol sum_tol(DType t, int64_t n) {
  return fold_tol(t, n, m);
}
inline Tol mean_tol(DType t, int64_t n) {
  Tol tol = fold_tol(t, n, 2);
  tol.atol /= static_cast<double>(std::max<int64_t>(n, 1));
  return tol;
}
// Products, extremes and logsumexp: relative.
inline Tol relative_tol(DType t, int64_t n) {
  Tol tol = fold_tol(t, 1, 1);
  if (t == DType::Float32) tol.rtol = 2e-6 * std::sqrt(static_cast<double>(n)) + 1e-5;
  return tol;
}
inline Tol var_tol(DType t, int64_t n) {
  Tol tol = fold_tol(t, n, 4);
  if (t == DType::Float32) tol.rtol = 3e-5;
  return tol;
}
inline Tol cube_tol(DType t, int64_t n) {
  Tol tol = fold_tol(t, n, 8);
  if (t == DType::Float32) tol.rtol = 2e-5;  // powf and the root add a few ulps
  return tol;
}

using V = const Variable&;

struct ReduceRow {
  const char* name;  // its first word is the function
  ReduceOp kernel;
  std::function<Tensor(const Tensor&, const Dims&, bool)> op;
  std::function<Variable(V, const Dims&, bool)> grad_op;  // null: not differentiable
  Fold ref;
  std::vector<DType> dtypes;
  ReduceOut out;
  TolFn cuda_tol;
  double lo = -2, hi = 2;          // floating inputs (and the gradient cases' domain)
  double int_lo = -2, int_hi = 2;  // integer inputs
  bool empty_ok = true;            // false: refuses to reduce over an empty dim
  bool zeros = false;              // inputs with zeros sprinkled in (all/any)
  bool nans = false;               // ignores NaN: floating inputs have NaN sprinkled in (nan_mask),
                                   // and their gradient there must be 0
  DeviceMarks on = {};             // a row skipped or expected to fail on a device
};

inline Fold sqrt_of(Fold f) {
  return [f](const std::vector<double>& g) { return std::sqrt(f(g)); };
}

inline const std::vector<ReduceRow>& reduce_rows() {
  static const std::vector<ReduceRow> rows = {
      {"sum", ReduceOp::Sum, [](const Tensor& x, const Dims& d, bool k) { return sum(x, d, k); },
       [](V x, const Dims& d, bool k) { return sum(x, d, k); }, ref_sum, kAllDTypes, ReduceOut::Widened, sum_tol<2>},
      // Integer products over {-1, 0, 1} cannot overflow on the CUDA shapes.
      {"prod", ReduceOp::Prod, [](const Tensor& x, const Dims& d, bool k) { return prod(x, d, k); },
       [](V x, const Dims& d, bool k) { return prod(x, d, k); }, ref_prod, kAllDTypes, ReduceOut::Widened, relative_tol,
       0.8, 1.25, -1, 1},
      {"mean", ReduceOp::Mean, [](const Tensor& x, const Dims& d, bool k) { return mean(x, d, k); },
       [](V x, const Dims& d, bool k) { return mean(x, d, k); }, ref_mean, kFloatTypes, ReduceOut::Same, mean_tol},
      {"var", ReduceOp::Var, [](const Tensor& x, const Dims& d, bool k) { return var(x, d, true, k); },
       [](V x, const Dims& d, bool k) { return var(x, d, true, k); }, ref_var(1), kFloatTypes, ReduceOut::Same, var_tol},
      {"var population", ReduceOp::Var, [](const Tensor& x, const Dims& d, bool k) { return var(x, d, false, k); },
       [](V x, const Dims& d, bool k) { return var(x, d, false, k); }, ref_var(0), kFloatTypes, ReduceOut::Same, var_tol},
      {"std", ReduceOp::Var, [](const Tensor& x, const Dims& d, bool k) { return wick::std(x, d, true, k); },
       [](V x, const Dims& d, bool k) { return wick::std(x, d, true, k); }, sqrt_of(ref_var(1)), kFloatTypes, ReduceOut::Same,
       var_tol},
      {"norm 1", ReduceOp::NormP, [](const Tensor& x, const Dims& d, bool k) { return norm(x, 1.0, d, k); },
       [](V x, const Dims& d, bool k) { return norm(x, 1.0, d, k); }, ref_norm(1), kFloatTypes, ReduceOut::Same, sum_tol<2>},
      {"norm 2", ReduceOp::NormP, [](const Tensor& x, const Dims& d, bool k) { return norm(x, 2.0, d, k); },
       [](V x, const Dims& d, bool k) { return norm(x, 2.0, d, k); }, ref_norm(2), kFloatTypes, ReduceOut::Same, sum_tol<4>},
      {"norm 3", ReduceOp::NormP, [](const Tensor& x, const Dims& d, bool k) { return norm(x, 3.0, d, k); },
       [](V x, const Dims& d, bool k) { return norm(x, 3.0, d, k); }, ref_norm(3), kFloatTypes, ReduceOut::Same, cube_tol},
      {"norm 0.5", ReduceOp::NormP, [](const Tensor& x, const Dims& d, bool k) { return norm(x, 0.5, d, k); },
       [](V x, const Dims& d, bool k) { return norm(x, 0.5, d, k); }, ref_norm(0.5), kFloatTypes, ReduceOut::Same,
       relative_tol},
      {"norm inf", ReduceOp::NormP, [](const Tensor& x, const Dims& d, bool k) { return norm(x, INFINITY, d, k); },
       [](V x, const Dims& d, bool k) { return norm(x, INFINITY, d, k); }, ref_norm(INFINITY), kFloatTypes, ReduceOut::Same,
       relative_tol, -2, 2, -2, 2, false},
      {"norm 0", ReduceOp::NormP, [](const Tensor& x, const Dims& d, bool k) { return norm(x, 0.0, d, k); },
       [](V x, const Dims& d, bool k) { return norm(x, 0.0, d, k); }, ref_norm(0), kFloatTypes, ReduceOut::Same, sum_tol<1>,
       -2, 2, -2, 2, true, true},
      {"logsumexp", ReduceOp::LogSumExp, [](const Tensor& x, const Dims& d, bool k) { return logsumexp(x, d, k); },
       [](V x, const Dims& d, bool k) { return logsumexp(x, d, k); }, ref_logsumexp, kFloatTypes, ReduceOut::Same,
       relative_tol},
      {"nansum", ReduceOp::NanSum, [](const Tensor& x, const Dims& d, bool k) { return nansum(x, d, k); },
       [](V x, const Dims& d, bool k) { return nansum(x, d, k); },
       [](const std::vector<double>& g) {
         std::vector<double> numbers;
         for (double v : g)
           if (!std::isnan(v)) numbers.push_back(v);
         return ref_sum(numbers);
       },
       kAllDTypes, ReduceOut::Widened, sum_tol<2>, -2, 2, -2, 2, true, false, /*nans=*/true},
      {"all", ReduceOp::All, [](const Tensor& x, const Dims& d, bool k) { return all(x, d, k); }, nullptr, ref_all,
       kAllDTypes, ReduceOut::Truth, sum_tol<0>, -2, 2, -2, 2, true, true},
      {"any", ReduceOp::Any, [](const Tensor& x, const Dims& d, bool k) { return any(x, d, k); }, nullptr, ref_any,
       kAllDTypes, ReduceOut::Truth, sum_tol<0>, -2, 2, -2, 2, true, true},
      {"amax", ReduceOp::Max, [](const Tensor& x, const Dims& d, bool k) { return amax(x, d, k); },
       [](V x, const Dims& d, bool k) { return amax(x, d, k); }, ref_extremum<true>, kAllDTypes, ReduceOut::Same,
       relative_tol, -2, 2, -2, 2, false},
      {"amin", ReduceOp::Min, [](const Tensor& x, const Dims& d, bool k) { return amin(x, d, k); },
       [](V x, const Dims& d, bool k) { return amin(x, d, k); }, ref_extremum<false>, kAllDTypes, ReduceOut::Same,
       relative_tol, -2, 2, -2, 2, false},
  };
  return rows;
}

inline DType out_dtype(const ReduceRow& r, DType t) {
  switch (r.out) {
    case ReduceOut::Widened: return is_floating(t) ? t : DType::Int64;
    case ReduceOut::Truth: return t == DType::UInt8 ? DType::UInt8 : DType::Bool;
    default: return t;
  }
}

// Where a `nans` row's inputs hold NaN: every fifth element, from the third.
inline Tensor nan_mask(const Shape& shape) {
  std::vector<double> m(static_cast<size_t>(numel_of(shape)));
  for (size_t i = 0; i < m.size(); ++i) m[i] = i % 5 == 2;
  return tensor<double>(m, shape).to(DType::Bool);
}

// An input for row r: its range for t, with zeros or NaN sprinkled in where the row wants them.
inline Tensor row_input(const ReduceRow& r, const Shape& shape, DType t, uint64_t seed) {
  const bool f = is_floating(t);
  Tensor x = random(shape, t, seed, f ? r.lo : r.int_lo, f ? r.hi : r.int_hi);
  if (r.nans && f) return where(nan_mask(shape), Scalar(NAN), x);
  if (!r.zeros || t == DType::Bool) return x;
  std::vector<double> v = values(x);
  for (size_t i = 0; i < v.size(); ++i)
    if (i % 7 == 0 || i % 11 == 3) v[i] = 0;
  return tensor<double>(v, shape).to(t);
}

}  // namespace wick::test
