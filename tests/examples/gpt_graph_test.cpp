// A GPT training step captured in a CUDA graph and replayed (issue 45, item 6): forward,
// cross-entropy, backward and the fused AdamW step, float32, on the CUDA simulator. Twenty
// steps of which all but the eager warm-up are replays give the same bits as twenty eager
// steps of today's AdamW; the next batch goes into the captured input tensors before each
// replay. Built only with -DWICK_CUDA=SIM.
//
// GPTGraph.*BitForBit runs as its own ctest with CUDASIM_THREADS=1: the embedding's backward
// adds into the table with float atomics, whose order (and so the last bits) varies from
// run to run with the blocks' timing, on a GPU as in the simulator; one simulator thread
// runs the blocks in one order, so that two runs of the same step can be compared bit for
// bit.
#include <cudasim/cudasim.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include <wick/wick.h>

#include "examples/gpt/model.h"
#include "tests/support/reference.h"

namespace wick {
namespace {

using examples::GPT;
using examples::GPTConfig;

// Dropout 0: dropout's random numbers would be drawn once, at capture, and replayed.
const GPTConfig kConfig{.vocab_size = 64, .block_size = 16, .n_layer = 2, .n_head = 2, .n_embd = 32, .dropout = 0};
constexpr int kSteps = 20;

std::shared_ptr<GPT> make_model() {
  Generator init(4);
  auto model = std::make_shared<GPT>(kConfig, Options(DType::Float32, Device::cuda()), &init);
  model->train();
  return model;
}

struct Batches {
  std::vector<Tensor> idx, targets;
  Batches() {
    Generator g(3);
    for (int i = 0; i < kSteps; ++i) {
      idx.push_back(randint(0, kConfig.vocab_size, {4, 16}, DType::Int64, &g).cuda());
      targets.push_back(randint(0, kConfig.vocab_size, {4, 16}, DType::Int64, &g).cuda());
    }
  }
};

void expect_same_bits(GPT& a, GPT& b) {
  const auto pa = a.named_parameters(), pb = b.named_parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    const Tensor x = pa[i].second.data().cpu(), y = pb[i].second.data().cpu();
    ASSERT_EQ(x.nbytes(), y.nbytes());
    EXPECT_EQ(std::memcmp(x.data_ptr(), y.data_ptr(), x.nbytes()), 0) << pa[i].first << " differs";
  }
}

TEST(GPTGraph, TwentyCapturedStepsEqualTwentyEagerStepsBitForBit) {
  WICK_REQUIRE_CUDA();
  const Batches batches;
  const AdamOptions options{.lr = 1e-3, .weight_decay = 0.1};

  auto eager = make_model();
  AdamW eager_opt(eager->named_parameters(), options);
  for (int i = 0; i < kSteps; ++i) {
    eager_opt.zero_grad();
    eager->loss(batches.idx[i], batches.targets[i]).backward();
    eager_opt.step();
  }

  auto graphed = make_model();
  AdamOptions capturable = options;
  capturable.capturable = true;
  AdamW opt(graphed->named_parameters(), capturable);
  Tensor idx = empty({4, 16}, Options(DType::Int64, Device::cuda()));
  Tensor targets = empty({4, 16}, Options(DType::Int64, Device::cuda()));
  const auto step = [&] {
    opt.zero_grad();
    graphed->loss(idx, targets).backward();
    opt.step();
  };
  constexpr int kWarmup = 2;
  for (int i = 0; i < kWarmup; ++i) {
    idx.copy_(batches.idx[i]);
    targets.copy_(batches.targets[i]);
    step();
  }
  cuda::Graph graph;
  const unsigned long long launches = cudasimKernelLaunches();
  graph.capture(step);
  EXPECT_GT(cudasimKernelLaunches() - launches, 50u);
  EXPECT_GE(graph.num_nodes(), cudasimKernelLaunches() - launches) << "every kernel, and fills and copies";
  for (int i = kWarmup; i < kSteps; ++i) {
    idx.copy_(batches.idx[i]);
    targets.copy_(batches.targets[i]);
    graph.replay();
  }
  expect_same_bits(*eager, *graphed);
}

// Batches given once, the same every epoch.
class FixedBatches : public BatchSource {
 public:
  explicit FixedBatches(std::vector<Batch> batches) : batches_(std::move(batches)) {}
  int64_t num_batches() const override { return static_cast<int64_t>(batches_.size()); }
  void start_epoch(int64_t) override { next_ = 0; }
  std::optional<Batch> next() override {
    if (next_ >= batches_.size()) return std::nullopt;
    return batches_[next_++];
  }

 private:
  std::vector<Batch> batches_;
  size_t next_ = 0;
};

// The Trainer's switch: fit() over 3 epochs of 7 batches of 4 and a last batch of 2 (run
// eagerly: another shape), with the step captured at the second batch and replayed after,
// and the learning rate halved after each epoch, equals fit() without graphs bit for bit,
// and so does its loss.
TEST(GPTGraph, TrainerWithCudaGraphsEqualsTheEagerTrainerBitForBit) {
  WICK_REQUIRE_CUDA();
  const Batches data;
  std::vector<Batch> batches;
  for (int i = 0; i < 8; ++i) {
    Batch b;
    b.inputs = i < 7 ? data.idx[i] : data.idx[i].narrow(0, 0, 2).contiguous();
    b.targets = i < 7 ? data.targets[i] : data.targets[i].narrow(0, 0, 2).contiguous();
    batches.push_back(b);
  }
  std::vector<double> losses;
  std::vector<unsigned long long> launches;  // kernels launched by the host (a replay launches none)
  std::vector<std::shared_ptr<GPT>> models;
  for (bool graphs : {false, true}) {
    auto model = make_model();
    SupervisedModel lm = custom_model(model, [](Module& m, const Batch& b) -> StepOutput {
      return {static_cast<GPT&>(m).loss(b.inputs, b.targets), {}};
    });
    AdamW opt(model->named_parameters(), AdamOptions{.lr = 1e-3, .weight_decay = 0.1, .capturable = true});
    FixedBatches train(batches);
    StepLR schedule(opt, 1, 0.5);  // a new rate each epoch, which the replays must read
    LoopOptions o;
    o.scheduler = &schedule;
    o.max_epochs = 3;
    o.log_epochs = false;
    o.trainer.progress = Progress::Style::Off;
    o.trainer.cuda_graphs = graphs;
    const unsigned long long before = cudasimKernelLaunches();
    const LoopState s = fit(lm, opt, train, nullptr, o);
    launches.push_back(cudasimKernelLaunches() - before);
    losses.push_back(s.learning_curve.back().train_loss);
    models.push_back(model);
  }
  EXPECT_EQ(losses[0], losses[1]);
  // 24 steps: eagerly, all; with graphs, the warm-up, the capture and the 3 short batches.
  EXPECT_LT(launches[1] * 3, launches[0]) << "the Trainer replayed no graph";
  expect_same_bits(*models[0], *models[1]);
}

TEST(GPTGraph, ALossReadInsideTheCaptureIsAnErrorNamingTheOp) {
  WICK_REQUIRE_CUDA();
  const Batches batches;
  auto model = make_model();
  AdamW opt(model->named_parameters(), AdamOptions{.lr = 1e-3, .capturable = true});
  const auto step = [&](bool clip, bool read_loss) {
    opt.zero_grad();
    Variable loss = model->loss(batches.idx[0], batches.targets[0]);
    if (read_loss) (void)loss.data().item<float>();
    loss.backward();
    if (clip) clip_grad_norm_(model->parameters(), 1.0);
    opt.step();
  };
  step(false, false);
  for (bool clip : {false, true}) {
    cuda::Graph graph;
    try {
      graph.capture([&] { step(clip, !clip); });
      FAIL() << "a wait inside the capture must throw";
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find(clip ? "clip_grad_norm_: returns the total norm" : "a copy to the host of a float32 []"),
                std::string::npos)
          << m;
    }
  }
  // The default (not capturable) AdamW says what to change.
  AdamW plain(model->named_parameters(), AdamOptions{.lr = 1e-3});
  cuda::Graph graph;
  try {
    graph.capture([&] {
      model->loss(batches.idx[0], batches.targets[0]).backward();
      plain.step();
    });
    FAIL() << "the default AdamW cannot be captured";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("capturable = true"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace wick
