// Randomness on a stage after the first (issue 25, item 7): Dropout on a serving rank draws
// from that rank's own generator, so the checkpoint of fit_pipeline must hold every
// stage's generator for a resumed run to continue bit for bit.
#include <gtest/gtest.h>

#include <cstdio>

#include <wick/distributed/control/in_process_control.h>
#include <wick/distributed/pipeline/pipeline.h>
#include <wick/data/dataset.h>
#include <wick/nn/activation.h>
#include <wick/nn/dropout.h>
#include <wick/nn/linear.h>
#include <wick/nn/loss.h>
#include <wick/optim/adam.h>
#include <wick/tensor/elementwise.h>
#include <wick/tensor/factories.h>
#include <wick/tensor/generator.h>
#include <wick/tensor/safetensors.h>
#include <wick/train/loop.h>

#include "tests/distributed/communicator_test_store.h"
#include "tests/support/reference.h"

namespace wick::distributed {
namespace {

using test::MapStore;
using test::run_ranks;
using wick::test::expect_error;

// Dropout only in stage 1 (rank 1), the stage rank 0's generator does not reach.
std::vector<StagedLayer> dropout_layers() {
  Generator g(29);
  const Options o(DType::Float64);
  return {{std::make_shared<Linear>(1, 16, true, o, &g)}, {std::make_shared<ReLU>()},
          {std::make_shared<Dropout>(0.3)},             {std::make_shared<Linear>(16, 16, true, o, &g)},
          {std::make_shared<ReLU>()},                   {std::make_shared<Linear>(16, 1, true, o, &g)}};
}

std::shared_ptr<Dataset> regression_data() {
  Generator g(31);
  Tensor x = rand({48, 1}, DType::Float64, &g);
  return std::make_shared<Dataset>(x, mul(add(x, 1.0), 0.4));
}

// fit_pipeline over 2 ranks from `first_epoch` (resuming from `checkpoint` when > 0) to
// `epochs`; the whole model at the end.
std::map<std::string, Tensor> train(const std::string& checkpoint, int64_t epochs, bool resume) {
  auto data = regression_data();
  auto mse = [](const Variable& y, const Tensor& t) { return mse_loss(y, Variable(t)); };
  MapStore store;
  InProcessControl control(2);
  std::map<std::string, Tensor> state;
  run_ranks(2, [&](int rank) {
    auto comm = make_communicator(store, rank, 2, Device::cpu());
    InProcessControl::Endpoint end = control.endpoint(rank);
    auto model = std::make_shared<PipelineModel>(*comm, end.get(), dropout_layers(), std::vector<size_t>{0, 2},
                                                 Device::cpu());
    model->set_micro_batches(2);
    Adam adam(model->named_parameters(), AdamOptions{.lr = 3e-3});
    if (rank != 0) {
      fit_pipeline(model, {}, adam, nullptr, nullptr, {});
      return;
    }
    BatchStream stream(data, {.batch_size = 8, .seed = 3});
    LoopOptions o;
    o.max_epochs = epochs;
    o.log_epochs = false;
    o.trainer.progress = Progress::Style::Off;
    o.checkpoint_path = checkpoint;
    o.resume = resume;
    fit_pipeline(model, mse, adam, &stream, nullptr, o);
    for (const auto& [name, t] : model->state_dict_of_all_stages().to_map()) state[name] = t.clone();
    model->stop();
  });
  return state;
}

TEST(PipelineRandomness, AResumeWithDropoutOnALaterStageIsBitIdentical) {
  const std::string dir = ::testing::TempDir();
  const std::map<std::string, Tensor> straight = train(dir + "/dropout_straight.ckpt", 3, false);
  const std::string path = dir + "/dropout_resumed.ckpt";
  std::remove(path.c_str());
  train(path, 2, false);
  // Stage 1's generator is in the checkpoint, next to rank 0's own.
  TensorMap checkpoint = load_safetensors(path);
  ASSERT_TRUE(checkpoint.count("sync.generators"));
  EXPECT_EQ(checkpoint.at("sync.generators").shape(), (Shape{2, 2}));
  EXPECT_NE(checkpoint.at("sync.generators").to_vector<int64_t>()[3], 0);  // stage 1 drew numbers
  const std::map<std::string, Tensor> resumed = train(path, 3, true);
  ASSERT_EQ(resumed.size(), straight.size());
  for (const auto& [name, t] : straight)
    EXPECT_EQ(wick::test::values(resumed.at(name)), wick::test::values(t)) << name;
  // Without stage 1's generator the resumed run draws other masks: the test can fail.
  TensorMap without = load_safetensors(path);
  without.erase("sync.generators");
  save_safetensors(path, without, {{"format", "wick-checkpoint"}, {"version", "1"}});
  const std::map<std::string, Tensor> forgetful = train(path, 4, true);
  const std::map<std::string, Tensor> straight4 = train(dir + "/dropout_straight4.ckpt", 4, false);
  EXPECT_NE(wick::test::values(forgetful.at("3.weight")), wick::test::values(straight4.at("3.weight")));
}

TEST(PipelineRandomness, GeneratorsOfAnotherStageCountAreRefused) {
  MapStore store;
  InProcessControl control(2);
  run_ranks(2, [&](int rank) {
    auto comm = make_communicator(store, rank, 2, Device::cpu());
    InProcessControl::Endpoint end = control.endpoint(rank);
    PipelineModel model(*comm, end.get(), dropout_layers(), {0, 2}, Device::cpu());
    Adam adam(model.named_parameters());
    if (rank != 0) {
      model.serve(adam);
      return;
    }
    expect_error([&] { model.load_generators_into_other_stages(zeros({3, 2}, DType::Int64)); },
                 {"load_generators_into_other_stages", "int64 [2, 2]", "[3, 2]"});
    // A round trip reaches stage 1's generator.
    Tensor rows = model.generators_of_all_stages();
    rows.select(0, 1).copy_(tensor<int64_t>({5, 77}));
    model.load_generators_into_other_stages(rows);
    EXPECT_EQ(model.generators_of_all_stages().to_vector<int64_t>()[3], 77);
    model.stop();
  });
}

}  // namespace
}  // namespace wick::distributed
