#pragma once
// Differentiable ops on Variables. Each forwards to the tensor op of the same name and, when
// grad mode is on and an input requires grad, records a named backward node. Backward
// formulas are written with these same ops, so with create_graph they are differentiable too.
#include <vector>

#include <wick/autograd/variable.h>
#include <wick/tensor/reduce.h>

namespace wick {

// Elementwise (broadcasting; gradients are summed back to each input's shape).
Variable add(const Variable& a, const Variable& b);
Variable sub(const Variable& a, const Variable& b);
Variable mul(const Variable& a, const Variable& b);
Variable div(const Variable& a, const Variable& b);
Variable add(const Variable& a, const Scalar& b);
Variable mul(const Variable& a, const Scalar& b);
Variable pow(const Variable& a, double exponent);
Variable neg(const Variable& x);
Variable exp(const Variable& x);
Variable log(const Variable& x);
Variable relu(const Variable& x);
Variable tanh(const Variable& x);
Variable sigmoid(const Variable& x);

// Reductions.
Variable sum(const Variable& x, const Dims& dims = {}, bool keepdim = false);
Variable mean(const Variable& x, const Dims& dims = {}, bool keepdim = false);

// Shapes.
Variable reshape(const Variable& x, const Shape& shape);
Variable transpose(const Variable& x, int64_t d0, int64_t d1);
Variable expand(const Variable& x, const Shape& shape);
// Sums x over the dims that broadcasting added or expanded, so the result has `shape`
// (the inverse of broadcasting, used by every broadcasting op's backward).
Variable sum_to(const Variable& x, const Shape& shape);

// Linear algebra (torch.matmul rules).
Variable matmul(const Variable& a, const Variable& b);

inline Variable operator+(const Variable& a, const Variable& b) { return add(a, b); }
inline Variable operator-(const Variable& a, const Variable& b) { return sub(a, b); }
inline Variable operator*(const Variable& a, const Variable& b) { return mul(a, b); }
inline Variable operator/(const Variable& a, const Variable& b) { return div(a, b); }
inline Variable operator+(const Variable& a, const Scalar& b) { return add(a, b); }
inline Variable operator*(const Variable& a, const Scalar& b) { return mul(a, b); }
inline Variable operator-(const Variable& a) { return neg(a); }

}  // namespace wick
