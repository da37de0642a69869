// Proof that it learns, per optimizer: a small MLP and a small CNN fit a fixed synthetic
// classification task (256 noisy 1x8x8 images: a horizontal bar is class 0, a vertical bar
// class 1, at every row / column) to a cross-entropy below kModelBound with each optimizer, on CPU
// and, where present, on CUDA. 80 full-batch steps; the start is about log(2) = 0.69 and the
// final losses on CPU are at most 0.013 (Adagrad on the CNN), which leaves kModelBound a margin.
#include <functional>
#include <memory>
#include <string>

#include <wick/autograd/grad_mode.h>
#include <wick/nn/activation.h>
#include <wick/nn/containers.h>
#include <wick/nn/conv.h>
#include <wick/nn/flatten.h>
#include <wick/nn/linear.h>
#include <wick/nn/pool.h>
#include <wick/optim/adagrad.h>
#include <wick/optim/adam.h>
#include <wick/optim/lamb.h>
#include <wick/optim/rmsprop.h>
#include <wick/optim/sgd.h>

#include "tests/support/reference.h"

namespace wick::test {
namespace {

constexpr double kModelBound = 0.05;
constexpr int64_t kExamples = 256;
constexpr int kSteps = 80;

struct Task {
  Tensor images;  // [256, 1, 8, 8] float32
  Tensor labels;  // [256] int64
};

Task bars(Device device) {
  std::vector<double> noise = values(random({kExamples, 1, 8, 8}, DType::Float32, 2024, -0.4, 0.4));
  std::vector<float> pixels(noise.begin(), noise.end());
  std::vector<int64_t> labels;
  for (int64_t i = 0; i < kExamples; ++i) {
    const int64_t vertical = i % 2, pos = (i / 2) % 8;
    for (int64_t k = 0; k < 8; ++k) pixels[i * 64 + (vertical ? k * 8 + pos : pos * 8 + k)] += 1.0f;
    labels.push_back(vertical);
  }
  return {tensor<float>(pixels, {kExamples, 1, 8, 8}).to(device), tensor<int64_t>(labels).to(device)};
}

std::shared_ptr<Sequential> mlp(Generator& g) {
  return std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<UnaryModule>>{
      std::make_shared<Flatten>(), std::make_shared<Linear>(64, 32, true, DType::Float32, &g), std::make_shared<ReLU>(),
      std::make_shared<Linear>(32, 2, true, DType::Float32, &g)});
}

std::shared_ptr<Sequential> cnn(Generator& g) {
  Conv2dOptions same;
  same.padding = 1;
  return std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<UnaryModule>>{
      std::make_shared<Conv2d>(1, 4, 3, same, DType::Float32, &g), std::make_shared<ReLU>(),
      std::make_shared<MaxPool2d>(2), std::make_shared<Flatten>(),
      std::make_shared<Linear>(64, 2, true, DType::Float32, &g)});
}

using MakeModel = std::function<std::shared_ptr<Sequential>(Generator&)>;
using MakeOptimizer = std::function<std::unique_ptr<Optimizer>(NamedParameters)>;

struct Recipe {
  const char* name;
  MakeOptimizer make;
};

// Each optimizer at a learning rate of the kind one would pick for it.
std::vector<Recipe> recipes() {
  return {
      {"SGD", [](NamedParameters p) { return std::make_unique<SGD>(p, SGDOptions{.lr = 0.1, .momentum = 0.9}); }},
      {"Adam", [](NamedParameters p) { return std::make_unique<Adam>(p, AdamOptions{.lr = 0.02}); }},
      {"AdamW",
       [](NamedParameters p) { return std::make_unique<AdamW>(p, AdamOptions{.lr = 0.02, .weight_decay = 1e-2}); }},
      {"RMSprop", [](NamedParameters p) { return std::make_unique<RMSprop>(p, RMSpropOptions{.lr = 0.01}); }},
      {"Adagrad", [](NamedParameters p) { return std::make_unique<Adagrad>(p, AdagradOptions{.lr = 0.1}); }},
      {"LAMB", [](NamedParameters p) { return std::make_unique<Lamb>(p, LambOptions{.lr = 0.05}); }},
  };
}

// Trains a fresh model (same seed every time) with each recipe; checks the start is near
// chance and the end below kModelBound with every example classified right.
void expect_every_optimizer_fits(const MakeModel& make_model, Device device) {
  const Task task = bars(device);
  for (const Recipe& r : recipes()) {
    Generator g(11);
    std::shared_ptr<Sequential> net = make_model(g);
    net->to(device);
    std::unique_ptr<Optimizer> opt = r.make(net->named_parameters());
    double first = 0, last = 0;
    for (int step = 0; step < kSteps; ++step) {
      opt->zero_grad();
      Variable loss = cross_entropy((*net)(Variable(task.images)), task.labels);
      loss.backward();
      opt->step();
      last = loss.item<double>();
      if (step == 0) first = last;
    }
    {
      NoGradGuard no_grad;
      last = cross_entropy((*net)(Variable(task.images)), task.labels).item<double>();
    }
    EXPECT_GT(first, 0.5) << r.name;
    EXPECT_LT(last, kModelBound) << r.name << " on " << device.str() << ": started at " << first;
    NoGradGuard no_grad;
    std::vector<int64_t> pred = argmax((*net)(Variable(task.images)).data(), 1).cpu().to_vector<int64_t>();
    std::vector<int64_t> want = task.labels.cpu().to_vector<int64_t>();
    EXPECT_EQ(pred, want) << r.name << " on " << device.str();
  }
}

TEST(ModelLearning, MlpWithEveryOptimizerOnCpu) { expect_every_optimizer_fits(mlp, Device::cpu()); }
TEST(ModelLearning, CnnWithEveryOptimizerOnCpu) { expect_every_optimizer_fits(cnn, Device::cpu()); }

TEST(ModelLearning, MlpWithEveryOptimizerOnCuda) {
  WICK_REQUIRE_CUDA();
  expect_every_optimizer_fits(mlp, Device::cuda(0));
}

TEST(ModelLearning, CnnWithEveryOptimizerOnCuda) {
  WICK_REQUIRE_CUDA();
  expect_every_optimizer_fits(cnn, Device::cuda(0));
}

}  // namespace
}  // namespace wick::test
