#include <wick/tensor/dtype.h>
#include <wick/tensor/dtype_limits.h>

namespace wick {

double largest_finite(DType t) {
  switch (t) {
    case DType::Bool: return 1;
    case DType::UInt8: return 255;
    case DType::Int32: return 2147483647.0;
    case DType::Int64: return 9223372036854775807.0;
    case DType::Float16: return 65504.0;
    case DType::BFloat16: return 3.3895313892515355e38;
    case DType::Float32: return 3.4028234663852886e38;
    case DType::Float64: return 1.7976931348623157e308;
  }
  return 0;
}

double lowest_finite(DType t) {
  switch (t) {
    case DType::Bool:
    case DType::UInt8: return 0;
    case DType::Int32: return -2147483648.0;
    case DType::Int64: return -9223372036854775808.0;
    default: return -largest_finite(t);
  }
}

size_t element_size(DType t) {
  switch (t) {
    case DType::Bool:
    case DType::UInt8: return 1;
    case DType::Float16:
    case DType::BFloat16: return 2;
    case DType::Int32:
    case DType::Float32: return 4;
    case DType::Int64:
    case DType::Float64: return 8;
  }
  return 0;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::Bool: return "bool";
    case DType::UInt8: return "uint8";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
    case DType::Float16: return "float16";
    case DType::BFloat16: return "bfloat16";
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
  }
  return "?";
}

std::ostream& operator<<(std::ostream& os, DType t) { return os << dtype_name(t); }

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  // float16 and bfloat16 have no common 16-bit type: both fit in float32.
  if ((a == DType::Float16 && b == DType::BFloat16) || (a == DType::BFloat16 && b == DType::Float16))
    return DType::Float32;
  // Otherwise the lattice is a chain: bool < uint8 < int32 < int64 < f16/bf16 < float32 < float64.
  auto rank = [](DType t) {
    switch (t) {
      case DType::Bool: return 0;
      case DType::UInt8: return 1;
      case DType::Int32: return 2;
      case DType::Int64: return 3;
      case DType::Float16:
      case DType::BFloat16: return 4;
      case DType::Float32: return 5;
      case DType::Float64: return 6;
    }
    return 0;
  };
  return rank(a) >= rank(b) ? a : b;
}

}  // namespace wick
