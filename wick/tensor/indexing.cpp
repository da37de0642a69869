// Indexing ops: argument checks and shapes here, the work in the index_select, gather,
// scatter, index_add, nonzero and where kernels.
#include <wick/tensor/dispatch.h>
#include <wick/tensor/factories.h>
#include <wick/tensor/indexing.h>
#include <wick/tensor/elementwise.h>
#include <wick/tensor/reduce.h>

#include <algorithm>
#include <utility>

namespace wick {

namespace {

// `index` as int64 on x's device (int32 is converted).
Tensor as_index(const char* op, const Tensor& index, const Tensor& x) {
  WICK_CHECK(index.defined() && x.defined(), op, ": undefined tensor");
  WICK_CHECK(index.device() == x.device(), op, ": index is on ", index.device(), " but the tensor is on ",
             x.device());
  WICK_CHECK(index.dtype() == DType::Int64 || index.dtype() == DType::Int32, op,
             ": expected an int64 or int32 index, got ", dtype_name(index.dtype()), " (shape ",
             shape_str(index.shape()), ")");
  return index.to(DType::Int64);
}

// The smallest and largest value of a non-empty int64 index.
std::pair<int64_t, int64_t> index_bounds(const Tensor& index) {
  if (!index.device().is_cpu()) return {min(index).item<int64_t>(), max(index).item<int64_t>()};
  const Tensor c = index.contiguous();
  const int64_t* p = c.data<int64_t>();
  auto [lo, hi] = std::minmax_element(p, p + c.numel());
  return {*lo, *hi};
}

// Throws naming `op` when an index lies outside [0, size), for the CPU kernels, which do not
// check. CUDA's record a bad index on the device and the host raises it at its next wait
// (kernels/cuda/device_error.cuh): checking here would read the index back, a synchronisation.
void check_in_range(const char* op, const Tensor& index, int64_t dim, int64_t size) {
  if (index.numel() == 0 || !index.device().is_cpu()) return;
  auto [lo, hi] = index_bounds(index);
  WICK_CHECK(lo >= 0 && hi < size, op, ": index ", lo < 0 ? lo : hi, " is out of bounds for dim ", dim,
             " with size ", size);
}

Tensor index_select_impl(const char* op, const Tensor& x, int64_t dim, const Tensor& index_in) {
  Tensor index = as_index(op, index_in, x);
  WICK_CHECK(index.dim() <= 1, op, ": expected a 0-d or 1-d index, got shape ", shape_str(index.shape()));
  index = index.reshape({-1}).contiguous();
  if (x.dim() == 0) {
    // A 0-d tensor is indexed like a 1-element vector and stays 0-d.
    wrap_dim(op, dim, 0);  // only 0 and -1 exist
    WICK_CHECK(index.numel() == 1, op, ": a 0-d tensor needs exactly one index, got ", index.numel());
    return index_select_impl(op, x.reshape({1}), 0, index).reshape({});
  }
  const int64_t d = wrap_dim(op, dim, x.dim());
  check_in_range(op, index, d, x.size(d));
  Shape shape = x.shape();
  shape[d] = index.numel();
  Tensor out = empty(shape, x.options());
  if (out.numel() > 0) kernel_for(&KernelTable::index_select, op, x.device())(out, x, d, index);
  return out;
}

// Checks the shapes of scatter/scatter_add (PyTorch's rules) and returns the wrapped dim.
int64_t check_scatter(const char* op, const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  WICK_CHECK(src.defined(), op, ": undefined src");
  WICK_CHECK(src.device() == self.device(), op, ": src is on ", src.device(), " but self is on ", self.device());
  WICK_CHECK(src.dtype() == self.dtype(), op, ": expected src to have self's dtype ", dtype_name(self.dtype()),
             ", got ", dtype_name(src.dtype()));
  WICK_CHECK(index.dim() == self.dim() && src.dim() == self.dim(), op, ": index ", shape_str(index.shape()),
             ", self ", shape_str(self.shape()), " and src ", shape_str(src.shape()),
             " must have the same number of dims");
  const int64_t d = wrap_dim(op, dim, self.dim());
  for (int64_t k = 0; k < index.dim(); ++k) {
    WICK_CHECK(index.size(k) <= src.size(k) && (k == d || index.size(k) <= self.size(k)), op, ": index of shape ",
               shape_str(index.shape()), " is larger than src ", shape_str(src.shape()), " or self ",
               shape_str(self.shape()), " in dim ", k, " (only dim ", d, " of self may be smaller)");
  }
  return d;
}

// Runs an in-place slot that needs a contiguous self: on self itself when it is contiguous,
// else on a contiguous copy written back afterwards.
template <class F>
void on_contiguous(Tensor& self, F&& f) {
  if (self.is_contiguous()) {
    f(self);
    return;
  }
  Tensor tmp = self.contiguous();
  f(tmp);
  self.copy_(tmp);
}

// An input that shares memory with the tensor being written is read from a copy.
Tensor copy_if_shared(const Tensor& t, const Tensor& self) { return t.shares_storage(self) ? t.clone() : t; }

Tensor& scatter_impl(const char* op, Tensor& self, int64_t dim, const Tensor& index_in, const Tensor& src_in,
                     bool accumulate) {
  Tensor index = copy_if_shared(as_index(op, index_in, self), self);
  const int64_t d = check_scatter(op, self, dim, index, src_in);
  if (index.numel() == 0) return self;
  Tensor src = copy_if_shared(src_in, self);
  auto kernel = kernel_for(&KernelTable::scatter, op, self.device());
  on_contiguous(self, [&](Tensor& target) {
    if (target.dim() == 0) kernel(target.view({1}), 0, index.reshape({1}), src.reshape({1}), accumulate);
    else kernel(target, d, index, src, accumulate);
  });
  return self;
}

}  // namespace

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  return index_select_impl("index_select", x, dim, index);
}

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index_in) {
  Tensor index = as_index("gather", index_in, x);
  WICK_CHECK(index.dim() == x.dim(), "gather: index of shape ", shape_str(index.shape()), " and x of shape ",
             shape_str(x.shape()), " must have the same number of dims");
  const int64_t d = wrap_dim("gather", dim, x.dim());
  for (int64_t k = 0; k < x.dim(); ++k)
    WICK_CHECK(k == d || index.size(k) <= x.size(k), "gather: index of shape ", shape_str(index.shape()),
               " is larger than x of shape ", shape_str(x.shape()), " in dim ", k);
  Tensor out = empty(index.shape(), x.options());
  if (out.numel() == 0) return out;
  auto kernel = kernel_for(&KernelTable::gather, "gather", x.device());
  if (x.dim() == 0) kernel(out.view({1}), x.reshape({1}), 0, index.reshape({1}));
  else kernel(out, x, d, index);
  return out;
}

Tensor& scatter_(Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_impl("scatter", self, dim, index, src, false);
}

Tensor& scatter_add_(Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_impl("scatter_add", self, dim, index, src, true);
}

Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  Tensor out = x.clone();
  return scatter_(out, dim, index, src);
}

Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Scalar& value) {
  WICK_CHECK(index.defined(), "scatter: undefined index");
  Tensor out = x.clone();
  return scatter_(out, dim, index, scalar_tensor(value, x.options()).expand(index.shape()));
}

Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  Tensor out = x.clone();
  return scatter_add_(out, dim, index, src);
}

Tensor& index_add_(Tensor& self, int64_t dim, const Tensor& index_in, const Tensor& src_in, double alpha) {
  Tensor index = as_index("index_add", index_in, self);
  WICK_CHECK(src_in.defined(), "index_add: undefined src");
  WICK_CHECK(src_in.device() == self.device(), "index_add: src is on ", src_in.device(), " but self is on ",
             self.device());
  WICK_CHECK(src_in.dtype() == self.dtype(), "index_add: expected src to have self's dtype ",
             dtype_name(self.dtype()), ", got ", dtype_name(src_in.dtype()));
  WICK_CHECK(index.dim() <= 1, "index_add: expected a 0-d or 1-d index, got shape ", shape_str(index.shape()));
  index = copy_if_shared(index.reshape({-1}).contiguous(), self);
  // A 0-d self and src behave as 1-element vectors.
  Tensor target_view = self.dim() == 0 ? self.view({1}) : self;
  Tensor src = src_in.dim() == 0 ? src_in.reshape({1}) : src_in;
  const int64_t d = wrap_dim("index_add", dim, target_view.dim());
  bool shapes_ok = src.dim() == target_view.dim() && src.size(d) == index.numel();
  for (int64_t k = 0; shapes_ok && k < src.dim(); ++k) shapes_ok = k == d || src.size(k) == target_view.size(k);
  WICK_CHECK(shapes_ok, "index_add: src of shape ", shape_str(src_in.shape()), " does not match self of shape ",
             shape_str(self.shape()), " with ", index.numel(), " indices along dim ", d);
  check_in_range("index_add", index, d, target_view.size(d));
  if (index.numel() == 0 || src.numel() == 0) return self;
  if (alpha != 1.0) src = mul(src, alpha).to(self.dtype());
  src = copy_if_shared(src, self);
  auto kernel = kernel_for(&KernelTable::index_add, "index_add", self.device());
  on_contiguous(target_view, [&](Tensor& target) { kernel(target, d, index, src); });
  return self;
}

Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, double alpha) {
  Tensor out = x.clone();
  return index_add_(out, dim, index, src, alpha);
}

Tensor& Tensor::masked_fill_(const Tensor& mask, const Scalar& v) {
  WICK_CHECK(defined() && mask.defined(), "masked_fill_: undefined tensor");
  WICK_CHECK(mask.dtype() == DType::Bool, "masked_fill_: expected a bool mask, got ", dtype_name(mask.dtype()),
             " (shape ", shape_str(mask.shape()), ")");
  WICK_CHECK(mask.device() == device(), "masked_fill_: mask is on ", mask.device(), " but the tensor is on ",
             device());
  WICK_CHECK(broadcast_shapes("masked_fill_", mask.shape(), shape_) == shape_, "masked_fill_: mask of shape ",
             shape_str(mask.shape()), " does not broadcast to the tensor's shape ", shape_str(shape_));
  check_fits("masked_fill_", v, dtype_);
  if (numel_ == 0) return *this;
  if (has_expanded_dims(*this)) {
    // PyTorch allows an expanded self (with a deprecation warning) and writes the value
    // wherever the mask is true: a shared location is written if any of its aliases is
    // masked. Reducing the mask over the expanded dims gives that without racing writes.
    Dims expanded;
    for (int64_t d = 0; d < dim(); ++d)
      if (strides_[d] == 0 && shape_[d] > 1) expanded.push_back(d);
    Tensor target = as_strided(unexpanded_shape(*this), strides_, offset_);
    target.masked_fill_(any(mask.expand(shape_), expanded, /*keepdim=*/true), v);
    return *this;
  }
  Tensor m = copy_if_shared(mask, *this).expand(shape_);
  Tensor value = scalar_tensor(v, options()).expand(shape_);
  kernel_for(&KernelTable::where, "masked_fill_", device())(*this, m, value, *this);
  return *this;
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, const Scalar& value) {
  Tensor out = x.clone();
  return out.masked_fill_(mask, value);
}

Tensor nonzero(const Tensor& x) {
  WICK_CHECK(x.defined(), "nonzero: undefined tensor");
  const Tensor c = x.contiguous();
  auto kernel = kernel_for(&KernelTable::nonzero, "nonzero", x.device());
  const int64_t count = kernel(Tensor(), c);
  Tensor out = empty({count, x.dim()}, Options(DType::Int64, x.device()));
  if (count > 0) kernel(out, c);
  return out;
}

Tensor masked_select(const Tensor& x, const Tensor& mask) {
  WICK_CHECK(x.defined() && mask.defined(), "masked_select: undefined tensor");
  WICK_CHECK(mask.dtype() == DType::Bool, "masked_select: expected a bool mask, got ", dtype_name(mask.dtype()),
             " (shape ", shape_str(mask.shape()), ")");
  WICK_CHECK(mask.device() == x.device(), "masked_select: mask is on ", mask.device(), " but x is on ",
             x.device());
  const Shape shape = broadcast_shapes("masked_select", x.shape(), mask.shape());
  const Tensor positions = nonzero(mask.expand(shape).reshape({-1}));  // [n, 1]
  return index_select(x.expand(shape).reshape({-1}), 0, positions.view({-1}));
}

Tensor one_hot(const Tensor& indices, int64_t num_classes) {
  WICK_CHECK(indices.defined(), "one_hot: undefined tensor");
  WICK_CHECK(indices.dtype() == DType::Int64, "one_hot: expected int64 indices (as PyTorch, which takes only ",
             "LongTensor), got ", dtype_name(indices.dtype()), " of shape ", shape_str(indices.shape()));
  Tensor index = as_index("one_hot", indices, indices);
  WICK_CHECK(num_classes >= 0 || num_classes == -1, "one_hot: num_classes must be -1 or non-negative, got ",
             num_classes);
  if (index.numel() == 0) {
    WICK_CHECK(num_classes >= 0, "one_hot: cannot infer the number of classes from an empty tensor of shape ",
               shape_str(index.shape()));
  } else {
    auto [lo, hi] = index_bounds(index);
    WICK_CHECK(lo >= 0, "one_hot: index ", lo, " is negative");
    if (num_classes == -1) num_classes = hi + 1;
    WICK_CHECK(hi < num_classes, "one_hot: index ", hi, " is out of bounds for ", num_classes, " classes");
  }
  Shape shape = index.shape();
  shape.push_back(num_classes);
  Tensor out = zeros(shape, Options(DType::Int64, index.device()));
  if (index.numel() == 0) return out;
  Tensor slots = index.unsqueeze(-1);
  return scatter_(out, -1, slots, scalar_tensor(1, out.options()).expand(slots.shape()));
}

Tensor embedding(const Tensor& weight, const Tensor& indices) {
  WICK_CHECK(weight.defined() && indices.defined(), "embedding: undefined tensor");
  WICK_CHECK(weight.dim() == 2, "embedding: expected a 2-d weight [num, dim], got shape ", shape_str(weight.shape()));
  Shape shape = indices.shape();
  shape.push_back(weight.size(1));
  return index_select_impl("embedding", weight, 0, indices.reshape({-1})).view(shape);
}

}  // namespace wick
