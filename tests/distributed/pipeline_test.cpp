// PipelineModel: a model split into stages on the ranks of a communicator (threads over
// Gloo here) trains like the unsplit model in one process: the same losses and parameters,
// with a skip connection across stages or without, 2 and 3 stages.
#include <gtest/gtest.h>

#include <bit>
#include <functional>

#include <wick/distributed/pipeline/pipeline.h>
#include <wick/distributed/comm/subgroup.h>
#include <wick/distributed/control/control_message.h>
#include <wick/distributed/control/in_process_control.h>
#include <wick/nn/activation.h>
#include <wick/nn/linear.h>
#include <wick/nn/loss.h>
#include <wick/data/dataset.h>
#include <wick/optim/adam.h>
#include <wick/tensor/safetensors.h>
#include <wick/train/loop.h>
#include <wick/tensor/cuda.h>
#include <wick/tensor/generator.h>

#include "tests/distributed/communicator_test_store.h"
#include "tests/support/reference.h"

namespace wick::distributed {
namespace {

using test::MapStore;
using test::run_ranks;

// Runs body(rank, comm, control) on `ranks` threads: each rank's CPU communicator (over one
// in-process store, waiting up to `timeout` for a peer) and its end of one in-process
// control channel, both kept until the body returns.
using StageBody = std::function<void(int rank, Communicator& comm, ControlEndpoint control)>;
void run_stages(int ranks, Milliseconds timeout, const StageBody& body) {
  MapStore store;
  InProcessControl control(ranks);
  run_ranks(ranks, [&](int rank) {
    auto comm = make_communicator(store, rank, ranks, Device::cpu(), timeout);
    InProcessControl::Endpoint end = control.endpoint(rank);
    body(rank, *comm, end.get());
  });
}
void run_stages(int ranks, const StageBody& body) { run_stages(ranks, std::chrono::seconds(30), body); }

using wick::test::expect_error;

// The seed's residual regression model (narrower): the third layer's output is added to the
// seventh's.
std::vector<StagedLayer> residual_layers(DType dtype, bool skip, int64_t width = 32) {
  Generator g(7);
  Options o(dtype);
  auto linear = [&](int64_t in, int64_t out) { return std::make_shared<Linear>(in, out, true, o, &g); };
  std::vector<StagedLayer> layers = {{linear(1, width)}, {std::make_shared<ReLU>()},
                                     {linear(width, width)}, {std::make_shared<ReLU>()},
                                     {linear(width, width)}, {std::make_shared<ReLU>()},
                                     {linear(width, width)}, {std::make_shared<ReLU>()},
                                     {linear(width, 1)},     {std::make_shared<Sigmoid>()}};
  if (skip) {
    layers[2].outputs = {"res_1"};
    layers[6].dependencies = {"res_1"};
  }
  return layers;
}

struct Trace {
  std::vector<double> losses;
  std::map<std::string, Tensor> state;  // the whole model at the end
};

Tensor batch_input(Generator& g, DType dtype) { return rand({32, 1}, Options(dtype), &g); }
Tensor batch_target(const Tensor& x) { return mul(add(x, 1.0), 0.4); }

// Adam (lr 3e-3, as the seed) for `steps` steps on rank 0 of a pipeline over `starts`.
struct Pipelining {
  int64_t micro_batches = 0;  // 0: forward() and loss.backward(), no micro-batches
  PipelineModel::Schedule schedule = PipelineModel::Schedule::OneFOneB;
};

Trace train_pipeline(const std::vector<size_t>& starts, DType dtype, bool skip, int steps, double clip = 0,
                     bool cuda = false, Pipelining pipelining = {}, std::vector<size_t>* peaks = nullptr) {
  MapStore store;
  const int ranks = static_cast<int>(starts.size());
  InProcessControl control(ranks);
  Trace trace;
  run_ranks(ranks, [&](int rank) {
    const Device device = cuda ? Device::cuda(rank) : Device::cpu();
    std::optional<cuda::DeviceGuard> guard;
    if (cuda) guard.emplace(rank);
    auto comm = make_communicator(store, rank, ranks, device);
    InProcessControl::Endpoint end = control.endpoint(rank);
    PipelineModel model(*comm, end.get(), residual_layers(dtype, skip), starts, device);
    Adam adam(model.named_parameters(), AdamOptions{.lr = 3e-3});
    if (rank != 0) {
      model.serve(adam);
      if (peaks) (*peaks)[rank] = model.peak_passes();
      return;
    }
    Generator g(11);
    for (int s = 0; s < steps; ++s) {
      Tensor x = batch_input(g, dtype);
      double loss = 0;
      if (pipelining.micro_batches > 0) {
        loss = model.train_step(x, batch_target(x), [](const Variable& y, const Variable& t) { return mse_loss(y, t); },
                                pipelining.micro_batches, pipelining.schedule);
      } else {
        Variable prediction = model.forward(Variable(x));
        Variable l = mse_loss(prediction, Variable(batch_target(x).to(prediction.device())));
        l.backward();
        loss = l.item<double>();
      }
      if (clip > 0) model.clip_grad_norm(clip);
      model.step(adam);
      trace.losses.push_back(loss);
    }
    if (peaks) (*peaks)[0] = model.peak_passes();
    for (const auto& [name, t] : model.state_dict_of_all_stages().to_map()) trace.state[name] = t.cpu().clone();
    model.stop();
  });
  return trace;
}

Trace train_unsplit(DType dtype, bool skip, int steps, double clip = 0) {
  std::vector<StagedLayer> layers = residual_layers(dtype, skip);
  StagedModel model(layers, {0}, {Device::cpu()});
  Adam adam(model.named_parameters(), AdamOptions{.lr = 3e-3});
  Generator g(11);
  Trace trace;
  for (int s = 0; s < steps; ++s) {
    Tensor x = batch_input(g, dtype);
    Variable loss = mse_loss(model.forward(Variable(x)), Variable(batch_target(x)));
    adam.zero_grad();
    loss.backward();
    if (clip > 0) clip_grad_norm_(model.parameters(), clip);
    adam.step();
    trace.losses.push_back(loss.item<double>());
  }
  for (const auto& [name, t] : model.state_dict().to_map()) trace.state[name] = t.clone();
  return trace;
}

void expect_same(const Trace& got, const Trace& want, double tol) {
  ASSERT_EQ(got.losses.size(), want.losses.size());
  for (size_t i = 0; i < got.losses.size(); ++i) EXPECT_NEAR(got.losses[i], want.losses[i], tol * want.losses[i]);
  ASSERT_EQ(got.state.size(), want.state.size());
  for (const auto& [name, t] : want.state) {
    ASSERT_TRUE(got.state.count(name)) << name;
    EXPECT_TRUE(wick::test::all_close(wick::test::values(got.state.at(name)), wick::test::values(t), tol, tol)) << name;
  }
  EXPECT_GT(std::abs(want.losses.front() - want.losses.back()), 1e-6);  // it trains: the test can fail
}

TEST(Pipeline, TwoAndThreeStagesWithAndWithoutASkipTrainLikeTheUnsplitModel) {
  for (bool skip : {false, true}) {
    Trace want = train_unsplit(DType::Float64, skip, 4);
    expect_same(train_pipeline({0, 5}, DType::Float64, skip, 4), want, 1e-12);
    expect_same(train_pipeline({0, 4, 7}, DType::Float64, skip, 4), want, 1e-12);
    // The skip from stage 0 straight to stage 2, past stage 1.
    expect_same(train_pipeline({0, 3, 6}, DType::Float64, skip, 4), want, 1e-12);
    // From stage 1 to stage 2 (between two serving ranks), and within stage 1.
    expect_same(train_pipeline({0, 2, 5}, DType::Float64, skip, 4), want, 1e-12);
    expect_same(train_pipeline({0, 2}, DType::Float64, skip, 4), want, 1e-12);
  }
  expect_same(train_pipeline({0, 4, 7}, DType::Float32, true, 4), train_unsplit(DType::Float32, true, 4), 1e-5);
}

// Stages on two CUDA devices talking through NCCL (under the simulator in CI).
TEST(Pipeline, StagesOnTwoCudaDevicesWithNcclTrainLikeTheUnsplitModel) {
  if (cuda::device_count() < 2) GTEST_SKIP() << "needs 2 CUDA devices (the simulator has them)";
  expect_same(train_pipeline({0, 5}, DType::Float64, true, 3, 0.5, true), train_unsplit(DType::Float64, true, 3, 0.5),
              1e-10);
  expect_same(train_pipeline({0, 2}, DType::Float32, true, 3, 0, true), train_unsplit(DType::Float32, true, 3), 1e-5);
}

TEST(Pipeline, MicroBatchesWithGPipeAndOneFOneBTrainLikeTheWholeBatch) {
  using S = PipelineModel::Schedule;
  for (bool skip : {false, true}) {
    Trace want = train_unsplit(DType::Float64, skip, 3);
    for (S schedule : {S::GPipe, S::OneFOneB}) {
      // 32 examples in 4 micro-batches of 8 (GPipe), and in 5 of 7, 7, 6, 6 and 6 (1F1B).
      for (int64_t m : {schedule == S::GPipe ? 4 : 5}) {
        expect_same(train_pipeline({0, 4, 7}, DType::Float64, skip, 3, 0, false, {m, schedule}), want, 1e-12);
        expect_same(train_pipeline({0, 2, 5}, DType::Float64, skip, 3, 0, false, {m, schedule}), want, 1e-12);
        // The skip from rank 0 into the last stage shares that pair of ranks with the
        // loss gradients going the same way.
        expect_same(train_pipeline({0, 3, 6}, DType::Float64, skip, 3, 0, false, {m, schedule}), want, 1e-12);
      }
      expect_same(train_pipeline({0, 5}, DType::Float64, skip, 3, 0, false, {1, schedule}), want, 1e-12);
    }
  }
}

// Exactly m micro-batches, sizes differing by at most one, the larger first (as
// torch.tensor_split); a batch too small for m is refused by train_step.
TEST(Pipeline, MicroBatchesAreExactlyAsManyAsAskedAndAsEvenAsPossible) {
  using Sizes = std::vector<int64_t>;
  EXPECT_EQ(PipelineModel::micro_batch_sizes(10, 4), (Sizes{3, 3, 2, 2}));
  EXPECT_EQ(PipelineModel::micro_batch_sizes(9, 4), (Sizes{3, 2, 2, 2}));
  EXPECT_EQ(PipelineModel::micro_batch_sizes(8, 4), (Sizes{2, 2, 2, 2}));
  EXPECT_EQ(PipelineModel::micro_batch_sizes(4, 4), (Sizes{1, 1, 1, 1}));
  EXPECT_EQ(PipelineModel::micro_batch_sizes(7, 1), (Sizes{7}));
  expect_error([] { PipelineModel::micro_batch_sizes(3, 4); }, {"3 examples", "4 micro-batches", "empty"});
  expect_error([] { PipelineModel::micro_batch_sizes(3, 0); }, {"must be >= 1", "got 0"});

  // 9 examples in 4: every stage ran 4 micro-batches (GPipe holds them all), where
  // chunk() made 3 of 3.
  std::vector<size_t> peaks(2);
  run_stages(2, [&](int rank, Communicator& comm, ControlEndpoint control) {
    PipelineModel model(comm, control, residual_layers(DType::Float64, false), {0, 5}, Device::cpu());
    Adam adam(model.named_parameters());
    if (rank != 0) {
      model.serve(adam);
      peaks[1] = model.peak_passes();
      return;
    }
    auto mse = [](const Variable& y, const Variable& t) { return mse_loss(y, t); };
    Tensor x = rand({9, 1}, DType::Float64);
    model.train_step(x, batch_target(x), mse, 4, PipelineModel::Schedule::GPipe);
    peaks[0] = model.peak_passes();
    expect_error([&] { model.train_step(x.narrow(0, 0, 3), batch_target(x.narrow(0, 0, 3)), mse, 4); },
                 {"train_step", "[3, 1]", "cannot be split into 4 micro-batches"});
    // forward() with set_micro_batches: the last batch of an epoch may be smaller than m; it
    // goes one example per micro-batch.
    model.set_micro_batches(4);
    StagedModel reference(residual_layers(DType::Float64, false), {0}, {Device::cpu()});
    for (int64_t n : {9, 3}) {
      NoGradGuard no_grad;
      Tensor part = x.narrow(0, 0, n);
      EXPECT_TRUE(wick::test::all_close(wick::test::values(model.forward(Variable(part)).data()),
                                        wick::test::values(reference.forward(Variable(part)).data()), 1e-12, 1e-12));
    }
    model.stop();
  });
  EXPECT_EQ(peaks, (std::vector<size_t>{4, 4}));
}

TEST(Pipeline, OneFOneBHoldsFewerMicroBatchesThanGPipe) {
  using S = PipelineModel::Schedule;
  std::vector<size_t> gpipe(3), one_f_one_b(3);
  train_pipeline({0, 4, 7}, DType::Float32, true, 1, 0, false, {8, S::GPipe}, &gpipe);
  train_pipeline({0, 4, 7}, DType::Float32, true, 1, 0, false, {8, S::OneFOneB}, &one_f_one_b);
  EXPECT_EQ(gpipe, (std::vector<size_t>{8, 8, 8}));
  // Stage s holds at most (stages - s) micro-batches: 3, 2, 1.
  EXPECT_EQ(one_f_one_b, (std::vector<size_t>{3, 2, 1}));
}

// fit_pipeline: the epochs loop (validation, best model, accumulation, clipping, checkpoints)
// over a pipelined model gives what fit() gives on the unsplit model.
TEST(Pipeline, TheEpochsLoopOnTopMatchesFitOnTheUnsplitModel) {
  Generator g(5);
  Tensor x = rand({96, 1}, DType::Float64, &g);
  auto data = std::make_shared<Dataset>(x, batch_target(x));
  auto valid_data = std::make_shared<Dataset>(x.narrow(0, 0, 32), batch_target(x.narrow(0, 0, 32)));
  auto mse = [](const Variable& y, const Tensor& t) { return mse_loss(y, Variable(t)); };
  const std::string dir = ::testing::TempDir();
  auto options = [&](const std::string& name) {
    LoopOptions o;
    o.max_epochs = 3;
    o.log_epochs = false;
    o.trainer.accumulate = 2;
    o.trainer.clip_grad_norm = 0.05;
    o.trainer.progress = Progress::Style::Off;
    o.checkpoint_path = dir + "/" + name + ".ckpt";
    o.lr_factor = [](int64_t epoch, std::optional<double>) { return 1.0 / static_cast<double>(epoch + 1); };
    o.restore_min_validation_model = false;  // the last parameters, for the resume below
    return o;
  };
  auto unsplit = std::make_shared<StagedModel>(residual_layers(DType::Float64, true), std::vector<size_t>{0},
                                               std::vector<Device>{Device::cpu()});
  Adam adam(unsplit->named_parameters(), AdamOptions{.lr = 3e-3});
  BatchStream train(data, {.batch_size = 16, .seed = 3}), valid(valid_data, {.batch_size = 16, .shuffle = false});
  SupervisedModel supervised{unsplit, mse, false, {}, {}, {}};
  LoopState want = fit(supervised, adam, train, &valid, options("unsplit"));
  std::map<std::string, Tensor> want_state = unsplit->state_dict().to_map();

  std::map<std::string, Tensor> straight_state;
  run_stages(3, [&](int rank, Communicator& comm, ControlEndpoint control) {
    auto model = std::make_shared<PipelineModel>(comm, control, residual_layers(DType::Float64, true),
                                                 std::vector<size_t>{0, 3, 6}, Device::cpu());
    model->set_micro_batches(4);  // GPipe inside each batch
    Adam stage_adam(model->named_parameters(), AdamOptions{.lr = 3e-3});
    if (rank != 0) {
      fit_pipeline(model, {}, stage_adam, nullptr, nullptr, {});
      return;
    }
    BatchStream p_train(data, {.batch_size = 16, .seed = 3}), p_valid(valid_data, {.batch_size = 16, .shuffle = false});
    LoopState got = fit_pipeline(model, mse, stage_adam, &p_train, &p_valid, options("pipelined"));
    ASSERT_EQ(got.learning_curve.size(), want.learning_curve.size());
    for (size_t e = 0; e < want.learning_curve.size(); ++e) {
      EXPECT_NEAR(got.learning_curve[e].train_loss, want.learning_curve[e].train_loss, 1e-12);
      EXPECT_NEAR(*got.learning_curve[e].validation_loss, *want.learning_curve[e].validation_loss, 1e-12);
    }
    EXPECT_EQ(got.min_validation_epoch, want.min_validation_epoch);
    // The model returned (the best one) is in every stage; the checkpoint holds every stage
    // under the unsplit model's names.
    for (const auto& [name, t] : model->state_dict_of_all_stages().to_map()) straight_state[name] = t.clone();
    for (const auto& [name, t] : want_state)
      EXPECT_TRUE(wick::test::all_close(wick::test::values(straight_state.at(name)), wick::test::values(t), 1e-12,
                                        1e-12))
          << name;
    TensorMap checkpoint = load_safetensors(dir + "/pipelined.ckpt");
    for (const auto& [name, t] : want_state) EXPECT_TRUE(checkpoint.count("model." + name)) << name;
    EXPECT_TRUE(checkpoint.count("sync.stage2.state.8.weight.exp_avg"));  // stage 2's Adam state
    model->stop();
  });

  // Two epochs, then a fresh pipeline resumes from the checkpoint for the third: the same
  // parameters as three epochs in a row (every stage's Adam state is in the checkpoint).
  for (int part : {0, 1}) {
    run_stages(3, [&](int rank, Communicator& comm, ControlEndpoint control) {
      auto model = std::make_shared<PipelineModel>(comm, control, residual_layers(DType::Float64, true),
                                                   std::vector<size_t>{0, 3, 6}, Device::cpu());
      model->set_micro_batches(4);
      Adam stage_adam(model->named_parameters(), AdamOptions{.lr = 3e-3});
      if (rank != 0) {
        fit_pipeline(model, {}, stage_adam, nullptr, nullptr, {});
        return;
      }
      BatchStream p_train(data, {.batch_size = 16, .seed = 3}), p_valid(valid_data, {.batch_size = 16, .shuffle = false});
      LoopOptions o = options("resumed");
      o.max_epochs = part == 0 ? 2 : 3;
      o.resume = part == 1;
      fit_pipeline(model, mse, stage_adam, &p_train, &p_valid, o);
      if (part == 1) {
        std::map<std::string, Tensor> got_state = model->state_dict_of_all_stages().to_map();
        for (const auto& [name, t] : straight_state)
          EXPECT_EQ(wick::test::values(got_state.at(name)), wick::test::values(t)) << name;
      }
      model->stop();
    });
  }
}

// Rank `rank` of 2 pipeline stages x 2 data-parallel replicas on 4 ranks (rank = 2 *
// replica + stage): its replica's pipeline, its stage's communicator over the replicas and
// its end of its replica's control channel. Every rank makes every group, in the same order.
struct TwoByTwo {
  // Each replica's control channel, shared by the ranks' threads.
  struct Controls {
    InProcessControl replica[2] = {InProcessControl(2), InProcessControl(2)};
  };
  int replica, stage;
  std::unique_ptr<Communicator> world, pipeline, replicas;
  InProcessControl::Endpoint control;
  TwoByTwo(Store& store, Controls& controls, int rank) : replica(rank / 2), stage(rank % 2) {
    world = make_communicator(store, rank, 4, Device::cpu());
    for (int r = 0; r < 2; ++r) {
      auto group = new_group(store, rank, 4, {2 * r, 2 * r + 1}, Device::cpu());
      if (r == replica) pipeline = std::move(group);
    }
    for (int s = 0; s < 2; ++s) {
      auto group = new_group(store, rank, 4, {s, 2 + s}, Device::cpu());
      if (s == stage) replicas = std::move(group);
    }
    control = controls.replica[replica].endpoint(stage);
  }
};

// 2 pipeline stages x 2 data-parallel replicas on 4 ranks (rank = 2 * replica + stage):
// each replica's rank 0 trains on its shard, gradients are summed per stage over the
// replicas; the same as the unsplit model on the combined batches.
TEST(Pipeline, TwoStagesTimesTwoReplicasMatchOneProcessOnTheCombinedBatches) {
  Generator g(9);
  Tensor x = rand({64, 1}, DType::Float64, &g);
  auto data = std::make_shared<Dataset>(x, batch_target(x));
  auto mse = [](const Variable& y, const Tensor& t) { return mse_loss(y, Variable(t)); };
  auto options = [] {
    LoopOptions o;
    o.max_epochs = 2;
    o.log_epochs = false;
    o.trainer.clip_grad_norm = 0.05;
    o.trainer.progress = Progress::Style::Off;
    return o;
  };
  auto unsplit = std::make_shared<StagedModel>(residual_layers(DType::Float64, true), std::vector<size_t>{0},
                                               std::vector<Device>{Device::cpu()});
  Adam adam(unsplit->named_parameters(), AdamOptions{.lr = 3e-3});
  BatchStream train(data, {.batch_size = 16, .seed = 3});
  SupervisedModel supervised{unsplit, mse, false, {}, {}, {}};
  LoopState want = fit(supervised, adam, train, nullptr, options());
  std::map<std::string, Tensor> want_state = unsplit->state_dict().to_map();

  MapStore store;
  TwoByTwo::Controls controls;
  run_ranks(4, [&](int rank) {
    TwoByTwo links(store, controls, rank);
    const int replica = links.replica, stage = links.stage;
    auto model = std::make_shared<PipelineModel>(*links.pipeline, links.control.get(),
                                                 residual_layers(DType::Float64, true), std::vector<size_t>{0, 5},
                                                 Device::cpu());
    model->set_replicas(links.replicas.get());
    Adam stage_adam(model->named_parameters(), AdamOptions{.lr = 3e-3});
    if (stage != 0) {
      fit_pipeline(model, {}, stage_adam, nullptr, nullptr, {});
      return;
    }
    BatchStream shard(data, {.batch_size = 8, .seed = 3, .rank = replica, .world_size = 2});
    LoopState got = fit_pipeline(model, mse, stage_adam, &shard, nullptr, options());
    ASSERT_EQ(got.learning_curve.size(), want.learning_curve.size());
    for (size_t e = 0; e < want.learning_curve.size(); ++e)
      EXPECT_NEAR(got.learning_curve[e].train_loss, want.learning_curve[e].train_loss, 1e-12);
    std::map<std::string, Tensor> got_state = model->state_dict_of_all_stages().to_map();
    for (const auto& [name, t] : want_state)
      EXPECT_TRUE(wick::test::all_close(wick::test::values(got_state.at(name)), wick::test::values(t), 1e-12, 1e-12))
          << "replica " << replica << ": " << name;
    model->stop();
  });
}

// average_gradients on 2 stages x 2 replicas, replica 1 without a batch (out of data): every
// stage's gradients become the sum over the replicas divided by the examples summed over
// them (4 here, so exactly a quarter of replica 0's), held as views of the stage's buckets.
// The norm over all stages (clip_grad_norm with a bound it never reaches) sees every stage.
TEST(Pipeline, AverageGradientsSumsEveryStageOverTheReplicasAndDividesByTheirExamples) {
  MapStore store;
  TwoByTwo::Controls controls;
  std::vector<double> norms_before(2), norms_after(2);
  run_ranks(4, [&](int rank) {
    TwoByTwo links(store, controls, rank);
    const int replica = links.replica, stage = links.stage;
    PipelineModel model(*links.pipeline, links.control.get(), residual_layers(DType::Float64, true), {0, 5},
                        Device::cpu());
    model.set_replicas(links.replicas.get());
    Adam adam(model.named_parameters());
    if (stage != 0) {
      model.serve(adam);
      return;
    }
    const double examples = replica == 0 ? 4 : 0;
    if (replica == 0) {
      Tensor x = rand({4, 1}, DType::Float64);
      mse_loss(model.forward(Variable(x)), Variable(batch_target(x))).backward();
    }
    std::vector<Tensor> local;
    for (const Variable& p : model.parameters())
      local.push_back(p.grad().defined() ? p.grad().data().clone() : zeros_like(p.data()));
    norms_before[replica] = model.clip_grad_norm(1e300);
    model.average_gradients(examples);
    norms_after[replica] = model.clip_grad_norm(1e300);
    const std::vector<Variable> params = model.parameters();
    for (size_t i = 0; i < params.size(); ++i) {
      EXPECT_TRUE(params[i].grad().data().shares_storage(params[0].grad().data())) << i;
      if (replica == 0)
        EXPECT_EQ(wick::test::values(params[i].grad().data()), wick::test::values(mul(local[i], 0.25))) << i;
    }
    expect_error([&] { model.average_gradients(std::nan("")); }, {"average_gradients", "nan"});
    model.stop();
  });
  EXPECT_GT(norms_before[0], 0.0);
  EXPECT_EQ(norms_before[1], 0.0);
  EXPECT_NEAR(norms_after[0], norms_before[0] / 4, 1e-15 * norms_before[0]);
  EXPECT_EQ(norms_after[1], norms_after[0]);
}

// The seed's set-up: rank 0 describes the model (layers with named outputs and
// dependencies, the optimizer, a seed) and every other rank builds its stage from it.
PipelineDescription residual_description(int64_t width) {
  auto linear = [](int64_t in, int64_t out) {
    return LayerSpec{"Linear", {{"in_features", static_cast<double>(in)}, {"out_features", static_cast<double>(out)}}};
  };
  PipelineDescription d;
  d.layers = {linear(1, width), {"ReLU"}, linear(width, width), {"ReLU"}, linear(width, width), {"ReLU"},
              linear(width, width), {"ReLU"}, linear(width, 1), {"Sigmoid"}};
  d.layers[2].outputs = {"res_1"};
  d.layers[6].dependencies = {"res_1"};
  d.optimizer = {"Adam", {{"lr", 3e-3}}};
  d.seed = 21;
  d.input_shape = {1};
  d.input_dtype = DType::Float32;
  return d;
}

TEST(Pipeline, RankZeroDescribesTheModelAndTheOthersBuildTheirStages) {
  PipelineDescription d = residual_description(16);
  // The reference: the whole model from the same description and seed, in one process.
  Generator g(d.seed);
  StagedModel whole(make_layers(d.layers, &g), {0}, {Device::cpu()});
  auto adam = make_optimizer(d.optimizer, whole.named_parameters());
  std::vector<double> want;
  Generator data(4);
  for (int s = 0; s < 3; ++s) {
    Tensor x = rand({8, 1}, {}, &data);
    Variable loss = mse_loss(whole.forward(Variable(x)), Variable(batch_target(x)));
    adam->zero_grad();
    loss.backward();
    adam->step();
    want.push_back(loss.item<double>());
  }
  run_stages(3, [&](int rank, Communicator& comm, ControlEndpoint control) {
    if (rank != 0) {
      DistributedPipeline p = join_pipeline(comm, control, Device::cpu());
      EXPECT_EQ(p.description.layers.size(), 10u);
      EXPECT_STREQ(p.optimizer->name(), "Adam");
      p.model->serve(*p.optimizer);
      return;
    }
    DistributedPipeline p = distribute_pipeline(comm, control, d, Device::cpu());
    Generator data0(4);
    for (int s = 0; s < 3; ++s) {
      Tensor x = rand({8, 1}, {}, &data0);
      Variable loss = mse_loss(p.model->forward(Variable(x)), Variable(batch_target(x)));
      loss.backward();
      p.model->step(*p.optimizer);
      EXPECT_NEAR(loss.item<double>(), want[s], 1e-6 * want[s]) << "step " << s;
    }
    p.model->stop();
  });
}

TEST(Pipeline, ADescriptionThatDoesNotFitIsRefusedOnEveryRankBeforeTraining) {
  auto refuse = [](PipelineDescription d, const std::vector<std::string>& words) {
    std::vector<std::string> errors(3);
    run_stages(3, [&](int rank, Communicator& comm, ControlEndpoint control) {
      try {
        if (rank == 0)
          distribute_pipeline(comm, control, d, Device::cpu());
        else
          join_pipeline(comm, control, Device::cpu());
      } catch (const Error& e) {
        errors[rank] = e.what();
      }
    });
    for (const std::string& e : errors)
      for (const std::string& w : words) EXPECT_NE(e.find(w), std::string::npos) << e;
  };
  PipelineDescription shapes = residual_description(16);
  shapes.layers[4].args["in_features"] = 15;  // layer 4 expects 15 features, gets 16
  refuse(shapes, {"refused", "layer 4 (Linear, stage 1) refused its input float32 [2, 16]"});
  PipelineDescription missing = residual_description(16);
  missing.layers[6].dependencies = {"res_2"};
  refuse(missing, {"refused", "layer 6 (Linear, stage 2) depends on 'res_2'", "no layer produces"});
  PipelineDescription cycle = residual_description(16);
  cycle.layers[1].dependencies = {"res_1"};
  refuse(cycle, {"refused", "layer 1 (ReLU, stage 0) depends on 'res_1'", "cycle"});
  PipelineDescription stages = residual_description(16);
  stages.stage_starts = {0, 5};
  refuse(stages, {"refused", "2 stages for 3 ranks"});
  PipelineDescription dtype = residual_description(16);
  dtype.input_dtype = DType::Int64;
  refuse(dtype, {"refused", "layer 0 (Linear, stage 0)", "int64"});
}

TEST(Pipeline, GradientClippingUsesTheNormOverAllStages) {
  // A small max_norm makes every step clip.
  expect_same(train_pipeline({0, 4, 7}, DType::Float64, true, 3, 0.01), train_unsplit(DType::Float64, true, 3, 0.01),
              1e-12);
}

TEST(Pipeline, EvaluationWithoutGradAndStateRoundTrips) {
  run_stages(3, [&](int rank, Communicator& comm, ControlEndpoint control) {
    PipelineModel model(comm, control, residual_layers(DType::Float64, true), {0, 3, 6}, Device::cpu());
    Adam adam(model.named_parameters());
    if (rank != 0) {
      model.serve(adam);
      return;
    }
    StagedModel reference(residual_layers(DType::Float64, true), {0}, {Device::cpu()});
    Tensor x = rand({5, 1}, DType::Float64);
    {
      NoGradGuard no_grad;
      Variable y = model.forward(Variable(x));
      EXPECT_FALSE(y.requires_grad());
      EXPECT_EQ(y.data().to_vector<double>(), reference.forward(Variable(x)).data().to_vector<double>());
    }
    // Load new values into every stage, read them back.
    std::map<std::string, Tensor> state = model.state_dict_of_all_stages().to_map();
    for (auto& [name, t] : state) t = full_like(t, 0.25);
    model.load_state_dict_into_all_stages(StateDict(state));
    for (const auto& [name, t] : model.state_dict_of_all_stages().to_map())
      EXPECT_EQ(t.to_vector<double>(), std::vector<double>(t.numel(), 0.25)) << name;
    state.erase(state.begin());
    expect_error([&] { model.load_state_dict_into_all_stages(StateDict(state)); }, {"missing '0.bias'"});
    model.eval();
    model.stop();
  });
}

// Every stage steps with rank 0's learning rates, sent as absolute values (one per group):
// the pipeline follows rank 0's schedule as one optimizer over the unsplit model would,
// whatever lr a stage's own optimizer was made with. A stage whose optimizer has another
// number of groups is refused, naming the stage and both counts.
TEST(Pipeline, StagesStepWithRankZerosLearningRates) {
  for (bool two_groups : {false, true}) {
    SCOPED_TRACE(two_groups ? "stage 1 has two groups" : "one group everywhere");
    std::vector<std::string> errors(2);
    run_stages(2, std::chrono::seconds(5), [&](int rank, Communicator& comm, ControlEndpoint control) {
      PipelineModel model(comm, control, residual_layers(DType::Float64, false), {0, 5}, Device::cpu(),
                          std::chrono::seconds(5));
      NamedParameters params = model.named_parameters();
      NamedParameters first(params.begin(), params.begin() + 1), rest(params.begin() + 1, params.end());
      Adam adam(two_groups && rank == 1 ? first : params, AdamOptions{.lr = rank == 0 ? 0.01 : 0.5});
      if (two_groups && rank == 1) adam.add_param_group({rest, {{"lr", 0.5}}});
      try {
        if (rank != 0) {
          model.serve(adam);
          EXPECT_EQ(adam.lr(0), 0.00125);  // rank 0's last, exactly
          return;
        }
        for (double lr : {0.005, 0.00125}) {
          adam.set_lr(0, lr);  // as a schedule would
          mse_loss(model.forward(Variable(rand({4, 1}, DType::Float64))), Variable(zeros({4, 1}, DType::Float64)))
              .backward();
          model.step(adam);
        }
        model.stop();
      } catch (const Error& e) {
        errors[rank] = e.what();
        model.abort();
      }
    });
    if (!two_groups) {
      EXPECT_EQ(errors[0], "");
      EXPECT_EQ(errors[1], "");
      continue;
    }
    for (const char* part : {"stage 1's optimizer has 2 parameter groups", "rank 0's has 1"})
      EXPECT_NE(errors[1].find(part), std::string::npos) << errors[1];
    EXPECT_FALSE(errors[0].empty());
  }
}

TEST(Pipeline, RefusesALayoutThatDoesNotFitTheRanks) {
  MapStore store;
  auto comm = make_communicator(store, 0, 1, Device::cpu());
  expect_error([&] { PipelineModel(*comm, {}, residual_layers(DType::Float32, true), {0, 4}, Device::cpu()); },
               {"2 stages for 1 ranks"});
  auto layers = residual_layers(DType::Float32, false);
  layers[1].dependencies = {"nowhere"};
  expect_error([&] { PipelineModel(*comm, {}, layers, {0}, Device::cpu()); }, {"'nowhere'", "no layer produces"});
}

TEST(Pipeline, AWorkerThatFailsMakesTheDriverFailInsteadOfHanging) {
  std::vector<std::string> errors(2);
  run_stages(2, std::chrono::seconds(5), [&](int rank, Communicator& comm, ControlEndpoint control) {
    // Stage 1's first layer expects 32 features; rank 1 builds a narrower model, so its
    // forward throws and it aborts the communicator.
    PipelineModel model(comm, control, residual_layers(DType::Float32, false, rank == 0 ? 32 : 16), {0, 5},
                        Device::cpu(), std::chrono::seconds(5));
    Adam adam(model.named_parameters());
    try {
      if (rank == 0) {
        Variable y = model.forward(Variable(rand({4, 1})));
      } else {
        model.serve(adam);
      }
    } catch (const Error& e) {
      errors[rank] = e.what();
    }
  });
  EXPECT_NE(errors[1].find("Linear"), std::string::npos) << errors[1];
  EXPECT_FALSE(errors[0].empty());
}

// Rank 0's commands reach the stages on the control channel: anything else arriving there,
// a malformed command or rank 0's abort ends a stage's serve() at once with an error that
// says which (not after its 30 s timeout).
TEST(Pipeline, StagesTakeRankZerosCommandsFromTheControlChannel) {
  struct Case {
    std::function<void(PipelineModel&, DriverChannel&)> on_rank_zero;
    std::vector<std::string> words;  // in stage 1's error
  };
  const std::vector<Case> cases = {
      {[](PipelineModel&, DriverChannel& d) { d.broadcast({CommandType::Train, {}}); },
       {"stage 1", "control command 'Train' instead of a pipeline command"}},
      {[](PipelineModel&, DriverChannel& d) { d.broadcast({CommandType::Custom, Bytes(5, 1)}); },
       {"pipeline command"}},
      {[](PipelineModel&, DriverChannel& d) {  // a Step announcing 3 learning rates, carrying 1
         PayloadWriter w;
         w.u64(4).u64(3).u64(0).u64(std::bit_cast<uint64_t>(0.5));
         d.broadcast({CommandType::Custom, w.take()});
       },
       {"pipeline command"}},
      {[](PipelineModel& m, DriverChannel&) { m.abort(); }, {"rank 0 gave up", "stage 1 stops serving"}},
  };
  for (const Case& c : cases) {
    std::string error;
    run_stages(2, [&](int rank, Communicator& comm, ControlEndpoint control) {
      PipelineModel model(comm, control, residual_layers(DType::Float64, false), {0, 5}, Device::cpu());
      Adam adam(model.named_parameters());
      if (rank == 0) {
        model.forward(Variable(rand({2, 1}, DType::Float64)));  // a command that works first
        c.on_rank_zero(model, *control.driver);
        return;
      }
      try {
        model.serve(adam);
      } catch (const Error& e) {
        error = e.what();
      }
    });
    for (const std::string& w : c.words) EXPECT_NE(error.find(w), std::string::npos) << error;
  }
}

// A pipeline command whose payload does not fit its type ends a stage's serve() with an error
// that names the command and the field, before anything is allocated for it.
TEST(Pipeline, StagesRefuseAMalformedPipelineCommand) {
  std::string error;
  run_stages(2, [&](int rank, Communicator& comm, ControlEndpoint control) {
    PipelineModel model(comm, control, residual_layers(DType::Float64, false), {0, 5}, Device::cpu());
    Adam adam(model.named_parameters());
    if (rank == 0) {
      // A Step announcing 3 learning rates, carrying 1.
      control.driver->broadcast({CommandType::PipelineStep, PayloadWriter().u32(3).f64(0.5).take()});
      return;
    }
    try {
      model.serve(adam);
    } catch (const Error& e) {
      error = e.what();
    }
  });
  for (const char* w : {"stage 1", "PipelineStep command", "learning_rates announces 3 items"})
    EXPECT_NE(error.find(w), std::string::npos) << error;
}

TEST(Pipeline, RefusesAControlChannelThatDoesNotFitTheRanks) {
  MapStore store;
  InProcessControl three(3);
  run_ranks(2, [&](int rank) {
    auto comm = make_communicator(store, rank, 2, Device::cpu());
    const auto layers = residual_layers(DType::Float64, false);
    expect_error([&] { PipelineModel(*comm, {}, layers, {0, 5}, Device::cpu()); },
                 {rank == 0 ? "rank 0 of 2 needs the driver's end of the control channel"
                            : "rank 1 needs a follower's end of the control channel"});
    InProcessControl::Endpoint wrong = three.endpoint(rank);
    expect_error([&] { PipelineModel(*comm, wrong.get(), layers, {0, 5}, Device::cpu()); },
                 {rank == 0 ? "the control channel has 3 ranks and the communicator 2"
                            : "the control channel's end is rank 1 of 3, the communicator's rank 1 of 2"});
  });
}

}  // namespace
}  // namespace wick::distributed
