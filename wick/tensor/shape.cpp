#include <wick/tensor/error.h>
#include <wick/tensor/shape.h>

#include <algorithm>
#include <sstream>

namespace wick {

int64_t& Shape::at(size_t i) {
  WICK_CHECK(i < size_, "Shape::at: index ", i, " out of range for ", size_, " elements");
  return data()[i];
}

const int64_t& Shape::at(size_t i) const {
  WICK_CHECK(i < size_, "Shape::at: index ", i, " out of range for ", size_, " elements");
  return data()[i];
}

void Shape::grow(size_t n) {
  const size_t cap = std::max({n, kInline + 1, 2 * capacity()});
  int64_t* p = new int64_t[cap];
  std::copy(begin(), end(), p);
  release();
  heap_ = p;
  capacity_ = cap;
}

// Shapes come from files and peers too (readers, checkpoints): a product that overflows
// int64 would be undefined behaviour and, wrapped, a small plausible size. No such tensor can
// be addressed, so both throw.
int64_t numel_of(const Shape& shape) {
  int64_t n = 1;
  for (int64_t s : shape)
    WICK_CHECK(!__builtin_mul_overflow(n, s, &n), "numel: shape ", shape_str(shape),
               " has more elements than int64 can count");
  return n;
}

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    // Zero sizes count as one (as in PyTorch), so an empty tensor of shape [0, 2^40, 2^40]
    // still has strides that overflow: the check must not stop at numel == 0.
    if (i > 0)
      WICK_CHECK(!__builtin_mul_overflow(s, std::max<int64_t>(shape[i], 1), &s), "contiguous_strides: shape ",
                 shape_str(shape), " is too large: its strides overflow int64");
  }
  return strides;
}

std::string shape_str(const Shape& shape) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << ']';
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Shape& s) { return os << shape_str(s); }

int64_t wrap_dim(const char* op, int64_t dim, int64_t ndim) {
  int64_t n = ndim == 0 ? 1 : ndim;  // a 0-d tensor accepts dim 0 and -1, like PyTorch
  WICK_CHECK(dim >= -n && dim < n, op, ": dim ", dim, " is out of range for a tensor with ", ndim,
             " dimension(s) (expected in [", -n, ", ", n - 1, "])");
  return dim < 0 ? dim + n : dim;
}

Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t sa = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t sb = i < b.size() ? b[b.size() - 1 - i] : 1;
    WICK_CHECK(sa == sb || sa == 1 || sb == 1, op, ": shapes ", shape_str(a), " and ", shape_str(b),
               " do not broadcast (dim ", -static_cast<int64_t>(i) - 1, ": ", sa, " vs ", sb, ")");
    out[n - 1 - i] = sa == 1 ? sb : sa;
  }
  return out;
}

}  // namespace wick
