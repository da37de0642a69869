// View ops: new shape/strides/offset over the same storage. No data moves here, except
// in reshape when no view is possible.
#include <wick/tensor/tensor.h>

#include <algorithm>
#include <numeric>

namespace wick {

namespace {

// Resolves a single -1 in `shape` against `numel`.
Shape infer_shape(const char* op, const Shape& in_shape, const Shape& shape, int64_t numel) {
  Shape out = shape;
  int64_t known = 1;
  int infer = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      WICK_CHECK(infer < 0, op, ": only one dim can be -1 in ", shape_str(shape));
      infer = static_cast<int>(i);
    } else {
      WICK_CHECK(out[i] >= 0, op, ": invalid size ", out[i], " in ", shape_str(shape));
      known *= out[i];
    }
  }
  if (infer >= 0) {
    WICK_CHECK(known != 0 && numel % known == 0, op, ": shape ", shape_str(shape), " is invalid for input of shape ",
               shape_str(in_shape), " (", numel, " elements)");
    out[infer] = numel / known;
  } else {
    WICK_CHECK(known == numel, op, ": shape ", shape_str(shape), " is invalid for input of shape ",
               shape_str(in_shape), " (", numel, " elements)");
  }
  return out;
}

// Strides that let a tensor of (old_shape, old_strides) be seen as new_shape without a copy,
// or false if there are none (the chunks of old dims that merge must be contiguous among
// themselves; the same rule as torch.Tensor.view).
bool view_strides(const Shape& old_shape, const Shape& old_strides, const Shape& new_shape, Shape& out) {
  out.assign(new_shape.size(), 0);
  if (numel_of(old_shape) == 0 || old_shape.empty()) {
    out = contiguous_strides(new_shape);
    return true;
  }
  int64_t view_d = static_cast<int64_t>(new_shape.size()) - 1;
  int64_t chunk_base_stride = old_strides.empty() ? 1 : old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(old_shape.size()) - 1; d >= 0; --d) {
    tensor_numel *= old_shape[d];
    if (d == 0 || (old_shape[d - 1] != 1 && old_strides[d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_shape[view_d] == 1)) {
        out[view_d] = view_numel * chunk_base_stride;
        view_numel *= new_shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return false;
      if (d > 0) {
        chunk_base_stride = old_strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}

}  // namespace

Tensor Tensor::as_strided(const Shape& shape, const Shape& strides, int64_t offset) const {
  WICK_CHECK(defined(), "as_strided: the tensor is undefined");
  WICK_CHECK(shape.size() == strides.size(), "as_strided: shape ", shape_str(shape), " and strides ",
             shape_str(strides), " differ in length");
  // The furthest element must lie inside the storage.
  int64_t last = offset;
  bool empty_view = numel_of(shape) == 0;
  for (size_t i = 0; i < shape.size(); ++i) {
    WICK_CHECK(strides[i] >= 0, "as_strided: negative stride in ", shape_str(strides));
    if (!empty_view) last += (shape[i] - 1) * strides[i];
  }
  WICK_CHECK(offset >= 0 && (empty_view || (last + 1) * static_cast<int64_t>(element_size()) <=
                                               static_cast<int64_t>(storage_->nbytes())),
             "as_strided: shape ", shape_str(shape), " with strides ", shape_str(strides), " and offset ", offset,
             " reaches past the storage (", storage_->nbytes() / element_size(), " elements)");
  return Tensor(storage_, shape, strides, offset, dtype_);
}

Tensor Tensor::view(const Shape& shape) const {
  Shape s = infer_shape("view", shape_, shape, numel_);
  Shape st;
  WICK_CHECK(view_strides(shape_, strides_, s, st), "view: a tensor of shape ", shape_str(shape_), " and strides ",
             shape_str(strides_), " cannot be viewed as ", shape_str(s),
             " without a copy (use reshape, or contiguous() first)");
  return Tensor(storage_, s, st, offset_, dtype_);
}

Tensor Tensor::reshape(const Shape& shape) const {
  Shape s = infer_shape("reshape", shape_, shape, numel_);
  Shape st;
  if (view_strides(shape_, strides_, s, st)) return Tensor(storage_, s, st, offset_, dtype_);
  return clone().view(s);
}

Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  if (dim() == 0) {
    wrap_dim("flatten", start_dim, 0), wrap_dim("flatten", end_dim, 0);  // only 0 and -1 exist
    return reshape({1});
  }
  int64_t s = wrap_dim("flatten", start_dim, dim()), e = wrap_dim("flatten", end_dim, dim());
  WICK_CHECK(s <= e, "flatten: start_dim ", start_dim, " comes after end_dim ", end_dim);
  Shape out(shape_.begin(), shape_.begin() + s);
  int64_t n = 1;
  for (int64_t d = s; d <= e; ++d) n *= shape_[d];
  out.push_back(n);
  out.insert(out.end(), shape_.begin() + e + 1, shape_.end());
  return reshape(out);
}

Tensor Tensor::permute(const std::vector<int64_t>& dims) const {
  WICK_CHECK(static_cast<int64_t>(dims.size()) == dim(), "permute: ", dims.size(), " dims given for a tensor of shape ",
             shape_str(shape_));
  Shape sh(dims.size()), st(dims.size());
  std::vector<bool> seen(dims.size(), false);
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = wrap_dim("permute", dims[i], dim());
    WICK_CHECK(!seen[d], "permute: dim ", dims[i], " repeats in ", shape_str(dims));
    seen[d] = true;
    sh[i] = shape_[d];
    st[i] = strides_[d];
  }
  return Tensor(storage_, sh, st, offset_, dtype_);
}

Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  if (dim() == 0) {
    wrap_dim("transpose", d0, 0), wrap_dim("transpose", d1, 0);  // only 0 and -1 exist
    return *this;
  }
  int64_t a = wrap_dim("transpose", d0, dim()), b = wrap_dim("transpose", d1, dim());
  Shape sh = shape_, st = strides_;
  std::swap(sh[a], sh[b]);
  std::swap(st[a], st[b]);
  return Tensor(storage_, sh, st, offset_, dtype_);
}

Tensor Tensor::t() const {
  WICK_CHECK(dim() <= 2, "t: expects a tensor with at most 2 dims, got shape ", shape_str(shape_));
  return dim() < 2 ? *this : transpose(0, 1);
}

Tensor Tensor::squeeze() const {
  Shape sh, st;
  for (size_t i = 0; i < shape_.size(); ++i)
    if (shape_[i] != 1) {
      sh.push_back(shape_[i]);
      st.push_back(strides_[i]);
    }
  return Tensor(storage_, sh, st, offset_, dtype_);
}

Tensor Tensor::squeeze(int64_t d) const {
  if (dim() == 0) {
    wrap_dim("squeeze", d, 0);  // only 0 and -1 exist
    return *this;
  }
  int64_t k = wrap_dim("squeeze", d, dim());
  if (shape_[k] != 1) return *this;
  Shape sh = shape_, st = strides_;
  sh.erase(sh.begin() + k);
  st.erase(st.begin() + k);
  return Tensor(storage_, sh, st, offset_, dtype_);
}

Tensor Tensor::unsqueeze(int64_t d) const {
  int64_t k = wrap_dim("unsqueeze", d, dim() + 1);
  Shape sh = shape_, st = strides_;
  int64_t stride = k < dim() ? shape_[k] * strides_[k] : 1;
  sh.insert(sh.begin() + k, 1);
  st.insert(st.begin() + k, stride);
  return Tensor(storage_, sh, st, offset_, dtype_);
}

Tensor Tensor::expand(const Shape& shape) const {
  WICK_CHECK(static_cast<int64_t>(shape.size()) >= dim(), "expand: cannot expand shape ", shape_str(shape_), " to ",
             shape_str(shape), " (fewer dims)");
  size_t lead = shape.size() - shape_.size();
  Shape sh(shape.size()), st(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i < lead) {
      WICK_CHECK(shape[i] >= 0, "expand: size -1 is not allowed for a new leading dim in ", shape_str(shape));
      sh[i] = shape[i];
      st[i] = 0;
      continue;
    }
    int64_t have = shape_[i - lead];
    int64_t want = shape[i] == -1 ? have : shape[i];
    WICK_CHECK(have == want || have == 1, "expand: cannot expand shape ", shape_str(shape_), " to ",
               shape_str(shape), " (dim ", i, ": ", have, " vs ", want, ")");
    sh[i] = want;
    st[i] = have == want ? strides_[i - lead] : 0;
  }
  return Tensor(storage_, sh, st, offset_, dtype_);
}

Tensor Tensor::broadcast_to(const Shape& shape) const { return expand(shape); }

Tensor Tensor::slice(int64_t d, int64_t start, int64_t end, int64_t step) const {
  WICK_CHECK(dim() > 0, "slice: cannot slice a 0-d tensor");
  int64_t k = wrap_dim("slice", d, dim());
  WICK_CHECK(step > 0, "slice: step must be positive, got ", step);
  int64_t n = shape_[k];
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  Shape sh = shape_, st = strides_;
  sh[k] = (end - start + step - 1) / step;
  st[k] = strides_[k] * step;
  return Tensor(storage_, sh, st, offset_ + start * strides_[k], dtype_);
}

Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length) const {
  WICK_CHECK(dim() > 0, "narrow: cannot narrow a 0-d tensor");
  int64_t k = wrap_dim("narrow", d, dim());
  int64_t n = shape_[k];
  if (start < 0) start += n;
  WICK_CHECK(start >= 0 && length >= 0 && start + length <= n, "narrow: start ", start, " and length ", length,
             " do not fit dim ", d, " of size ", n, " (shape ", shape_str(shape_), ")");
  return slice(k, start, start + length);
}

Tensor Tensor::select(int64_t d, int64_t index) const {
  WICK_CHECK(dim() > 0, "select: cannot select from a 0-d tensor");
  int64_t k = wrap_dim("select", d, dim());
  int64_t n = shape_[k];
  WICK_CHECK(index >= -n && index < n, "select: index ", index, " is out of range for dim ", d, " of size ", n,
             " (shape ", shape_str(shape_), ")");
  if (index < 0) index += n;
  Shape sh = shape_, st = strides_;
  sh.erase(sh.begin() + k);
  st.erase(st.begin() + k);
  return Tensor(storage_, sh, st, offset_ + index * strides_[k], dtype_);
}

std::vector<Tensor> Tensor::split(int64_t split_size, int64_t d) const {
  int64_t k = wrap_dim("split", d, dim());
  WICK_CHECK(split_size > 0 || shape_[k] == 0, "split: split_size must be positive, got ", split_size);
  std::vector<Tensor> out;
  int64_t n = shape_[k];
  if (n == 0) return {*this};
  for (int64_t s = 0; s < n; s += split_size) out.push_back(narrow(k, s, std::min(split_size, n - s)));
  return out;
}

std::vector<Tensor> Tensor::split(const std::vector<int64_t>& sizes, int64_t d) const {
  int64_t k = wrap_dim("split", d, dim());
  int64_t total = std::accumulate(sizes.begin(), sizes.end(), int64_t{0});
  WICK_CHECK(total == shape_[k], "split: sizes ", shape_str(sizes), " sum to ", total, ", not to dim ", d,
             " of size ", shape_[k]);
  std::vector<Tensor> out;
  int64_t s = 0;
  for (int64_t len : sizes) {
    out.push_back(narrow(k, s, len));
    s += len;
  }
  return out;
}

std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t d) const {
  WICK_CHECK(chunks > 0, "chunk: chunks must be positive, got ", chunks);
  int64_t k = wrap_dim("chunk", d, dim());
  int64_t n = shape_[k];
  if (n == 0) return std::vector<Tensor>(static_cast<size_t>(chunks), narrow(k, 0, 0));  // as PyTorch
  return split(std::max<int64_t>((n + chunks - 1) / chunks, 1), k);
}

}  // namespace wick
