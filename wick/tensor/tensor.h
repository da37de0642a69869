#pragma once
// Tensor: a view (shape, strides in elements, offset) onto a shared Storage, with a dtype.
// Tensor knows nothing of autograd; autograd/Variable wraps it.
//
// Copying a Tensor is cheap and aliases the same memory (like torch.Tensor); use clone()
// for a deep copy. Ops return new tensors; methods ending in '_' write in place.
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <type_traits>
#include <vector>

#include <wick/tensor/device.h>
#include <wick/tensor/dtype.h>
#include <wick/tensor/error.h>
#include <wick/tensor/mirrored_ops.h>
#include <wick/tensor/scalar.h>
#include <wick/tensor/shape.h>
#include <wick/tensor/storage.h>

namespace wick {

// Where and how a new tensor is made. Converts from a DType or a Device, so factories
// accept `zeros({2, 3}, DType::Float64)`, `zeros({2, 3}, Device::cuda())` or
// `zeros({2, 3}, {DType::Int64, Device::cuda(1)})`.
struct Options {
  DType dtype = DType::Float32;
  Device device = Device::cpu();
  bool pinned = false;  // page-locked host memory (CPU tensors only)

  Options() = default;
  Options(DType t) : dtype(t) {}    // NOLINT(google-explicit-constructor)
  Options(Device d) : device(d) {}  // NOLINT(google-explicit-constructor)
  Options(DType t, Device d, bool pin = false) : dtype(t), device(d), pinned(pin) {}
};

// The views with arguments, one row each (wick/tensor/mirrored_ops.h): Tensor methods (in
// the class below) and Variable functions taking the Variable first (wick/autograd/ops.h).
// slice takes the elements start, start+step, ... < end along dim (negative start/end count
// from the end, both are clamped like Python slices); step > 0.
#define WICK_VIEW_OPS(X, Out)                                                                                       \
  X(Out, view, (const Shape& shape),                                                                                \
    Record<ReshapeBackward>(x.shape())) /* -1 infers one size; throws if strides don't allow */                     \
  X(Out, reshape, (const Shape& shape), Record<ReshapeBackward>(x.shape())) /* a view when possible, else a copy */ \
  X(Out, flatten, (int64_t start_dim = 0, int64_t end_dim = -1), Record<ReshapeBackward>(x.shape()))                \
  X(Out, permute, (const std::vector<int64_t>& dims))                                                               \
  X(Out, transpose, (int64_t d0, int64_t d1), Record<TransposeBackward>(d0, d1))                                    \
  X(Out, squeeze, (int64_t dim), Record<ReshapeBackward>(x.shape()))                                                \
  X(Out, unsqueeze, (int64_t dim), Record<ReshapeBackward>(x.shape()))                                              \
  X(Out, expand, (const Shape& shape), Record<ExpandBackward>(x.shape())) /* -1 keeps a size */                     \
  X(Out, broadcast_to, (const Shape& shape), Record<ExpandBackward>(x.shape()))                                     \
  X(Out, narrow, (int64_t dim, int64_t start, int64_t length))                                                      \
  X(Out, slice, (int64_t dim, int64_t start, int64_t end, int64_t step = 1),                                        \
    Record<SliceBackward>(x.shape(), dim, start, end, step))                                                        \
  X(Out, select, (int64_t dim, int64_t index))                                                                      \
  X(std::vector<Out>, chunk, (int64_t chunks, int64_t dim = 0))                                                     \
  X(std::vector<Out>, split, (int64_t split_size, int64_t dim = 0))                                                 \
  X(std::vector<Out>, split, (const std::vector<int64_t>& sizes, int64_t dim = 0))

class Tensor {
 public:
  Tensor() = default;  // an undefined tensor: defined() is false
  Tensor(std::shared_ptr<Storage> storage, Shape shape, Shape strides, int64_t offset, DType dtype);

  // --- metadata -----------------------------------------------------------------------
  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }
  int64_t dim() const { return static_cast<int64_t>(shape_.size()); }
  int64_t size(int64_t d) const;  // negative d counts from the end
  int64_t stride(int64_t d) const;
  int64_t offset() const { return offset_; }
  int64_t numel() const { return numel_; }
  DType dtype() const { return dtype_; }
  Device device() const { return storage_ ? storage_->device() : Device::cpu(); }
  Options options() const { return Options(dtype_, device()); }
  size_t element_size() const { return wick::element_size(dtype_); }
  size_t nbytes() const { return static_cast<size_t>(numel_) * element_size(); }
  bool is_contiguous() const;
  bool is_cuda() const { return device().is_cuda(); }
  bool is_floating_point() const { return is_floating(dtype_); }
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  // Whether both tensors view the same storage (not necessarily the same elements).
  bool shares_storage(const Tensor& other) const { return storage_ && storage_ == other.storage_; }

  // Address of the first element (storage base + offset).
  void* data_ptr() const;
  // Typed address of the first element; throws if T does not match dtype().
  template <class T>
  T* data() const {
    WICK_CHECK(dtype_v<T> == dtype_, "Tensor::data: requested ", dtype_name(dtype_v<T>), " but the tensor is ",
               dtype_name(dtype_));
    return static_cast<T*>(data_ptr());
  }

  // --- conversion ---------------------------------------------------------------------
  Tensor contiguous() const;  // self if already contiguous
  Tensor clone() const;       // a contiguous deep copy
  Tensor to(DType t) const;   // self if already of that dtype
  Tensor to(Device d, bool non_blocking = false) const;
  Tensor to(const Options& o, bool non_blocking = false) const;
  Tensor cpu() const { return to(Device::cpu()); }
  Tensor cuda(int index = 0) const { return to(Device::cuda(index)); }
  // The single element as T (any size-1 tensor); copies from the device if needed.
  template <class T>
  T item() const;
  // All elements in row-major order, converted to T.
  template <class T>
  std::vector<T> to_vector() const;
  Tensor& copy_(const Tensor& src);  // src broadcast to self's shape, any dtype/device

// --- views (share storage) ----------------------------------------------------------
// Declared from WICK_VIEW_OPS (above the class).
#include <wick/tensor/generated/view_ops.inc>
  Tensor t() const;  // 0-, 1- or 2-d transpose
  Tensor squeeze() const;
  Tensor as_strided(const Shape& shape, const Shape& strides, int64_t offset) const;
  Tensor operator[](int64_t i) const { return select(0, i); }

  // --- in-place (correct on views; the written elements are those this view sees) ------
  Tensor& fill_(const Scalar& v);
  Tensor& zero_() { return fill_(0); }
  Tensor& add_(const Tensor& o);
  Tensor& add_(const Scalar& o);
  Tensor& sub_(const Tensor& o);
  Tensor& sub_(const Scalar& o);
  Tensor& mul_(const Tensor& o);
  Tensor& mul_(const Scalar& o);
  Tensor& div_(const Tensor& o);
  Tensor& div_(const Scalar& o);
  Tensor& clamp_(std::optional<Scalar> lo, std::optional<Scalar> hi);
  Tensor& masked_fill_(const Tensor& mask, const Scalar& v);

  // --- common ops as methods (each forwards to the free function of the same name) ------
  Tensor sum() const;
  Tensor sum(const std::vector<int64_t>& dims, bool keepdim = false) const;
  Tensor mean() const;
  Tensor mean(const std::vector<int64_t>& dims, bool keepdim = false) const;
  Tensor matmul(const Tensor& o) const;
  Tensor abs() const;
  Tensor exp() const;
  Tensor log() const;
  Tensor sqrt() const;
  Tensor neg() const;
  Tensor argmax(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;

  std::string str() const;  // PyTorch-style printout

 private:
  std::shared_ptr<Storage> storage_;
  Shape shape_;
  Shape strides_;
  int64_t offset_ = 0;
  int64_t numel_ = 0;
  DType dtype_ = DType::Float32;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

// An uninitialised contiguous tensor.
Tensor empty(const Shape& shape, const Options& o = {});

// A tensor holding `values` (row-major) with `shape`; the shape defaults to 1-d.
template <class T>
Tensor tensor(const std::vector<T>& values, const Shape& shape, const Options& o);
template <class T>
Tensor tensor(const std::vector<T>& values, const Shape& shape) {
  return tensor<T>(values, shape, Options(dtype_v<T>));
}
template <class T>
Tensor tensor(const std::vector<T>& values) {
  return tensor<T>(values, Shape{static_cast<int64_t>(values.size())});
}
template <class T>
Tensor tensor(std::initializer_list<T> values, const Shape& shape) {
  return tensor<T>(std::vector<T>(values), shape);
}
template <class T>
Tensor tensor(std::initializer_list<T> values) {
  return tensor<T>(std::vector<T>(values));
}
// The dtype is T's (tensor<int32_t>({1, 2}) is int32, tensor({1.5, 2.5}) float64,
// tensor({true, false}) bool), except for a braced list of plain integers with no type
// named: tensor({1, 2, 3}) is int64, as torch.tensor([1, 2, 3]) (the overloads below,
// which C++ prefers to the templates when T would be int).
inline Tensor tensor(std::initializer_list<int> values, const Shape& shape) {
  return tensor<int64_t>(std::vector<int64_t>(values.begin(), values.end()), shape);
}
inline Tensor tensor(std::initializer_list<int> values) {
  return tensor<int64_t>(std::vector<int64_t>(values.begin(), values.end()));
}
// A 0-d tensor of o's dtype: float32 unless set, as torch.scalar_tensor (full({}, v) infers
// the dtype from v instead).
Tensor scalar_tensor(const Scalar& v, const Options& o = {});

// `in`, or a copy of it when it shares memory with `out` without being the very same view:
// an elementwise op writing `out` while reading `in` would otherwise read elements it has
// already overwritten.
Tensor unaliased_input(const Tensor& in, const Tensor& out);
// Throws unless every element of `self` has its own memory location (an expanded view with
// elements cannot be written in place; an empty one can).
void check_writable(const char* op, const Tensor& self);
// Throws unless the number fits `dtype` (fill_, masked_fill_).
void check_fits(const char* op, const Scalar& v, DType dtype);
// Whether a dim of size > 1 has stride 0 (an expanded view), and the shape with such dims
// cut to size 1: the view that reaches every memory location of t once.
bool has_expanded_dims(const Tensor& t);
Shape unexpanded_shape(const Tensor& t);

}  // namespace wick
