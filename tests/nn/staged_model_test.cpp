// StagedModel: a model split into stages on several devices trains exactly like the unsplit
// model, skip connections across stages included; bad layouts are refused at construction.
#include <gtest/gtest.h>

#include <wick/autograd/ops.h>
#include <wick/nn/activation.h>
#include <wick/nn/linear.h>
#include <wick/nn/loss.h>
#include <wick/nn/staged_model.h>
#include <wick/optim/adam.h>
#include <wick/tensor/cuda.h>
#include <wick/tensor/factories.h>
#include <wick/tensor/generator.h>

#include "tests/support/reference.h"

namespace wick {
namespace {

using test::expect_error;

// The seed's residual regression model: Linear(1,512) ... Sigmoid, the third layer's output
// added to the seventh's. `width` shrinks it for speed.
std::vector<StagedLayer> residual_layers(DType dtype, int64_t width = 512, uint64_t seed = 7) {
  Generator g(seed);
  Options o(dtype);
  auto linear = [&](int64_t in, int64_t out) { return std::make_shared<Linear>(in, out, true, o, &g); };
  return {{linear(1, width)},
          {std::make_shared<ReLU>()},
          {linear(width, width), {}, {"res_1"}},
          {std::make_shared<ReLU>()},
          {linear(width, width)},
          {std::make_shared<ReLU>()},
          {linear(width, width), {"res_1"}, {}},
          {std::make_shared<ReLU>()},
          {linear(width, 1)},
          {std::make_shared<Sigmoid>()}};
}

// The same model written out by hand on the CPU: the reference.
Variable reference_forward(const std::vector<StagedLayer>& layers, const Variable& x) {
  Variable h = x, res;
  for (size_t l = 0; l < layers.size(); ++l) {
    h = layers[l].module->forward(h);
    if (l == 2) res = h;
    if (l == 6) h = add(h, res);
  }
  return h;
}

struct Trace {
  std::vector<double> losses;
  std::vector<std::vector<double>> params;  // after the last step, by parameter
};

// Adam (lr 3e-3, as the seed) on regression batches of 32 for `steps` steps.
Trace train(UnaryModule& model, const std::function<Variable(const Variable&)>& forward, Device input_device,
            DType dtype, int steps) {
  Adam adam(model.named_parameters(), AdamOptions{.lr = 3e-3});
  Generator g(11);
  Trace t;
  for (int s = 0; s < steps; ++s) {
    Tensor x = rand({32, 1}, Options(dtype), &g);
    Tensor y = mul(add(x, 1.0), 0.4);
    Variable pred = forward(Variable(x.to(input_device)));
    Variable loss = mse_loss(pred, Variable(y.to(pred.device())));
    adam.zero_grad();
    loss.backward();
    adam.step();
    t.losses.push_back(loss.item<double>());
  }
  for (const Variable& p : model.parameters()) t.params.push_back(p.data().to_vector<double>());
  return t;
}

void expect_same_training(const Trace& a, const Trace& b, double tol) {
  ASSERT_EQ(a.losses.size(), b.losses.size());
  for (size_t i = 0; i < a.losses.size(); ++i) EXPECT_NEAR(a.losses[i], b.losses[i], tol * std::abs(b.losses[i]));
  ASSERT_EQ(a.params.size(), b.params.size());
  for (size_t p = 0; p < a.params.size(); ++p)
    EXPECT_TRUE(test::all_close(a.params[p], b.params[p], tol, tol)) << "parameter " << p;
}

// Trains the staged model on `devices` (split at stage_starts) and the hand-written one on
// the CPU from the same initial values.
void expect_staged_matches_unsplit(const std::vector<Device>& devices, const std::vector<size_t>& starts, DType dtype,
                                   double tol) {
  const int64_t width = 64;
  std::vector<StagedLayer> reference_layers = residual_layers(dtype, width);
  Sequential reference;
  for (auto& l : reference_layers) reference.push_back(l.module);
  StagedModel staged(residual_layers(dtype, width), starts, devices);
  Trace want = train(reference, [&](const Variable& x) { return reference_forward(reference_layers, x); },
                     Device::cpu(), dtype, 5);
  Trace got = train(staged, [&](const Variable& x) { return staged.forward(x); }, devices[0], dtype, 5);
  expect_same_training(got, want, tol);
  EXPECT_GT(std::abs(want.losses.front() - want.losses.back()), 1e-6);  // it trains: the test can fail
}

TEST(StagedModel, ThreeStagesWithASkipAcrossStagesTrainLikeTheUnsplitModel) {
  // On the CPU the stages share a device; the layout logic and the skip are the same.
  expect_staged_matches_unsplit({Device::cpu(), Device::cpu(), Device::cpu()}, {0, 4, 7}, DType::Float64, 1e-12);
  expect_staged_matches_unsplit({Device::cpu(), Device::cpu()}, {0, 5}, DType::Float32, 1e-5);
}

TEST(StagedModel, StagesOnCpuAndTwoCudaDevicesTrainLikeTheUnsplitModel) {
  if (cuda::device_count() < 2) GTEST_SKIP() << "needs 2 CUDA devices (the simulator has them)";
  const std::vector<Device> devices = {Device::cpu(), Device::cuda(0), Device::cuda(1)};
  // The skip goes from stage 0 (CPU) to stage 2 (cuda:1), and its gradient straight back.
  expect_staged_matches_unsplit(devices, {0, 3, 6}, DType::Float64, 1e-10);
  expect_staged_matches_unsplit({Device::cuda(1), Device::cuda(0)}, {0, 3}, DType::Float32, 1e-5);
  StagedModel staged(residual_layers(DType::Float32, 8), {0, 3, 6}, devices);
  EXPECT_EQ(staged.layer(2).module->parameters()[0].device(), Device::cpu());
  EXPECT_EQ(staged.layer(4).module->parameters()[0].device(), Device::cuda(0));
  EXPECT_EQ(staged.layer(6).module->parameters()[0].device(), Device::cuda(1));
  EXPECT_EQ(staged.forward(Variable(zeros({3, 1}))).device(), Device::cuda(1));
}

TEST(StagedModel, PlaceSplitsASequentialByParametersAndKeepsItsNames) {
  Generator g(3);
  Sequential seq{std::make_shared<Linear>(4, 100, true, Options{}, &g), std::make_shared<ReLU>(),
                 std::make_shared<Linear>(100, 100, true, Options{}, &g), std::make_shared<ReLU>(),
                 std::make_shared<Linear>(100, 2, true, Options{}, &g)};
  std::vector<std::string> names;
  for (const auto& [name, p] : seq.named_parameters()) names.push_back(name);
  Tensor x = rand({5, 4}, {}, &g);
  std::vector<double> want = seq.forward(Variable(x)).data().to_vector<double>();
  auto staged = StagedModel::place(seq, {Device::cpu(), Device::cpu()});
  std::vector<std::string> staged_names;
  for (const auto& [name, p] : staged->named_parameters()) staged_names.push_back(name);
  EXPECT_EQ(staged_names, names);
  // 500, 10,100 and 202 parameters: the big layer is best alone with what follows it.
  EXPECT_EQ(staged->stage_of(1), 0u);
  EXPECT_EQ(staged->stage_of(2), 1u);
  EXPECT_EQ(staged->forward(Variable(x)).data().to_vector<double>(), want);
}

TEST(StagedModel, BalancedStageStartsKeepEveryStageNonEmpty) {
  EXPECT_EQ(balanced_stage_starts({10, 10, 10, 10}, 2), (std::vector<size_t>{0, 2}));
  // Ties go to the later cut.
  EXPECT_EQ(balanced_stage_starts({100, 0, 0, 0}, 3), (std::vector<size_t>{0, 2, 3}));
  EXPECT_EQ(balanced_stage_starts({0, 0, 0, 100}, 2), (std::vector<size_t>{0, 3}));
  EXPECT_EQ(balanced_stage_starts({10, 1, 1, 1, 10, 1}, 3), (std::vector<size_t>{0, 1, 4}));
  EXPECT_EQ(balanced_stage_starts({1, 1, 1, 9}, 2), (std::vector<size_t>{0, 3}));
  EXPECT_EQ(balanced_stage_starts({5}, 1), (std::vector<size_t>{0}));
  EXPECT_EQ(balanced_stage_starts({1, 1, 1}, 3), (std::vector<size_t>{0, 1, 2}));
  expect_error([] { balanced_stage_starts({1, 1}, 3); }, {"cannot split 2 layers into 3 stages"});
}

TEST(StagedModel, RefusesBadLayoutsBeforeTraining) {
  auto relu = [] { return std::make_shared<ReLU>(); };
  const Device cpu = Device::cpu();
  expect_error([&] { StagedModel({{relu(), {"nope"}, {}}}, {0}, {cpu}); }, {"layer 0", "'nope'", "no layer produces"});
  expect_error([&] { StagedModel({{relu(), {"later"}, {}}, {relu(), {}, {"later"}}}, {0}, {cpu}); },
               {"'later'", "layer 1 (ReLU, stage 0) produces after it", "cycle"});
  expect_error([&] { StagedModel({{relu(), {}, {"a"}}, {relu(), {}, {"a"}}}, {0}, {cpu}); },
               {"layers 0 and 1 both produce 'a'"});
  expect_error([&] { StagedModel({{relu()}, {relu()}}, {0, 2}, {cpu, cpu}); }, {"stage 1 starts at layer 2"});
  expect_error([&] { StagedModel({{relu()}, {relu()}}, {0, 1}, {cpu}); }, {"2 stages but 1 devices"});
  expect_error([&] { StagedModel({{relu()}}, {1}, {cpu}); }, {"first stage must start at layer 0"});
  // A skip whose shape does not match the consumer's output is named at the first forward.
  Generator g(1);
  StagedModel mismatch({{std::make_shared<Linear>(2, 3, true, Options{}, &g), {}, {"r"}},
                        {std::make_shared<Linear>(3, 4, true, Options{}, &g), {"r"}, {}}},
                       {0, 1}, {cpu, cpu});
  expect_error([&] { mismatch.forward(Variable(zeros({1, 2}))); }, {"layer 1", "'r'", "[1, 3]", "[1, 4]"});
}

}  // namespace
}  // namespace wick
