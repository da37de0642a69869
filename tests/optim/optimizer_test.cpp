// Optimizers: three steps of each against the PyTorch update rules written out in float64,
// parameter groups, skipped parameters, zero_grad, state save / load and load errors.
#include <cmath>
#include <cstdio>

#include <wick/optim/adagrad.h>
#include <wick/optim/adam.h>
#include <wick/optim/adam_variants.h>
#include <wick/optim/lamb.h>
#include <wick/optim/rmsprop.h>
#include <wick/optim/sgd.h>

#include "tests/optim/fixture.h"
#include "tests/support/reference.h"

namespace wick::test {
namespace {

// Steps `opt` three times with kGrads and returns the parameter after each step.
std::vector<Vec> run(Optimizer& opt, Variable& p) {
  std::vector<Vec> out;
  for (const Vec& g : kGrads) {
    p.set_grad(Variable(tensor<double>(g, kShape)));
    opt.step();
    out.push_back(values(p.data()));
  }
  return out;
}

// The reference: `f(t, p_i, g_i, state_i)` updates one element at step t (from 1); elements
// are independent for every optimizer but LAMB.
using ElementStep = std::function<void(int, double&, double, Vec&)>;
std::vector<Vec> reference(const ElementStep& f, size_t state_size) {
  Vec p = kP0;
  std::vector<Vec> state(p.size(), Vec(state_size, 0.0));
  std::vector<Vec> out;
  for (int t = 1; t <= 3; ++t) {
    for (size_t i = 0; i < p.size(); ++i) f(t, p[i], kGrads[t - 1][i], state[i]);
    out.push_back(p);
  }
  return out;
}

void expect_steps(const std::vector<Vec>& actual, const std::vector<Vec>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t t = 0; t < actual.size(); ++t) EXPECT_TRUE(all_close(actual[t], expected[t], 1e-12, 1e-14)) << "step " << t + 1;
}

TEST(SGD, PlainMomentumDampeningWeightDecayAndNesterov) {
  for (SGDOptions o : {SGDOptions{.lr = 0.1}, SGDOptions{.lr = 0.1, .momentum = 0.9, .dampening = 0.3, .weight_decay = 0.05},
                       SGDOptions{.lr = 0.2, .momentum = 0.8, .weight_decay = 0.1, .nesterov = true}}) {
    Variable p = param();
    SGD opt({{"w", p}}, o);
    auto f = [o](int t, double& p, double g, Vec& s) {
      g += o.weight_decay * p;
      if (o.momentum != 0) {
        s[0] = t == 1 ? g : o.momentum * s[0] + (1 - o.dampening) * g;
        g = o.nesterov ? g + o.momentum * s[0] : s[0];
      }
      p -= o.lr * g;
    };
    expect_steps(run(opt, p), reference(f, 1));
  }
}

ElementStep adam_reference(const AdamOptions& o, bool decoupled) {
  return [o, decoupled](int t, double& p, double g, Vec& s) {
    if (decoupled) {
      p *= 1 - o.lr * o.weight_decay;
    } else {
      g += o.weight_decay * p;
    }
    s[0] = o.beta1 * s[0] + (1 - o.beta1) * g;
    s[1] = o.beta2 * s[1] + (1 - o.beta2) * g * g;
    s[2] = std::max(s[2], s[1]);
    double v = o.amsgrad ? s[2] : s[1];
    double mhat = s[0] / (1 - std::pow(o.beta1, t));
    p -= o.lr * mhat / (std::sqrt(v) / std::sqrt(1 - std::pow(o.beta2, t)) + o.eps);
  };
}

TEST(Adam, BiasCorrectionL2AndAmsgrad) {
  for (AdamOptions o : {AdamOptions{.lr = 0.1}, AdamOptions{.lr = 0.05, .beta1 = 0.8, .beta2 = 0.9, .weight_decay = 0.1},
                        AdamOptions{.lr = 0.1, .beta2 = 0.5, .eps = 1e-3, .amsgrad = true}}) {
    Variable p = param();
    Adam opt({{"w", p}}, o);
    expect_steps(run(opt, p), reference(adam_reference(o, false), 3));
  }
}

TEST(AdamW, DecoupledWeightDecay) {
  for (AdamOptions o : {AdamOptions{.lr = 0.1, .weight_decay = 0.2}, AdamOptions{.lr = 0.1, .weight_decay = 0.2, .amsgrad = true}}) {
    Variable p = param();
    AdamW opt({{"w", p}}, o);
    expect_steps(run(opt, p), reference(adam_reference(o, true), 3));
  }
  // AdamW's default decay is PyTorch's 1e-2.
  Variable p = param();
  AdamW opt({{"w", p}});
  EXPECT_EQ(opt.options(0).weight_decay, 1e-2);
}

TEST(RMSprop, PlainCenteredMomentumWeightDecay) {
  for (RMSpropOptions o : {RMSpropOptions{.lr = 0.01},
                           RMSpropOptions{.lr = 0.05, .alpha = 0.9, .weight_decay = 0.1, .momentum = 0.5, .centered = true},
                           RMSpropOptions{.lr = 0.05, .alpha = 0.8, .eps = 1e-4, .momentum = 0.9}}) {
    Variable p = param();
    RMSprop opt({{"w", p}}, o);
    auto f = [o](int, double& p, double g, Vec& s) {
      g += o.weight_decay * p;
      s[0] = o.alpha * s[0] + (1 - o.alpha) * g * g;
      s[1] = o.alpha * s[1] + (1 - o.alpha) * g;
      double d = (o.centered ? std::sqrt(s[0] - s[1] * s[1]) : std::sqrt(s[0])) + o.eps;
      if (o.momentum > 0) {
        s[2] = o.momentum * s[2] + g / d;
        p -= o.lr * s[2];
      } else {
        p -= o.lr * g / d;
      }
    };
    expect_steps(run(opt, p), reference(f, 3));
  }
}

// Adamax, NAdam and RAdam (issue 13, section 3) over 8 steps (RAdam's rectified branch
// starts after step 5), against torch's update rules in float64.
std::vector<Vec> run_steps(Optimizer& opt, Variable& p, int steps) {
  std::vector<Vec> out;
  for (int t = 0; t < steps; ++t) {
    p.set_grad(Variable(tensor<double>(kGrads[static_cast<size_t>(t) % 3], kShape)));
    opt.step();
    out.push_back(values(p.data()));
  }
  return out;
}

std::vector<Vec> reference_steps(const ElementStep& f, size_t state_size, int steps) {
  Vec p = kP0;
  std::vector<Vec> state(p.size(), Vec(state_size, 0.0));
  std::vector<Vec> out;
  for (int t = 1; t <= steps; ++t) {
    for (size_t i = 0; i < p.size(); ++i) f(t, p[i], kGrads[static_cast<size_t>(t - 1) % 3][i], state[i]);
    out.push_back(p);
  }
  return out;
}

TEST(AdamVariants, AdamaxNAdamRAdamFollowTorch) {
  for (double wd : {0.0, 0.1}) {
    Variable p = param();
    Adamax adamax({{"w", p}}, AdamaxOptions{.lr = 0.01, .weight_decay = wd});
    auto fmax = [wd](int t, double& p, double g, Vec& s) {
      g += wd * p;
      s[0] = 0.9 * s[0] + 0.1 * g;
      s[1] = std::max(0.999 * s[1], std::fabs(g) + 1e-8);
      p -= 0.01 / (1 - std::pow(0.9, t)) * s[0] / s[1];
    };
    expect_steps(run_steps(adamax, p, 8), reference_steps(fmax, 2, 8));

    Variable q = param();
    NAdam nadam({{"w", q}}, NAdamOptions{.lr = 0.01, .weight_decay = wd});
    auto fnadam = [wd](int t, double& p, double g, Vec& s) {
      if (t == 1) s[2] = 1;
      g += wd * p;
      const double mu = 0.9 * (1 - 0.5 * std::pow(0.96, t * 4e-3));
      const double mu_next = 0.9 * (1 - 0.5 * std::pow(0.96, (t + 1) * 4e-3));
      s[2] *= mu;
      s[0] = 0.9 * s[0] + 0.1 * g;
      s[1] = 0.999 * s[1] + 0.001 * g * g;
      const double d = std::sqrt(s[1] / (1 - std::pow(0.999, t))) + 1e-8;
      p -= 0.01 * (1 - mu) / (1 - s[2]) * g / d;
      p -= 0.01 * mu_next / (1 - s[2] * mu_next) * s[0] / d;
    };
    expect_steps(run_steps(nadam, q, 8), reference_steps(fnadam, 3, 8));

    Variable r = param();
    RAdam radam({{"w", r}}, RAdamOptions{.lr = 0.01, .weight_decay = wd});
    auto fradam = [wd](int t, double& p, double g, Vec& s) {
      g += wd * p;
      s[0] = 0.9 * s[0] + 0.1 * g;
      s[1] = 0.999 * s[1] + 0.001 * g * g;
      const double bc1 = 1 - std::pow(0.9, t), bc2 = 1 - std::pow(0.999, t);
      const double rho_inf = 2 / 0.001 - 1, rho_t = rho_inf - 2 * t * std::pow(0.999, t) / bc2;
      if (rho_t > 5) {
        const double rect = std::sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t));
        p -= 0.01 * s[0] / bc1 * rect * std::sqrt(bc2) / (std::sqrt(s[1]) + 1e-8);
      } else {
        p -= 0.01 * s[0] / bc1;
      }
    };
    expect_steps(run_steps(radam, r, 8), reference_steps(fradam, 2, 8));
  }
  Variable a = param();
  expect_error([&] { NAdam({{"a", a}}, NAdamOptions{.beta1 = 1.0}); }, {"NAdam", "betas"});
  expect_error([&] { Adamax({{"a", a}}, AdamaxOptions{.lr = -1}); }, {"Adamax", "lr -1"});
}

TEST(Adagrad, LrDecayInitialAccumulatorWeightDecay) {
  for (AdagradOptions o : {AdagradOptions{.lr = 0.1},
                           AdagradOptions{.lr = 0.1, .lr_decay = 0.5, .weight_decay = 0.1, .initial_accumulator_value = 0.2}}) {
    Variable p = param();
    Adagrad opt({{"w", p}}, o);
    auto f = [o](int t, double& p, double g, Vec& s) {
      if (t == 1) s[0] = o.initial_accumulator_value;
      g += o.weight_decay * p;
      s[0] += g * g;
      p -= o.lr / (1 + (t - 1) * o.lr_decay) * g / (std::sqrt(s[0]) + o.eps);
    };
    expect_steps(run(opt, p), reference(f, 1));
  }
}

TEST(Lamb, TrustRatioPerParameter) {
  for (LambOptions o : {LambOptions{.lr = 0.1}, LambOptions{.lr = 0.05, .beta1 = 0.8, .weight_decay = 0}}) {
    Variable p = param();
    Lamb opt({{"w", p}}, o);
    Vec x = kP0, m(6, 0.0), v(6, 0.0);
    std::vector<Vec> expected;
    for (int t = 1; t <= 3; ++t) {
      Vec u(6);
      double wn = 0, un = 0;
      for (size_t i = 0; i < 6; ++i) {
        double g = kGrads[t - 1][i];
        m[i] = o.beta1 * m[i] + (1 - o.beta1) * g;
        v[i] = o.beta2 * v[i] + (1 - o.beta2) * g * g;
        u[i] = m[i] / (1 - std::pow(o.beta1, t)) / (std::sqrt(v[i] / (1 - std::pow(o.beta2, t))) + o.eps) +
               o.weight_decay * x[i];
        wn += x[i] * x[i];
        un += u[i] * u[i];
      }
      double r = wn > 0 && un > 0 ? std::sqrt(wn) / std::sqrt(un) : 1.0;
      for (size_t i = 0; i < 6; ++i) x[i] -= o.lr * r * u[i];
      expected.push_back(x);
    }
    expect_steps(run(opt, p), expected);
  }
  // A zero parameter gets ratio 1 (plain Adam-like step of size lr).
  Variable z = param(Vec(6, 0.0));
  Lamb opt({{"z", z}}, LambOptions{.lr = 0.1, .weight_decay = 0});
  z.set_grad(Variable(tensor<double>(kGrads[0], kShape)));
  opt.step();
  Vec got = values(z.data());
  EXPECT_NEAR(got[0], -0.1 * 0.1 / (0.1 + 1e-6), 1e-12);
}

TEST(Optimizer, GroupsHaveTheirOwnHyperParameters) {
  Variable a = param(), b = param();
  SGD opt(std::vector<SGD::Group>{{{{"a", a}}, SGDOptions{.lr = 0.1}}, {{{"b", b}}, SGDOptions{.lr = 1.0}}});
  a.set_grad(Variable(ones(kShape, DType::Float64)));
  b.set_grad(Variable(ones(kShape, DType::Float64)));
  opt.step();
  Vec ea = kP0, eb = kP0;
  for (double& x : ea) x -= 0.1;
  for (double& x : eb) x -= 1.0;
  EXPECT_TRUE(all_close(values(a.data()), ea, 1e-15, 0));
  EXPECT_TRUE(all_close(values(b.data()), eb, 1e-15, 0));
  EXPECT_EQ(opt.num_groups(), 2u);
  opt.set_lr(1, 0.5);
  EXPECT_EQ(opt.lr(1), 0.5);
  EXPECT_EQ(opt.options(1).lr, 0.5);
  expect_error([&] { opt.lr(2); }, {"SGD", "group 2", "2 groups"});
}

TEST(Optimizer, SkipsParametersWithoutGradAndZeroesGrads) {
  Variable a = param(), b = param();
  Adam opt({{"a", a}, {"b", b}}, AdamOptions{.lr = 0.1});
  a.set_grad(Variable(ones(kShape, DType::Float64)));
  opt.step();
  EXPECT_EQ(values(b.data()), kP0);
  EXPECT_NE(values(a.data()), kP0);
  // b never stepped: it has no state.
  TensorMap s = opt.state_dict();
  EXPECT_TRUE(s.count("state.a.exp_avg"));
  EXPECT_FALSE(s.count("state.b.exp_avg"));
  EXPECT_FALSE(a.grad().requires_grad());
  opt.zero_grad(/*set_to_none=*/false);
  EXPECT_EQ(values(a.grad().data()), Vec(6, 0.0));
  opt.zero_grad();
  EXPECT_FALSE(a.grad().defined());
}

// Parameters of one group whose step counts or momentum buffers differ (one was skipped)
// and whose dtypes differ step exactly as they would alone.
template <class Opt, class Options>
void expect_group_matches_separate(const Options& o) {
  Variable a = param(), b(tensor<float>({1.f, -2.f, 0.5f}), true);
  Variable a1 = param(), b1(b.data().clone(), true);
  Opt both({{"a", a}, {"b", b}}, o);
  Opt only_a({{"a", a1}}, o), only_b({{"b", b1}}, o);
  for (int t = 0; t < 3; ++t) {
    Variable ga(tensor<double>(kGrads[t], kShape)), gb(tensor<float>({0.3f, -0.1f * t, 0.2f}));
    a.set_grad(ga);
    a1.set_grad(ga);
    if (t > 0) {  // b has no gradient at the first step
      b.set_grad(gb);
      b1.set_grad(gb);
      only_b.step();
    }
    both.step();
    only_a.step();
  }
  EXPECT_EQ(values(a.data()), values(a1.data()));
  EXPECT_EQ(values(b.data()), values(b1.data()));
}

TEST(Optimizer, FusedGroupsMixStepCountsAndDTypes) {
  expect_group_matches_separate<SGD>(SGDOptions{.lr = 0.1, .momentum = 0.9, .weight_decay = 0.01});
  expect_group_matches_separate<Adam>(AdamOptions{.lr = 0.1, .weight_decay = 0.01});
  expect_group_matches_separate<AdamW>(AdamOptions{.lr = 0.1});
  expect_group_matches_separate<Adam>(AdamOptions{.lr = 0.1, .amsgrad = true});
}

TEST(Optimizer, StepRecordsNoGraphAndWorksInFloat32) {
  Variable w(tensor<float>({1.f, 2.f}), true);
  SGD opt({{"w", w}}, SGDOptions{.lr = 0.5, .momentum = 0.9});
  sum(mul(w, w)).backward();  // grad 2w
  opt.step();
  EXPECT_TRUE(matches(w.data(), {2}, DType::Float32, {0, 0}));
  EXPECT_TRUE(w.is_leaf());
  EXPECT_EQ(opt.state_dict().at("state.w.momentum_buffer").dtype(), DType::Float32);
}

TEST(Optimizer, BadConstructionIsRejected) {
  Variable a = param();
  expect_error([&] { SGD({{"a", a}, {"a", a}}); }, {"SGD", "'a'", "twice"});
  expect_error([&] { SGD({{"i", Variable(tensor<int64_t>({1}))}}); }, {"SGD", "'i'", "int64"});
  expect_error([&] { SGD({{"a", a}}, SGDOptions{.lr = 0.1, .nesterov = true}); }, {"SGD", "nesterov", "momentum"});
  expect_error([&] { Adam({{"a", a}}, AdamOptions{.beta1 = 1.0}); }, {"Adam", "betas", "[0, 1)"});
  expect_error([&] { RMSprop({{"a", a}}, RMSpropOptions{.lr = -1}); }, {"RMSprop", "lr -1"});
  expect_error([&] { Adagrad({{"a", a}}, AdagradOptions{.lr_decay = -1}); }, {"Adagrad", "lr_decay -1"});
  expect_error([&] { Lamb({{"a", a}}, LambOptions{.beta2 = -0.1}); }, {"Lamb", "betas"});
}

// Two steps, save, load into a fresh optimizer over a copy of the parameter: the next steps
// of both must agree bit for bit.
template <class Opt, class Options>
void expect_resumes_identically(const Options& o) {
  Variable p = param();
  Opt opt({{"layer.w", p}}, o);
  for (int t = 0; t < 2; ++t) {
    p.set_grad(Variable(tensor<double>(kGrads[t], kShape)));
    opt.step();
  }
  TensorMap saved = opt.state_dict();
  Variable q(p.data().clone(), true);
  Options fresh{};
  fresh.lr = 123;  // overwritten by the loaded group hyper-parameters
  Opt resumed({{"layer.w", q}}, fresh);
  resumed.load_state_dict(saved);
  EXPECT_EQ(resumed.lr(0), o.lr);
  p.set_grad(Variable(tensor<double>(kGrads[2], kShape)));
  q.set_grad(Variable(tensor<double>(kGrads[2], kShape)));
  opt.step();
  resumed.step();
  EXPECT_EQ(values(p.data()), values(q.data()));
  EXPECT_EQ(opt.state_dict().size(), resumed.state_dict().size());
}

TEST(Optimizer, StateRoundTripGivesIdenticalSteps) {
  expect_resumes_identically<SGD>(SGDOptions{.lr = 0.1, .momentum = 0.9, .nesterov = true});
  expect_resumes_identically<Adam>(AdamOptions{.lr = 0.1, .amsgrad = true});
  expect_resumes_identically<AdamW>(AdamOptions{.lr = 0.1, .weight_decay = 0.1});
  expect_resumes_identically<RMSprop>(RMSpropOptions{.lr = 0.1, .momentum = 0.5, .centered = true});
  expect_resumes_identically<Adagrad>(AdagradOptions{.lr = 0.1, .lr_decay = 0.1});
  expect_resumes_identically<Lamb>(LambOptions{.lr = 0.1});
  expect_resumes_identically<Adamax>(AdamaxOptions{.lr = 0.1});
  expect_resumes_identically<NAdam>(NAdamOptions{.lr = 0.1, .weight_decay = 0.1});
  expect_resumes_identically<RAdam>(RAdamOptions{.lr = 0.1});
}

TEST(Optimizer, StateSurvivesASafetensorsFile) {
  Variable p = param();
  AdamW opt({{"enc.w", p}}, AdamOptions{.lr = 0.1});
  p.set_grad(Variable(tensor<double>(kGrads[0], kShape)));
  opt.step();
  std::string file = ::testing::TempDir() + "wick_optim_state.safetensors";
  save_safetensors(file, opt.state_dict());
  Variable q(p.data().clone(), true);
  AdamW resumed({{"enc.w", q}});
  resumed.load_state_dict(load_safetensors(file));
  std::remove(file.c_str());
  p.set_grad(Variable(tensor<double>(kGrads[1], kShape)));
  q.set_grad(Variable(tensor<double>(kGrads[1], kShape)));
  opt.step();
  resumed.step();
  EXPECT_EQ(values(p.data()), values(q.data()));
}

TEST(Optimizer, FusedStepsNeedContiguousParameters) {
  Variable p(tensor<double>(kP0, {3, 2}).t(), true);
  SGD opt({{"p", p}}, SGDOptions{.lr = 0.1});
  p.set_grad(Variable(ones(kShape, DType::Float64)));
  expect_error([&] { opt.step(); }, {"sgd_step", "contiguous"});
}

TEST(Optimizer, StateDictLayoutAndLoadErrors) {
  Variable p = param();
  Adam opt({{"w", p}}, AdamOptions{.lr = 0.1, .amsgrad = true});
  p.set_grad(Variable(tensor<double>(kGrads[0], kShape)));
  opt.step();
  TensorMap s = opt.state_dict();
  EXPECT_TRUE(matches(s.at("group.0.lr"), {}, DType::Float64, {0.1}));
  EXPECT_TRUE(matches(s.at("group.0.amsgrad"), {}, DType::Float64, {1}));
  EXPECT_TRUE(matches(s.at("state.w.step"), {}, DType::Float64, {1}));
  EXPECT_EQ(s.at("state.w.exp_avg").shape(), kShape);
  EXPECT_EQ(s.count("state.w.max_exp_avg_sq"), 1u);

  auto with = [&](const std::string& key, Tensor t) {
    TensorMap m = s;
    m[key] = t;
    return m;
  };
  expect_error([&] { opt.load_state_dict(with("state.v.exp_avg", zeros(kShape, DType::Float64))); },
               {"Adam.load_state_dict", "'state.v.exp_avg'", "no parameter"});
  expect_error([&] { opt.load_state_dict(with("state.w.exp_avg", zeros({3}, DType::Float64))); },
               {"Adam.load_state_dict", "'state.w.exp_avg'", "[3]", "[2, 3]"});
  expect_error([&] { opt.load_state_dict(with("state.w.momentum", zeros(kShape, DType::Float64))); },
               {"Adam.load_state_dict", "unknown buffer 'momentum'"});
  expect_error([&] { opt.load_state_dict(with("group.0.momentum", scalar_tensor(1.0))); },
               {"Adam", "group 0", "no hyper-parameter 'momentum'"});
  expect_error([&] { opt.load_state_dict(with("group.3.lr", scalar_tensor(1.0))); },
               {"Adam.load_state_dict", "'group.3.lr'", "group 3", "1 groups"});
  expect_error([&] { opt.load_state_dict(with("group.x.lr", scalar_tensor(1.0))); },
               {"Adam.load_state_dict", "malformed key 'group.x.lr'"});
  expect_error([&] { opt.load_state_dict(with("group.0.lr", zeros({2}))); }, {"'group.0.lr'", "[2]", "one element"});
  expect_error([&] { opt.load_state_dict(with("other", zeros({2}))); }, {"unexpected key 'other'"});
  // A rejected map leaves the optimizer unchanged.
  opt.load_state_dict(with("group.0.lr", scalar_tensor(0.5, DType::Float64)));
  EXPECT_EQ(opt.lr(0), 0.5);
  expect_error([&] { opt.load_state_dict(with("group.0.lr", zeros({2}))); }, {"'group.0.lr'"});
  EXPECT_EQ(opt.lr(0), 0.5);
}

}  // namespace
}  // namespace wick::test
