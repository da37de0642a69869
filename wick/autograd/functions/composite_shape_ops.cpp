// The shape and indexing composites of composites.h: pad, diagonal, repeat_interleave,
// take, index_fill, index_copy, advanced indexing, masked_scatter, unfold, scatter_reduce,
// embedding_bag (tensordot and einsum: composite_contractions.cpp). Each is a template
// for Tensor and Variable over index_select / index_add / masked_fill / cat / bmm, so
// their gradients are those primitives' (checked in the gradcheck table).
#include <wick/autograd/composites.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include <wick/autograd/autocast.h>
#include <wick/autograd/functions/composite_support.h>
#include <wick/autograd/ops.h>
#include <wick/tensor/elementwise.h>
#include <wick/tensor/factories.h>
#include <wick/tensor/indexing.h>
#include <wick/tensor/join.h>
#include <wick/tensor/linalg.h>
#include <wick/tensor/reduce.h>
#include <wick/tensor/shape.h>

namespace wick {

namespace {

using namespace composite_support;

// A host index list as an int64 tensor on `device`.
Tensor index_tensor(const std::vector<int64_t>& idx, Device device) { return tensor(idx).to(device); }

// An integer tensor's values, row-major, read to the host as int64.
std::vector<int64_t> host_values(const Tensor& t) {
  const Tensor h = t.to(DType::Int64).to(Device::cpu()).contiguous();
  const int64_t* p = static_cast<const int64_t*>(h.data_ptr());
  return std::vector<int64_t>(p, p + h.numel());
}

// "int64 [2, 3]" or "undefined", for messages.
std::string describe(const Tensor& t) {
  return t.defined() ? dtype_name(t.dtype()) + std::string(" ") + shape_str(t.shape()) : "undefined";
}

// A 1-d (or 0-d) integer index read to the host, negative entries counted from `size` (or
// refused, where PyTorch refuses them), every entry checked in [0, size).
std::vector<int64_t> host_index(const char* op, const Tensor& index, int64_t size, bool negative_ok = true) {
  WICK_CHECK(index.defined() && index.dim() <= 1 && is_integral(index.dtype(), false), op,
             ": expected a 0-d or 1-d integer index, got ", describe(index));
  std::vector<int64_t> out = host_values(index);
  for (int64_t& i : out) {
    WICK_CHECK(negative_ok || i >= 0, op, ": index ", i, " is negative (", op, " takes indices in [0, ", size,
               "), as PyTorch's)");
    WICK_CHECK(i >= -size && i < size, op, ": index ", i, " is out of range for a dim of size ", size);
    if (i < 0) i += size;
  }
  return out;
}

// --- pad

// Where each position of a padded dim reads from: [-before, n + after) mapped into [0, n).
std::vector<int64_t> pad_source(PadMode mode, int64_t n, int64_t before, int64_t after) {
  std::vector<int64_t> src;
  src.reserve(static_cast<size_t>(n + before + after));
  for (int64_t j = -before; j < n + after; ++j) {
    if (mode == PadMode::Reflect) src.push_back(j < 0 ? -j : j >= n ? 2 * (n - 1) - j : j);
    else if (mode == PadMode::Replicate) src.push_back(std::clamp<int64_t>(j, 0, n - 1));
    else src.push_back(((j % n) + n) % n);
  }
  return src;
}

const char* pad_mode_name(PadMode m) {
  switch (m) {
    case PadMode::Constant: return "constant";
    case PadMode::Reflect: return "reflect";
    case PadMode::Replicate: return "replicate";
    case PadMode::Circular: return "circular";
  }
  return "?";
}

template <class T>
T pad_of(const T& x, const std::vector<int64_t>& pads, PadMode mode, double value) {
  const Tensor& v = values(x);
  WICK_CHECK(pads.size() % 2 == 0 && static_cast<int64_t>(pads.size()) <= 2 * v.dim(), "pad: ", pads.size(),
             " pad values do not make (before, after) pairs for at most the ", v.dim(), " dims of shape ",
             shape_str(v.shape()));
  if (mode != PadMode::Constant) {
    // PyTorch's reflect, replicate and circular pad 1, 2 or 3 trailing dims of an input with
    // one or two dims before them (batch and channels, or channels only), and take no value.
    const int64_t padded = static_cast<int64_t>(pads.size()) / 2;
    WICK_CHECK(padded >= 1 && padded <= 3 && (v.dim() == padded + 1 || v.dim() == padded + 2),
               "pad: ", pad_mode_name(mode), " padding of ", padded, " dims needs a ", padded + 1, "-d or ", padded + 2,
               "-d input (1 to 3 padded dims after one or two others), got shape ", shape_str(v.shape()));
    WICK_CHECK(value == 0.0, "pad: ", pad_mode_name(mode), " padding takes no value, got ", value);
  }
  T y = x;
  for (size_t k = 0; k < pads.size() / 2; ++k) {
    const int64_t dim = v.dim() - 1 - static_cast<int64_t>(k);
    const int64_t before = pads[2 * k], after = pads[2 * k + 1], n = v.size(dim);
    if (before == 0 && after == 0) continue;
    if (mode == PadMode::Constant) {
      // Negative pads crop first; positive ones add constant blocks.
      const int64_t cut_before = std::max<int64_t>(0, -before), cut_after = std::max<int64_t>(0, -after);
      WICK_CHECK(cut_before + cut_after <= n, "pad: pads (", before, ", ", after, ") remove more than the ", n,
                 " entries of dim ", dim, " of shape ", shape_str(v.shape()));
      y = narrow(y, dim, cut_before, n - cut_before - cut_after);
      std::vector<T> parts;
      Shape block = values(y).shape();
      if (before > 0) {
        block[dim] = before;
        parts.push_back(constant(x, full(block, value, values(y).options())));
      }
      parts.push_back(y);
      if (after > 0) {
        block[dim] = after;
        parts.push_back(constant(x, full(block, value, values(y).options())));
      }
      if (parts.size() > 1) y = cat(parts, dim);
      continue;
    }
    WICK_CHECK(before >= 0 && after >= 0, "pad: ", pad_mode_name(mode), " padding needs non-negative pads, got (",
               before, ", ", after, ") for dim ", dim);
    const bool fits = mode == PadMode::Reflect    ? before < n && after < n
                      : mode == PadMode::Circular ? before <= n && after <= n && n > 0
                                                  : n > 0;
    WICK_CHECK(fits, "pad: ", pad_mode_name(mode), " pads (", before, ", ", after, ") do not fit dim ", dim,
               " of size ", n, " in shape ", shape_str(v.shape()),
               mode == PadMode::Reflect    ? " (each must be smaller than the size)"
               : mode == PadMode::Circular ? " (each must be at most the size)"
                                           : " (the dim must not be empty)");
    y = index_select(y, dim, index_tensor(pad_source(mode, n, before, after), v.device()));
  }
  return y;
}

// --- diagonal, repeat_interleave, take, index_fill, index_copy

template <class T>
T diagonal_of(const T& x, int64_t offset, int64_t dim1, int64_t dim2) {
  const Tensor& v = values(x);
  WICK_CHECK(v.dim() >= 2, "diagonal: needs at least 2 dims, got shape ", shape_str(v.shape()));
  const int64_t d1 = wrap_dim("diagonal", dim1, v.dim()), d2 = wrap_dim("diagonal", dim2, v.dim());
  WICK_CHECK(d1 != d2, "diagonal: dim1 and dim2 name the same dim ", d1, " of shape ", shape_str(v.shape()));
  std::vector<int64_t> order;
  for (int64_t d = 0; d < v.dim(); ++d)
    if (d != d1 && d != d2) order.push_back(d);
  order.push_back(d1);
  order.push_back(d2);
  const int64_t rows = v.size(d1), cols = v.size(d2);
  const int64_t r0 = std::max<int64_t>(0, -offset), c0 = std::max<int64_t>(0, offset);
  const int64_t length = std::max<int64_t>(0, std::min(rows - r0, cols - c0));
  std::vector<int64_t> flat(static_cast<size_t>(length));
  for (int64_t i = 0; i < length; ++i) flat[i] = (r0 + i) * cols + c0 + i;
  Shape planes;
  for (size_t k = 0; k + 2 < order.size(); ++k) planes.push_back(v.size(order[k]));
  Shape joined = planes;
  joined.push_back(rows * cols);
  T y = reshape(permute(x, order), joined);
  return index_select(y, static_cast<int64_t>(planes.size()), index_tensor(flat, v.device()));
}

template <class T>
T repeat_interleave_of(const T& x, const std::vector<int64_t>& counts_in, std::optional<int64_t> dim) {
  // A 0-d input has no dim to repeat along (PyTorch refuses it too); without a dim it is
  // flattened first.
  WICK_CHECK(!dim || values(x).dim() > 0, "repeat_interleave: a 0-d tensor has no dim ", *dim,
             " (leave dim out to repeat its element)");
  const T src = dim ? x : reshape(x, {-1});
  const Tensor& v = values(src);
  const int64_t d = dim ? wrap_dim("repeat_interleave", *dim, v.dim()) : 0;
  const int64_t n = v.size(d);
  std::vector<int64_t> counts = counts_in;
  if (counts.size() == 1) counts.assign(static_cast<size_t>(n), counts_in[0]);
  WICK_CHECK(static_cast<int64_t>(counts.size()) == n, "repeat_interleave: ", counts.size(),
             " repeats for a dim of size ", n, " (shape ", shape_str(v.shape()), ")");
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < n; ++i) {
    WICK_CHECK(counts[i] >= 0, "repeat_interleave: repeats must be non-negative, got ", counts[i]);
    idx.insert(idx.end(), static_cast<size_t>(counts[i]), i);
  }
  return index_select(src, d, index_tensor(idx, v.device()));
}

std::vector<int64_t> repeat_counts(const Tensor& repeats) {
  WICK_CHECK(repeats.defined() && repeats.dim() <= 1 && is_integral(repeats.dtype(), false),
             "repeat_interleave: repeats must be a 0-d or 1-d integer tensor, got ", describe(repeats));
  return host_values(repeats);
}

template <class T>
T take_of(const T& x, const Tensor& index) {
  const Tensor& v = values(x);
  WICK_CHECK(index.defined() && is_integral(index.dtype(), false), "take: expected an integer index, got ",
             index.defined() ? dtype_name(index.dtype()) : "undefined");
  const std::vector<int64_t> flat = host_index("take", index.reshape({-1}), v.numel());
  return reshape(index_select(reshape(x, {-1}), 0, index_tensor(flat, v.device())), index.shape());
}

// A bool mask over dim of `x` (shaped to broadcast against it) that is true at `index`.
Tensor slice_mask(const Tensor& x, int64_t dim, const std::vector<int64_t>& index) {
  const int64_t n = x.dim() == 0 ? 1 : x.size(dim);
  Tensor m = zeros({n}, DType::Bool);
  bool* p = static_cast<bool*>(m.data_ptr());
  for (int64_t i : index) p[i] = true;
  Shape s(static_cast<size_t>(x.dim()), 1);
  if (x.dim() > 0) s[dim] = n;
  return m.view(s).to(x.device());
}

template <class T>
T index_fill_of(const T& x, int64_t dim, const Tensor& index, const Scalar& value) {
  const Tensor& v = values(x);
  const int64_t d = wrap_dim("index_fill", dim, std::max<int64_t>(v.dim(), 1));
  // PyTorch checks each index as it fills the slices beside dim: where another dim is empty
  // there is nothing to fill and no index is checked.
  int64_t beside = 1;
  for (int64_t k = 0; k < v.dim(); ++k)
    if (k != d) beside *= v.size(k);
  const int64_t size = beside == 0 ? std::numeric_limits<int64_t>::max() : v.dim() == 0 ? 1 : v.size(d);
  const std::vector<int64_t> idx = host_index("index_fill", index, size);  // its dtype and dims still checked
  if (beside == 0) return clone(x);
  return masked_fill(x, slice_mask(v, d, idx), value);
}

template <class T>
T index_copy_of(const T& x, int64_t dim, const Tensor& index, const T& src) {
  const Tensor& v = values(x);
  const int64_t d = wrap_dim("index_copy", dim, std::max<int64_t>(v.dim(), 1));
  const std::vector<int64_t> idx = host_index("index_copy", index, v.dim() == 0 ? 1 : v.size(d), /*negative_ok=*/false);
  const Tensor& s = values(src);
  Shape expect = v.shape();
  if (v.dim() > 0) expect[d] = static_cast<int64_t>(idx.size());
  WICK_CHECK(s.shape() == expect || (v.dim() == 0 && s.numel() == 1 && idx.size() == 1), "index_copy: source ",
             shape_str(s.shape()), " must be ", shape_str(expect), " for ", idx.size(), " indices into ",
             shape_str(v.shape()), " along dim ", d);
  // With a repeated index the last occurrence wins: keep only those rows of src.
  std::vector<int64_t> last_row(static_cast<size_t>(v.dim() == 0 ? 1 : v.size(d)), -1);
  for (size_t k = 0; k < idx.size(); ++k) last_row[static_cast<size_t>(idx[k])] = static_cast<int64_t>(k);
  std::vector<int64_t> rows, targets;
  for (size_t t = 0; t < last_row.size(); ++t)
    if (last_row[t] >= 0) {
      rows.push_back(last_row[t]);
      targets.push_back(static_cast<int64_t>(t));
    }
  const T x0 = v.dim() == 0 ? reshape(x, {1}) : x;
  const T s0 = v.dim() == 0 ? reshape(src, {1}) : src;
  const T kept = index_select(s0, d, index_tensor(rows, v.device()));
  const Tensor where_to = index_tensor(targets, v.device());
  T cleared = masked_fill(x0, slice_mask(values(x0), d, targets), 0);
  T y = index_add(cleared, d, where_to, kept);
  return v.dim() == 0 ? reshape(y, {}) : y;
}

// --- advanced indexing, masked_scatter, unfold, scatter_reduce

// The positions over x's first k dims that `indices` name, as flat int64 offsets on x's
// device, with the indices' broadcast shape.
struct LeadingIndex {
  Tensor flat;
  Shape shape;
  int64_t k;
};

LeadingIndex leading_index(const char* op, const Tensor& x, const std::vector<Tensor>& indices_in) {
  WICK_CHECK(!indices_in.empty(), op, ": no index tensors");
  std::vector<Tensor> indices = indices_in;
  for (const Tensor& t : indices) WICK_CHECK(t.defined(), op, ": undefined index tensor");
  if (indices.size() == 1 && indices[0].dtype() == DType::Bool) {
    const Tensor mask = indices[0].to(Device::cpu());
    const Shape lead(x.shape().begin(), x.shape().begin() + std::min<int64_t>(mask.dim(), x.dim()));
    WICK_CHECK(mask.dim() <= x.dim() && mask.shape() == lead, op, ": a bool mask ", shape_str(mask.shape()),
               " must match the leading dims of ", shape_str(x.shape()));
    const Tensor nz = nonzero(mask);  // [count, mask.dim()]
    indices.clear();
    for (int64_t d = 0; d < mask.dim(); ++d) indices.push_back(nz.select(1, d));
  }
  const int64_t k = static_cast<int64_t>(indices.size());
  WICK_CHECK(k <= x.dim(), op, ": ", k, " index tensors for a tensor of shape ", shape_str(x.shape()));
  Shape shape = indices[0].shape();
  for (const Tensor& t : indices) shape = broadcast_shapes(op, shape, t.shape());
  Tensor flat = zeros(shape, DType::Int64);
  for (int64_t d = 0; d < k; ++d) {
    const Tensor& t = indices[static_cast<size_t>(d)];
    WICK_CHECK(is_integral(t.dtype(), false), op, ": index tensors must be integer (or one bool mask), got ",
               dtype_name(t.dtype()));
    const int64_t size = x.size(d);
    const Tensor i = t.to(DType::Int64).to(Device::cpu());
    if (i.numel() > 0) {
      const int64_t lo = amin(i).item<int64_t>(), hi = amax(i).item<int64_t>();
      WICK_CHECK(lo >= -size && hi < size, op, ": index ", lo < -size ? lo : hi, " is out of range for dim ", d,
                 " of size ", size, " (shape ", shape_str(x.shape()), ")");
    }
    flat = add(mul(flat, size), where(lt(i, 0), add(i, size), i));
  }
  return {flat.reshape({-1}).to(x.device()), shape, k};
}

// x with its first k dims folded into one.
template <class T>
T fold_leading(const T& x, int64_t k) {
  const Shape& s = values(x).shape();
  Shape folded = {numel_of(Shape(s.begin(), s.begin() + k))};
  folded.insert(folded.end(), s.begin() + k, s.end());
  return reshape(x, folded);
}

template <class T>
T index_of(const T& x, const std::vector<Tensor>& indices) {
  const Tensor& v = values(x);
  const LeadingIndex li = leading_index("index", v, indices);
  Shape out = li.shape;
  out.insert(out.end(), v.shape().begin() + li.k, v.shape().end());
  return reshape(index_select(fold_leading(x, li.k), 0, li.flat), out);
}

template <class T>
T index_put_of(const T& x, const std::vector<Tensor>& indices, const T& vals, bool accumulate) {
  const Tensor& v = values(x);
  const LeadingIndex li = leading_index("index_put", v, indices);
  Shape target = li.shape;
  target.insert(target.end(), v.shape().begin() + li.k, v.shape().end());
  WICK_CHECK(broadcast_shapes("index_put", values(vals).shape(), target) == target, "index_put: values ",
             shape_str(values(vals).shape()), " do not broadcast to the indexed shape ", shape_str(target));
  // PyTorch requires one dtype, except where it writes through masked_fill (one bool mask,
  // one value, no accumulate), which converts the value.
  const bool as_masked_fill =
      !accumulate && indices.size() == 1 && indices[0].dtype() == DType::Bool && values(vals).numel() == 1;
  WICK_CHECK(values(vals).dtype() == v.dtype() || as_masked_fill, "index_put: values ",
             dtype_name(values(vals).dtype()), " must have the tensor's dtype ", dtype_name(v.dtype()),
             " (PyTorch: the source and destination dtypes must match)");
  T src = expand(values(vals).dtype() == v.dtype() ? vals : to(vals, v.dtype()), target);
  Shape rows = {numel_of(li.shape)};
  rows.insert(rows.end(), v.shape().begin() + li.k, v.shape().end());
  src = reshape(src, rows);
  const T flat = fold_leading(x, li.k);
  T y = accumulate ? index_add(flat, 0, li.flat, src) : index_copy(flat, 0, li.flat, src);
  return reshape(y, v.shape());
}

template <class T>
T masked_scatter_of(const T& x, const Tensor& mask, const T& source) {
  const Tensor& v = values(x);
  WICK_CHECK(mask.defined() && mask.dtype() == DType::Bool, "masked_scatter: the mask must be bool, got ",
             mask.defined() ? dtype_name(mask.dtype()) : "undefined");
  WICK_CHECK(values(source).dtype() == v.dtype(), "masked_scatter: source ", dtype_name(values(source).dtype()),
             " must have the tensor's dtype ", dtype_name(v.dtype()));
  WICK_CHECK(broadcast_shapes("masked_scatter", mask.shape(), v.shape()) == v.shape(), "masked_scatter: mask ",
             shape_str(mask.shape()), " does not broadcast to ", shape_str(v.shape()));
  const Tensor where_to = nonzero(mask.expand(v.shape()).contiguous().reshape({-1}).to(Device::cpu())).reshape({-1});
  const int64_t n = where_to.numel();
  WICK_CHECK(values(source).numel() >= n, "masked_scatter: the mask selects ", n, " entries but source ",
             shape_str(values(source).shape()), " has ", values(source).numel());
  const T src = narrow(reshape(source, {-1}), 0, 0, n);
  return reshape(index_copy(reshape(x, {-1}), 0, where_to.to(v.device()), src), v.shape());
}

template <class T>
T unfold_of(const T& x, int64_t dim, int64_t size, int64_t step) {
  const Tensor& v = values(x);
  WICK_CHECK(v.dim() > 0, "unfold: needs at least one dim, got a 0-d tensor");
  const int64_t d = wrap_dim("unfold", dim, v.dim()), len = v.size(d);
  WICK_CHECK(size >= 0 && size <= len && step > 0, "unfold: size ", size, " and step ", step, " must fit dim ", d,
             " of size ", len, " (0 <= size <= length, step > 0)");
  const int64_t windows = (len - size) / step + 1;
  std::vector<int64_t> idx;
  for (int64_t w = 0; w < windows; ++w)
    for (int64_t j = 0; j < size; ++j) idx.push_back(w * step + j);
  Shape split = v.shape();
  split[d] = windows;
  split.insert(split.begin() + d + 1, size);
  return movedim(reshape(index_select(x, d, index_tensor(idx, v.device())), split), d + 1, v.dim());
}

// scatter_reduce's prod/amax/amin as a segmented reduction: every target position of x
// that receives something, with x's own value first when include_self, and the src entries
// that land there in src order. Targets with the same number of entries form one [rows,
// length] block reduced along its rows by the ordinary reduction, so memory stays linear in
// the input and the gradient is that reduction's (ties share it, a zero in a product gets
// the product of the others).
struct Segments {
  std::vector<int64_t> length;               // distinct entry counts
  std::vector<std::vector<int64_t>> target;  // per count: the flat targets in x, ascending
  std::vector<std::vector<int64_t>> entry;   // per count: rows x count flat positions in src
};

Segments scatter_segments(const Shape& x_shape, int64_t d, const Shape& index_shape, const std::vector<int64_t>& idx) {
  const int64_t rank = static_cast<int64_t>(index_shape.size());
  const int64_t x_numel = numel_of(x_shape);
  // Each index position's flat target in x (row-major), the index value replacing dim d.
  std::vector<int64_t> target(idx.size());
  std::vector<int64_t> coord(static_cast<size_t>(rank), 0);
  for (size_t p = 0; p < idx.size(); ++p) {
    int64_t t = 0;
    for (int64_t k = 0; k < rank; ++k) t = t * x_shape[k] + (k == d ? idx[p] : coord[k]);
    target[p] = t;
    for (int64_t k = rank - 1; k >= 0 && ++coord[k] == index_shape[k]; --k) coord[k] = 0;
  }
  std::vector<int64_t> count(static_cast<size_t>(x_numel), 0);
  for (int64_t t : target) ++count[static_cast<size_t>(t)];
  // Where each target's entries start in a list ordered by target, then src position.
  std::vector<int64_t> start(static_cast<size_t>(x_numel) + 1, 0);
  for (int64_t t = 0; t < x_numel; ++t) start[t + 1] = start[t] + count[t];
  std::vector<int64_t> by_target(idx.size()), fill(start.begin(), start.end() - 1);
  for (size_t p = 0; p < target.size(); ++p) by_target[fill[target[p]]++] = static_cast<int64_t>(p);
  Segments s;
  std::vector<int64_t> group_of(idx.size() + 1, -1);
  for (int64_t t = 0; t < x_numel; ++t) {
    const int64_t c = count[t];
    if (c == 0) continue;
    if (group_of[c] < 0) {
      group_of[c] = static_cast<int64_t>(s.length.size());
      s.length.push_back(c);
      s.target.emplace_back();
      s.entry.emplace_back();
    }
    const size_t g = static_cast<size_t>(group_of[c]);
    s.target[g].push_back(t);
    s.entry[g].insert(s.entry[g].end(), by_target.begin() + start[t], by_target.begin() + start[t + 1]);
  }
  return s;
}

template <class T>
T scatter_reduce_of(const T& x, int64_t dim, const Tensor& index, const T& src_in, ScatterReduce reduce,
                    bool include_self) {
  const char* op = "scatter_reduce";
  const Tensor& v = values(x);
  const Tensor& s = values(src_in);
  WICK_CHECK(index.defined() && is_integral(index.dtype(), false), op, ": expected an integer index, got ",
             describe(index));
  WICK_CHECK(s.dtype() == v.dtype(), op, ": src ", dtype_name(s.dtype()), " must have the tensor's dtype ",
             dtype_name(v.dtype()));
  WICK_CHECK(index.dim() == v.dim() && s.dim() == v.dim(), op, ": index ", shape_str(index.shape()), ", the tensor ",
             shape_str(v.shape()), " and src ", shape_str(s.shape()), " must have the same number of dims");
  const int64_t d = wrap_dim(op, dim, std::max<int64_t>(v.dim(), 1));
  for (int64_t k = 0; k < v.dim(); ++k)
    WICK_CHECK(index.size(k) <= s.size(k) && (k == d || index.size(k) <= v.size(k)), op, ": index ",
               shape_str(index.shape()), " is larger than src ", shape_str(s.shape()), " or the tensor ",
               shape_str(v.shape()), " in dim ", k, " (only dim ", d, " of the tensor may be smaller)");
  // Only the src entries the index covers take part, as in PyTorch.
  T src = src_in;
  for (int64_t k = 0; k < s.dim(); ++k)
    if (s.size(k) != index.size(k)) src = narrow(src, k, 0, index.size(k));
  if (v.dim() == 0) {
    T y = scatter_reduce_of(reshape(x, {1}), 0, index.reshape({1}), reshape(src, {1}), reduce, include_self);
    return reshape(y, {});
  }
  const std::vector<int64_t> idx = host_values(index);
  for (int64_t i : idx)
    WICK_CHECK(i >= 0 && i < v.size(d), op, ": index ", i, " is out of bounds for dim ", d, " with size ", v.size(d),
               " (shape ", shape_str(v.shape()), ")");
  if (idx.empty()) return clone(x);  // a new tensor, as PyTorch's
  // Where something lands, and how many land there.
  const Tensor landed = scatter_add(zeros(v.shape(), Options(DType::Int64, v.device())), d, index,
                                    ones(index.shape(), Options(DType::Int64, v.device())));
  const Tensor hit = gt(landed, 0);
  if (reduce == ScatterReduce::Sum || reduce == ScatterReduce::Mean) {
    const T base = include_self ? x : masked_fill(x, hit, 0);
    T total = scatter_add(base, d, index, src);
    if (reduce == ScatterReduce::Sum) return total;
    const Tensor count = add(landed, include_self ? 1 : 0).to(v.dtype());
    const T safe = constant(x, masked_fill(count, eq(count, 0), 1));
    const T mean = v.is_floating_point() ? div(total, safe) : floor_divide(total, safe);
    return include_self ? mean : where(hit, mean, x);
  }
  const Segments seg = scatter_segments(v.shape(), d, index.shape(), idx);
  const T x_flat = reshape(x, {-1});
  const T src_flat = reshape(src, {-1});
  std::vector<T> reduced;
  std::vector<int64_t> targets;
  for (size_t g = 0; g < seg.length.size(); ++g) {
    const int64_t rows = static_cast<int64_t>(seg.target[g].size());
    const Tensor where_to = index_tensor(seg.target[g], v.device());
    T block = reshape(index_select(src_flat, 0, index_tensor(seg.entry[g], v.device())), {rows, seg.length[g]});
    if (include_self) block = cat({unsqueeze(index_select(x_flat, 0, where_to), 1), block}, 1);
    T r = reduce == ScatterReduce::Prod   ? prod(block, {1})
          : reduce == ScatterReduce::Amax ? amax(block, {1})
                                          : amin(block, {1});
    reduced.push_back(values(r).dtype() == v.dtype() ? r : to(r, v.dtype()));  // prod widens integers
    targets.insert(targets.end(), seg.target[g].begin(), seg.target[g].end());
  }
  const T joined = reduced.size() == 1 ? reduced[0] : cat(reduced, 0);
  return reshape(index_copy(x_flat, 0, index_tensor(targets, v.device()), joined), v.shape());
}

template <class T>
T embedding_bag_of(const T& weight, const Tensor& input, const Tensor& offsets_in, const EmbeddingBagOptions& o) {
  const char* op = "embedding_bag";
  const Tensor& w = values(weight);
  WICK_CHECK(w.dim() == 2, op, ": expected a 2-d weight [num_embeddings, dim], got ", shape_str(w.shape()));
  WICK_CHECK(input.defined() && is_integral(input.dtype(), false) && (input.dim() == 1 || input.dim() == 2), op,
             ": expected a 1-d or 2-d integer input, got ", describe(input));
  const std::vector<int64_t> idx = host_values(input);
  const int64_t n = static_cast<int64_t>(idx.size());
  std::vector<int64_t> starts;
  // A negative padding_idx counts from the end of weight, as in PyTorch.
  std::optional<int64_t> padding = o.padding_idx;
  if (padding) {
    WICK_CHECK(*padding >= -w.size(0) && *padding < w.size(0), op, ": padding_idx ", *padding, " is out of range for ",
               w.size(0), " embeddings");
    if (*padding < 0) *padding += w.size(0);
  }
  if (input.dim() == 2) {
    WICK_CHECK(!offsets_in.defined(), op, ": offsets are only for a 1-d input (got input ", shape_str(input.shape()),
               ")");
    // PyTorch makes the offsets with a step of the bag length, which must not be 0.
    WICK_CHECK(input.size(1) > 0, op, ": a 2-d input needs bags of at least one entry, got shape ",
               shape_str(input.shape()));
    for (int64_t b = 0; b < input.size(0); ++b) starts.push_back(b * input.size(1));
  } else {
    WICK_CHECK(offsets_in.defined() && offsets_in.dim() == 1 && is_integral(offsets_in.dtype(), false), op,
               ": a 1-d input needs 1-d integer offsets");
    starts = host_values(offsets_in);
    if (o.include_last_offset) {
      WICK_CHECK(!starts.empty(), op, ": include_last_offset needs at least one offset");
      WICK_CHECK(starts.back() == n, op, ": with include_last_offset the last offset must be the input's length ", n,
                 ", got ", starts.back());
      starts.pop_back();
    }
    WICK_CHECK(starts.empty() || starts[0] == 0, op, ": the first offset must be 0, got ",
               starts.empty() ? 0 : starts[0]);
  }
  const int64_t bags = static_cast<int64_t>(starts.size());
  for (size_t b = 0; b < starts.size(); ++b)
    WICK_CHECK(starts[b] <= n && (b == 0 || starts[b] >= starts[b - 1]), op, ": offsets must be increasing and within ",
               "the input's length ", n, ", got ", starts[b], " at ", b);
  const bool weighted = o.per_sample_weights.defined();
  WICK_CHECK(!weighted || o.mode == EmbeddingBagMode::Sum, op, ": per_sample_weights need mode Sum");
  WICK_CHECK(!weighted || o.per_sample_weights.shape() == input.shape(), op, ": per_sample_weights ",
             weighted ? shape_str(o.per_sample_weights.shape()) : "", " must have the input's shape ",
             shape_str(input.shape()));
  // The entries kept (padding_idx dropped), their bag, and each bag's count.
  const int64_t* p = idx.data();
  std::vector<int64_t> rows, bag_of, kept_at, count(static_cast<size_t>(bags), 0);
  for (int64_t b = 0; b < bags; ++b) {
    const int64_t end = b + 1 < bags ? starts[b + 1] : n;
    for (int64_t i = starts[b]; i < end; ++i) {
      WICK_CHECK(p[i] >= 0 && p[i] < w.size(0), op, ": index ", p[i], " is out of range for ", w.size(0),
                 " embeddings");
      if (padding && p[i] == *padding) continue;
      rows.push_back(p[i]);
      bag_of.push_back(b);
      kept_at.push_back(i);
      ++count[static_cast<size_t>(b)];
    }
  }
  const int64_t dim = w.size(1);
  T picked = index_select(weight, 0, index_tensor(rows, w.device()));  // [kept, D]
  if (weighted) {
    const Tensor psw =
        index_select(o.per_sample_weights.reshape({-1}).to(w.options()), 0, index_tensor(kept_at, w.device()));
    picked = mul(picked, constant(weight, psw.unsqueeze(1)));
  }
  if (o.mode == EmbeddingBagMode::Max) {
    // Each dim's value is gathered from the first entry of the bag that holds its maximum,
    // so that entry alone gets the gradient, as PyTorch's max_indices give it (amax would
    // share it among equal rows).
    std::vector<T> out;
    for (int64_t b = 0, at = 0; b < bags; ++b) {
      const int64_t c = count[static_cast<size_t>(b)];
      if (c == 0) {
        out.push_back(constant(weight, zeros({dim}, w.options())));
      } else {
        const T bag = narrow(picked, 0, at, c);
        const Tensor first = max(values(bag), 0, /*keepdim=*/true).second;
        out.push_back(squeeze(gather(bag, 0, first), 0));
      }
      at += c;
    }
    return bags == 0 ? constant(weight, zeros({0, dim}, w.options())) : stack(out, 0);
  }
  T sums = index_add(constant(weight, zeros({bags, dim}, w.options())), 0, index_tensor(bag_of, w.device()), picked);
  if (o.mode == EmbeddingBagMode::Sum) return sums;
  std::vector<double> divisor(count.begin(), count.end());
  for (double& d : divisor) d = std::max(d, 1.0);
  return div(sums, constant(weight, tensor(divisor, {bags, 1}).to(w.options())));
}

}  // namespace

#include "wick/autograd/generated/composite_indexing_ops_defs.inc"

}  // namespace wick
