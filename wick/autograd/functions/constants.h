#pragma once
// Constants that backward formulas combine with gradients: not part of any graph.
#include <wick/autograd/variable.h>
#include <wick/tensor/factories.h>

namespace wick {

// A 0-d constant with like's dtype and device (broadcasts in where/mul without a copy).
inline Variable constant_like(const Variable& like, double v) {
  return Variable(scalar_tensor(v, like.data().options()));
}

// Zeros of `shape` with like's dtype and device (what gradients are added or written into).
inline Variable zeros_like_shape(const Shape& shape, const Variable& like) {
  return Variable(zeros(shape, like.data().options()));
}

}  // namespace wick
