#pragma once
// Ops built from primitives, each written once for Tensor and Variable (like
// activations.h): they run wherever the primitives run and need no backward of their own.
//
//   lerp(a, b, w)              a + w (b - a)
//   addcmul(x, a, b, value)    x + value a b
//   addcdiv(x, a, b, value)    x + value a / b
//   nan_to_num(x, nan, posinf, neginf)  NaN and infinities replaced (defaults: 0 and the
//                                        dtype's largest finite values)
//   nansum / nanmean(x, dims, keepdim)  NaN counted as absent
//   mv(m, v), addmv(x, m, v, beta, alpha), baddbmm(x, a, b, beta, alpha)
//   flip(x, dims), roll(x, shift, dim), repeat(x, repeats), tile(x, reps), unbind(x, dim),
//   movedim(x, from, to), unflatten(x, dim, sizes), tril(x, k), triu(x, k)
#include <optional>
#include <vector>

#include <wick/autograd/variable.h>
#include <wick/tensor/reduce.h>
#include <wick/tensor/tensor.h>

namespace wick {

Tensor lerp(const Tensor& a, const Tensor& b, double weight);
Variable lerp(const Variable& a, const Variable& b, double weight);
Tensor lerp(const Tensor& a, const Tensor& b, const Tensor& weight);
Variable lerp(const Variable& a, const Variable& b, const Variable& weight);
Tensor addcmul(const Tensor& x, const Tensor& a, const Tensor& b, double value = 1.0);
Variable addcmul(const Variable& x, const Variable& a, const Variable& b, double value = 1.0);
Tensor addcdiv(const Tensor& x, const Tensor& a, const Tensor& b, double value = 1.0);
Variable addcdiv(const Variable& x, const Variable& a, const Variable& b, double value = 1.0);
Tensor nan_to_num(const Tensor& x, double nan = 0.0, std::optional<double> posinf = std::nullopt,
                  std::optional<double> neginf = std::nullopt);
Variable nan_to_num(const Variable& x, double nan = 0.0, std::optional<double> posinf = std::nullopt,
                    std::optional<double> neginf = std::nullopt);
Tensor nansum(const Tensor& x, const Dims& dims = {}, bool keepdim = false);
Variable nansum(const Variable& x, const Dims& dims = {}, bool keepdim = false);
Tensor nanmean(const Tensor& x, const Dims& dims = {}, bool keepdim = false);
Variable nanmean(const Variable& x, const Dims& dims = {}, bool keepdim = false);
Tensor mv(const Tensor& m, const Tensor& v);
Variable mv(const Variable& m, const Variable& v);
Tensor addmv(const Tensor& x, const Tensor& m, const Tensor& v, double beta = 1.0, double alpha = 1.0);
Variable addmv(const Variable& x, const Variable& m, const Variable& v, double beta = 1.0, double alpha = 1.0);
Tensor baddbmm(const Tensor& x, const Tensor& a, const Tensor& b, double beta = 1.0, double alpha = 1.0);
Variable baddbmm(const Variable& x, const Variable& a, const Variable& b, double beta = 1.0, double alpha = 1.0);
Tensor flip(const Tensor& x, const Dims& dims);
Variable flip(const Variable& x, const Dims& dims);
Tensor roll(const Tensor& x, int64_t shift, int64_t dim);
Variable roll(const Variable& x, int64_t shift, int64_t dim);
Tensor repeat(const Tensor& x, const Shape& repeats);
Variable repeat(const Variable& x, const Shape& repeats);
Tensor tile(const Tensor& x, const Shape& reps);
Variable tile(const Variable& x, const Shape& reps);
std::vector<Tensor> unbind(const Tensor& x, int64_t dim = 0);
std::vector<Variable> unbind(const Variable& x, int64_t dim = 0);
Tensor movedim(const Tensor& x, int64_t source, int64_t destination);
Variable movedim(const Variable& x, int64_t source, int64_t destination);
Tensor unflatten(const Tensor& x, int64_t dim, const Shape& sizes);
Variable unflatten(const Variable& x, int64_t dim, const Shape& sizes);
Tensor tril(const Tensor& x, int64_t diagonal = 0);
Variable tril(const Variable& x, int64_t diagonal = 0);
Tensor triu(const Tensor& x, int64_t diagonal = 0);
Variable triu(const Variable& x, int64_t diagonal = 0);

// The number of nonzero elements (int64), over all or the given dims.
Tensor count_nonzero(const Tensor& x, const Dims& dims = {});

}  // namespace wick
