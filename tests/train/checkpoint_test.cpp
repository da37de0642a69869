// Checkpoint for your own loop: resuming from it continues bit for bit; ranks keep their own
// generators in their own files and share the rest from rank 0's; a missing file changes
// nothing; a refused part puts every part back; names are checked.
#include <filesystem>

#include <gtest/gtest.h>

#include <wick/autograd/nn_ops.h>
#include <wick/optim/lr_scheduler.h>
#include <wick/optim/sgd.h>
#include <wick/nn/linear.h>
#include <wick/tensor/factories.h>
#include <wick/tensor/indexing.h>
#include <wick/train/checkpoint.h>

#include "tests/support/reference.h"
#include "tests/support/training_fixture.h"

namespace wick::test {
namespace {

std::vector<double> parameters_of(Module& m) {
  std::vector<double> out;
  for (const auto& p : m.parameters()) {
    auto v = p.data().to(DType::Float64).contiguous().to_vector<double>();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

// A run of your own: a model, SGD with momentum, a step schedule, a step counter and a
// generator that draws each step's examples.
struct Training {
  std::shared_ptr<Sequential> net = training_mlp(7);
  SGD opt{net->named_parameters(), SGDOptions{.lr = 0.3, .momentum = 0.9}};
  StepLR schedule{opt, 2, 0.5};
  int64_t step = 0;
  Generator draw{11};
  Checkpoint ckpt;
  Training() { ckpt.add("model", *net).add("optimizer", opt).add("schedule", schedule).add("step", step).add("draw", draw); }
  void train(int steps) {
    static const auto data = training_blobs(256, 5);
    for (int i = 0; i < steps; ++i, ++step) {
      const Tensor pick = randint(0, 256, {16}, DType::Int64, &draw);
      opt.zero_grad();
      cross_entropy(net->forward(Variable(index_select(data->inputs, 0, pick))), index_select(data->targets, 0, pick)).backward();
      opt.step();
      schedule.step();
    }
  }
};

std::string scratch(const std::string& name) {
  return ::testing::TempDir() + "/wick_ckpt_" + std::to_string(::getpid()) + "_" + name;
}

TEST(Checkpoint, ResumingContinuesBitForBit) {
  const std::string path = scratch("resume");
  Training straight;
  straight.train(7);
  Training first;
  first.train(3);
  first.ckpt.save(path);
  Training resumed;
  ASSERT_TRUE(resumed.ckpt.load(path));
  EXPECT_EQ(resumed.step, 3);
  EXPECT_EQ(parameters_of(*resumed.net), parameters_of(*first.net));
  resumed.train(4);
  EXPECT_EQ(parameters_of(*resumed.net), parameters_of(*straight.net));
  EXPECT_EQ(resumed.opt.lr(0), straight.opt.lr(0));
  std::filesystem::remove(path);
}

TEST(Checkpoint, RanksKeepTheirOwnGeneratorsAndShareTheRest) {
  const std::string path = scratch("ranks");
  Training rank0, rank1;
  rank1.draw.manual_seed(12);  // each rank draws its own examples
  rank0.train(2);
  rank1.net->load_state_dict(rank0.net->state_dict());  // data parallel: same model
  rank1.step = rank0.step;
  rank1.train(0);
  rank0.ckpt.save(path, 0);
  rank1.ckpt.save(path, 1);
  EXPECT_TRUE(std::filesystem::exists(Checkpoint::rank_path(path, 1)));
  EXPECT_EQ(Checkpoint::rank_path(path, 0), path);
  const uint64_t offset1 = rank1.draw.offset();

  Training back1;
  ASSERT_TRUE(back1.ckpt.load(path, 1));
  EXPECT_EQ(back1.draw.seed(), 12u);  // rank 1's own generator
  EXPECT_EQ(back1.draw.offset(), offset1);
  EXPECT_EQ(parameters_of(*back1.net), parameters_of(*rank0.net));  // rank 0's model
  EXPECT_EQ(back1.step, 2);
  Training no_file;
  EXPECT_FALSE(no_file.ckpt.load(path, 2));  // rank 2 saved nothing
  std::filesystem::remove(path);
  std::filesystem::remove(Checkpoint::rank_path(path, 1));
}

TEST(Checkpoint, AMissingFileChangesNothingAndARefusedPartPutsEverythingBack) {
  const std::string path = scratch("refused");
  Training run;
  EXPECT_FALSE(run.ckpt.load(path));
  run.train(2);
  run.ckpt.save(path);

  // Another model shape: the step, generator and optimizer load first, then the model
  // refuses its entries; all of them must be as they were.
  Training other;
  other.train(1);
  Checkpoint wrong;
  auto small = std::make_shared<Linear>(8, 3);
  int64_t step = 42;
  Generator draw(5);
  wrong.add("step", step).add("draw", draw).add("model", *small);
  const auto small_before = parameters_of(*small);
  expect_error([&] { wrong.load(path); }, {"Checkpoint::load: part 'model' of ", path});
  EXPECT_EQ(step, 42);
  EXPECT_EQ(draw.seed(), 5u);
  EXPECT_EQ(draw.offset(), 0u);
  EXPECT_EQ(parameters_of(*small), small_before);
  std::filesystem::remove(path);
}

TEST(Checkpoint, RefusesBadNamesAndForeignFiles) {
  Checkpoint c;
  int64_t a = 0, b = 0;
  c.add("a", a);
  expect_error([&] { c.add("a", b); }, {"already a part named 'a'"});
  expect_error([&] { c.add("a.b", b); }, {"part name 'a.b'"});
  expect_error([&] { c.add("", b); }, {"part name ''"});
  const std::string path = scratch("foreign");
  save_safetensors(path, {{"x", zeros({2})}}, {{"format", "something-else"}});
  expect_error([&] { c.load(path); }, {"is not a checkpoint of wick::Checkpoint"});
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace wick::test
