#pragma once
// The sort family on Variables (the Tensor forms, and the order and tie rules, are in
// wick/tensor/sort.h), and quantile / nanquantile for Tensor and Variable alike.
//
// The values of sort, topk, kthvalue, median and nanmedian along a dim, and mode, are the
// input gathered at the returned indices, so their gradient goes to exactly those
// positions (gather's backward, differentiable again). median() / nanmedian() of all
// elements are in wick/autograd/ops.h. Indices and unique are not differentiable.
#include <optional>
#include <utility>

#include <wick/autograd/variable.h>
#include <wick/tensor/sort.h>

namespace wick {

// sort, topk, kthvalue, median and nanmedian along a dim, mode: from their rows in
// wick/tensor/sort.h.
#include <wick/autograd/generated/sort_ops.inc>
// torch.quantile: the q-th quantiles (q a number, or a 1-d tensor of x's dtype whose size
// becomes the result's first dim) of all elements, or along dim (removed unless keepdim;
// without a dim, keepdim keeps every dim as size 1). With rank r = q (n - 1) in the sorted
// values (computed in x's dtype, as PyTorch: rounded once to float32 for a float32 input, so
// a float32 slice has at most 2^24 elements; among tied values the sort keeps input order,
// so the rank alone decides which of them is picked and gets the gradient): linear
// interpolates between floor(r) and ceil(r) as torch.lerp does (from the nearer end, so
// infinite neighbours may give NaN as in PyTorch), lower / higher take them,
// midpoint is the interpolation at 1/2, nearest rounds r half to even. Float32/float64 inputs only, q in
// [0, 1], x not empty. quantile gives NaN where a reduced slice has a NaN; nanquantile
// ignores NaN (r from the count of numbers; NaN for an all-NaN slice). The gradient flows
// through the gathered sorted values and the interpolation weights.
// One row each, declared for Tensor and for Variable (wick/tensor/mirrored_ops.h).
enum class QuantileInterpolation { Linear, Lower, Higher, Midpoint, Nearest };
#define WICK_QUANTILE_OPS(X, In, Out)                                                        \
  X(Out, quantile,                                                                           \
    (In x, double q, std::optional<int64_t> dim = std::nullopt, bool keepdim = false,        \
     QuantileInterpolation interpolation = QuantileInterpolation::Linear),                   \
    quantile_number("quantile", x, q, dim, keepdim, interpolation, false))                   \
  X(Out, quantile,                                                                           \
    (In x, const Tensor& q, std::optional<int64_t> dim = std::nullopt, bool keepdim = false, \
     QuantileInterpolation interpolation = QuantileInterpolation::Linear),                   \
    quantile_of("quantile", x, q, dim, keepdim, interpolation, false))                       \
  X(Out, nanquantile,                                                                        \
    (In x, double q, std::optional<int64_t> dim = std::nullopt, bool keepdim = false,        \
     QuantileInterpolation interpolation = QuantileInterpolation::Linear),                   \
    quantile_number("nanquantile", x, q, dim, keepdim, interpolation, true))                 \
  X(Out, nanquantile,                                                                        \
    (In x, const Tensor& q, std::optional<int64_t> dim = std::nullopt, bool keepdim = false, \
     QuantileInterpolation interpolation = QuantileInterpolation::Linear),                   \
    quantile_of("nanquantile", x, q, dim, keepdim, interpolation, true))
#include <wick/autograd/generated/quantile_ops_tensor.inc>
#include <wick/autograd/generated/quantile_ops.inc>
}  // namespace wick
