// Issue 13 section 3, optimizers: Adadelta against torch's update written out in float64,
// maximize on every optimizer (stepping with -grad, bit for bit), and add_param_group.
#include <cmath>

#include <wick/optim/adadelta.h>
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

Vec negated(Vec v) {
  for (double& x : v) x = -x;
  return v;
}

// Steps `opt` `steps` times with kGrads (cycled; negated when `negate`) and returns the
// parameter after each step.
std::vector<Vec> run(Optimizer& opt, Variable& p, int steps, bool negate = false) {
  std::vector<Vec> out;
  for (int t = 0; t < steps; ++t) {
    const Vec& g = kGrads[static_cast<size_t>(t) % 3];
    p.set_grad(Variable(tensor<double>(negate ? negated(g) : g, kShape)));
    opt.step();
    out.push_back(values(p.data()));
  }
  return out;
}

// Adadelta, elementwise (state: square_avg, acc_delta), as torch.optim.Adadelta documents it.
std::vector<Vec> adadelta_reference(const AdadeltaOptions& o, int steps) {
  Vec p = kP0, v(6, 0.0), u(6, 0.0);
  std::vector<Vec> out;
  for (int t = 0; t < steps; ++t) {
    for (size_t i = 0; i < 6; ++i) {
      double g = kGrads[static_cast<size_t>(t) % 3][i];
      if (o.maximize) g = -g;
      g += o.weight_decay * p[i];
      v[i] = o.rho * v[i] + (1 - o.rho) * g * g;
      const double d = std::sqrt(u[i] + o.eps) / std::sqrt(v[i] + o.eps) * g;
      u[i] = o.rho * u[i] + (1 - o.rho) * d * d;
      p[i] -= o.lr * d;
    }
    out.push_back(p);
  }
  return out;
}

void expect_additions_steps(const std::vector<Vec>& actual, const std::vector<Vec>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t t = 0; t < actual.size(); ++t)
    EXPECT_TRUE(all_close(actual[t], expected[t], 1e-12, 1e-14)) << "step " << t + 1;
}

TEST(Adadelta, FollowsTorchWithAndWithoutWeightDecay) {
  for (AdadeltaOptions o : {AdadeltaOptions{}, AdadeltaOptions{.lr = 0.5, .rho = 0.8, .eps = 1e-4, .weight_decay = 0.1},
                            AdadeltaOptions{.lr = 2.0, .rho = 0.95, .weight_decay = 0.05, .maximize = true}}) {
    Variable p = param();
    Adadelta opt({{"w", p}}, o);
    expect_additions_steps(run(opt, p, 6), adadelta_reference(o, 6));
  }
  // torch's defaults.
  AdadeltaOptions d;
  EXPECT_EQ(d.lr, 1.0);
  EXPECT_EQ(d.rho, 0.9);
  EXPECT_EQ(d.eps, 1e-6);
  EXPECT_EQ(d.weight_decay, 0.0);
  EXPECT_FALSE(d.maximize);
  // The first step moves each element by about lr * sqrt(eps / (1 - rho)): Adadelta's
  // characteristic tiny first steps, not the gradient's size.
  Variable p = param();
  Adadelta opt({{"w", p}});
  run(opt, p, 1);
  EXPECT_NEAR(values(p.data())[0], 0.5 - std::sqrt(1e-6) / std::sqrt(0.1 * 0.01 + 1e-6) * 0.1, 1e-15);
}

TEST(Adadelta, StateAndBadArguments) {
  Variable p = param();
  Adadelta opt({{"layer.w", p}}, AdadeltaOptions{.lr = 0.5, .weight_decay = 0.1});
  run(opt, p, 2);
  TensorMap saved = opt.state_dict();
  EXPECT_TRUE(matches(saved.at("state.layer.w.step"), {}, DType::Float64, {2}));
  EXPECT_EQ(saved.at("state.layer.w.square_avg").shape(), kShape);
  EXPECT_EQ(saved.at("state.layer.w.acc_delta").shape(), kShape);
  EXPECT_TRUE(matches(saved.at("group.0.rho"), {}, DType::Float64, {0.9}));
  Variable q(p.data().clone(), true);
  Adadelta resumed({{"layer.w", q}}, AdadeltaOptions{.lr = 123});
  resumed.load_state_dict(saved);
  EXPECT_EQ(resumed.lr(0), 0.5);
  p.set_grad(Variable(tensor<double>(kGrads[2], kShape)));
  q.set_grad(Variable(tensor<double>(kGrads[2], kShape)));
  opt.step();
  resumed.step();
  EXPECT_EQ(values(p.data()), values(q.data()));

  expect_error([&] { Adadelta({{"a", p}}, AdadeltaOptions{.lr = -1}); }, {"Adadelta", "lr -1", "non-negative"});
  expect_error([&] { Adadelta({{"a", p}}, AdadeltaOptions{.rho = 1.5}); }, {"Adadelta", "rho 1.5", "[0, 1]"});
  expect_error([&] { Adadelta({{"a", p}}, AdadeltaOptions{.rho = -0.1}); }, {"Adadelta", "rho -0.1"});
  expect_error([&] { Adadelta({{"a", p}}, AdadeltaOptions{.eps = -1e-6}); }, {"Adadelta", "eps -1e-06"});
  Adadelta edge({{"a", p}}, AdadeltaOptions{.rho = 1.0});  // torch accepts both ends
  expect_error([&] { Adadelta({{{{"a", p}}, {{"momentum", 0.9}}}}, AdadeltaOptions{}); },
               {"Adadelta", "'momentum'", "not one of its hyper-parameters", "rho"});
}

// maximize: stepping on gradients G with maximize must equal stepping on -G without it, bit
// for bit, over several steps with weight decay, for every optimizer (and both fused paths).
template <class Opt, class Options>
void expect_maximize_is_negated_gradient(Options o) {
  o.maximize = true;
  Variable a = param(), b = param();
  Opt up({{"w", a}}, o);
  o.maximize = false;
  Opt down({{"w", b}}, o);
  std::vector<Vec> ascended = run(up, a, 5), descended = run(down, b, 5, /*negate=*/true);
  EXPECT_EQ(ascended, descended) << up.name();
  // And it differs from ignoring the flag.
  Variable c = param();
  Opt plain({{"w", c}}, o);
  EXPECT_NE(run(plain, c, 5), ascended) << up.name();
}

TEST(Maximize, EveryOptimizerStepsWithTheNegatedGradient) {
  expect_maximize_is_negated_gradient<SGD>(SGDOptions{.lr = 0.1, .weight_decay = 0.1});
  expect_maximize_is_negated_gradient<SGD>(SGDOptions{.lr = 0.1, .momentum = 0.9, .weight_decay = 0.1, .nesterov = true});
  expect_maximize_is_negated_gradient<Adam>(AdamOptions{.lr = 0.1, .weight_decay = 0.1});
  expect_maximize_is_negated_gradient<Adam>(AdamOptions{.lr = 0.1, .weight_decay = 0.1, .amsgrad = true});
  expect_maximize_is_negated_gradient<AdamW>(AdamOptions{.lr = 0.1, .weight_decay = 0.1});
  expect_maximize_is_negated_gradient<AdamW>(AdamOptions{.lr = 0.1, .weight_decay = 0.1, .amsgrad = true});
  expect_maximize_is_negated_gradient<Adamax>(AdamaxOptions{.lr = 0.1, .weight_decay = 0.1});
  expect_maximize_is_negated_gradient<NAdam>(NAdamOptions{.lr = 0.1, .weight_decay = 0.1});
  expect_maximize_is_negated_gradient<RAdam>(RAdamOptions{.lr = 0.1, .weight_decay = 0.1});
  expect_maximize_is_negated_gradient<RMSprop>(
      RMSpropOptions{.lr = 0.05, .weight_decay = 0.1, .momentum = 0.5, .centered = true});
  expect_maximize_is_negated_gradient<Adagrad>(AdagradOptions{.lr = 0.1, .lr_decay = 0.1, .weight_decay = 0.1});
  expect_maximize_is_negated_gradient<Adadelta>(AdadeltaOptions{.lr = 0.5, .weight_decay = 0.1});
  expect_maximize_is_negated_gradient<Lamb>(LambOptions{.lr = 0.1, .weight_decay = 0.1});
}

// Maximizing f with gradients from f.backward() equals minimizing -f, bit for bit; the
// objective rises. f(w) = -sum((w - 1)^2), a concave bowl with its top at w = 1.
template <class Opt, class Options>
void expect_maximize_f_is_minimize_minus_f(Options o) {
  auto f = [](const Variable& w) { return neg(sum(mul(sub(w, 1.0), sub(w, 1.0)))); };
  Variable a = param(), b = param();
  o.maximize = true;
  Opt up({{"w", a}}, o);
  o.maximize = false;
  Opt down({{"w", b}}, o);
  const double f0 = values(f(a).data())[0];
  for (int t = 0; t < 4; ++t) {
    up.zero_grad();
    f(a).backward();
    up.step();
    down.zero_grad();
    neg(f(b)).backward();
    down.step();
  }
  EXPECT_EQ(values(a.data()), values(b.data())) << up.name();
  EXPECT_GT(values(f(a).data())[0], f0) << up.name();
}

TEST(Maximize, MaximizingFIsMinimizingMinusF) {
  expect_maximize_f_is_minimize_minus_f<SGD>(SGDOptions{.lr = 0.1, .momentum = 0.5});
  expect_maximize_f_is_minimize_minus_f<Adam>(AdamOptions{.lr = 0.1});
  expect_maximize_f_is_minimize_minus_f<AdamW>(AdamOptions{.lr = 0.1});
  expect_maximize_f_is_minimize_minus_f<Adamax>(AdamaxOptions{.lr = 0.1});
  expect_maximize_f_is_minimize_minus_f<NAdam>(NAdamOptions{.lr = 0.1});
  expect_maximize_f_is_minimize_minus_f<RAdam>(RAdamOptions{.lr = 0.1});
  expect_maximize_f_is_minimize_minus_f<RMSprop>(RMSpropOptions{.lr = 0.01});
  expect_maximize_f_is_minimize_minus_f<Adagrad>(AdagradOptions{.lr = 0.1});
  expect_maximize_f_is_minimize_minus_f<Adadelta>(AdadeltaOptions{.lr = 1.0});
  expect_maximize_f_is_minimize_minus_f<Lamb>(LambOptions{.lr = 0.1, .weight_decay = 0});
}

// SGD's documented update with maximize, in float64 (the fused kernel's path), and the flag
// as a named group hyper-parameter that groups, state_dict and schedulers see.
TEST(Maximize, SgdReferenceAndNamedHyperParameter) {
  Variable p = param();
  SGD opt({{{{"w", p}}, {{"maximize", 1}}}}, SGDOptions{.lr = 0.1, .momentum = 0.9, .weight_decay = 0.1});
  EXPECT_TRUE(opt.options(0).maximize);
  EXPECT_EQ(opt.hyper_parameter(0, "maximize"), 1.0);
  Vec x = kP0, buf(6, 0.0);
  std::vector<Vec> expected;
  for (int t = 1; t <= 3; ++t) {
    for (size_t i = 0; i < 6; ++i) {
      double g = -kGrads[t - 1][i] + 0.1 * x[i];
      buf[i] = t == 1 ? g : 0.9 * buf[i] + g;
      x[i] -= 0.1 * buf[i];
    }
    expected.push_back(x);
  }
  expect_additions_steps(run(opt, p, 3), expected);
  TensorMap s = opt.state_dict();
  EXPECT_TRUE(matches(s.at("group.0.maximize"), {}, DType::Float64, {1}));
  Variable q = param();
  SGD other({{"w", q}}, SGDOptions{.lr = 0.1});
  other.load_state_dict(s);
  EXPECT_TRUE(other.options(0).maximize);
  for (const char* name : {"maximize"}) {
    Variable r = param();
    Adagrad ada({{"r", r}});
    EXPECT_TRUE(ada.has_hyper_parameter(0, name));
    Adadelta delta({{"r", r}});
    EXPECT_TRUE(delta.has_hyper_parameter(0, name));
    Lamb lamb({{"r", r}});
    EXPECT_TRUE(lamb.has_hyper_parameter(0, name));
  }
}

TEST(AddParamGroup, InheritsTheDefaultsItDoesNotSet) {
  Variable a = param(), b = param();
  SGD opt({{"a", a}}, SGDOptions{.lr = 0.1, .momentum = 0.9, .weight_decay = 0.01});
  opt.add_param_group({{{"b", b}}, {{"lr", 0.5}}});
  ASSERT_EQ(opt.num_groups(), 2u);
  EXPECT_EQ(opt.options(1).lr, 0.5);
  EXPECT_EQ(opt.options(1).momentum, 0.9);
  EXPECT_EQ(opt.options(1).weight_decay, 0.01);
  EXPECT_EQ(opt.params(1).front().first, "b");
  // The new group steps with its own hyper-parameters, like a group given at construction.
  Variable b2 = param();
  SGD ref({{"b", b2}}, SGDOptions{.lr = 0.5, .momentum = 0.9, .weight_decay = 0.01});
  EXPECT_EQ(run(opt, b, 3), run(ref, b2, 3));
  EXPECT_EQ(values(a.data()), kP0);  // a had no gradient

  // Defaults are what the optimizer was made with: the ParamGroup form's defaults, the
  // one-group form's options, the optimizer's own (AdamW: weight_decay 1e-2) for structs.
  Variable c = param(), d = param(), e = param();
  AdamW w({{{{"c", c}}, {{"lr", 0.5}}}}, AdamOptions{.lr = 0.2, .beta2 = 0.9, .weight_decay = 0.3});
  w.add_param_group({{{"d", d}}, {}});
  EXPECT_EQ(w.options(1).lr, 0.2);
  EXPECT_EQ(w.options(1).beta2, 0.9);
  EXPECT_EQ(w.options(1).weight_decay, 0.3);
  AdamW structs(std::vector<AdamW::Group>{{{{"c", c}}, AdamOptions{.lr = 0.5, .weight_decay = 0}}});
  structs.add_param_group({{{"e", e}}, {{"amsgrad", 1}}});
  EXPECT_EQ(structs.options(1).lr, 1e-3);
  EXPECT_EQ(structs.options(1).weight_decay, 1e-2);
  EXPECT_TRUE(structs.options(1).amsgrad);
  Adadelta delta({{"c", c}}, AdadeltaOptions{.rho = 0.5});
  delta.add_param_group({{{"d", d}}, {{"maximize", 1}}});
  EXPECT_EQ(delta.options(1).rho, 0.5);
  EXPECT_TRUE(delta.options(1).maximize);
  EXPECT_EQ(delta.defaults().rho, 0.5);

  // torch allows an empty group; it has nothing to step.
  SGD empty({{"a", a}}, SGDOptions{.lr = 0.1});
  empty.add_param_group({{}, {{"lr", 0.2}}});
  EXPECT_EQ(empty.num_groups(), 2u);
  EXPECT_EQ(empty.lr(1), 0.2);
  a.set_grad(Variable(ones(kShape, DType::Float64)));
  empty.step();
}

TEST(AddParamGroup, RefusesDuplicatesAndBadOptionsChangingNothing) {
  Variable a = param(), b = param(), c = param();
  Adam opt({{"a", a}, {"b", b}}, AdamOptions{.lr = 0.1});
  expect_error([&] { opt.add_param_group({{{"b", c}}, {}}); },
               {"Adam.add_param_group", "parameter 'b'", "already in group 0"});
  expect_error([&] { opt.add_param_group({{{"other", a}}, {}}); },
               {"Adam.add_param_group", "parameter 'other'", "already in group 0 as 'a'"});
  expect_error([&] { opt.add_param_group({{{"c", c}, {"c2", c}}, {}}); },
               {"Adam.add_param_group", "'c2'", "twice in the new group"});
  expect_error([&] { opt.add_param_group({{{"c", c}}, {{"momentum", 0.9}}}); },
               {"Adam", "'momentum'", "not one of its hyper-parameters"});
  expect_error([&] { opt.add_param_group({{{"c", c}}, {{"lr", -1}}}); }, {"Adam", "lr -1", "non-negative"});
  expect_error([&] { opt.add_param_group({{{"c", c}}, {{"beta1", 1}}}); }, {"Adam", "betas (1, 0.999)"});
  expect_error([&] { opt.add_param_group({{{"i", Variable(tensor<int64_t>({1}))}}, {}}); },
               {"Adam.add_param_group", "'i'", "int64"});
  EXPECT_EQ(opt.num_groups(), 1u);
  // A group added after a refusal is group 1, and c is then taken.
  opt.add_param_group({{{"c", c}}, {{"lr", 0.3}}});
  EXPECT_EQ(opt.num_groups(), 2u);
  EXPECT_EQ(opt.lr(1), 0.3);
  expect_error([&] { opt.add_param_group({{{"c", c}}, {}}); }, {"parameter 'c'", "already in group 1"});
  // The new group's state is saved and loads into an optimizer with the same groups.
  c.set_grad(Variable(tensor<double>(kGrads[0], kShape)));
  opt.step();
  TensorMap s = opt.state_dict();
  EXPECT_TRUE(matches(s.at("group.1.lr"), {}, DType::Float64, {0.3}));
  EXPECT_TRUE(s.count("state.c.exp_avg"));
  Variable a2 = param(), b2 = param(), c2(c.data().clone(), true);
  Adam again({{"a", a2}, {"b", b2}}, AdamOptions{.lr = 0.1});
  expect_error([&] { again.load_state_dict(s); }, {"Adam.load_state_dict", "'group.1.", "1 groups"});
  again.add_param_group({{{"c", c2}}, {}});
  again.load_state_dict(s);
  EXPECT_EQ(again.lr(1), 0.3);
}

}  // namespace
}  // namespace wick::test
