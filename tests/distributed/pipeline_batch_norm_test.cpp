// BatchNorm in a pipelined model (issue 25, item 6). A batch that goes through the stages
// as micro-batches is normalised micro-batch by micro-batch, so its loss and gradients are
// those of the unsplit model applied to each micro-batch (sizes-weighted), not of the whole
// batch; the running statistics are updated once per step from every micro-batch's values
// (PerStep, the default: for a BatchNorm whose input does not depend on another one's
// normalisation, exactly the unsplit model's whole-batch update) or once per micro-batch
// (PerMicroBatch). Each is checked against the unsplit model in one process, float64.
#include <gtest/gtest.h>

#include <wick/autograd/grad_mode.h>
#include <wick/autograd/ops.h>
#include <wick/distributed/control/in_process_control.h>
#include <wick/distributed/pipeline/pipeline.h>
#include <wick/nn/activation.h>
#include <wick/nn/linear.h>
#include <wick/nn/loss.h>
#include <wick/nn/norm.h>
#include <wick/optim/sgd.h>
#include <wick/tensor/cuda.h>
#include <wick/tensor/elementwise.h>
#include <wick/tensor/factories.h>
#include <wick/tensor/generator.h>
#include <wick/tensor/join.h>
#include <wick/tensor/reduce.h>

#include "tests/distributed/communicator_test_store.h"
#include "tests/support/reference.h"

namespace wick::distributed {
namespace {

using test::MapStore;
using test::run_ranks;
using Statistics = PipelineModel::BatchNormStatistics;
using State = std::map<std::string, Tensor>;

// Two BatchNorms: layer 1 on stage 0 (rank 0), layer 4 on stage 1 (a serving rank), whose
// input comes out of layer 1's micro-batch normalisation.
std::vector<StagedLayer> batch_norm_layers() {
  Generator g(13);
  const Options o(DType::Float64);
  return {{std::make_shared<Linear>(3, 6, true, o, &g)}, {std::make_shared<BatchNorm1d>(6, BatchNormOptions{}, o)},
          {std::make_shared<ReLU>()},                    {std::make_shared<Linear>(6, 6, true, o, &g)},
          {std::make_shared<BatchNorm1d>(6, BatchNormOptions{}, o)}, {std::make_shared<ReLU>()},
          {std::make_shared<Linear>(6, 1, true, o, &g)}};
}
const std::vector<size_t> kStarts = {0, 3};
const std::vector<size_t> kNorms = {1, 4};  // the BatchNorm layers
constexpr int64_t kBatch = 10;
constexpr double kLr = 0.1;

Tensor inputs() {
  Generator g(17);
  return randn({kBatch, 3}, DType::Float64, &g);
}
Tensor targets() {
  Generator g(19);
  return rand({kBatch, 1}, DType::Float64, &g);
}

Variable mse(const Variable& y, const Variable& t) { return mse_loss(y, t); }

struct Result {
  double loss = 0;
  State state;  // the whole model after one SGD step
  std::vector<std::vector<Tensor>> norm_inputs = std::vector<std::vector<Tensor>>(kNorms.size());  // reference only
};

State clone_state(const std::map<std::string, Tensor>& from) {
  State out;
  for (const auto& [name, t] : from) out[name] = t.cpu().clone();
  return out;
}

// The unsplit model in one process: the batch as micro-batches of `sizes`, one after the
// other, each normalised with its own statistics (and updating the running ones, as
// PerMicroBatch), losses weighted by size, then one SGD step. With sizes {kBatch}: the
// whole batch, as the unsplit model trains.
Result unsplit_step(const std::vector<int64_t>& sizes) {
  std::vector<StagedLayer> layers = batch_norm_layers();
  StagedModel model(layers, {0}, {Device::cpu()});
  SGD sgd(model.named_parameters(), SGDOptions{.lr = kLr});
  const Tensor x = inputs(), y = targets();
  Result r;
  int64_t offset = 0;
  for (int64_t size : sizes) {
    Variable h(x.narrow(0, offset, size));
    for (size_t l = 0; l < layers.size(); ++l) {
      for (size_t k = 0; k < kNorms.size(); ++k)
        if (kNorms[k] == l) r.norm_inputs[k].push_back(h.data().clone());
      h = layers[l].module->forward(h);
    }
    Variable loss = mul(mse(h, Variable(y.narrow(0, offset, size))), static_cast<double>(size) / kBatch);
    loss.backward();
    r.loss += loss.item<double>();
    offset += size;
  }
  sgd.step();
  r.state = clone_state(model.state_dict().to_map());
  return r;
}

// What PerStep promises: the state of unsplit_step(sizes) except that each BatchNorm's
// running statistics took one update (momentum 0.1 from 0 and 1) with the mean and the
// unbiased variance of all its micro-batches' inputs together.
State per_step_expectation(const Result& by_micro_batches) {
  State want = by_micro_batches.state;
  for (size_t k = 0; k < kNorms.size(); ++k) {
    const Tensor all = cat(by_micro_batches.norm_inputs[k], 0);
    const std::string prefix = std::to_string(kNorms[k]) + ".";
    want[prefix + "running_mean"] = mul(mean(all, {0}), 0.1);
    want[prefix + "running_var"] = add(mul(var(all, {0}, 1.0), 0.1), 0.9);
    want[prefix + "num_batches_tracked"] = full({}, int64_t{1}, DType::Int64);
  }
  return want;
}

enum class Path { GPipe, OneFOneB, Forward };

// One step of the pipeline over 2 ranks: train_step with a schedule, or forward() with
// set_micro_batches and loss.backward() (fit_pipeline's path), then SGD.
Result pipelined_step(int64_t micro_batches, Path path, std::optional<Statistics> statistics = std::nullopt,
                      bool cuda = false) {
  MapStore store;
  InProcessControl control(2);
  Result r;
  run_ranks(2, [&](int rank) {
    const Device device = cuda ? Device::cuda(rank) : Device::cpu();
    std::optional<cuda::DeviceGuard> guard;
    if (cuda) guard.emplace(rank);
    auto comm = make_communicator(store, rank, 2, device);
    InProcessControl::Endpoint end = control.endpoint(rank);
    PipelineModel model(*comm, end.get(), batch_norm_layers(), kStarts, device);
    SGD sgd(model.named_parameters(), SGDOptions{.lr = kLr});
    if (rank != 0) {
      model.serve(sgd);
      return;
    }
    if (statistics) model.set_batch_norm_statistics(*statistics);
    const Tensor x = inputs(), y = targets();
    if (path == Path::Forward) {
      model.set_micro_batches(micro_batches);
      Variable out = model.forward(Variable(x));
      Variable loss = mse(out, Variable(y.to(out.device())));
      loss.backward();
      r.loss = loss.item<double>();
    } else {
      using S = PipelineModel::Schedule;
      r.loss = model.train_step(x, y, mse, micro_batches, path == Path::GPipe ? S::GPipe : S::OneFOneB);
    }
    model.step(sgd);
    r.state = clone_state(model.state_dict_of_all_stages().to_map());
    model.stop();
  });
  return r;
}

void expect_state(const State& got, const State& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (const auto& [name, t] : want) {
    ASSERT_TRUE(got.count(name)) << what << ": " << name;
    EXPECT_TRUE(wick::test::all_close(wick::test::values(got.at(name)), wick::test::values(t), 1e-12, 1e-12))
        << what << ": " << name;
  }
}

const std::vector<int64_t> kFour = {3, 3, 2, 2};  // 10 examples in 4 micro-batches

TEST(PipelineBatchNorm, RunningStatisticsAreUpdatedOncePerStepFromEveryMicroBatch) {
  const Result by_micro_batches = unsplit_step(kFour);
  const State want = per_step_expectation(by_micro_batches);
  for (Path path : {Path::GPipe, Path::OneFOneB, Path::Forward}) {
    const Result got = pipelined_step(4, path);  // the default
    const std::string what = path == Path::GPipe ? "GPipe" : path == Path::OneFOneB ? "1F1B" : "forward()";
    EXPECT_NEAR(got.loss, by_micro_batches.loss, 1e-12) << what;
    expect_state(got.state, want, what);
  }
  // The first BatchNorm sees the same values as in the unsplit model's whole batch: its
  // running statistics are exactly the unsplit model's after one step.
  const Result whole = unsplit_step({kBatch});
  const Result got = pipelined_step(4, Path::GPipe);
  for (const char* name : {"1.running_mean", "1.running_var", "1.num_batches_tracked"})
    EXPECT_TRUE(wick::test::all_close(wick::test::values(got.state.at(name)), wick::test::values(whole.state.at(name)),
                                      1e-12, 1e-12))
        << name;
}

TEST(PipelineBatchNorm, PerMicroBatchUpdatesAsTheLayerDoesAlone) {
  const Result by_micro_batches = unsplit_step(kFour);
  for (Path path : {Path::GPipe, Path::OneFOneB, Path::Forward}) {
    const Result got = pipelined_step(4, path, Statistics::PerMicroBatch);
    EXPECT_NEAR(got.loss, by_micro_batches.loss, 1e-12);
    expect_state(got.state, by_micro_batches.state, "per micro-batch");
    EXPECT_EQ(got.state.at("4.num_batches_tracked").item<int64_t>(), 4);
  }
}

// The documented difference: micro-batch statistics are not the whole batch's, so the
// loss and the gradients (hence the stepped parameters) differ from the unsplit model's
// whole batch; with one micro-batch everything is the whole batch's.
TEST(PipelineBatchNorm, MicroBatchesNormaliseWithTheirOwnStatisticsAndOneMicroBatchIsTheWholeBatch) {
  const Result whole = unsplit_step({kBatch});
  const Result split = pipelined_step(4, Path::OneFOneB);
  EXPECT_GT(std::abs(split.loss - whole.loss), 1e-6);
  EXPECT_GT(std::abs(split.state.at("0.weight").data<double>()[0] - whole.state.at("0.weight").data<double>()[0]),
            1e-9);
  for (Path path : {Path::GPipe, Path::OneFOneB, Path::Forward}) {
    const Result one = pipelined_step(1, path);
    EXPECT_NEAR(one.loss, whole.loss, 1e-12);
    expect_state(one.state, whole.state, "one micro-batch");
  }
}

// The deferred statistics computed on the devices (CUDA under the simulator in CI).
TEST(PipelineBatchNorm, StagesOnTwoCudaDevicesUpdateOncePerStepToo) {
  if (cuda::device_count() < 2) GTEST_SKIP() << "needs 2 CUDA devices (the simulator has them)";
  const Result by_micro_batches = unsplit_step(kFour);
  const Result got = pipelined_step(4, Path::OneFOneB, std::nullopt, /*cuda=*/true);
  EXPECT_NEAR(got.loss, by_micro_batches.loss, 1e-10);
  const State want = per_step_expectation(by_micro_batches);
  ASSERT_EQ(got.state.size(), want.size());
  for (const auto& [name, t] : want)
    EXPECT_TRUE(wick::test::all_close(wick::test::values(got.state.at(name)), wick::test::values(t), 1e-10, 1e-10))
        << name;
}

// A layer used on its own: defer, forward twice, commit is one update with both batches.
TEST(PipelineBatchNorm, DeferredStatisticsOfALayerEqualOneForwardOfTheConcatenatedBatches) {
  Generator g(23);
  const Tensor a = randn({4, 3, 5}, DType::Float64, &g), b = randn({2, 3, 5}, DType::Float64, &g);
  for (std::optional<double> momentum : {std::optional<double>(0.3), std::optional<double>()}) {
    const BatchNormOptions options{.momentum = momentum};
    BatchNorm1d whole(3, options, Options(DType::Float64)), deferred(3, options, Options(DType::Float64));
    NoGradGuard no_grad;
    for (int step = 0; step < 2; ++step) {
      whole.forward(Variable(cat({a, b}, 0)));
      deferred.defer_running_stats(true);
      Variable ya = deferred.forward(Variable(a));
      deferred.forward(Variable(b));
      deferred.commit_running_stats();
      deferred.defer_running_stats(false);
      // A deferred forward normalises with its own statistics.
      BatchNorm1d alone(3, options, Options(DType::Float64));
      Variable want = alone.forward(Variable(a));
      EXPECT_TRUE(wick::test::all_close(wick::test::values(ya.data()), wick::test::values(want.data()), 1e-12, 1e-12));
    }
    for (const auto& [name, t] : whole.state_dict().to_map())
      EXPECT_TRUE(wick::test::all_close(wick::test::values(deferred.state_dict().to_map().at(name)),
                                        wick::test::values(t), 1e-12, 1e-12))
          << name;
    EXPECT_EQ(deferred.buffer("num_batches_tracked").item<int64_t>(), 2);
  }
}

}  // namespace
}  // namespace wick::distributed
