#pragma once
// Constants that backward formulas combine with gradients (not part of any graph), and the
// small formulas several backward nodes share.
#include <wick/autograd/ops.h>
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

// x times a constant factor; a factor of 1 costs no pass (x * 1 is x, bit for bit).
inline Variable scaled(const Variable& x, double factor) { return factor == 1.0 ? x : mul(x, factor); }

// The gradient of a piecewise-constant op (floor, round, sign...): zeros, as PyTorch.
inline Variable step_derivative(const Variable& g) { return Variable(zeros_like(g.data())); }

}  // namespace wick
