#pragma once
// Linear: y = x W^T + b over the last dim of x ([..., in] -> [..., out]).
// PyTorch's default initialisation: W ~ kaiming_uniform(a = sqrt(5)), i.e.
// U(-1/sqrt(in), 1/sqrt(in)), and b ~ U(-1/sqrt(in), 1/sqrt(in)).
#include <wick/nn/module.h>
#include <wick/tensor/generator.h>

namespace wick {

class Linear : public UnaryModule {
 public:
  // `o` gives the parameters' dtype and device; `g` the generator of the initialisation.
  Linear(int64_t in_features, int64_t out_features, bool bias = true, const Options& o = {},
         Generator* g = nullptr);
  const char* type_name() const override { return "Linear"; }
  Variable forward(const Variable& x) override;
  // Draws the parameters again as the constructor did.
  void reset_parameters(Generator* g = nullptr);
  // Shares `w` as this layer's weight (GPT's output layer and token embedding): see
  // Module::tie_parameter. `w` must have this weight's shape, dtype and device.
  void tie_weight(const Variable& w) { weight = tie_parameter("weight", w); }

  int64_t in_features() const { return in_features_; }
  int64_t out_features() const { return out_features_; }

  Variable weight;  // [out, in]
  Variable bias;    // [out], undefined without bias

 private:
  int64_t in_features_, out_features_;
};

}  // namespace wick
