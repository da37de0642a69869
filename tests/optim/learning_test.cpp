// Proof that it learns: every optimizer fits a small linear regression (y = X w* + b*,
// no noise) with autograd, from zero parameters, to a mean squared error below 1e-3 (the
// initial loss is about 8).
#include <wick/optim/adagrad.h>
#include <wick/optim/adam.h>
#include <wick/optim/lamb.h>
#include <wick/optim/lr_scheduler.h>
#include <wick/optim/rmsprop.h>
#include <wick/optim/sgd.h>

#include "tests/support/reference.h"

namespace wick::test {
namespace {

constexpr double kBound = 1e-3;

struct Regression {
  Tensor x = random({64, 3}, DType::Float32, 7);
  Tensor y = add(matmul(x, tensor<float>({1.5f, -2.f, 0.5f}, {3, 1})), 0.3);
  Variable w{zeros({3, 1}), true}, b{zeros({1}), true};
  NamedParameters params() { return {{"w", w}, {"b", b}}; }

  double loss() {
    Variable d = sub(add(matmul(Variable(x), w), b), Variable(y));
    return mean(mul(d, d)).item<double>();
  }
  // `steps` optimizer steps; returns the final loss.
  double fit(Optimizer& opt, int steps) {
    for (int i = 0; i < steps; ++i) {
      opt.zero_grad();
      Variable d = sub(add(matmul(Variable(x), w), b), Variable(y));
      mean(mul(d, d)).backward();
      opt.step();
    }
    return loss();
  }
};

TEST(Learning, EveryOptimizerFitsALinearRegression) {
  {
    Regression r;
    double start = r.loss();
    EXPECT_GT(start, 1.0);
    SGD opt(r.params(), SGDOptions{.lr = 0.05, .momentum = 0.9, .nesterov = true});
    EXPECT_LT(r.fit(opt, 150), kBound) << "SGD";
  }
  {
    Regression r;
    Adam opt(r.params(), AdamOptions{.lr = 0.05, .amsgrad = true});
    EXPECT_LT(r.fit(opt, 300), kBound) << "Adam";
  }
  {
    Regression r;
    AdamW opt(r.params(), AdamOptions{.lr = 0.05, .weight_decay = 1e-4});
    EXPECT_LT(r.fit(opt, 300), kBound) << "AdamW";
  }
  {
    Regression r;
    RMSprop opt(r.params(), RMSpropOptions{.lr = 0.01, .centered = true});
    EXPECT_LT(r.fit(opt, 300), kBound) << "RMSprop";
  }
  {
    Regression r;
    Adagrad opt(r.params(), AdagradOptions{.lr = 0.5});
    EXPECT_LT(r.fit(opt, 300), kBound) << "Adagrad";
  }
  {
    Regression r;
    // LAMB's steps are relative to ||p||, so it needs a decaying lr to settle.
    Lamb opt(r.params(), LambOptions{.lr = 0.05, .weight_decay = 0});
    ExponentialLR schedule(opt, 0.99);
    double loss = 0;
    for (int i = 0; i < 400; ++i) {
      loss = r.fit(opt, 1);
      schedule.step();
    }
    EXPECT_LT(loss, kBound) << "Lamb";
  }
}

}  // namespace
}  // namespace wick::test
