// fit with your own step: a two-input model on a dictionary dataset through the
// multi-worker DataLoader, named metrics averaged over examples and kept in the learning
// curve (checkpoints, CSV, JSON lines, TensorBoard), the same parameters as the supervised
// form when the step computes the same loss, and clear errors for metrics that do not
// match their declaration.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include <wick/autograd/activations.h>
#include <wick/autograd/nn_ops.h>
#include <wick/autograd/ops.h>
#include <wick/data/loader_batches.h>
#include <wick/data/map_dataset.h>
#include <wick/nn/linear.h>
#include <wick/optim/adam.h>
#include <wick/optim/sgd.h>
#include <wick/tensor/elementwise.h>
#include <wick/tensor/factories.h>
#include <wick/tensor/generator.h>
#include <wick/tensor/reduce.h>
#include <wick/train/loop.h>
#include <wick/train/tensorboard.h>

#include "tests/support/reference.h"
#include "tests/support/training_fixture.h"

namespace wick::test {
namespace {

// Two inputs joined in a hidden layer: head(relu(left(a) + right(b))).
class TwoInputs : public Module {
 public:
  explicit TwoInputs(uint64_t seed) {
    Generator g(seed);
    left_ = register_module("left", std::make_shared<Linear>(6, 16, true, Options{}, &g));
    right_ = register_module("right", std::make_shared<Linear>(3, 16, true, Options{}, &g));
    head_ = register_module("head", std::make_shared<Linear>(16, 3, true, Options{}, &g));
  }
  Variable forward(const Variable& a, const Variable& b) { return head_->forward(relu(left_->forward(a) + right_->forward(b))); }

 private:
  std::shared_ptr<Linear> left_, right_, head_;
};

// Labels from a rule that needs both inputs: the larger of (sum of a's first three +
// b[0]) and the other two sums, as a class index.
std::shared_ptr<const MapDataset> two_input_data(int64_t n, uint64_t seed) {
  const Tensor a = random({n, 6}, DType::Float32, seed, -1, 1), b = random({n, 3}, DType::Float32, seed + 1, -1, 1);
  std::vector<int64_t> labels;
  const auto av = a.to_vector<float>(), bv = b.to_vector<float>();
  for (int64_t i = 0; i < n; ++i) {
    const float s0 = av[6 * i] + av[6 * i + 1] + av[6 * i + 2] + bv[3 * i];
    const float s1 = av[6 * i + 3] + av[6 * i + 4] + bv[3 * i + 1];
    const float s2 = av[6 * i + 5] + 2 * bv[3 * i + 2];
    labels.push_back(s0 >= s1 && s0 >= s2 ? 0 : (s1 >= s2 ? 1 : 2));
  }
  return std::make_shared<TensorDictDataset>(
      std::vector<std::pair<std::string, Tensor>>{{"left", a}, {"right", b}, {"label", tensor<int64_t>(labels)}});
}

StepOutput two_input_step(Module& m, const Batch& batch) {
  auto& net = dynamic_cast<TwoInputs&>(m);
  const Tensor& label = batch.fields["label"];
  Variable out = net.forward(Variable(batch.fields["left"]), Variable(batch.fields["right"]));
  Tensor accuracy = mean(eq(argmax(out.data(), 1), label).to(DType::Float64));
  return {cross_entropy(out, label), {{"accuracy", accuracy}}};
}

TEST(UserStep, TrainsATwoInputModelOnADictionaryDatasetWithWorkers) {
  const std::string dir = ::testing::TempDir() + "/wick_user_step_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  auto net = std::make_shared<TwoInputs>(1);
  SupervisedModel model = custom_model(net, two_input_step, {"accuracy"});
  Adam opt(net->named_parameters(), AdamOptions{.lr = 0.02});
  DataLoader train_loader(two_input_data(1024, 2), {.batch_size = 32, .shuffle = true, .seed = 3, .num_workers = 2});
  DataLoader valid_loader(two_input_data(256, 9), {.batch_size = 128});
  DataLoaderBatches train(train_loader), valid(valid_loader);
  LoopOptions o = quiet_loop(6);
  o.learning_curve_csv = dir + "/curve.csv";
  o.learning_curve_jsonl = dir + "/curve.jsonl";
  o.tensorboard_dir = dir + "/tb";
  std::filesystem::create_directories(dir);
  LoopState s = fit(model, opt, train, &valid, o);
  ASSERT_EQ(s.learning_curve.size(), 6u);
  const CurvePoint& last = s.learning_curve.back();
  EXPECT_LT(last.train_loss, s.learning_curve.front().train_loss);
  EXPECT_GT(last.train_metrics.at("accuracy"), 0.9);
  EXPECT_GT(last.validation_metrics.at("accuracy"), 0.85);
  // Without count_correct the built-in accuracy stays 0: the metric is the step's.
  EXPECT_EQ(last.train_accuracy, 0.0);
  const std::string csv = read_file(o.learning_curve_csv);
  EXPECT_NE(csv.find(",train_metric_accuracy,validation_metric_accuracy\n"), std::string::npos) << csv.substr(0, 200);
  EXPECT_NE(read_file(o.learning_curve_jsonl).find("\"validation_metrics\": {\"accuracy\": "), std::string::npos);
  size_t metric_events = 0;
  for (const ScalarEvent& e : read_tensorboard_events(dir + "/tb/events.out.tfevents.wick"))
    metric_events += e.tag == "train/metric/accuracy" || e.tag == "validation/metric/accuracy";
  EXPECT_EQ(metric_events, 12u);
  std::filesystem::remove_all(dir);
}

// The step computing the supervised form's loss gives the same bits as the supervised form.
TEST(UserStep, GivesTheSupervisedFormsParametersWhenItComputesTheSameLoss) {
  auto data = training_blobs(256, 4);
  auto a = training_mlp(5), b = training_mlp(5);
  SupervisedModel supervised = classifier(a);
  SupervisedModel stepped = custom_model(b, [](Module& m, const Batch& batch) {
    auto& net = dynamic_cast<UnaryModule&>(m);
    return StepOutput{cross_entropy(net.forward(Variable(batch.inputs)), batch.targets), {}};
  });
  SGD opt_a(a->named_parameters(), SGDOptions{.lr = 0.1, .momentum = 0.9});
  SGD opt_b(b->named_parameters(), SGDOptions{.lr = 0.1, .momentum = 0.9});
  BatchStream train_a(data, {.batch_size = 16, .seed = 7}), train_b(data, {.batch_size = 16, .seed = 7});
  LoopOptions o = quiet_loop(2);
  o.trainer.accumulate = 2;  // the summed-gradient path too
  LoopState sa = fit(supervised, opt_a, train_a, nullptr, o);
  LoopState sb = fit(stepped, opt_b, train_b, nullptr, o);
  for (size_t i = 0; i < a->parameters().size(); ++i)
    EXPECT_TRUE(values(a->parameters()[i].data()) == values(b->parameters()[i].data())) << "parameter " << i;
  EXPECT_EQ(sa.learning_curve.back().train_loss, sb.learning_curve.back().train_loss);
}

TEST(UserStep, MetricsMustMatchTheirDeclaration) {
  auto data = training_blobs(64, 4);
  auto net = training_mlp(5);
  SGD opt(net->named_parameters(), SGDOptions{.lr = 0.1});
  BatchStream train(data, {.batch_size = 16});
  auto loss_only = [](Module& m, const Batch& batch) {
    return StepOutput{cross_entropy(dynamic_cast<UnaryModule&>(m).forward(Variable(batch.inputs)), batch.targets), {}};
  };
  SupervisedModel missing = custom_model(net, loss_only, {"accuracy"});
  expect_error([&] { fit(missing, opt, train, nullptr, quiet_loop(1)); }, {"step", "did not return the metric 'accuracy'"});
  SupervisedModel extra = custom_model(net, [](Module& m, const Batch& batch) {
    StepOutput out{cross_entropy(dynamic_cast<UnaryModule&>(m).forward(Variable(batch.inputs)), batch.targets), {}};
    out.metrics["surprise"] = zeros({});
    return out;
  });
  expect_error([&] { fit(extra, opt, train, nullptr, quiet_loop(1)); }, {"step", "returned the metric 'surprise'", "not declared"});
  SupervisedModel not_scalar = custom_model(
      net,
      [](Module& m, const Batch& batch) {
        StepOutput out{cross_entropy(dynamic_cast<UnaryModule&>(m).forward(Variable(batch.inputs)), batch.targets), {}};
        out.metrics["m"] = zeros({2});
        return out;
      },
      {"m"});
  expect_error([&] { fit(not_scalar, opt, train, nullptr, quiet_loop(1)); }, {"metric 'm'", "one value"});
  SupervisedModel no_step;
  no_step.module = net;
  expect_error([&] { fit(no_step, opt, train, nullptr, quiet_loop(1)); }, {"needs a loss"});
}

TEST(UserStep, MetricsSurviveACheckpoint) {
  LoopState s;
  s.epoch = 2;
  s.learning_curve.push_back({0, 0.5, 0, {}, {}, {}, 10, 0.1, 1, {{"accuracy", 0.25}, {"f1", 0.5}}, {}});
  s.learning_curve.push_back({1, 0.4, 0, 0.3, 0.3, 0, 10, 0.1, 2, {{"accuracy", 0.75}, {"f1", 0.625}}, {{"accuracy", 0.5}}});
  const LoopState back = loop_state_from_tensors(loop_state_to_tensors(s));
  ASSERT_EQ(back.learning_curve.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(back.learning_curve[i].train_metrics, s.learning_curve[i].train_metrics);
    EXPECT_EQ(back.learning_curve[i].validation_metrics, s.learning_curve[i].validation_metrics);
  }
}

}  // namespace
}  // namespace wick::test
