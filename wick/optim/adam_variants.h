#pragma once
// Adamax, NAdam and RAdam, with torch.optim's updates and defaults (t = the parameter's
// step, g = G + weight_decay * p where G = grad, or -grad with maximize,
// m = beta1 m + (1 - beta1) g):
//   Adamax  u = max(beta2 u, |g| + eps);  p -= lr / (1 - beta1^t) * m / u
//   NAdam   mu_t = beta1 (1 - 0.96^(t momentum_decay) / 2), prod = mu_1 ... mu_t,
//           v = beta2 v + (1 - beta2) g^2,  d = sqrt(v / (1 - beta2^t)) + eps,
//           p -= lr (1 - mu_t) / (1 - prod) g / d + lr mu_(t+1) / (1 - prod mu_(t+1)) m / d
//   RAdam   v as NAdam, rho_inf = 2 / (1 - beta2) - 1, rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t);
//           m_hat = m / (1 - beta1^t); rho_t > 5: p -= lr m_hat r sqrt(1 - beta2^t) / (sqrt(v) + eps)
//           with r = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t)),
//           else p -= lr m_hat
// Each parameter is updated with tensor ops (no fused kernel), on any device.
#include <wick/optim/optimizer.h>

namespace wick {

struct AdamaxOptions {
  double lr = 2e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;
  bool maximize = false;  // ascend the objective: step with -grad
  std::vector<HyperParameter> fields() {
    return {{"lr", &lr},     {"beta1", &beta1}, {"beta2", &beta2}, {"eps", &eps}, {"weight_decay", &weight_decay},
            {"maximize", nullptr, &maximize}};
  }
};

struct NAdamOptions {
  double lr = 2e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;
  double momentum_decay = 4e-3;
  bool maximize = false;  // ascend the objective: step with -grad
  std::vector<HyperParameter> fields() {
    return {{"lr", &lr},
            {"beta1", &beta1},
            {"beta2", &beta2},
            {"eps", &eps},
            {"weight_decay", &weight_decay},
            {"momentum_decay", &momentum_decay},
            {"maximize", nullptr, &maximize}};
  }
};

struct RAdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;
  bool maximize = false;  // ascend the objective: step with -grad
  std::vector<HyperParameter> fields() {
    return {{"lr", &lr},     {"beta1", &beta1}, {"beta2", &beta2}, {"eps", &eps}, {"weight_decay", &weight_decay},
            {"maximize", nullptr, &maximize}};
  }
};

// The three share the shape of an optimizer: checked options, one update per parameter.
#define WICK_ADAM_VARIANT(Name, Buffers)                                                      \
  class Name : public OptimizerWith<Name##Options> {                                          \
   public:                                                                                    \
    explicit Name(NamedParameters params, Name##Options options = {})                         \
        : Name(std::vector<Group>{{std::move(params), options}}) {                            \
      defaults_ = options;                                                                    \
    }                                                                                         \
    explicit Name(std::vector<Group> groups);                                                 \
    Name(std::vector<ParamGroup> groups, Name##Options defaults)                              \
        : Name(with_defaults(std::move(groups), defaults, #Name)) {                           \
      defaults_ = defaults;                                                                   \
    }                                                                                         \
                                                                                              \
   protected:                                                                                 \
    void check_options(const Name##Options& o) const override;                                \
    void step_group(size_t group, const std::vector<Slot>& slots) override {                  \
      for (const Slot& s : slots) update(options_[group], s.param, s.grad, *s.state);         \
    }                                                                                         \
    std::vector<std::string> buffer_names(size_t) const override { return Buffers; }          \
                                                                                              \
   private:                                                                                   \
    static void update(const Name##Options& o, Tensor param, const Tensor& grad, State& state); \
  };

WICK_ADAM_VARIANT(Adamax, (std::vector<std::string>{"exp_avg", "exp_inf"}))
WICK_ADAM_VARIANT(NAdam, (std::vector<std::string>{"exp_avg", "exp_avg_sq", "mu_product"}))
WICK_ADAM_VARIANT(RAdam, (std::vector<std::string>{"exp_avg", "exp_avg_sq"}))
#undef WICK_ADAM_VARIANT

}  // namespace wick
