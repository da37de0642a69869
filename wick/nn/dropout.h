#pragma once
// Dropout: in training, zeroes each element with probability p and scales the survivors by
// 1 / (1 - p), so the expectation is unchanged; in eval mode (or with p = 0) the identity.
// The mask is drawn from `g` (default: this thread's generator); a generator passed here
// must outlive the module.
#include <wick/nn/module.h>
#include <wick/tensor/generator.h>

namespace wick {

// The functional form: applies the mask only when `training`.
Variable dropout(const Variable& x, double p, bool training = true, Generator* g = nullptr);

class Dropout : public UnaryModule {
 public:
  explicit Dropout(double p = 0.5, Generator* g = nullptr);
  const char* type_name() const override { return "Dropout"; }
  Variable forward(const Variable& x) override;
  double p() const { return p_; }

 private:
  double p_;
  Generator* generator_;
};

}  // namespace wick
