// conv3d, conv_transpose1d/3d, im2col (F.unfold) and col2im (F.fold) of composites.h, from
// conv2d / conv_transpose2d, strided slices and index_add: for Tensor and Variable alike.
#include <wick/autograd/composites.h>

#include <wick/autograd/autocast.h>
#include <wick/autograd/functions/composite_support.h>
#include <wick/autograd/nn_ops.h>
#include <wick/autograd/ops.h>
#include <wick/tensor/conv.h>
#include <wick/tensor/elementwise.h>
#include <wick/tensor/factories.h>
#include <wick/tensor/indexing.h>
#include <wick/tensor/join.h>
#include <wick/tensor/shape.h>

namespace wick {

namespace {

using namespace composite_support;

bool defined(const Tensor& t) { return t.defined(); }
bool defined(const Variable& v) { return v.defined(); }

template <class T>
T conv_transpose1d_of(const T& x, const T& w, const T& b, int64_t s, int64_t p, int64_t op, int64_t g, int64_t d) {
  const Tensor& v = values(x);
  WICK_CHECK(v.dim() == 2 || v.dim() == 3, "conv_transpose1d: expected a 2-d or 3-d input, got shape ",
             shape_str(v.shape()));
  WICK_CHECK(values(w).dim() == 3,
             "conv_transpose1d: expected a 3-d weight [in_channels, out_channels / groups, K], "
             "got shape ",
             shape_str(values(w).shape()));
  const int64_t plane = v.dim() - 1;  // the height-1 dim goes before L
  T y =
      conv_transpose2d(unsqueeze(x, plane), unsqueeze(w, 2), b, Size2(1, s), Size2(0, p), Size2(0, op), g, Size2(1, d));
  return squeeze(y, plane);
}

// conv3d = sum over the kernel's depth taps kd of conv2d(depth slices kd*dd + o*sd of the
// depth-padded input, weight[:, :, kd]), the depth slices batched.
template <class T>
T conv3d_of(const T& x_in, const T& w, const T& b, Size3 s, Size3 p, Size3 d, int64_t groups) {
  const Tensor& v = values(x_in);
  WICK_CHECK(v.dim() == 4 || v.dim() == 5, "conv3d: expected a 4-d or 5-d input, got shape ", shape_str(v.shape()));
  const Tensor& wv = values(w);
  WICK_CHECK(wv.dim() == 5, "conv3d: expected a 5-d weight [out_channels, in_channels / groups, kD, kH, kW], got ",
             shape_str(wv.shape()));
  WICK_CHECK(s.d > 0 && d.d > 0 && p.d >= 0, "conv3d: stride and dilation must be positive and padding non-negative");
  const bool batched = v.dim() == 5;
  T x = batched ? x_in : unsqueeze(x_in, 0);
  const Shape xs = values(x).shape();  // [N, C, D, H, W]
  const int64_t kd = wv.size(2), span = d.d * (kd - 1) + 1;
  const int64_t out_d = (xs[2] + 2 * p.d - span) / s.d + 1;
  WICK_CHECK(xs[2] + 2 * p.d >= span && out_d > 0, "conv3d: output size would be <= 0: input ", shape_str(v.shape()),
             " padded by ", p.d, " in depth is shallower than the kernel (", span, ")");
  if (p.d > 0) x = pad(x, {0, 0, 0, 0, p.d, p.d});
  T sum;
  for (int64_t k = 0; k < kd; ++k) {
    const int64_t first = k * d.d;
    T slab = slice(x, 2, first, first + (out_d - 1) * s.d + 1, s.d);  // [N, C, Do, H, W]
    T planes = reshape(permute(slab, {0, 2, 1, 3, 4}), {xs[0] * out_d, xs[1], xs[3], xs[4]});
    T y = conv2d(planes, select(w, 2, k), T(), Size2(s.h, s.w), Size2(p.h, p.w), Size2(d.h, d.w), groups);
    sum = k == 0 ? y : add(sum, y);
  }
  const Shape ys = values(sum).shape();  // [N * Do, Co, Ho, Wo]
  T out = permute(reshape(sum, {xs[0], out_d, ys[1], ys[2], ys[3]}), {0, 2, 1, 3, 4});
  if (defined(b)) {
    WICK_CHECK(values(b).dim() == 1 && values(b).size(0) == ys[1], "conv3d: bias ", shape_str(values(b).shape()),
               " must have one entry per output channel (", ys[1], ")");
    out = add(out, reshape(b, {ys[1], 1, 1, 1}));
  }
  return batched ? out : squeeze(out, 0);
}

// conv_transpose3d, the adjoint of conv3d: each kernel depth tap kd takes every input depth
// slice i through conv_transpose2d with weight[:, :, kd] (height and width as PyTorch's
// conv_transpose2d) to output depth i * sd + kd * dd - pd; the taps are summed there with
// index_add into the unpadded depth range, which is then cut by pd at the front and cut or
// extended with zeros at the back to the output depth (output_padding).
template <class T>
T conv_transpose3d_of(const T& x_in, const T& w, const T& b, Size3 s, Size3 p, Size3 op, int64_t groups, Size3 d) {
  const char* name = "conv_transpose3d";
  const Tensor& v = values(x_in);
  const Tensor& wv = values(w);
  WICK_CHECK(v.defined() && (v.dim() == 4 || v.dim() == 5), name, ": expected a 4-d or 5-d input, got ",
             v.defined() ? shape_str(v.shape()) : "undefined");
  WICK_CHECK(wv.defined() && wv.dim() == 5, name,
             ": expected a 5-d weight [in_channels, out_channels / groups, kD, "
             "kH, kW], got ",
             wv.defined() ? shape_str(wv.shape()) : "undefined");
  const bool batched = v.dim() == 5;
  const T x = batched ? x_in : unsqueeze(x_in, 0);
  const Shape xs = values(x).shape();  // [N, Ci, D, H, W]
  WICK_CHECK(groups >= 1 && xs[1] % groups == 0, name, ": groups (", groups,
             ") must be positive and divide "
             "in_channels; input ",
             shape_str(v.shape()), ", weight ", shape_str(wv.shape()));
  WICK_CHECK(wv.size(0) == xs[1], name, ": input ", shape_str(v.shape()), " has ", xs[1], " channels but weight ",
             shape_str(wv.shape()), " expects ", wv.size(0));
  const int64_t co = wv.size(1) * groups;
  const int64_t in[3] = {xs[2], xs[3], xs[4]}, ss[3] = {s.d, s.h, s.w}, ps[3] = {p.d, p.h, p.w},
                ops[3] = {op.d, op.h, op.w}, ds[3] = {d.d, d.h, d.w};
  Shape out_shape = {xs[0], co, 0, 0, 0};
  for (int k = 0; k < 3; ++k) {
    WICK_CHECK(ss[k] >= 1 && ds[k] >= 1 && ps[k] >= 0, name,
               ": stride and dilation must be positive and padding "
               "non-negative, got stride (",
               s.d, ", ", s.h, ", ", s.w, "), padding (", p.d, ", ", p.h, ", ", p.w, "), dilation (", d.d, ", ", d.h,
               ", ", d.w, ")");
    // PyTorch's rule: smaller than the stride or the dilation.
    WICK_CHECK(ops[k] >= 0 && (ops[k] < ss[k] || ops[k] < ds[k]), name, ": output_padding (", op.d, ", ", op.h, ", ",
               op.w, ") must be non-negative and smaller than either the stride (", s.d, ", ", s.h, ", ", s.w,
               ") or the dilation (", d.d, ", ", d.h, ", ", d.w, ")");
    WICK_CHECK(in[k] > 0, name, ": expected a non-empty depth, height and width, got input ", shape_str(v.shape()));
    out_shape[2 + k] = (in[k] - 1) * ss[k] - 2 * ps[k] + ds[k] * (wv.size(2 + k) - 1) + ops[k] + 1;
  }
  // A size of 0 is an empty output (as PyTorch); only a negative one is refused.
  for (int k = 0; k < 3; ++k)
    WICK_CHECK(out_shape[2 + k] >= 0, name, ": output size would be < 0 (", shape_str(out_shape), ") for input ",
               shape_str(v.shape()), " and weight ", shape_str(wv.shape()));
  if (defined(b))
    WICK_CHECK(values(b).dim() == 1 && values(b).size(0) == co, name, ": bias ", shape_str(values(b).shape()),
               " must have one entry per output channel (", co, ")");
  const int64_t kd = wv.size(2), full_d = (xs[2] - 1) * s.d + d.d * (kd - 1) + 1;
  const T planes = reshape(permute(x, {0, 2, 1, 3, 4}), {xs[0] * xs[2], xs[1], xs[3], xs[4]});
  T acc = constant(x, zeros({xs[0], co, full_d, out_shape[3], out_shape[4]}, v.options()));
  for (int64_t k = 0; k < kd; ++k) {
    const T y = conv_transpose2d(planes, select(w, 2, k), T(), Size2(s.h, s.w), Size2(p.h, p.w), Size2(op.h, op.w),
                                 groups, Size2(d.h, d.w));  // [N * D, Co, Ho, Wo]
    const T slab = permute(reshape(y, {xs[0], xs[2], co, out_shape[3], out_shape[4]}), {0, 2, 1, 3, 4});
    const Tensor at = arange(k * d.d, k * d.d + (xs[2] - 1) * s.d + 1, s.d, Options(DType::Int64, v.device()));
    acc = index_add(acc, 2, at, slab);
  }
  T out = pad(acc, {0, 0, 0, 0, -p.d, out_shape[2] - (full_d - p.d)});
  if (defined(b)) out = add(out, reshape(b, {co, 1, 1, 1}));
  return batched ? out : squeeze(out, 0);
}

// The sliding windows of a padded plane of `in` rows or columns.
int64_t windows(const char* op, int64_t in, int64_t k, int64_t d, int64_t p, int64_t s) {
  WICK_CHECK(k > 0 && d > 0 && s > 0 && p >= 0, op,
             ": kernel, dilation and stride must be positive and padding "
             "non-negative");
  const int64_t span = d * (k - 1) + 1;
  WICK_CHECK(in + 2 * p >= span, op, ": the window (", span, ") is larger than the padded input (", in + 2 * p, ")");
  return (in + 2 * p - span) / s + 1;
}

template <class T>
T im2col_of(const T& x_in, Size2 k, Size2 d, Size2 p, Size2 s) {
  const Tensor& v = values(x_in);
  WICK_CHECK(v.dim() == 3 || v.dim() == 4, "unfold (im2col): expected a 3-d or 4-d input, got shape ",
             shape_str(v.shape()));
  const bool batched = v.dim() == 4;
  const T x = batched ? x_in : unsqueeze(x_in, 0);
  const Shape xs = values(x).shape();
  const int64_t ho = windows("unfold (im2col)", xs[2], k.h, d.h, p.h, s.h);
  const int64_t wo = windows("unfold (im2col)", xs[3], k.w, d.w, p.w, s.w);
  const T xp = (p.h > 0 || p.w > 0) ? pad(x, {p.w, p.w, p.h, p.h}) : x;
  std::vector<T> taps;
  for (int64_t i = 0; i < k.h; ++i)
    for (int64_t j = 0; j < k.w; ++j) {
      const T rows = slice(xp, 2, i * d.h, i * d.h + (ho - 1) * s.h + 1, s.h);
      taps.push_back(slice(rows, 3, j * d.w, j * d.w + (wo - 1) * s.w + 1, s.w));  // [N, C, Ho, Wo]
    }
  T cols = reshape(stack(taps, 2), {xs[0], xs[1] * k.h * k.w, ho * wo});
  return batched ? cols : squeeze(cols, 0);
}

template <class T>
T col2im_of(const T& cols_in, Size2 out, Size2 k, Size2 d, Size2 p, Size2 s) {
  const Tensor& v = values(cols_in);
  WICK_CHECK(v.dim() == 2 || v.dim() == 3, "fold (col2im): expected a 2-d or 3-d input, got shape ",
             shape_str(v.shape()));
  const bool batched = v.dim() == 3;
  const T cols = batched ? cols_in : unsqueeze(cols_in, 0);
  const Shape cs = values(cols).shape();
  const int64_t taps = k.h * k.w;
  WICK_CHECK(taps > 0 && cs[1] % taps == 0, "fold (col2im): input ", shape_str(v.shape()),
             " dim 1 must be a multiple "
             "of the kernel's ",
             taps, " taps");
  const int64_t ho = windows("fold (col2im)", out.h, k.h, d.h, p.h, s.h);
  const int64_t wo = windows("fold (col2im)", out.w, k.w, d.w, p.w, s.w);
  WICK_CHECK(cs[2] == ho * wo, "fold (col2im): input ", shape_str(v.shape()), " has ", cs[2], " columns but output (",
             out.h, ", ", out.w, ") with these windows has ", ho * wo);
  const int64_t C = cs[1] / taps, hp = out.h + 2 * p.h, wp = out.w + 2 * p.w;
  const T split = reshape(cols, {cs[0], C, taps, ho * wo});
  T acc = constant(cols, zeros({cs[0], C, hp * wp}, v.options()));
  for (int64_t i = 0; i < k.h; ++i)
    for (int64_t j = 0; j < k.w; ++j) {
      std::vector<int64_t> at;
      for (int64_t oh = 0; oh < ho; ++oh)
        for (int64_t ow = 0; ow < wo; ++ow) at.push_back((oh * s.h + i * d.h) * wp + ow * s.w + j * d.w);
      const Tensor index = tensor(at).to(v.device());
      acc = index_add(acc, 2, index, select(split, 2, i * k.w + j));
    }
  T y = narrow(narrow(reshape(acc, {cs[0], C, hp, wp}), 2, p.h, out.h), 3, p.w, out.w);
  return batched ? y : squeeze(y, 0);
}

}  // namespace

#include "wick/autograd/generated/composite_conv_ops_defs.inc"

}  // namespace wick
