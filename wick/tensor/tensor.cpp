#include <wick/tensor/dispatch.h>
#include <wick/tensor/dtype_limits.h>
#include <wick/tensor/factories.h>
#include <wick/tensor/tensor.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace wick {

Tensor::Tensor(std::shared_ptr<Storage> storage, Shape shape, Shape strides, int64_t offset, DType dtype)
    : storage_(std::move(storage)),
      shape_(std::move(shape)),
      strides_(std::move(strides)),
      offset_(offset),
      numel_(numel_of(shape_)),
      dtype_(dtype) {
  WICK_CHECK(shape_.size() == strides_.size(), "Tensor: shape ", shape_str(shape_), " and strides ",
             shape_str(strides_), " differ in length");
  for (int64_t s : shape_) WICK_CHECK(s >= 0, "Tensor: negative size in shape ", shape_str(shape_));
}

int64_t Tensor::size(int64_t d) const { return shape_[wrap_dim("size", d, dim())]; }
int64_t Tensor::stride(int64_t d) const { return strides_[wrap_dim("stride", d, dim())]; }

void* Tensor::data_ptr() const {
  WICK_CHECK(defined(), "Tensor::data_ptr: the tensor is undefined");
  char* base = static_cast<char*>(storage_->data());
  // Sharded data parallelism (ShardedSync) leaves a unit's parameters without memory where
  // they must not be read: released between uses (StorageResidency, full sharding), or
  // viewing a stand-in while the unit's all-gather after a step is in flight.
  WICK_CHECK(base != nullptr || storage_->nbytes() == 0, "Tensor::data_ptr: the memory of this ", shape_str(shape()),
             " tensor is released: a sharded parameter read where it is not whole (a fully sharded unit's outside "
             "its forward and backward, or any unit's before its all-gather after the step is waited for: by its "
             "shard_units module's forward through Module::call, the Trainer's before_forward, or the end of the "
             "epoch, when the model is whole again)");
  return base + offset_ * static_cast<int64_t>(element_size());
}

bool Tensor::is_contiguous() const {
  int64_t expected = 1;
  for (size_t i = shape_.size(); i-- > 0;) {
    if (shape_[i] == 1) continue;
    if (shape_[i] == 0) return true;
    if (strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

Tensor empty(const Shape& shape, const Options& o) {
  for (int64_t s : shape) WICK_CHECK(s >= 0, "empty: negative size in shape ", shape_str(shape));
  WICK_CHECK(!o.pinned || o.device.is_cpu(), "empty: pinned memory is for CPU tensors, not ", o.device);
  Allocator& alloc = o.pinned ? pinned_allocator() : *backend(o.device).allocator;
  // numel fits int64, but numel * element size may not fit size_t: wrapped around, a huge
  // shape would get a tiny buffer.
  size_t nbytes = 0;
  WICK_CHECK(!__builtin_mul_overflow(static_cast<size_t>(numel_of(shape)), element_size(o.dtype), &nbytes) &&
                 nbytes <= static_cast<size_t>(std::numeric_limits<int64_t>::max()),
             "empty: shape ", shape_str(shape), " of ", dtype_name(o.dtype),
             " needs more bytes than memory can address");
  auto storage = std::make_shared<Storage>(nbytes, o.device, alloc, o.pinned);
  return Tensor(std::move(storage), shape, contiguous_strides(shape), 0, o.dtype);
}

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : clone(); }

Tensor Tensor::clone() const {
  Tensor out = empty(shape_, options());
  out.copy_(*this);
  return out;
}

Tensor Tensor::to(DType t) const {
  if (t == dtype_) return *this;
  Tensor out = empty(shape_, Options(t, device()));
  out.copy_(*this);
  return out;
}

Tensor Tensor::to(Device d, bool non_blocking) const { return to(Options(dtype_, d), non_blocking); }

Tensor Tensor::to(const Options& o, bool non_blocking) const {
  WICK_CHECK(defined(), "to: the tensor is undefined");
  if (o.device == device() && o.dtype == dtype_ && !o.pinned) return *this;
  if (o.device == device()) {
    if (!o.pinned || !device().is_cpu() || storage()->pinned()) return to(o.dtype);
    Tensor out = empty(shape_, o);  // pinned was asked for: a pinned copy
    out.copy_(*this);
    return out;
  }
  // Across devices, contiguous bytes move. To the host, the dtype is converted on the device
  // first: a non-blocking copy into pinned memory has not landed when this returns, so the
  // host cannot convert it yet (and the result stays the pinned buffer that was asked for).
  // To a device, convert on the side where it is cheaper to hold (before the copy when
  // shrinking, after when widening); the conversion after the copy runs on the destination
  // device's current stream, after the copy.
  const bool convert_first = o.device.is_cpu() || wick::element_size(o.dtype) < element_size();
  Tensor src = convert_first ? to(o.dtype).contiguous() : contiguous();
  Tensor dst = empty(shape_, Options(src.dtype(), o.device, o.pinned));
  const Device remote = o.device.is_cpu() ? device() : o.device;
  kernel_for(&KernelTable::copy_across_devices, "to", remote)(dst, src, non_blocking);
  return dst.to(o.dtype);
}

Tensor& Tensor::copy_(const Tensor& src) {
  WICK_CHECK(defined() && src.defined(), "copy_: undefined tensor");
  Tensor s = src.expand(shape_);  // checks that src broadcasts to self
  if (numel_ == 0) return *this;
  check_writable("copy_", *this);
  if (s.device() != device()) {
    Tensor moved = s.contiguous().to(Options(s.dtype(), device()));
    return copy_(moved);
  }
  kernel_for(&KernelTable::copy, "copy_", device())(*this, unaliased_input(s, *this));
  return *this;
}

template <class T>
T Tensor::item() const {
  WICK_CHECK(numel_ == 1, "item: the tensor has ", numel_, " elements (shape ", shape_str(shape_), "), not 1");
  return to_vector<T>()[0];
}

template <class T>
std::vector<T> Tensor::to_vector() const {
  WICK_CHECK(defined(), "to_vector: the tensor is undefined");
  Tensor host = to(Options(dtype_v<T>, Device::cpu())).contiguous();
  std::vector<T> out(static_cast<size_t>(numel_));
  if (numel_ > 0) std::memcpy(out.data(), host.data_ptr(), out.size() * sizeof(T));
  return out;
}

// std::vector<bool> packs bits, so it is filled element by element.
template <>
std::vector<bool> Tensor::to_vector<bool>() const {
  WICK_CHECK(defined(), "to_vector: the tensor is undefined");
  Tensor host = to(Options(DType::Bool, Device::cpu())).contiguous();
  const bool* p = static_cast<const bool*>(host.data_ptr());
  return std::vector<bool>(p, p + numel_);
}

template <class T>
Tensor tensor(const std::vector<T>& values, const Shape& shape, const Options& o) {
  WICK_CHECK(numel_of(shape) == static_cast<int64_t>(values.size()), "tensor: ", values.size(),
             " values do not fill shape ", shape_str(shape));
  Tensor host = empty(shape, Options(dtype_v<T>, Device::cpu()));
  if constexpr (std::is_same_v<T, bool>) {
    bool* p = static_cast<bool*>(host.data_ptr());
    for (size_t i = 0; i < values.size(); ++i) p[i] = values[i];
  } else if (!values.empty()) {
    std::memcpy(host.data_ptr(), values.data(), values.size() * sizeof(T));
  }
  return host.to(o);
}

Tensor unaliased_input(const Tensor& in, const Tensor& out) {
  bool same_view = in.offset() == out.offset() && in.strides() == out.strides();
  return in.shares_storage(out) && !same_view ? in.clone() : in;
}

// In-place ops write every element of `self` once: a view that maps several indices to
// one address (an expanded tensor) cannot be written.
void check_writable(const char* op, const Tensor& self) {
  if (self.numel() == 0) return;
  for (int64_t d = 0; d < self.dim(); ++d)
    WICK_CHECK(self.strides()[d] != 0 || self.shape()[d] <= 1, op, ": cannot write in place to a tensor of shape ",
               shape_str(self.shape()), " with strides ", shape_str(self.strides()),
               " (several elements share one memory location; clone() it first)");
}

Tensor scalar_tensor(const Scalar& v, const Options& o) {
  Tensor t = empty({}, o);
  kernel_for(&KernelTable::fill, "scalar_tensor", t.device())(t, v);
  return t;
}

// A number written into a tensor must fit its dtype, by PyTorch's rule (c10's overflows()):
// "value cannot be converted to type uint8_t without overflow". An integer fits when it
// lies in the dtype's range, except that uint8 also takes -255..-1 and wraps them around
// (two's complement: fill_(-1) gives 255); a floating number must lie in the range as it is
// (2.5 fits uint8 and is truncated, 255.5 does not fit), inf and NaN fit only floating
// dtypes. Bool takes anything (nonzero is true).
void check_fits(const char* op, const Scalar& v, DType dtype) {
  if (dtype == DType::Bool || dtype == DType::Float64 || v.is_bool()) return;
  const double lo = lowest_finite(dtype), hi = largest_finite(dtype);
  bool fits;
  if (v.is_integral()) {
    const int64_t i = v.to_int();
    fits = dtype == DType::Int64 || is_floating(dtype) ||
           (i >= (dtype == DType::UInt8 ? -255 : static_cast<int64_t>(lo)) && i <= static_cast<int64_t>(hi));
    // An integer into a 16- or 32-bit float overflows past its largest finite value.
    if (is_floating(dtype)) fits = !(static_cast<double>(i) < lo || static_cast<double>(i) > hi);
  } else {
    const double x = v.to_double();
    if (std::isnan(x) || std::isinf(x)) fits = is_floating(dtype);
    // int64's largest value rounds up to 2^63 as a double; anything from 2^63 on overflows.
    else if (dtype == DType::Int64) fits = x >= -9223372036854775808.0 && x < 9223372036854775808.0;
    else fits = !(x < lo || x > hi);
  }
  if (fits) return;
  if (v.is_integral())
    detail::throw_error(op, ": value ", v.to_int(), " cannot be converted to ", dtype_name(dtype), " without overflow");
  detail::throw_error(op, ": value ", v.to_double(), " cannot be converted to ", dtype_name(dtype),
                      " without overflow");
}

// Writing one value is the same however many elements share a location, so fill_ (and
// zero_) take an expanded view as PyTorch does; each location is written once, through the
// view with the expanded dims cut to size 1.
Tensor& Tensor::fill_(const Scalar& v) {
  WICK_CHECK(defined(), "fill_: the tensor is undefined");
  check_fits("fill_", v, dtype_);
  if (numel_ == 0) return *this;
  Tensor target = *this;
  if (has_expanded_dims(*this)) target = as_strided(unexpanded_shape(*this), strides_, offset_);
  kernel_for(&KernelTable::fill, "fill_", device())(target, v);
  return *this;
}

bool has_expanded_dims(const Tensor& t) {
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.strides()[d] == 0 && t.shape()[d] > 1) return true;
  return false;
}

Shape unexpanded_shape(const Tensor& t) {
  Shape s = t.shape();
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.strides()[d] == 0) s[d] = std::min<int64_t>(s[d], 1);
  return s;
}

#define WICK_INSTANTIATE(T)                             \
  template T Tensor::item<T>() const;                   \
  template std::vector<T> Tensor::to_vector<T>() const; \
  template Tensor tensor<T>(const std::vector<T>&, const Shape&, const Options&);
WICK_INSTANTIATE(bool)
WICK_INSTANTIATE(uint8_t)
WICK_INSTANTIATE(int32_t)
WICK_INSTANTIATE(int64_t)
WICK_INSTANTIATE(Half)
WICK_INSTANTIATE(BFloat16)
WICK_INSTANTIATE(float)
WICK_INSTANTIATE(double)
#undef WICK_INSTANTIATE

}  // namespace wick
