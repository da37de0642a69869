#pragma once
// Activation layers: parameter-free modules forwarding to the differentiable op of the same
// name in wick/autograd/ops.h.
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

// The composite activations of wick/autograd/activations.h as layers, with PyTorch's defaults.
// Layers without settings are spelled out by one macro.
#define WICK_ACTIVATION_LAYER(Name, op)                       \
  class Name : public UnaryModule {                            \
   public:                                                     \
    const char* type_name() const override { return #Name; }   \
    Variable forward(const Variable& x) override;              \
  };

class ELU : public UnaryModule {
 public:
  explicit ELU(double alpha = 1.0) : alpha_(alpha) {}
  const char* type_name() const override { return "ELU"; }
  Variable forward(const Variable& x) override;

 private:
  double alpha_;
};

class CELU : public UnaryModule {
 public:
  explicit CELU(double alpha = 1.0) : alpha_(alpha) {}
  const char* type_name() const override { return "CELU"; }
  Variable forward(const Variable& x) override;

 private:
  double alpha_;
};

class Hardtanh : public UnaryModule {
 public:
  explicit Hardtanh(double min_val = -1.0, double max_val = 1.0) : min_(min_val), max_(max_val) {}
  const char* type_name() const override { return "Hardtanh"; }
  Variable forward(const Variable& x) override;

 private:
  double min_, max_;
};

// a * sigmoid(b) for the halves a, b of the input along `dim`.
class GLU : public UnaryModule {
 public:
  explicit GLU(int64_t dim = -1) : dim_(dim) {}
  const char* type_name() const override { return "GLU"; }
  Variable forward(const Variable& x) override;

 private:
  int64_t dim_;
};

// x > 0 ? x : weight * x, with a learned weight: one shared (num_parameters = 1) or one per
// channel (dim 1 of the input), initialised to `init`.
class PReLU : public UnaryModule {
 public:
  explicit PReLU(int64_t num_parameters = 1, double init = 0.25, const Options& o = {});
  const char* type_name() const override { return "PReLU"; }
  Variable forward(const Variable& x) override;

  Variable weight;
};

WICK_ACTIVATION_LAYER(SELU, selu)
WICK_ACTIVATION_LAYER(ReLU6, relu6)
WICK_ACTIVATION_LAYER(Hardsigmoid, hardsigmoid)
WICK_ACTIVATION_LAYER(Hardswish, hardswish)
WICK_ACTIVATION_LAYER(Mish, mish)
WICK_ACTIVATION_LAYER(LogSigmoid, logsigmoid)
WICK_ACTIVATION_LAYER(Softsign, softsign)
#undef WICK_ACTIVATION_LAYER

}  // namespace wick
