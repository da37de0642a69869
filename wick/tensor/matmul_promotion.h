#pragma once
// matmul's rule for 1-d operands (torch.matmul), written once for Tensor and Variable:
// both 1-d: their dot product; a 1-d: a row [1, K] whose added dim leaves the result; b 1-d:
// a column [K, 1], likewise. `product(a, b)` multiplies operands that are at least 2-d
// (broadcasting their batch dims). unsqueeze and squeeze are found by argument-dependent
// lookup: Tensor's below, Variable's in wick/autograd/ops.h.
#include <wick/tensor/error.h>
#include <wick/tensor/tensor.h>

namespace wick::matmul_promotion {

inline Tensor unsqueeze(const Tensor& x, int64_t dim) { return x.unsqueeze(dim); }
inline Tensor squeeze(const Tensor& x, int64_t dim) { return x.squeeze(dim); }

template <class T, class Product>
T matmul_of(const T& a, const T& b, Product product) {
  WICK_CHECK(a.dim() >= 1 && b.dim() >= 1, "matmul: both operands need at least 1 dim, got shapes ",
             shape_str(a.shape()), " and ", shape_str(b.shape()));
  const int64_t ka = a.size(-1), kb = b.dim() == 1 ? b.size(0) : b.size(-2);
  WICK_CHECK(ka == kb, "matmul: shapes ", shape_str(a.shape()), " and ", shape_str(b.shape()),
             " cannot be multiplied (", ka, " != ", kb, ")");
  if (a.dim() == 1 && b.dim() == 1) return dot(a, b);
  if (a.dim() == 1) return squeeze(product(unsqueeze(a, 0), b), -2);  // [..., 1, N] -> [..., N]
  if (b.dim() == 1) return squeeze(product(a, unsqueeze(b, 1)), -1);  // [..., M, 1] -> [..., M]
  return product(a, b);
}

}  // namespace wick::matmul_promotion
