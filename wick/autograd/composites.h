#pragma once
// Ops built from primitives, each written once for Tensor and Variable (like
// activations.h): they run wherever the primitives run and need no backward of their own.
//
//   lerp(a, b, w)              a + w (b - a)
//   addcmul(x, a, b, value)    x + value a b
//   addcdiv(x, a, b, value)    x + value a / b
//   nan_to_num(x, nan, posinf, neginf)  NaN and infinities replaced (defaults: 0 and the
//                                        dtype's largest finite values)
//   nanmean(x, dims, keepdim)  NaN counted as absent (nansum is a kernel op, wick/tensor/reduce.h)
//   mv(m, v), addmv(x, m, v, beta, alpha), baddbmm(x, a, b, beta, alpha)
//   flip(x, dims), roll(x, shift, dim), repeat(x, repeats), tile(x, reps), unbind(x, dim),
//   movedim(x, from, to), unflatten(x, dim, sizes), tril(x, k), triu(x, k)
//   var_mean / std_mean, clamp with tensor bounds (where with a number: wick/autograd/ops.h)
//   pad, diagonal, repeat_interleave, take, index_fill, index_copy, tensordot, einsum
//   (composite_shape_ops.cpp)
//   max/avg_pool1d and 3d, adaptive_avg_pool1d, adaptive_max_pool2d, avg_pool2d with
//   divisor_override, interpolate (composite_pooling.cpp); conv3d, conv_transpose1d and 3d
//   (composite_conv.cpp)
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <wick/autograd/variable.h>
#include <wick/tensor/conv.h>
#include <wick/tensor/reduce.h>
#include <wick/tensor/tensor.h>

namespace wick {

// --- elementwise, products and shapes (the list above), and clamp with tensor bounds:
// min(max(x, lo), hi), either bound may be absent, broadcast together; NaN in any operand
// gives NaN; lo > hi gives hi. The gradient goes to x where lo <= x <= hi, else to the
// bound that was taken (PyTorch's clamp.Tensor rule). One row each, declared for Tensor
// and for Variable (wick/tensor/mirrored_ops.h).
#define WICK_COMPOSITE_OPS(X, In, Out)                                                                              \
  X(Out, lerp, (In a, In b, double weight), add(a, mul(sub(b, a), weight)))                                         \
  X(Out, lerp, (In a, In b, In weight), add(a, mul(weight, sub(b, a))))                                             \
  X(Out, addcmul, (In x, In a, In b, double value = 1.0), add(x, mul(mul(a, b), value)), Autocast)                  \
  X(Out, addcdiv, (In x, In a, In b, double value = 1.0), add(x, mul(div(a, b), value)), Autocast)                  \
  X(Out, nan_to_num,                                                                                                \
    (In x, double nan = 0.0, std::optional<double> posinf = std::nullopt,                                           \
     std::optional<double> neginf = std::nullopt),                                                                  \
    nan_to_num_of(x, nan, posinf, neginf))                                                                          \
  X(Out, nanmean, (In x, const Dims& dims = {}, bool keepdim = false), nanmean_of(x, dims, keepdim))                \
  X(Out, mv, (In m, In v), mv_of(m, v), Autocast)                                                                   \
  X(Out, addmv, (In x, In m, In v, double beta = 1.0, double alpha = 1.0), scaled_sum(x, mv_of(m, v), beta, alpha), \
    Autocast)                                                                                                       \
  X(Out, baddbmm, (In x, In a, In b, double beta = 1.0, double alpha = 1.0), baddbmm_of(x, a, b, beta, alpha),      \
    Autocast)                                                                                                       \
  X(Out, flip, (In x, const Dims& dims), flip_of(x, dims))                                                          \
  X(Out, roll, (In x, int64_t shift, int64_t dim), roll_of(x, shift, dim))                                          \
  X(Out, repeat, (In x, const Shape& repeats), repeat_of(x, repeats))                                               \
  X(Out, tile, (In x, const Shape& reps), tile_of(x, reps))                                                         \
  X(std::vector<Out>, unbind, (In x, int64_t dim = 0), unbind_of(x, dim))                                           \
  X(Out, movedim, (In x, int64_t source, int64_t destination), movedim_of(x, source, destination))                  \
  X(Out, unflatten, (In x, int64_t dim, const Shape& sizes), unflatten_of(x, dim, sizes))                           \
  X(Out, tril, (In x, int64_t diagonal = 0), triangle_of(x, diagonal, true, "tril"))                                \
  X(Out, triu, (In x, int64_t diagonal = 0), triangle_of(x, diagonal, false, "triu"))                               \
  X(Out, clamp, (In x, const std::optional<Out>& lo, const std::optional<Out>& hi))
#include <wick/autograd/generated/composite_ops_tensor.inc>
#include <wick/autograd/generated/composite_ops.inc>
// The number of nonzero elements (int64), over all or the given dims.
Tensor count_nonzero(const Tensor& x, const Dims& dims = {});

// --- reductions
// (var, mean) and (std, mean) over dims, as torch.var_mean / std_mean.
std::pair<Tensor, Tensor> var_mean(const Tensor& x, const Dims& dims = {}, double correction = 1.0,
                                   bool keepdim = false);
std::pair<Variable, Variable> var_mean(const Variable& x, const Dims& dims = {}, double correction = 1.0,
                                       bool keepdim = false);
std::pair<Tensor, Tensor> std_mean(const Tensor& x, const Dims& dims = {}, double correction = 1.0,
                                   bool keepdim = false);
std::pair<Variable, Variable> std_mean(const Variable& x, const Dims& dims = {}, double correction = 1.0,
                                       bool keepdim = false);

// --- shape and indexing (composite_shape_ops.cpp), one row each below:
// - pad: torch.nn.functional.pad; `pads` lists (before, after) pairs from the last dim
//   backwards. Constant pads may be negative (they crop); reflect needs pads < the dim's
//   size, circular pads <= it, replicate a non-empty dim.
// - diagonal: the diagonal of the dim1 x dim2 planes (offset > 0: above the main one) as a
//   new last dim, as torch.diagonal; a copy here, not a view.
// - repeat_interleave: each slice along dim repeated `repeats` times (or repeats[i] times: a
//   1-d integer tensor of dim's size, or of size 1), in place order; no dim: of the
//   flattened tensor.
// - take: the elements of the flattened x at `index` (any shape; negative counts from the
//   end).
// - index_fill / index_copy: x with the slices at `index` (1-d; index_fill counts negative
//   entries from the end, index_copy refuses them, as PyTorch) along dim set to value, or
//   replaced by the slices of src (with a repeated index the last one wins). index_fill of
//   an x with an empty dim beside `dim` fills nothing and checks no index, as PyTorch's.
// - index: advanced indexing over the leading dims, as x[i0, i1, ...] in PyTorch: integer
//   index tensors (negative counts from the end) broadcast together, or one bool mask over
//   the leading dims; the result is broadcast(indices) + x's remaining dims. index_put:
//   x[indices] = values (broadcast), or += with accumulate (repeated indices then add up;
//   without it the last one wins).
// - masked_scatter: the entries of x where mask (broadcast to x) is true, in order,
//   replaced by the first elements of source.
// - unfold: Tensor.unfold; dim replaced by its (len - size) / step + 1 windows, each
//   window's `size` entries as a new last dim.
// - scatter_reduce: x with src's entries reduced into the positions `index` names along
//   dim, as torch.scatter_reduce: index, src and x have one rank, index is no larger than
//   src in any dim and no larger than x outside dim (only the src entries index covers take
//   part). Sum and Mean scatter-add; Prod, Amax and Amin reduce each target's entries as a
//   segment (memory linear in the sizes), so ties share the gradient as amax/amin's do.
//   include_self = false leaves x out of the reduction where something was scattered, and
//   out of the tie count too (PyTorch counts an excluded x equal to the result as a tie and
//   gives src only part of a gradient that is all src's; wick gives src all of it).
// - embedding_bag: torch.nn.functional.embedding_bag; the rows of weight [num, D] that
//   `input` names, reduced per bag into [B, D]. A 1-d input is cut into bags at `offsets`
//   (starts, increasing; with include_last_offset the last one is the end); a 2-d input
//   [B, L] makes each row a bag (L > 0, as PyTorch). Entries equal to padding_idx
//   (negative: counted from the end of weight) count nowhere. per_sample_weights (input's
//   shape) scale the rows, Sum only. An empty bag gives zeros. Max takes each dim's value
//   from the first entry of the bag (in bag order) that holds the maximum, and that entry
//   alone gets its gradient, as PyTorch's max_indices give it.
// - tensordot: sums a's dims_a against b's dims_b (pairwise, equal sizes); the result has
//   a's other dims then b's. The int form contracts a's last n dims with b's first n.
// - einsum: Einstein summation as torch.einsum: "ij,jk->ik", "bij,bjk", "ii->i",
//   "...ij,...jk->...ik". Letters a-z and A-Z; without "->" the output is the ellipsis dims
//   and then the letters seen once, in alphabetical order. Repeated letters in one operand
//   take its diagonal; size-1 dims broadcast (against 0 too); a size-0 label makes its sums
//   0 and its results empty. Operands are contracted left to right, each pair by one bmm.
enum class PadMode { Constant, Reflect, Replicate, Circular };
enum class ScatterReduce { Sum, Prod, Mean, Amax, Amin };
enum class EmbeddingBagMode { Sum, Mean, Max };
struct EmbeddingBagOptions {
  EmbeddingBagMode mode = EmbeddingBagMode::Mean;  // PyTorch's default
  Tensor per_sample_weights;
  bool include_last_offset = false;
  std::optional<int64_t> padding_idx;
};
#define WICK_COMPOSITE_INDEXING_OPS(X, In, Out)                                                                        \
  X(Out, pad, (In x, const std::vector<int64_t>& pads, PadMode mode = PadMode::Constant, double value = 0.0),          \
    pad_of(x, pads, mode, value))                                                                                      \
  X(Out, diagonal, (In x, int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1), diagonal_of(x, offset, dim1, dim2)) \
  X(Out, repeat_interleave, (In x, int64_t repeats, std::optional<int64_t> dim = std::nullopt),                        \
    repeat_interleave_of(x, {repeats}, dim))                                                                           \
  X(Out, repeat_interleave, (In x, const Tensor& repeats, std::optional<int64_t> dim = std::nullopt),                  \
    repeat_interleave_of(x, repeat_counts(repeats), dim))                                                              \
  X(Out, take, (In x, const Tensor& index), take_of(x, index))                                                         \
  X(Out, index_fill, (In x, int64_t dim, const Tensor& index, const Scalar& value),                                    \
    index_fill_of(x, dim, index, value))                                                                               \
  X(Out, index_copy, (In x, int64_t dim, const Tensor& index, In src), index_copy_of(x, dim, index, src))              \
  X(Out, index, (In x, const std::vector<Tensor>& indices), index_of(x, indices))                                      \
  X(Out, index_put, (In x, const std::vector<Tensor>& indices, In values, bool accumulate = false),                    \
    index_put_of(x, indices, values, accumulate), Autocast)                                                            \
  X(Out, masked_scatter, (In x, const Tensor& mask, In source), masked_scatter_of(x, mask, source))                    \
  X(Out, unfold, (In x, int64_t dim, int64_t size, int64_t step), unfold_of(x, dim, size, step))                       \
  X(Out, scatter_reduce,                                                                                               \
    (In x, int64_t dim, const Tensor& index, In src, ScatterReduce reduce, bool include_self = true),                  \
    scatter_reduce_of(x, dim, index, src, reduce, include_self))                                                       \
  X(Out, embedding_bag,                                                                                                \
    (In weight, const Tensor& input, const Tensor& offsets = Tensor(), const EmbeddingBagOptions& options = {}),       \
    embedding_bag_of(weight, input, offsets, options))
#include <wick/autograd/generated/composite_indexing_ops_tensor.inc>
#include <wick/autograd/generated/composite_indexing_ops.inc>
// tensordot and einsum (composite_contractions.cpp), as described above.
#define WICK_COMPOSITE_CONTRACTION_OPS(X, In, Out)                                                            \
  X(Out, tensordot, (In a, In b, const Dims& dims_a, const Dims& dims_b), tensordot_of(a, b, dims_a, dims_b), \
    Autocast)                                                                                                 \
  X(Out, tensordot, (In a, In b, int64_t n), tensordot_n(a, b, n), Autocast)                                  \
  X(Out, einsum, (const std::string& equation, const std::vector<Out>& operands), einsum_of(equation, operands))
#include <wick/autograd/generated/composite_contraction_ops_tensor.inc>
#include <wick/autograd/generated/composite_contraction_ops.inc>
// A 3-d window: depth, height, width.
struct Size3 {
  int64_t d = 0, h = 0, w = 0;
  Size3(int64_t v) : d(v), h(v), w(v) {}  // NOLINT(google-explicit-constructor)
  Size3(int64_t d_, int64_t h_, int64_t w_) : d(d_), h(h_), w(w_) {}
};

// --- convolutions from conv2d (composite_conv.cpp), one row each below:
// - conv_transpose1d: input [N, Ci, L] or [Ci, L], weight [Ci, Co / groups, K].
// - conv3d: input [N, Ci, D, H, W] or unbatched, weight [Co, Ci / groups, KD, KH, KW]: one
//   conv2d over the depth slices per kernel depth tap, summed (the gradient is conv2d's).
// - conv_transpose3d: input [N, Ci, D, H, W] or unbatched, weight [Ci, Co / groups, KD, KH,
//   KW]; output size (D - 1) * stride - 2 * padding + dilation * (KD - 1) + output_padding +
//   1 per dim (output_padding smaller than the stride or the dilation): one
//   conv_transpose2d over the depth slices per kernel depth tap, added into its output
//   depths. As conv_transpose2d, a size of 0 gives the empty tensor.
// - im2col: torch.nn.functional.unfold; input [N, C, H, W] or [C, H, W] to [N, C * kH * kW,
//   L] with one column per sliding window (L = Ho * Wo), channel-major then kernel row,
//   column. col2im (fold) is its adjoint: the columns summed back into [N, C, H, W] of
//   output_size.
#define WICK_COMPOSITE_CONV_OPS(X, In, Out)                                                                           \
  X(Out, conv_transpose1d,                                                                                            \
    (In x, In weight, In bias = Out(), int64_t stride = 1, int64_t padding = 0, int64_t output_padding = 0,           \
     int64_t groups = 1, int64_t dilation = 1),                                                                       \
    conv_transpose1d_of(x, weight, bias, stride, padding, output_padding, groups, dilation), Autocast)                \
  X(Out, conv3d,                                                                                                      \
    (In x, In weight, In bias = Out(), Size3 stride = 1, Size3 padding = 0, Size3 dilation = 1, int64_t groups = 1),  \
    conv3d_of(x, weight, bias, stride, padding, dilation, groups), Autocast)                                          \
  X(Out, conv_transpose3d,                                                                                            \
    (In x, In weight, In bias = Out(), Size3 stride = 1, Size3 padding = 0, Size3 output_padding = 0,                 \
     int64_t groups = 1, Size3 dilation = 1),                                                                         \
    conv_transpose3d_of(x, weight, bias, stride, padding, output_padding, groups, dilation), Autocast)                \
  X(Out, im2col, (In x, Size2 kernel, Size2 dilation = 1, Size2 padding = 0, Size2 stride = 1),                       \
    im2col_of(x, kernel, dilation, padding, stride))                                                                  \
  X(Out, col2im, (In cols, Size2 output_size, Size2 kernel, Size2 dilation = 1, Size2 padding = 0, Size2 stride = 1), \
    col2im_of(cols, output_size, kernel, dilation, padding, stride))
#include <wick/autograd/generated/composite_conv_ops_tensor.inc>
#include <wick/autograd/generated/composite_conv_ops.inc>
// --- pooling and resampling (composite_pooling.cpp), from the 2-d pooling kernels
// 1-d pooling of [N, C, L] or [C, L]: 2-d pooling of a height-1 plane. max_pool1d's Tensor
// form returns (values, indices along L).
std::pair<Tensor, Tensor> max_pool1d(const Tensor& x, int64_t kernel, std::optional<int64_t> stride = std::nullopt,
                                     int64_t padding = 0, int64_t dilation = 1, bool ceil_mode = false);
Variable max_pool1d(const Variable& x, int64_t kernel, std::optional<int64_t> stride = std::nullopt,
                    int64_t padding = 0, int64_t dilation = 1, bool ceil_mode = false);
// Max over the adaptive cells of adaptive_avg_pool2d (rows [floor(i H / Ho), ceil((i + 1) H
// / Ho))); the Tensor form returns (values, indices h * W + w), the first maximum winning.
std::pair<Tensor, Tensor> adaptive_max_pool2d(const Tensor& x, Size2 output_size);
Variable adaptive_max_pool2d(const Variable& x, Size2 output_size);
// One row each below:
// - avg_pool1d, adaptive_avg_pool1d: as max_pool1d, 2-d pooling of a height-1 plane.
// - max_pool3d, avg_pool3d: 3-d pooling of [N, C, D, H, W] or [C, D, H, W]. A box window is
//   separable: 2-d pooling of every depth slice, then 1-d pooling along depth (the first
//   maximum in (d, h, w) order wins, as in PyTorch; divisors are per-dim products). Values
//   only.
// - avg_pool2d with divisor_override: divides every window's sum by it.
// - interpolate: torch.nn.functional.interpolate over the dims after [N, C] (1 to 3 of
//   them). Nearest uses PyTorch's index floor(o * in / out) (in float, as PyTorch); Linear
//   is linear, bilinear or trilinear by the number of spatial dims, with align_corners. The
//   size is given, or floor(in * scale_factor) per dim (the scale then maps coordinates, as
//   PyTorch's default).
enum class InterpolateMode { Nearest, Linear };
#define WICK_COMPOSITE_POOLING_OPS(X, In, Out)                                                                        \
  X(Out, avg_pool1d,                                                                                                  \
    (In x, int64_t kernel, std::optional<int64_t> stride = std::nullopt, int64_t padding = 0, bool ceil_mode = false, \
     bool count_include_pad = true),                                                                                  \
    avg_pool1d_of(x, kernel, stride, padding, ceil_mode, count_include_pad))                                          \
  X(Out, adaptive_avg_pool1d, (In x, int64_t output_size), adaptive_avg_pool1d_of(x, output_size))                    \
  X(Out, max_pool3d,                                                                                                  \
    (In x, Size3 kernel, std::optional<Size3> stride = std::nullopt, Size3 padding = 0, Size3 dilation = 1,           \
     bool ceil_mode = false),                                                                                         \
    max_pool3d_of(x, kernel, stride, padding, dilation, ceil_mode))                                                   \
  X(Out, avg_pool3d,                                                                                                  \
    (In x, Size3 kernel, std::optional<Size3> stride = std::nullopt, Size3 padding = 0, bool ceil_mode = false,       \
     bool count_include_pad = true, std::optional<int64_t> divisor_override = std::nullopt),                          \
    avg_pool3d_of(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override))                        \
  X(Out, avg_pool2d,                                                                                                  \
    (In x, Size2 kernel, std::optional<Size2> stride, Size2 padding, bool ceil_mode, bool count_include_pad,          \
     std::optional<int64_t> divisor_override),                                                                        \
    avg_pool2d_override(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override))                  \
  X(Out, interpolate,                                                                                                 \
    (In x, const Shape& size, InterpolateMode mode = InterpolateMode::Nearest,                                        \
     std::optional<bool> align_corners = std::nullopt),                                                               \
    interpolate_of(x, size, {}, mode, align_corners), Autocast)                                                       \
  X(Out, interpolate,                                                                                                 \
    (In x, const std::vector<double>& scale_factor, InterpolateMode mode = InterpolateMode::Nearest,                  \
     std::optional<bool> align_corners = std::nullopt),                                                               \
    interpolate_scaled(x, scale_factor, mode, align_corners), Autocast)
#include <wick/autograd/generated/composite_pooling_ops_tensor.inc>
#include <wick/autograd/generated/composite_pooling_ops.inc>
}  // namespace wick
