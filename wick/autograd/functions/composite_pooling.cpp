// The pooling and resampling composites of composites.h: 1-d and 3-d pooling, adaptive
// max pooling, avg_pool2d's divisor_override and interpolate, all from the 2-d pooling
// kernels, max over a dim, index_select and arithmetic, so they run on every device the
// primitives run on and their gradients are the primitives'.
#include <wick/autograd/composites.h>

#include <array>
#include <cmath>

#include <wick/autograd/autocast.h>
#include <wick/autograd/functions/composite_support.h>
#include <wick/autograd/nn_ops.h>
#include <wick/autograd/ops.h>
#include <wick/tensor/elementwise.h>
#include <wick/tensor/factories.h>
#include <wick/tensor/indexing.h>
#include <wick/tensor/join.h>
#include <wick/tensor/pool.h>
#include <wick/tensor/reduce.h>

namespace wick {

namespace {

using namespace composite_support;

// The pooled values of either kind (the Tensor max_pool2d also returns indices).
Tensor max_pool_values(const Tensor& x, Size2 k, std::optional<Size2> s, Size2 p, Size2 d, bool ceil) {
  return max_pool2d(x, k, s, p, d, ceil).first;
}
Variable max_pool_values(const Variable& x, Size2 k, std::optional<Size2> s, Size2 p, Size2 d, bool ceil) {
  return max_pool2d(x, k, s, p, d, ceil);
}

// x of rank `batched` or one less (unbatched) as its batched form, and back.
template <class T>
T batch(const char* op, const T& x, int64_t batched) {
  const int64_t nd = values(x).dim();
  WICK_CHECK(nd == batched || nd == batched - 1, op, ": expected a ", batched - 1, "-d or ", batched,
             "-d input, got shape ", shape_str(values(x).shape()));
  return nd == batched ? x : reshape(x, [&] {
    Shape s = values(x).shape();
    s.insert(s.begin(), 1);
    return s;
  }());
}
template <class T>
T unbatch(const T& y, bool was_batched) {
  if (was_batched) return y;
  Shape s = values(y).shape();
  s.erase(s.begin());
  return reshape(y, s);
}

// [N, C, L] as [N, C, 1, L] and back.
template <class T>
T as_plane(const T& x) {
  Shape s = values(x).shape();
  s.insert(s.end() - 1, 1);
  return reshape(x, s);
}
template <class T>
T from_plane(const T& y) {
  Shape s = values(y).shape();
  s.erase(s.end() - 2);
  return reshape(y, s);
}

template <class T>
T max_pool1d_of(const T& x, int64_t k, std::optional<int64_t> s, int64_t p, int64_t d, bool ceil) {
  const bool batched = values(x).dim() == 3;
  T y = max_pool_values(as_plane(batch("max_pool1d", x, 3)), Size2(1, k), Size2(1, s.value_or(k)), Size2(0, p),
                        Size2(1, d), ceil);
  return unbatch(from_plane(y), batched);
}

template <class T>
T avg_pool1d_of(const T& x, int64_t k, std::optional<int64_t> s, int64_t p, bool ceil, bool cip) {
  const bool batched = values(x).dim() == 3;
  T y = avg_pool2d(as_plane(batch("avg_pool1d", x, 3)), Size2(1, k), Size2(1, s.value_or(k)), Size2(0, p), ceil, cip);
  return unbatch(from_plane(y), batched);
}

template <class T>
T adaptive_avg_pool1d_of(const T& x, int64_t out) {
  WICK_CHECK(out >= 0, "adaptive_avg_pool1d: output size must be non-negative, got ", out, " for input ",
             shape_str(values(x).shape()));
  const bool batched = values(x).dim() == 3;
  return unbatch(from_plane(adaptive_avg_pool2d(as_plane(batch("adaptive_avg_pool1d", x, 3)), Size2(1, out))), batched);
}

// Pools along dim 2 of [N, C, D, rest] (the depth of a 3-d pooling) with a 1-d window.
template <class T, class Pool1d>
T pool_depth(const T& x, Pool1d pool) {
  const Shape s = values(x).shape();  // [N, C, D, H, W]
  T planes = reshape(x, {s[0], s[1], s[2], s[3] * s[4]});
  T y = pool(permute(planes, {0, 1, 3, 2}));  // pooled along the last dim: [N, C, H*W, Do]
  const int64_t depth = values(y).size(3);
  return reshape(permute(y, {0, 1, 3, 2}), {s[0], s[1], depth, s[3], s[4]});
}

// 2-d pooling of every depth slice of [N, C, D, H, W].
template <class T, class Pool2d>
T pool_slices(const T& x, Pool2d pool) {
  const Shape s = values(x).shape();
  T y = pool(reshape(x, {s[0], s[1] * s[2], s[3], s[4]}));
  const Shape o = values(y).shape();
  return reshape(y, {s[0], s[1], s[2], o[2], o[3]});
}

template <class T>
T max_pool3d_of(const T& x, Size3 k, std::optional<Size3> s_in, Size3 p, Size3 d, bool ceil) {
  const bool batched = values(x).dim() == 5;
  const Size3 s = s_in.value_or(k);
  T b = batch("max_pool3d", x, 5);
  T hw = pool_slices(b, [&](const T& v) {
    return max_pool_values(v, Size2(k.h, k.w), Size2(s.h, s.w), Size2(p.h, p.w), Size2(d.h, d.w), ceil);
  });
  T y = pool_depth(hw, [&](const T& v) {
    return max_pool_values(v, Size2(1, k.d), Size2(1, s.d), Size2(0, p.d), Size2(1, d.d), ceil);
  });
  return unbatch(y, batched);
}

// The window sizes avg_pool's count_include_pad divides by along one dim: each window
// clipped to the padded input (PyTorch's pool_size).
std::vector<double> padded_window_sizes(int64_t in, int64_t k, int64_t s, int64_t p, int64_t out) {
  std::vector<double> sizes(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    const int64_t start = o * s - p;
    sizes[o] = static_cast<double>(std::min(start + k, in + p) - start);
  }
  return sizes;
}

// The window sizes of `out` (shape [..., dims]) as a tensor broadcast along it, for the
// given per-dim (in, k, s, p).
Tensor window_size_map(const Tensor& out, const std::vector<std::array<int64_t, 4>>& dims) {
  const int64_t nd = out.dim(), first = nd - static_cast<int64_t>(dims.size());
  Tensor map = scalar_tensor(1.0, Options(DType::Float64));
  for (size_t i = 0; i < dims.size(); ++i) {
    const auto [in, k, s, p] = dims[i];
    const int64_t o = out.size(first + static_cast<int64_t>(i));
    Shape shape(static_cast<size_t>(nd), 1);
    shape[first + static_cast<int64_t>(i)] = o;
    map = mul(map, tensor(padded_window_sizes(in, k, s, p, o), shape));
  }
  return map.to(out.options());
}

// sum / divisor_override: the count_include_pad mean times its divisor, over the divisor.
template <class T>
T override_divisor(const T& mean_cip, const std::vector<std::array<int64_t, 4>>& dims, int64_t divisor) {
  WICK_CHECK(divisor != 0, "avg_pool: divisor_override must not be 0");
  return mul(mul(mean_cip, constant(mean_cip, window_size_map(values(mean_cip), dims))), 1.0 / divisor);
}

template <class T>
T avg_pool2d_override(const T& x, Size2 k, std::optional<Size2> s_in, Size2 p, bool ceil, bool cip,
                      std::optional<int64_t> divisor) {
  if (!divisor) return avg_pool2d(x, k, s_in, p, ceil, cip);
  const Size2 s = s_in.value_or(k);
  const Shape& xs = values(x).shape();
  WICK_CHECK(xs.size() >= 2, "avg_pool2d: expected a 3-d or 4-d input, got shape ", shape_str(xs));
  T m = avg_pool2d(x, k, s, p, ceil, true);
  return override_divisor(m, {{xs[xs.size() - 2], k.h, s.h, p.h}, {xs.back(), k.w, s.w, p.w}}, *divisor);
}

template <class T>
T avg_pool3d_of(const T& x, Size3 k, std::optional<Size3> s_in, Size3 p, bool ceil, bool cip,
                std::optional<int64_t> divisor) {
  const bool batched = values(x).dim() == 5;
  const Size3 s = s_in.value_or(k);
  T b = batch("avg_pool3d", x, 5);
  // PyTorch's avg_pool3d wants the unpadded input at least as large as the kernel in every
  // dim, even where padding or ceil_mode would leave a window (avg_pool2d does not ask).
  const Shape& bs = values(b).shape();
  WICK_CHECK(bs[2] >= k.d && bs[3] >= k.h && bs[4] >= k.w, "avg_pool3d: input ", shape_str(values(x).shape()), " (D ",
             bs[2], ", H ", bs[3], ", W ", bs[4], ") is smaller than the kernel (", k.d, ", ", k.h, ", ", k.w, ")");
  // With an override the sums come from count_include_pad means times their divisors.
  const bool include = divisor ? true : cip;
  T hw = pool_slices(
      b, [&](const T& v) { return avg_pool2d(v, Size2(k.h, k.w), Size2(s.h, s.w), Size2(p.h, p.w), ceil, include); });
  T y = pool_depth(
      hw, [&](const T& v) { return avg_pool2d(v, Size2(1, k.d), Size2(1, s.d), Size2(0, p.d), ceil, include); });
  if (divisor) {
    const Shape& xs = values(b).shape();
    y = override_divisor(y, {{xs[2], k.d, s.d, p.d}, {xs[3], k.h, s.h, p.h}, {xs[4], k.w, s.w, p.w}}, *divisor);
  }
  return unbatch(y, batched);
}

// Cell i of n over `in`: [floor(i in / n), ceil((i + 1) in / n)).
std::pair<int64_t, int64_t> adaptive_cell(int64_t i, int64_t in, int64_t n) {
  return {i * in / n, ((i + 1) * in + n - 1) / n};
}

// Max over the cells of the last two dims, separably (columns, then rows), with the
// absolute row and column of each maximum.
template <class T>
std::pair<T, Tensor> adaptive_max_of(const T& x, Size2 out) {
  const Tensor& v = values(x);
  WICK_CHECK(v.dim() == 3 || v.dim() == 4, "adaptive_max_pool2d: expected a 3-d or 4-d input, got shape ",
             shape_str(v.shape()));
  const int64_t H = v.size(-2), W = v.size(-1);
  WICK_CHECK(H > 0 && W > 0 && out.h > 0 && out.w > 0, "adaptive_max_pool2d: input ", shape_str(v.shape()),
             " and output size (", out.h, ", ", out.w, ") must be non-empty");
  const int64_t last = v.dim() - 1;
  std::vector<T> col_max;
  std::vector<Tensor> col_at;
  for (int64_t j = 0; j < out.w; ++j) {
    const auto [c0, c1] = adaptive_cell(j, W, out.w);
    auto [m, at] = max(narrow(x, last, c0, c1 - c0), last, true);
    col_max.push_back(m);
    col_at.push_back(add(at, c0));
  }
  const T cols = cat(col_max, last);
  const Tensor col_index = cat(col_at, last);
  std::vector<T> row_max;
  std::vector<Tensor> row_at;
  for (int64_t i = 0; i < out.h; ++i) {
    const auto [r0, r1] = adaptive_cell(i, H, out.h);
    auto [m, at] = max(narrow(cols, last - 1, r0, r1 - r0), last - 1, true);
    row_max.push_back(m);
    row_at.push_back(add(at, r0));
  }
  const Tensor rows = cat(row_at, last - 1);
  const Tensor index = add(mul(rows, W), gather(col_index, last - 1, rows));
  return {cat(row_max, last - 1), index};
}

// The source coordinates of one resized dim.
struct Resample {
  Tensor lo, hi;             // int64 indices into the input
  std::vector<double> w_hi;  // weight of hi (linear); lo gets 1 - w_hi
};

// PyTorch's scale: the given factor's inverse, else in / out (align_corners: (in-1)/(out-1)).
Resample resample_dim(InterpolateMode mode, int64_t in, int64_t out, std::optional<double> factor, bool align,
                      Device device) {
  std::vector<int64_t> lo(static_cast<size_t>(out)), hi(static_cast<size_t>(out));
  std::vector<double> w(static_cast<size_t>(out), 0.0);
  if (mode == InterpolateMode::Nearest) {
    // PyTorch computes this index in float.
    const float scale = factor ? static_cast<float>(1.0 / *factor) : static_cast<float>(in) / static_cast<float>(out);
    for (int64_t o = 0; o < out; ++o) {
      lo[o] = out == in ? o
              : out == 2 * in
                  ? o / 2
                  : std::min<int64_t>(static_cast<int64_t>(std::floor(static_cast<float>(o) * scale)), in - 1);
      hi[o] = lo[o];
    }
  } else {
    const double scale = align    ? (out > 1 ? static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0)
                         : factor ? 1.0 / *factor
                                  : static_cast<double>(in) / static_cast<double>(out);
    for (int64_t o = 0; o < out; ++o) {
      const double src = align ? scale * static_cast<double>(o) : std::max(0.0, scale * (o + 0.5) - 0.5);
      lo[o] = std::min<int64_t>(static_cast<int64_t>(src), in - 1);
      hi[o] = lo[o] + (lo[o] < in - 1 ? 1 : 0);
      w[o] = src - static_cast<double>(lo[o]);
    }
  }
  auto to_tensor = [&](const std::vector<int64_t>& v) { return tensor(v).to(device); };
  return {to_tensor(lo), to_tensor(hi), w};
}

template <class T>
T interpolate_of(const T& x, const Shape& size, const std::vector<double>& factors, InterpolateMode mode,
                 std::optional<bool> align_corners) {
  const Tensor& v = values(x);
  const int64_t spatial = v.dim() - 2;
  WICK_CHECK(spatial >= 1 && spatial <= 3, "interpolate: expected a 3-d, 4-d or 5-d input [N, C, ...], got shape ",
             shape_str(v.shape()));
  WICK_CHECK(static_cast<int64_t>(size.size()) == spatial, "interpolate: ", size.size(), " sizes for the ", spatial,
             " spatial dims of shape ", shape_str(v.shape()));
  WICK_CHECK(mode == InterpolateMode::Linear || !align_corners,
             "interpolate: align_corners can only be set with the "
             "linear modes");
  WICK_CHECK(v.is_floating_point(), "interpolate: expected a floating input, got ", dtype_name(v.dtype()));
  T y = x;
  // The last dim first: for bilinear the same order of operations as PyTorch's kernel.
  for (int64_t k = spatial - 1; k >= 0; --k) {
    const int64_t dim = 2 + k, in = v.size(dim), out = size[k];
    WICK_CHECK(out > 0 && in > 0, "interpolate: input ", shape_str(v.shape()),
               " and output sizes must be positive, got ", out, " for dim ", dim);
    if (out == in && factors.empty() && mode == InterpolateMode::Nearest) continue;
    const Resample r = resample_dim(mode, in, out, factors.empty() ? std::nullopt : std::optional<double>(factors[k]),
                                    align_corners.value_or(false), v.device());
    if (mode == InterpolateMode::Nearest) {
      y = index_select(y, dim, r.lo);
      continue;
    }
    Shape wshape(static_cast<size_t>(v.dim()), 1);
    wshape[dim] = out;
    std::vector<double> w_lo(r.w_hi.size());
    for (size_t i = 0; i < w_lo.size(); ++i) w_lo[i] = 1.0 - r.w_hi[i];
    const Tensor wl = tensor(w_lo, wshape).to(v.options()), wh = tensor(r.w_hi, wshape).to(v.options());
    y = add(mul(index_select(y, dim, r.lo), constant(x, wl)), mul(index_select(y, dim, r.hi), constant(x, wh)));
  }
  return y;
}

template <class T>
T interpolate_scaled(const T& x, const std::vector<double>& factors, InterpolateMode mode, std::optional<bool> align) {
  const Tensor& v = values(x);
  WICK_CHECK(static_cast<int64_t>(factors.size()) == v.dim() - 2, "interpolate: ", factors.size(),
             " scale factors for the spatial dims of shape ", shape_str(v.shape()));
  Shape size;
  for (size_t k = 0; k < factors.size(); ++k) {
    WICK_CHECK(factors[k] > 0 && std::isfinite(factors[k]), "interpolate: scale factors must be positive, got ",
               factors[k]);
    const double out = std::floor(static_cast<double>(v.size(2 + static_cast<int64_t>(k))) * factors[k]);
    WICK_CHECK(out < 0x1p63, "interpolate: scale factor ", factors[k], " makes spatial dim ", k, " of shape ",
               shape_str(v.shape()), " ", out, " long, more than int64 can count");
    size.push_back(static_cast<int64_t>(out));
  }
  return interpolate_of(x, size, factors, mode, align);
}

}  // namespace

std::pair<Tensor, Tensor> max_pool1d(const Tensor& x, int64_t k, std::optional<int64_t> s, int64_t p, int64_t d,
                                     bool ceil) {
  const bool batched = x.dim() == 3;
  auto [y, idx] = max_pool2d(as_plane(batch("max_pool1d", x, 3)), Size2(1, k), Size2(1, s.value_or(k)), Size2(0, p),
                             Size2(1, d), ceil);
  return {unbatch(from_plane(y), batched), unbatch(from_plane(idx), batched)};  // h = 0: the index is w
}
Variable max_pool1d(const Variable& x, int64_t k, std::optional<int64_t> s, int64_t p, int64_t d, bool ceil) {
  return max_pool1d_of(x, k, s, p, d, ceil);
}
std::pair<Tensor, Tensor> adaptive_max_pool2d(const Tensor& x, Size2 out) { return adaptive_max_of(x, out); }
Variable adaptive_max_pool2d(const Variable& x, Size2 out) { return adaptive_max_of(x, out).first; }

#include "wick/autograd/generated/composite_pooling_ops_defs.inc"

}  // namespace wick
