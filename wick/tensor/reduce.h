#pragma once
// Reductions over all elements or over given dims (negative dims count from the end),
// with keepdim; softmax family and the scans along one dim.
#include <optional>
#include <utility>
#include <vector>

#include <wick/tensor/op_kinds.h>
#include <wick/tensor/tensor.h>

namespace wick {

using Dims = std::vector<int64_t>;  // empty = all dims

// The table's Formula, Node and TensorOnly rows (WICK_REDUCE_TABLE in wick/tensor/op_kinds.h):
// sum, prod, all, any, mean, logsumexp(x, dims = {}, keepdim = false). Their dtypes are the
// rows': sum/prod of bool or integers give int64 (wrapping on overflow), of floats keep the
// dtype; mean is floating only; logsumexp reads integers as the default float type; all/any
// give bool (uint8 for uint8, as PyTorch). Float accumulation: in double on the CPU; on CUDA
// in float (float64 in double) over a tree of partial sums, deterministic for a given shape.
// (Declared in the file below, which tools/op_list.py writes from the table.)
#include <wick/tensor/generated/reduce_ops.inc>

// The reductions with more arguments, declared here for Tensors and in wick/autograd/ops.h
// for Variables from these rows (wick/tensor/mirrored_ops.h):
// - var: sum((x - mean)^2) / max(0, n - correction), like torch.var: correction 1 (or true)
//   is the unbiased estimate, 0 (or false) the population variance, any other value is
//   Bessel's correction generalised; std its square root;
// - norm: p = 2, any p > 0, or INFINITY;
// - amax / amin: max / min over several dims (all when dims is empty), values only
//   (torch.amax / amin); max / min: of all elements (an empty tensor throws), or along one
//   dim with the indices (the first index wins ties);
// - softmax / log_softmax along one dim.
#define WICK_REDUCE_MORE_OPS(X, In, Out)                                                                  \
  X(Out, var, (In x, const Dims& dims = {}, double correction = 1.0, bool keepdim = false),               \
    Record<VarStdBackward>(false, x, dims, correction, keepdim))                                          \
  X(Out, std, (In x, const Dims& dims = {}, double correction = 1.0, bool keepdim = false),               \
    Record<VarStdBackward>(true, x, dims, correction, keepdim))                                           \
  X(Out, norm, (In x, double p = 2.0, const Dims& dims = {}, bool keepdim = false),                       \
    Record<NormBackward>(x, p, dims, keepdim), Autocast)                                                  \
  X(Out, amax, (In x, const Dims& dims = {}, bool keepdim = false))                                       \
  X(Out, amin, (In x, const Dims& dims = {}, bool keepdim = false))                                       \
  X(Out, max, (In x), Record<ExtremumBackward>("MaxBackward", x.data(), out.data(), Dims{}, false, true)) \
  X(Out, min, (In x), Record<ExtremumBackward>("MinBackward", x.data(), out.data(), Dims{}, false, true)) \
  X(WithIndices<Out>, max, (In x, int64_t dim, bool keepdim = false))                                     \
  X(WithIndices<Out>, min, (In x, int64_t dim, bool keepdim = false))                                     \
  X(Out, softmax, (In x, int64_t dim), Record<SoftmaxBackward>(false, x, dim), Autocast)                  \
  X(Out, log_softmax, (In x, int64_t dim), Record<SoftmaxBackward>(true, x, dim), Autocast)
#include <wick/tensor/generated/reduce_more_ops.inc>
// Index of the max/min; without a dim, of the flattened tensor.
Tensor argmax(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor argmin(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
// Inclusive scans along one dim, declared from the scan table (WICK_SCAN_OPS in
// wick/tensor/op_kinds.h): cumsum, cumprod, logcumsumexp(x, dim) and cummax, cummin(x, dim)
// giving (values, int64 indices). A 0-d tensor counts as one element; negative dims count
// from the end. cumsum/cumprod of bool and integers give int64 (wrapping on overflow). Of
// equal values cummax/cummin give the last index; once a NaN appears the value stays NaN,
// with the index of the latest NaN (as PyTorch). logcumsumexp is log(cumsum(exp(x)))
// without overflow, floating only.
#include <wick/tensor/generated/scan_ops.inc>

}  // namespace wick
