#pragma once
// Differentiable ops on Variables. Each forwards to the tensor op of the same name and, when
// grad mode is on and an input requires grad, records a named backward node. Backward
// formulas are written with these same ops, so with create_graph they are differentiable too.
#include <vector>

#include <optional>
#include <utility>

#include <wick/autograd/variable.h>
#include <wick/tensor/elementwise.h>
#include <wick/tensor/indexing.h>
#include <wick/tensor/join.h>
#include <wick/tensor/linalg.h>
#include <wick/tensor/reduce.h>
#include <wick/tensor/sort.h>

namespace wick {

// Elementwise (broadcasting; gradients are summed back to each input's shape). The binary
// table's differentiable rows (wick/tensor/op_kinds.h) are declared from it: `Variable
// add(const Variable& a, const Variable& b)` for each, and for add, sub, mul and div (its
// Numbers rows) the forms with a Scalar on either side. minimum and maximum: at ties both
// inputs get half the gradient (as PyTorch). atan2: d/da = b / (a^2 + b^2), d/db = -a /
// (a^2 + b^2). remainder: d/da = 1, d/db = -floor(a / b); fmod takes the dividend's sign.
// floor_divide: no gradient (0), as PyTorch. Comparisons of Variables give bool Tensors (no
// graph): `Tensor eq(const Variable& a, const Variable& b)` and so on, from the Compare rows.
#include <wick/autograd/generated/binary_ops.inc>
Variable pow(const Variable& a, double exponent);
Variable pow(const Scalar& base, const Variable& exponent);
// The unary ops of the table in wick/tensor/op_kinds.h: `Variable expm1(const Variable& x)`
// and so on, one per row, declared in the file included below, which tools/op_list.py
// writes from the table. Formula rows (abs, sqrt, expm1, sin, ..., and floor, round,
// sign..., piecewise constant, with gradient 0 as PyTorch) have the table's derivative; Node
// rows (neg, relu, exp, log, tanh, sigmoid, silu) a backward node of their own (they save
// their output, or fuse).
#include <wick/autograd/generated/unary_ops.inc>
// The elementwise ops with more arguments (where, clamp, leaky_relu, gelu, softplus), from
// their rows in wick/tensor/elementwise.h, each with a backward node of its own. clamp's
// gradient is zero outside [lo, hi] and passes at the bounds themselves.
#include <wick/autograd/generated/elementwise_more_ops.inc>
// Reductions. The reduction table's Formula rows (wick/tensor/op_kinds.h: sum, mean,
// logsumexp) and its Node row (prod, whose node is its own) are declared from the table (the
// file below, written by tools/op_list.py).
#include <wick/autograd/generated/reduce_ops.inc>
// The reductions with more arguments (var, std, norm, amax, amin, max, min, softmax,
// log_softmax), from their rows in wick/tensor/reduce.h, and median / nanmedian of all
// elements, from theirs in wick/tensor/sort.h. norm's gradient at a zero input is zero. max,
// min, amax, amin and the medians share the gradient evenly by the entries equal to the
// result, as torch.amax's; max(x, dim) and min(x, dim) give it to the returned index only.
#include <wick/autograd/generated/reduce_more_ops.inc>
#include <wick/autograd/generated/median_ops.inc>
// The scans, declared from their table (wick/tensor/op_kinds.h). cumprod is twice
// differentiable, with zeros in x too (PyTorch's cumprod_backward); cummax and cummin give
// (values, indices), the gradient going to the recorded indices.
#include <wick/autograd/generated/scan_ops.inc>

// Shapes: the views of Tensor's methods (reshape, view, flatten, transpose, permute,
// squeeze, unsqueeze, expand, broadcast_to, slice, narrow, select, chunk, split), from their
// rows in wick/tensor/tensor.h, the Variable first; narrow and select are slices. cat and
// stack from theirs in wick/tensor/join.h.
#include <wick/autograd/generated/view_ops.inc>
Variable squeeze(const Variable& x);
// A copy of `x` with `src` written into slice(x, dim, start, end, step) (torch.slice_scatter).
Variable slice_scatter(const Variable& x, const Variable& src, int64_t dim, int64_t start, int64_t end,
                       int64_t step = 1);
#include <wick/autograd/generated/join_ops.inc>
// x itself when already contiguous, else a contiguous copy.
Variable contiguous(const Variable& x);
Variable clone(const Variable& x);
// Converts dtype and/or device; the gradient is converted back (a graph may cross devices).
Variable to(const Variable& x, DType t);
Variable to(const Variable& x, Device d);
Variable to(const Variable& x, const Options& o);
// Sums x over the dims that broadcasting added or expanded, so the result has `shape`
// (the inverse of broadcasting, used by every broadcasting op's backward).
Variable sum_to(const Variable& x, const Shape& shape);

// Linear algebra (torch.matmul rules): matmul, mm, bmm, addmm, outer, dot, from their rows
// in wick/tensor/linalg.h.
#include <wick/autograd/generated/linalg_ops.inc>
// x @ weight^T + bias (torch.nn.functional.linear; weight [out, in]); an undefined bias means none.
Variable linear(const Variable& x, const Variable& weight, const Variable& bias = Variable());

// Indexing, from the rows in wick/tensor/indexing.h (index tensors and masks are not
// differentiable). scatter: x's gradient is zero where src overwrote it; src's is the output
// gradient gathered.
#include <wick/autograd/generated/indexing_ops.inc>
inline Variable operator+(const Variable& a, const Variable& b) { return add(a, b); }
inline Variable operator-(const Variable& a, const Variable& b) { return sub(a, b); }
inline Variable operator*(const Variable& a, const Variable& b) { return mul(a, b); }
inline Variable operator/(const Variable& a, const Variable& b) { return div(a, b); }
inline Variable operator+(const Variable& a, const Scalar& b) { return add(a, b); }
inline Variable operator*(const Variable& a, const Scalar& b) { return mul(a, b); }
inline Variable operator-(const Variable& a, const Scalar& b) { return sub(a, b); }
inline Variable operator/(const Variable& a, const Scalar& b) { return div(a, b); }
inline Variable operator+(const Scalar& a, const Variable& b) { return add(a, b); }
inline Variable operator-(const Scalar& a, const Variable& b) { return sub(a, b); }
inline Variable operator*(const Scalar& a, const Variable& b) { return mul(a, b); }
inline Variable operator/(const Scalar& a, const Variable& b) { return div(a, b); }
inline Variable operator-(const Variable& a) { return neg(a); }
// Comparisons are not differentiable: they give bool Tensors.
inline Tensor operator==(const Variable& a, const Variable& b) { return eq(a.data(), b.data()); }
inline Tensor operator!=(const Variable& a, const Variable& b) { return ne(a.data(), b.data()); }
inline Tensor operator<(const Variable& a, const Variable& b) { return lt(a.data(), b.data()); }
inline Tensor operator<=(const Variable& a, const Variable& b) { return le(a.data(), b.data()); }
inline Tensor operator>(const Variable& a, const Variable& b) { return gt(a.data(), b.data()); }
inline Tensor operator>=(const Variable& a, const Variable& b) { return ge(a.data(), b.data()); }
inline Tensor operator==(const Variable& a, const Scalar& b) { return eq(a.data(), b); }
inline Tensor operator!=(const Variable& a, const Scalar& b) { return ne(a.data(), b); }
inline Tensor operator<(const Variable& a, const Scalar& b) { return lt(a.data(), b); }
inline Tensor operator<=(const Variable& a, const Scalar& b) { return le(a.data(), b); }
inline Tensor operator>(const Variable& a, const Scalar& b) { return gt(a.data(), b); }
inline Tensor operator>=(const Variable& a, const Scalar& b) { return ge(a.data(), b); }

}  // namespace wick
