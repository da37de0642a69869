// The single-device training loop: it learns; accumulation is the same as a larger
// batch; resuming from a checkpoint is bit-identical to an uninterrupted run; bad
// checkpoints are refused without changing anything; schedule, smoothing, best model,
// learning curve files.
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include <wick/autograd/ops.h>
#include <wick/nn/activation.h>
#include <wick/nn/containers.h>
#include <wick/nn/dropout.h>
#include <wick/nn/linear.h>
#include <wick/optim/adam.h>
#include <wick/optim/sgd.h>
#include <wick/tensor/elementwise.h>
#include <wick/tensor/factories.h>
#include <wick/tensor/generator.h>
#include <wick/autograd/grad_mode.h>
#include <wick/train/loop.h>
#include <wick/train/trainer.h>

#include "tests/support/reference.h"
#include "tests/support/training_fixture.h"

namespace wick::test {
namespace {

std::shared_ptr<Dataset> blobs(int64_t n, uint64_t seed) { return training_blobs(n, seed); }

std::shared_ptr<Sequential> mlp(uint64_t seed, double dropout = 0) {
  Generator g(seed);
  auto net = std::make_shared<Sequential>();
  net->push_back(std::make_shared<Linear>(8, 16, true, Options{}, &g));
  net->push_back(std::make_shared<ReLU>());
  if (dropout > 0) net->push_back(std::make_shared<Dropout>(dropout));
  net->push_back(std::make_shared<Linear>(16, 4, true, Options{}, &g));
  return net;
}

std::string temp_path(const std::string& name) { return test::temp_path("loop", name); }

// Blobs, an MLP, its classifier, SGD and a training stream of 16-example batches.
struct SgdRun {
  std::shared_ptr<Dataset> data;
  std::shared_ptr<Sequential> net;
  SupervisedModel model;
  SGD opt;
  BatchStream train;
  SgdRun(int64_t examples, uint64_t seed, double lr)
      : data(blobs(examples, seed)),
        net(mlp(seed + 1)),
        model(classifier(net)),
        opt(net->named_parameters(), SGDOptions{.lr = lr}),
        train(data, {.batch_size = 16}) {}
};

TEST(TrainingLoop, LearnsBlobsAndReportsTheCurve) {
  auto data = blobs(512, 1);
  auto net = mlp(2);
  SupervisedModel model = classifier(net);
  Adam opt(net->named_parameters(), AdamOptions{.lr = 0.01});
  BatchStream train(data, {.batch_size = 32, .seed = 3});
  BatchStream valid(data, {.batch_size = 128, .shuffle = false});
  LoopOptions o = quiet_loop(5);
  o.learning_curve_csv = temp_path("curve.csv");
  LoopState s = fit(model, opt, train, &valid, o);
  ASSERT_EQ(s.learning_curve.size(), 5u);
  EXPECT_EQ(s.epoch, 5);
  EXPECT_GT(s.learning_curve[0].train_loss, s.learning_curve[4].train_loss);
  EXPECT_LT(*s.learning_curve[4].validation_loss, 0.1);
  EXPECT_GT(*s.learning_curve[4].validation_accuracy, 0.97);
  std::ifstream csv(o.learning_curve_csv);
  std::string header, line;
  std::getline(csv, header);
  EXPECT_EQ(header.rfind("epoch,train_loss,", 0), 0u);
  int lines = 0;
  while (std::getline(csv, line)) ++lines;
  EXPECT_EQ(lines, 5);
  ::unlink(o.learning_curve_csv.c_str());
}

TEST(TrainingLoop, AccumulatingTwoBatchesEqualsOneBatchTwiceAsLarge) {
  auto data = blobs(96, 4);  // 96 = 3 batches of 32 or 6 of 16 (the last group of 2 is full)
  auto run = [&](int64_t batch, int64_t accumulate) {
    auto net = mlp(5);
    SupervisedModel model = classifier(net);
    SGD opt(net->named_parameters(), SGDOptions{.lr = 0.1, .momentum = 0.9});
    BatchStream train(data, {.batch_size = batch, .shuffle = false});
    LoopOptions o = quiet_loop(2);
    o.trainer.accumulate = accumulate;
    fit(model, opt, train, nullptr, o);
    return flat_parameters(*net);
  };
  EXPECT_TRUE(all_close(run(16, 2), run(32, 1), 1e-5, 1e-6));
}

// A replica of two whose peer has the same batches and gradients: the sums over replicas
// are twice this replica's. A reducer that knows the count before the backward has a group
// of one batch seeded with n / count (the reduced gradients are then means: not divided
// again); with accumulation, or a reducer without the count, the backward is seeded with n
// and the sums are divided by the count at the step. Every way gives one SGD step with the
// batch's mean gradient.
class TwinReplica final : public GradientReducer, public StepPolicy, public ReplicaMetrics {
 public:
  explicit TwinReplica(Module& module, bool gives_count) : module_(module), gives_count_(gives_count) {}
  int64_t ranks() const override { return 2; }
  std::vector<double> sum(std::vector<double> values) override {
    for (double& v : values) v *= 2;
    return values;
  }
  int64_t max(int64_t value) override { return value; }
  int counts_given = 0;

 protected:
  void start(double examples, int64_t) override { examples_ = examples; }
  Tensor count_before_backward() override {
    ++counts_given;
    return gives_count_ ? full({}, 2 * examples_, Options(DType::Float64)) : Tensor();
  }
  void reduce(double, bool divide) override {
    NoGradGuard no_grad;
    for (const Variable& p : module_.parameters())
      if (p.grad().defined()) p.grad().data().mul_(2.0);
    if (divide) divide_gradients(module_.parameters(), 2 * examples_);
  }

 private:
  Module& module_;
  bool gives_count_;
  double examples_ = 0;
};

TEST(Trainer, FoldsTheMeanIntoTheSeedWhenTheSyncGivesTheCount) {
  auto data = blobs(32, 7);
  auto run = [&](int64_t batch, int64_t accumulate, bool gives_count, int expected_counts) {
    auto net = mlp(8);
    SupervisedModel model = classifier(net);
    SGD opt(net->named_parameters(), SGDOptions{.lr = 0.5});
    BatchStream train(data, {.batch_size = batch, .shuffle = false});
    TwinReplica twin(*net, gives_count);
    Trainer trainer(model, &opt, twin, {.accumulate = accumulate, .progress = Progress::Style::Off});
    trainer.train_epoch(train, 0);
    EXPECT_EQ(twin.counts_given, expected_counts);
    return flat_parameters(*net);
  };
  const std::vector<double> reference = run(32, 1, false, 1);  // one step, seeded 32, divided by 64
  EXPECT_TRUE(all_close(run(32, 1, true, 1), reference, 1e-6, 1e-7));   // seeded 32 / 64
  EXPECT_TRUE(all_close(run(16, 2, true, 0), reference, 1e-6, 1e-7));   // two batches: not folded
  // The step moved the parameters far beyond the tolerance, so a run that scaled the
  // folded means again (a step 64 times shorter) would have failed above.
  auto net = mlp(8);
  EXPECT_FALSE(all_close(flat_parameters(*net), reference, 1e-3, 1e-4));
}

TEST(TrainingLoop, AnIncompleteLastGroupIsStillApplied) {
  // 5 batches with accumulate = 2: steps after batches 2, 4 and 5, so the result equals
  // batches of 32, 32 and 16.
  auto data = blobs(80, 6);
  auto run = [&](int64_t batch, int64_t accumulate) {
    auto net = mlp(7);
    SupervisedModel model = classifier(net);
    SGD opt(net->named_parameters(), SGDOptions{.lr = 0.1});
    BatchStream train(data, {.batch_size = batch, .shuffle = false});
    LoopOptions o = quiet_loop(1);
    o.trainer.accumulate = accumulate;
    fit(model, opt, train, nullptr, o);
    return flat_parameters(*net);
  };
  std::vector<double> before = [&] { auto net = mlp(7); return flat_parameters(*net); }();
  std::vector<double> accumulated = run(16, 2);
  EXPECT_TRUE(all_close(accumulated, run(32, 1), 1e-5, 1e-6));
  EXPECT_FALSE(all_close(accumulated, before, 1e-3, 1e-3));
}

TEST(TrainingLoop, ResumingIsBitIdenticalToAnUninterruptedRun) {
  auto data = blobs(128, 8);
  std::string path = temp_path("resume.ckpt");
  ::unlink(path.c_str());
  auto run = [&](int64_t epochs, bool resume) {
    manual_seed(11);
    auto net = mlp(9, /*dropout=*/0.2);  // dropout: the RNG state must be restored too
    SupervisedModel model = classifier(net);
    Adam opt(net->named_parameters(), AdamOptions{.lr = 0.01});
    ExponentialLR schedule(opt, 0.7);
    BatchStream train(data, {.batch_size = 16, .seed = 5, .prefetch = 1});
    BatchStream valid(data, {.batch_size = 64, .shuffle = false});
    LoopOptions o = quiet_loop(epochs);
    o.scheduler = &schedule;
    o.validation_smoothing = 0.5;
    o.checkpoint_path = path;
    o.resume = resume;
    LoopState s = fit(model, opt, train, &valid, o);
    return std::make_pair(flat_parameters(*net), s);
  };
  auto [straight, straight_state] = run(4, false);
  ::unlink(path.c_str());
  run(2, false);
  auto [resumed, resumed_state] = run(4, true);
  ASSERT_EQ(straight.size(), resumed.size());
  EXPECT_EQ(straight, resumed);  // bit-identical
  ASSERT_EQ(resumed_state.learning_curve.size(), 4u);
  EXPECT_EQ(resumed_state.min_validation_epoch, straight_state.min_validation_epoch);
  EXPECT_EQ(resumed_state.learning_curve[3].train_loss, straight_state.learning_curve[3].train_loss);
  ::unlink(path.c_str());
}

TEST(TrainingLoop, RefusesACorruptOrMismatchedCheckpointAndChangesNothing) {
  auto data = blobs(64, 12);
  std::string path = temp_path("bad.ckpt");
  {
    auto net = mlp(13);
    SupervisedModel model = classifier(net);
    SGD opt(net->named_parameters(), SGDOptions{.lr = 0.1});
    BatchStream train(data, {.batch_size = 16});
    LoopOptions o = quiet_loop(1);
    o.checkpoint_path = path;
    fit(model, opt, train, nullptr, o);
  }
  std::string good;
  {
    std::ifstream in(path, std::ios::binary);
    good.assign(std::istreambuf_iterator<char>(in), {});
  }
  // A different model: the checkpoint's shapes do not fit.
  {
    Generator g(1);
    auto other = std::make_shared<Sequential>();
    other->push_back(std::make_shared<Linear>(8, 4, true, Options{}, &g));
    SupervisedModel model = classifier(other);
    SGD opt(other->named_parameters(), SGDOptions{.lr = 0.1});
    BatchStream train(data, {.batch_size = 16});
    LoopOptions o = quiet_loop(3);
    o.checkpoint_path = path;
    o.resume = true;
    std::vector<double> before = flat_parameters(*other);
    expect_error([&] { fit(model, opt, train, nullptr, o); }, {"load_checkpoint", path, "does not fit"});
    EXPECT_EQ(flat_parameters(*other), before);
  }
  // Truncated: refused by the reader; the file itself is left as it was.
  {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << good.substr(0, good.size() / 2);
    auto net = mlp(13);
    SupervisedModel model = classifier(net);
    SGD opt(net->named_parameters(), SGDOptions{.lr = 0.1});
    BatchStream train(data, {.batch_size = 16});
    LoopOptions o = quiet_loop(3);
    o.checkpoint_path = path;
    o.resume = true;
    std::vector<double> before = flat_parameters(*net);
    expect_error([&] { fit(model, opt, train, nullptr, o); }, {"load_safetensors", path});
    EXPECT_EQ(flat_parameters(*net), before);
    std::ifstream in(path, std::ios::binary);
    std::string now(std::istreambuf_iterator<char>(in), {});
    EXPECT_EQ(now.size(), good.size() / 2);
  }
  ::unlink(path.c_str());
}

TEST(TrainingLoop, AScheduleFactorOfZeroStopsAndLearningRatesFollowTheFactor) {
  SgdRun r(32, 14, 0.2);
  auto& [data, net, model, opt, train] = r;
  LoopOptions o = quiet_loop(10);
  o.lr_factor = [](int64_t epoch, std::optional<double>) { return epoch < 3 ? 1.0 / (epoch + 1) : 0.0; };
  LoopState s = fit(model, opt, train, nullptr, o);
  ASSERT_EQ(s.learning_curve.size(), 3u);
  EXPECT_DOUBLE_EQ(s.learning_curve[0].learning_rate, 0.2);
  EXPECT_DOUBLE_EQ(s.learning_curve[1].learning_rate, 0.1);
  EXPECT_NEAR(s.learning_curve[2].learning_rate, 0.2 / 3, 1e-15);
}

// lr_factor is the loop's one schedule (a FactorLR): it sees the smoothed validation loss
// of the epochs before, and a resumed run continues with the same rates as an uninterrupted
// one (the schedule's state is in the checkpoint under "scheduler.").
TEST(TrainingLoop, TheFactorSeesTheValidationLossAndAResumeKeepsItsRates) {
  const std::string path = temp_path("factor.ckpt");
  ::unlink(path.c_str());
  auto run = [&](int64_t epochs, bool resume) {
    SgdRun r(64, 19, 0.2);
    BatchStream valid(r.data, {.batch_size = 64, .shuffle = false});
    LoopOptions o = quiet_loop(epochs);
    o.checkpoint_path = path;
    o.resume = resume;
    // The rate follows the loss: base / (1 + 10 loss) once there is one.
    o.lr_factor = [](int64_t, std::optional<double> loss) { return loss ? 1.0 / (1.0 + 10 * *loss) : 1.0; };
    LoopState s = fit(r.model, r.opt, r.train, &valid, o);
    return std::make_pair(s, flat_parameters(*r.net));
  };
  const auto [whole, whole_params] = run(4, false);
  ASSERT_EQ(whole.learning_curve.size(), 4u);
  EXPECT_DOUBLE_EQ(whole.learning_curve[0].learning_rate, 0.2);
  for (size_t e = 1; e < 4; ++e)
    EXPECT_DOUBLE_EQ(whole.learning_curve[e].learning_rate,
                     0.2 / (1.0 + 10 * *whole.learning_curve[e - 1].smoothed_validation_loss));
  ::unlink(path.c_str());
  run(2, false);
  const auto [resumed, resumed_params] = run(4, true);
  ASSERT_EQ(resumed.learning_curve.size(), 4u);
  for (size_t e = 0; e < 4; ++e)
    EXPECT_EQ(resumed.learning_curve[e].learning_rate, whole.learning_curve[e].learning_rate) << e;
  EXPECT_EQ(resumed_params, whole_params);
  ::unlink(path.c_str());
}

TEST(TrainingLoop, SmoothsValidationLossAndRestoresTheBestEligibleModel) {
  SgdRun r(64, 16, 0.05);
  // References, not a structured binding: clang before 16 cannot capture those in a lambda.
  auto& data = r.data;
  auto& net = r.net;
  auto& model = r.model;
  auto& opt = r.opt;
  auto& train = r.train;
  BatchStream valid(data, {.batch_size = 64, .shuffle = false});
  LoopOptions o = quiet_loop(4);
  o.validation_smoothing = 0.25;
  o.min_validation_epochs = {1};  // only the model after epoch 2 may be returned
  std::vector<double> after_epoch_2;
  o.on_epoch = [&](const CurvePoint& p) {
    if (p.epoch == 1) after_epoch_2 = flat_parameters(*net);
  };
  LoopState s = fit(model, opt, train, &valid, o);
  const auto& c = s.learning_curve;
  ASSERT_EQ(c.size(), 4u);
  EXPECT_DOUBLE_EQ(*c[0].smoothed_validation_loss, *c[0].validation_loss);
  for (size_t e = 1; e < 4; ++e)
    EXPECT_NEAR(*c[e].smoothed_validation_loss, 0.25 * *c[e].validation_loss + 0.75 * *c[e - 1].smoothed_validation_loss,
                1e-12);
  EXPECT_EQ(s.min_validation_epoch, 1);
  EXPECT_EQ(flat_parameters(*net), after_epoch_2);
}

TEST(TrainingLoop, ValidatesEveryKEpochsAndAfterTheLast) {
  SgdRun r(32, 18, 0.05);
  auto& [data, net, model, opt, train] = r;
  BatchStream valid(data, {.batch_size = 32, .shuffle = false});
  LoopOptions o = quiet_loop(5);
  o.validation_frequency = 2;
  LoopState s = fit(model, opt, train, &valid, o);
  std::vector<bool> validated;
  for (const auto& p : s.learning_curve) validated.push_back(p.validation_loss.has_value());
  EXPECT_EQ(validated, (std::vector<bool>{false, true, false, true, true}));
}

TEST(TrainingLoop, RejectsBadOptions) {
  SgdRun r(16, 20, 0.05);
  auto& model = r.model;  // not a structured binding (captured below: see above)
  auto& opt = r.opt;
  auto& train = r.train;
  LoopOptions o = quiet_loop(1);
  o.validation_smoothing = 1.5;
  expect_error([&] { fit(model, opt, train, nullptr, o); }, {"validation_smoothing", "(0, 1]"});
  o = quiet_loop(1);
  o.trainer.accumulate = 0;
  expect_error([&] { fit(model, opt, train, nullptr, o); }, {"accumulate must be >= 1"});
  o = quiet_loop(1);
  o.resume = true;
  expect_error([&] { fit(model, opt, train, nullptr, o); }, {"resume needs a checkpoint_path"});
}

}  // namespace
}  // namespace wick::test
