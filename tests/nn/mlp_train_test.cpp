// Proof that the pieces learn together: a small MLP and a small CNN fit a fixed synthetic task with plain
// SGD written here (the optimizers live in optim/).
#include "tests/support/reference.h"

#include <cstdio>

#include <wick/autograd/grad_mode.h>
#include <wick/nn/activation.h>
#include <wick/nn/containers.h>
#include <wick/nn/conv.h>
#include <wick/nn/flatten.h>
#include <wick/nn/linear.h>
#include <wick/nn/loss.h>
#include <wick/nn/norm.h>
#include <wick/nn/pool.h>
#include <wick/nn/state_dict.h>
#include <wick/tensor/safetensors.h>

namespace wick::test {
namespace {

void sgd_step(Module& m, double lr) {
  NoGradGuard no_grad;
  for (Variable& p : m.parameters())
    if (p.grad().defined()) p.data().sub_(mul(p.grad().data(), Scalar(lr)));
}

// Three classes of points in the plane, separated by two lines; 96 fixed points.
TEST(Training, MlpFitsThreeClassesWithCrossEntropy) {
  Tensor x = random({96, 2}, DType::Float32, 1234, -1, 1);
  std::vector<double> xv = values(x);
  std::vector<int64_t> labels;
  for (size_t i = 0; i < 96; ++i) {
    const double a = xv[2 * i], b = xv[2 * i + 1];
    labels.push_back(a + b > 0.3 ? 2 : (a - b > 0 ? 1 : 0));
  }
  Tensor y = tensor<int64_t>(labels);

  Generator g(7);
  Sequential net{std::make_shared<Linear>(2, 32, true, DType::Float32, &g), std::make_shared<ReLU>(),
                 std::make_shared<Linear>(32, 32, true, DType::Float32, &g), std::make_shared<Tanh>(),
                 std::make_shared<Linear>(32, 3, true, DType::Float32, &g)};
  const float first = cross_entropy(net(Variable(x)), y).item<float>();
  float last = first;
  for (int step = 0; step < 400; ++step) {
    net.zero_grad();
    Variable loss = cross_entropy(net(Variable(x)), y);
    loss.backward();
    sgd_step(net, 0.5);
    last = loss.item<float>();
  }
  EXPECT_GT(first, 0.9f);  // about log(3) at the start
  EXPECT_LT(last, 0.15f) << "started at " << first;
  // Accuracy on the training points.
  NoGradGuard no_grad;
  std::vector<int64_t> pred = argmax(net(Variable(x)).data(), 1).to_vector<int64_t>();
  int correct = 0;
  for (size_t i = 0; i < 96; ++i) correct += pred[i] == labels[i];
  EXPECT_GE(correct, 90);
}

// Regression of y = sin(3x) with mse.
TEST(Training, MlpFitsACurveWithMse) {
  Tensor x = linspace(-1, 1, 64).reshape({64, 1});
  Tensor y = sin(mul(x, Scalar(3.0)));
  Generator g(9);
  Sequential net{std::make_shared<Linear>(1, 32, true, DType::Float32, &g), std::make_shared<Tanh>(),
                 std::make_shared<Linear>(32, 1, true, DType::Float32, &g)};
  const float first = mse_loss(net(Variable(x)), Variable(y)).item<float>();
  float last = first;
  for (int step = 0; step < 4000; ++step) {
    net.zero_grad();
    Variable loss = mse_loss(net(Variable(x)), Variable(y));
    loss.backward();
    sgd_step(net, 0.2);
    last = loss.item<float>();
  }
  EXPECT_GT(first, 0.3f);  // about the variance of the target
  EXPECT_LT(last, 1e-2f) << "started at " << first;
}

// Horizontal against vertical bars in 8x8 images, with a conv / batch-norm / pool network.
TEST(Training, SmallCnnSeparatesBars) {
  const int64_t n = 32;
  Tensor images = mul(random({n, 1, 8, 8}, DType::Float32, 5, 0, 1), Scalar(0.3));
  std::vector<int64_t> labels;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t vertical = i % 2, pos = (i / 2) % 8;
    Tensor bar = vertical ? images[i][0].select(1, pos) : images[i][0].select(0, pos);
    bar.add_(Scalar(1.0));
    labels.push_back(vertical);
  }
  Tensor y = tensor<int64_t>(labels);
  Generator g(4);
  Conv2dOptions same;
  same.padding = 1;
  Sequential net{std::make_shared<Conv2d>(1, 4, 3, same, DType::Float32, &g), std::make_shared<BatchNorm2d>(4),
                 std::make_shared<ReLU>(), std::make_shared<MaxPool2d>(2), std::make_shared<Flatten>(),
                 std::make_shared<Linear>(64, 2, true, DType::Float32, &g)};
  float last = 0;
  for (int step = 0; step < 60; ++step) {
    net.zero_grad();
    Variable loss = cross_entropy(net(Variable(images)), y);
    loss.backward();
    sgd_step(net, 0.1);
    last = loss.item<float>();
  }
  EXPECT_LT(last, 0.1f);
  net.eval();
  NoGradGuard no_grad;
  std::vector<int64_t> pred = argmax(net(Variable(images)).data(), 1).to_vector<int64_t>();
  EXPECT_EQ(pred, labels);
}

// A trained model saved to a safetensors file and loaded into a fresh one gives bit-identical
// outputs.
TEST(Training, SavedAndLoadedModelGivesIdenticalOutputs) {
  auto make = [](uint64_t seed) {
    Generator g(seed);
    return std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<UnaryModule>>{
        std::make_shared<Linear>(3, 8, true, DType::Float32, &g), std::make_shared<GELU>(),
        std::make_shared<Linear>(8, 2, true, DType::Float32, &g)});
  };
  auto a = make(1), b = make(2);
  Tensor x = random({5, 3}, DType::Float32, 3);
  for (int step = 0; step < 5; ++step) {
    a->zero_grad();
    mse_loss((*a)(Variable(x)), Variable(zeros({5, 2}))).backward();
    sgd_step(*a, 0.1);
  }
  const std::string path = ::testing::TempDir() + "wick_nn_state.safetensors";
  save_safetensors(path, a->state_dict().to_map());
  b->load_state_dict(StateDict(load_safetensors(path)));
  std::remove(path.c_str());
  EXPECT_TRUE(all_close(values((*b)(Variable(x)).data()), values((*a)(Variable(x)).data()), 0, 0));
}

}  // namespace
}  // namespace wick::test
