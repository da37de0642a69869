#pragma once
// Activation layers: parameter-free modules forwarding to the differentiable op of the same
// name in autograd/ops.h.
#include <wick/nn/module.h>
#include <wick/tensor/elementwise.h>

namespace wick {

class ReLU : public UnaryModule {
 public:
  const char* type_name() const override { return "ReLU"; }
  Variable forward(const Variable& x) override;
};

// x for x >= 0, negative_slope * x otherwise.
class LeakyReLU : public UnaryModule {
 public:
  explicit LeakyReLU(double negative_slope = 0.01) : negative_slope_(negative_slope) {}
  const char* type_name() const override { return "LeakyReLU"; }
  Variable forward(const Variable& x) override;
  double negative_slope() const { return negative_slope_; }

 private:
  double negative_slope_;
};

// x * Phi(x), exactly (erf) or with the tanh approximation.
class GELU : public UnaryModule {
 public:
  explicit GELU(GeluApproximation approximate = GeluApproximation::None) : approximate_(approximate) {}
  const char* type_name() const override { return "GELU"; }
  Variable forward(const Variable& x) override;

 private:
  GeluApproximation approximate_;
};

// x * sigmoid(x).
class SiLU : public UnaryModule {
 public:
  const char* type_name() const override { return "SiLU"; }
  Variable forward(const Variable& x) override;
};

class Tanh : public UnaryModule {
 public:
  const char* type_name() const override { return "Tanh"; }
  Variable forward(const Variable& x) override;
};

class Sigmoid : public UnaryModule {
 public:
  const char* type_name() const override { return "Sigmoid"; }
  Variable forward(const Variable& x) override;
};

// softmax along `dim` (negative counts from the end).
class Softmax : public UnaryModule {
 public:
  explicit Softmax(int64_t dim) : dim_(dim) {}
  const char* type_name() const override { return "Softmax"; }
  Variable forward(const Variable& x) override;

 private:
  int64_t dim_;
};

}  // namespace wick
