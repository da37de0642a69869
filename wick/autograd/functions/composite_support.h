#pragma once
// What the composites (composite_activations.cpp, composite_ops.cpp, distances.cpp) need
// to write one template for Tensor and Variable: the Tensor spellings of the view ops
// Variables have as free functions, and access to the values behind either type. Internal
// to those files: they bring it in with `using namespace composite_support;`.
#include <utility>
#include <vector>

#include <wick/autograd/variable.h>
#include <wick/tensor/factories.h>

namespace wick::composite_support {

inline std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim) { return x.chunk(chunks, dim); }
inline std::vector<Tensor> split(const Tensor& x, int64_t size, int64_t dim) { return x.split(size, dim); }
inline Tensor reshape(const Tensor& x, const Shape& s) { return x.reshape(s); }
inline Tensor permute(const Tensor& x, const std::vector<int64_t>& d) { return x.permute(d); }
inline Tensor narrow(const Tensor& x, int64_t d, int64_t start, int64_t n) { return x.narrow(d, start, n); }
inline Tensor expand(const Tensor& x, const Shape& s) { return x.expand(s); }
inline Tensor broadcast_to(const Tensor& x, const Shape& s) { return x.broadcast_to(s); }
inline Tensor squeeze(const Tensor& x, int64_t d) { return x.squeeze(d); }
inline Tensor unsqueeze(const Tensor& x, int64_t d) { return x.unsqueeze(d); }
inline Tensor slice(const Tensor& x, int64_t d, int64_t start, int64_t end, int64_t step) {
  return x.slice(d, start, end, step);
}
inline Tensor select(const Tensor& x, int64_t d, int64_t i) { return x.select(d, i); }
inline Tensor to(const Tensor& x, DType t) { return x.to(t); }
inline Tensor clone(const Tensor& x) { return x.clone(); }

inline const Tensor& values(const Tensor& x) { return x; }
inline const Tensor& values(const Variable& x) { return x.data(); }
// A tensor computed from the values, as an operand of the same kind (a constant).
inline Tensor constant(const Tensor&, Tensor t) { return t; }
inline Variable constant(const Variable&, Tensor t) { return Variable(std::move(t)); }
template <class T>
T zero_like(const T& x) {
  return constant(x, zeros_like(values(x)));
}

}  // namespace wick::composite_support
