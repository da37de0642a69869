#pragma once
// A number passed to an op (a + 2.5, fill(7), clamp(0, 1)): remembers whether it was
// written as a bool, an integer or a floating value, which matters for type promotion.
#include <cstdint>
#include <limits>
#include <type_traits>

#include <wick/tensor/dtype.h>

namespace wick {

class Scalar {
 public:
  enum class Kind : uint8_t { Bool, Int, Float };

  Scalar() = default;
  Scalar(bool v) : kind_(Kind::Bool), i_(v), d_(v) {}  // NOLINT(google-explicit-constructor)
  template <class T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Scalar(T v) : kind_(Kind::Int), i_(static_cast<int64_t>(v)), d_(static_cast<double>(v)) {}  // NOLINT
  template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  Scalar(T v) : kind_(Kind::Float), i_(saturate<int64_t>(static_cast<double>(v))), d_(static_cast<double>(v)) {}  // NOLINT
  Scalar(Half v) : Scalar(static_cast<float>(v)) {}      // NOLINT
  Scalar(BFloat16 v) : Scalar(static_cast<float>(v)) {}  // NOLINT

  Kind kind() const { return kind_; }
  bool is_floating() const { return kind_ == Kind::Float; }
  bool is_integral() const { return kind_ == Kind::Int; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  double to_double() const { return d_; }
  int64_t to_int() const { return i_; }

  // The value converted to T (exact for integers up to int64 when written as one).
  template <class T>
  T to() const {
    if constexpr (std::is_same_v<T, bool>) return kind_ == Kind::Float ? d_ != 0.0 : i_ != 0;
    else if constexpr (std::is_integral_v<T>) return kind_ == Kind::Float ? saturate<T>(d_) : static_cast<T>(i_);
    else return static_cast<T>(static_cast<compute_t<T>>(d_));
  }

  // The dtype a 0-d tensor holding this value would get on its own.
  DType natural_dtype() const {
    return kind_ == Kind::Bool ? DType::Bool : kind_ == Kind::Int ? DType::Int64 : DType::Float64;
  }

 private:
  // double -> integer without undefined behaviour: truncated toward zero, clamped to T's
  // range, NaN -> 0. (A plain cast of NaN or of an out-of-range value is undefined in C++.)
  template <class T>
  static T saturate(double v) {
    if (v != v) return 0;
    if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  }

  Kind kind_ = Kind::Int;
  int64_t i_ = 0;
  double d_ = 0.0;
};

}  // namespace wick
