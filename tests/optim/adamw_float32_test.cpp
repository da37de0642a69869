// float32 Adam / AdamW evaluate their update in PyTorch's order of operations (issue 48,
// item 0), so that a float32 run stays as close to the float64 run as PyTorch's does:
//   - one step from a fixed state, through the optimizer classes (the fused kernel for Adam
//     and AdamW, the per-tensor ops for AMSGrad), is no further from the exact step (float64
//     from the same float32 inputs) than PyTorch's order written out below in float;
//   - 100 steps of the MNIST MLP (784-256-128-10, batch 128, Fashion-MNIST where installed)
//     with AdamW(lr 1e-3, weight_decay 1e-4) in float32 end within 2x PyTorch's distance
//     from the same run in float64.
// With WICK_ADAMW_DUMP=<file.safetensors> the 100-step test also writes its initial weights
// and both runs' losses there, for tests/optim/adamw_float32_reference.py to train the same
// MLP with torch and compare.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <wick/autograd/ops.h>
#include <wick/nn/activation.h>
#include <wick/nn/containers.h>
#include <wick/nn/linear.h>
#include <wick/nn/loss.h>
#include <wick/optim/adam.h>
#include <wick/tensor/safetensors.h>

#include "tests/optim/mlp_batches.h"
#include "tests/support/reference.h"

namespace wick::test {
namespace {

struct AdamCase {
  const char* name;
  bool decoupled;  // AdamW
  bool amsgrad;
  double weight_decay;
};

// One element's state before the step.
struct Element {
  float p, g, m, v, vmax;
};

// torch.optim.Adam/AdamW's single-tensor step on one float32 element, in its order of
// operations (torch/optim/adam.py, _single_tensor_adam, and the CPU kernels of mul_, lerp_,
// addcmul_, sqrt, div, add_ and addcdiv_): Python floats (double) become float32 where a
// tensor op takes them; the bias corrections are Python floats.
Element torch_order(const AdamCase& c, Element e, int step, double lr, double b1, double b2, double eps) {
  if (c.decoupled)
    e.p = e.p * static_cast<float>(1 - lr * c.weight_decay);  // param.mul_(1 - lr * wd)
  else
    e.g = e.g + static_cast<float>(c.weight_decay) * e.p;  // grad.add(param, alpha=wd)
  const float w1 = static_cast<float>(1 - b1);
  e.m = e.m + w1 * (e.g - e.m);  // exp_avg.lerp_(grad, 1 - beta1), a weight below 0.5
  e.v = e.v * static_cast<float>(b2);
  e.v = e.v + static_cast<float>(1 - b2) * e.g * e.g;  // addcmul_(grad, grad, value=1 - beta2)
  const double bc1 = 1 - std::pow(b1, step), bc2 = 1 - std::pow(b2, step);
  const double step_size = lr / bc1, bc2_sqrt = std::sqrt(bc2);
  float second = e.v;
  if (c.amsgrad) second = e.vmax = std::max(e.vmax, e.v);
  const float denom = std::sqrt(second) / static_cast<float>(bc2_sqrt) + static_cast<float>(eps);
  e.p = e.p + static_cast<float>(-step_size) * e.m / denom;  // addcdiv_(exp_avg, denom, value=-step_size)
  return e;
}

// The same step in double from the same float32 inputs (within 1e-16 of exact).
struct Exact {
  double p, m, v, vmax;
};
Exact exact_step(const AdamCase& c, const Element& e, int step, double lr, double b1, double b2, double eps) {
  double p = e.p, g = e.g;
  if (c.decoupled)
    p *= 1 - lr * c.weight_decay;
  else
    g += c.weight_decay * p;
  const double m = b1 * e.m + (1 - b1) * g, v = b2 * e.v + (1 - b2) * g * g;
  const double vmax = c.amsgrad ? std::max<double>(e.vmax, v) : v;
  const double bc1 = 1 - std::pow(b1, step), bc2 = 1 - std::pow(b2, step);
  p -= lr / bc1 * m / (std::sqrt(vmax) / std::sqrt(bc2) + eps);
  return {p, m, v, vmax};
}

double rms(const std::vector<double>& d) {
  double s = 0;
  for (double x : d) s += x * x;
  return std::sqrt(s / static_cast<double>(d.size()));
}

// A state as training reaches it: parameters, gradients and first moments of magnitudes
// from 1e-6 to 1e-1, second moments from the first's square to 100 times it.
std::vector<Element> random_state(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  auto signed_log = [&](double lo, double hi) {
    const double mag = std::pow(10.0, lo + (hi - lo) * u(rng));
    return static_cast<float>(u(rng) < 0.5 ? -mag : mag);
  };
  std::vector<Element> s(n);
  for (Element& e : s) {
    e.p = signed_log(-4, -1);
    e.g = signed_log(-6, -1);
    e.m = signed_log(-6, -2);
    e.v = static_cast<float>(static_cast<double>(e.m) * e.m * std::pow(10.0, 2 * u(rng)));
    e.vmax = static_cast<float>(e.v * (1 + u(rng)));
  }
  return s;
}

TEST(AdamFloat32, OneStepIsNoFurtherFromTheExactStepThanPyTorchsOrder) {
  const double lr = 1e-3, b1 = 0.9, b2 = 0.999, eps = 1e-8;
  const size_t n = 1 << 16;
  const std::vector<AdamCase> cases = {{"AdamW", true, false, 1e-4},
                                       {"AdamW amsgrad", true, true, 1e-4},
                                       {"Adam", false, false, 1e-4},
                                       {"Adam amsgrad", false, true, 1e-4}};
  for (const AdamCase& c : cases)
    for (int step : {1, 2, 10, 57, 100}) {
      SCOPED_TRACE(std::string(c.name) + ", step " + std::to_string(step));
      const std::vector<Element> s = random_state(n, 1000 + step);
      std::vector<float> p(n), g(n), m(n), v(n), vmax(n);
      for (size_t i = 0; i < n; ++i) p[i] = s[i].p, g[i] = s[i].g, m[i] = s[i].m, v[i] = s[i].v, vmax[i] = s[i].vmax;
      const Shape shape = {static_cast<int64_t>(n)};
      Variable w(tensor<float>(p, shape), true);
      AdamOptions o{.lr = lr, .beta1 = b1, .beta2 = b2, .eps = eps, .weight_decay = c.weight_decay, .amsgrad = c.amsgrad};
      std::unique_ptr<Adam> opt = c.decoupled ? std::make_unique<AdamW>(NamedParameters{{"w", w}}, o)
                                              : std::make_unique<Adam>(NamedParameters{{"w", w}}, o);
      TensorMap state = {{"state.w.step", scalar_tensor(static_cast<double>(step - 1), DType::Float64)},
                         {"state.w.exp_avg", tensor<float>(m, shape)},
                         {"state.w.exp_avg_sq", tensor<float>(v, shape)}};
      if (c.amsgrad) state["state.w.max_exp_avg_sq"] = tensor<float>(vmax, shape);
      opt->load_state_dict(state);
      w.set_grad(Variable(tensor<float>(g, shape)));
      opt->step();
      const std::vector<float> wp = w.data().to_vector<float>();
      const TensorMap after = opt->state_dict();
      const std::vector<float> wm = after.at("state.w.exp_avg").to_vector<float>(),
                               wv = after.at("state.w.exp_avg_sq").to_vector<float>();
      // Distances from the exact step: wick's and PyTorch's order's.
      std::vector<double> dp(n), tp(n), dm(n), tm(n), dv(n), tv(n);
      for (size_t i = 0; i < n; ++i) {
        const Exact x = exact_step(c, s[i], step, lr, b1, b2, eps);
        const Element t = torch_order(c, s[i], step, lr, b1, b2, eps);
        dp[i] = wp[i] - x.p, tp[i] = t.p - x.p;
        dm[i] = wm[i] - x.m, tm[i] = t.m - x.m;
        dv[i] = (wv[i] - x.v) / x.v, tv[i] = (t.v - x.v) / x.v;
      }
      const double rp = rms(dp), rtp = rms(tp), rm = rms(dm), rtm = rms(tm), rv = rms(dv), rtv = rms(tv);
      std::printf("%-13s step %3d: RMS from the exact step, wick / PyTorch's order: param %.4g / %.4g (%.3fx), "
                  "exp_avg %.4g / %.4g (%.3fx), exp_avg_sq (relative) %.4g / %.4g (%.3fx)\n",
                  c.name, step, rp, rtp, rp / rtp, rm, rtm, rm / rtm, rv, rtv, rv / rtv);
      EXPECT_LE(rp, 1.05 * rtp) << "param";
      EXPECT_LE(rm, 1.05 * rtm) << "exp_avg";
      EXPECT_LE(rv, 1.05 * rtv) << "exp_avg_sq";
    }
}

// The losses of 100 AdamW steps of the MNIST MLP in `dtype`, from the same float32 initial
// weights (seed 11) and batches; `initial` receives those weights.
std::vector<double> train_adamw(const Batches& data, DType dtype, TensorMap* initial = nullptr) {
  Generator g(11);
  Sequential net{std::make_shared<Linear>(784, 256, true, DType::Float32, &g), std::make_shared<ReLU>(),
                 std::make_shared<Linear>(256, 128, true, DType::Float32, &g), std::make_shared<ReLU>(),
                 std::make_shared<Linear>(128, 10, true, DType::Float32, &g)};
  if (initial)
    for (const auto& [name, p] : net.named_parameters()) (*initial)[name] = p.data().clone();
  net.to(dtype);
  AdamW opt(net.named_parameters(), AdamOptions{.lr = 1e-3, .weight_decay = 1e-4});
  std::vector<double> losses;
  for (size_t s = 0; s < data.x.size(); ++s) {
    opt.zero_grad();
    Variable loss = cross_entropy(net(Variable(data.x[s].to(dtype))), data.y[s]);
    loss.backward();
    opt.step();
    losses.push_back(loss.data().to(DType::Float64).item<double>());
  }
  return losses;
}

TEST(AdamFloat32, HundredAdamWStepsOfAnMlpStayWithinTwicePyTorchsDistanceFromFloat64) {
  const Batches data = make_batches(100);
  if (!data.fashion_mnist)
    GTEST_SKIP() << "PyTorch's distance was measured on Fashion-MNIST (Debian's dataset-fashion-mnist), not installed";
  TensorMap initial;
  const std::vector<double> f64 = train_adamw(data, DType::Float64, &initial);
  const std::vector<double> f32 = train_adamw(data, DType::Float32);
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < f64.size(); ++i) {
    const double d = std::abs(f32[i] - f64[i]) / std::abs(f64[i]);
    if (!(d <= worst)) worst = d, at = i;
  }
  const double final_distance = std::abs(f32.back() - f64.back()) / std::abs(f64.back());
  std::printf("AdamW float32 vs float64 over %zu steps: final loss %.9g vs %.9g, relative %.3g; worst %.3g at step %zu\n",
              f64.size(), f32.back(), f64.back(), final_distance, worst, at + 1);
  if (const char* dump = std::getenv("WICK_ADAMW_DUMP")) {
    initial["losses.float64"] = tensor<double>(f64, {static_cast<int64_t>(f64.size())});
    initial["losses.float32"] = tensor<double>(f32, {static_cast<int64_t>(f32.size())});
    save_safetensors(dump, initial);
  }
  // PyTorch 2.15 (CPU, 1 and 2 threads) trained from the same weights on the same
  // Fashion-MNIST batches (tests/optim/adamw_float32_reference.py) ends 3.32e-7 from its
  // float64 run, 7.46e-7 (1 thread) and 8.06e-7 (2 threads) at its worst step (83); its
  // float64 losses equal wick's to 5.1e-16. wick measured 3.32e-7 and 8.66e-7 (step 83); before
  // its update followed torch's order, 4.09e-3 and 1.07e-2 (step 95).
  const double kPyTorchFinal = 3.32e-7, kPyTorchWorst = 8.06e-7;
  EXPECT_LE(final_distance, 2 * kPyTorchFinal);
  EXPECT_LE(worst, 2 * kPyTorchWorst) << "step " << at + 1;
}

}  // namespace
}  // namespace wick::test
