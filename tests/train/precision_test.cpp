// TrainerOptions::precision: bf16 and fp16 autocast training learns what float32 does with
// float32 parameters; fp16 skips the step of a batch whose gradient has an inf and halves
// the scale; the scaler's state rides in the checkpoint (bit-identical resume); precision
// names parse.
#include <unistd.h>

#include <cmath>

#include <wick/autograd/ops.h>
#include <wick/nn/loss.h>
#include <wick/optim/adam.h>
#include <wick/optim/sgd.h>
#include <wick/tensor/safetensors.h>
#include <wick/train/loop.h>

#include "tests/support/reference.h"
#include "tests/support/training_fixture.h"

namespace wick::test {
namespace {

std::string precision_path(const std::string& name) { return test::temp_path("precision", name); }

struct Result {
  double accuracy, loss;
  std::vector<double> params;
};

Result train_blobs(Precision precision, int64_t epochs = 6) {
  auto data = training_blobs(256, 3);
  auto net = training_mlp(4);
  SupervisedModel model = classifier(net);
  Adam opt(net->named_parameters(), AdamOptions{.lr = 0.02});
  BatchStream train(data, {.batch_size = 32, .seed = 1});
  BatchStream valid(data, {.batch_size = 256, .shuffle = false});
  LoopOptions o = quiet_loop(epochs);
  o.trainer.precision = precision;
  LoopState s = fit(model, opt, train, &valid, o);
  for (const Variable& p : net->parameters()) EXPECT_EQ(p.dtype(), DType::Float32);
  return {s.learning_curve.back().validation_accuracy.value_or(0), s.learning_curve.back().validation_loss.value_or(0),
          flat_parameters(*net)};
}

TEST(Precision, Bf16AndFp16LearnWhatFloat32Learns) {
  Result f32 = train_blobs(Precision::Float32);
  EXPECT_GT(f32.accuracy, 0.95);
  for (Precision p : {Precision::BFloat16, Precision::Float16}) {
    SCOPED_TRACE(precision_name(p));
    Result r = train_blobs(p);
    EXPECT_GE(r.accuracy, f32.accuracy - 0.02);
    EXPECT_NEAR(r.loss, f32.loss, 0.05 + 0.1 * f32.loss);
    // Not float32's run: the forward really was 16-bit.
    EXPECT_NE(r.params, f32.params);
  }
}

// A user step whose loss is inf on one chosen batch: under fp16 the step of that batch is
// skipped (the parameters after it equal those before) and the scale halves; the other
// steps happen.
TEST(Precision, Fp16SkipsTheStepOfABatchWithAnInfGradient) {
  auto data = training_blobs(64, 5);
  auto net = training_mlp(6);
  SupervisedModel model = classifier(net);
  int64_t batch_index = 0;
  model.step = [&](Module& m, const Batch& b) {
    Variable out = dynamic_cast<UnaryModule&>(m).forward(Variable(b.inputs));
    Variable loss = cross_entropy(out, b.targets);
    if (batch_index++ == 2) loss = mul(loss, INFINITY);
    return StepOutput{loss, {}};
  };
  SGD opt(net->named_parameters(), SGDOptions{.lr = 0.1});
  BatchStream train(data, {.batch_size = 16, .shuffle = false});
  std::vector<std::vector<double>> after_batch;
  LoopOptions o = quiet_loop(1);
  o.trainer.precision = Precision::Float16;
  // Small enough that no float16 gradient overflows before the inf (2^16 makes step 0
  // overflow and be skipped, as GradScaler's first steps often are).
  o.trainer.grad_scaler.init_scale = 1024;
  // on_batch runs after backward and before that batch's step: it sees the parameters the
  // previous step left.
  o.trainer.on_batch = [&](const BatchReport&) { after_batch.push_back(flat_parameters(*net)); };
  o.checkpoint_path = precision_path("skip.ckpt");
  ::unlink(o.checkpoint_path.c_str());
  fit(model, opt, train, nullptr, o);
  ASSERT_EQ(after_batch.size(), 4u);
  EXPECT_NE(after_batch[0], after_batch[1]);  // step 0 happened
  EXPECT_NE(after_batch[1], after_batch[2]);  // step 1 happened
  EXPECT_EQ(after_batch[2], after_batch[3]);  // step 2 (the inf) was skipped
  TensorMap ckpt = load_safetensors(o.checkpoint_path);
  EXPECT_EQ(ckpt.at("scaler.scale").item<double>(), 512.0);
  EXPECT_EQ(ckpt.at("scaler.growth_tracker").item<double>(), 1.0);  // one clean step after the skip
  ::unlink(o.checkpoint_path.c_str());
}

// fp16 resume: the scale and its growth count come back with the checkpoint, so stopping
// and resuming gives the parameters of an uninterrupted run bit for bit.
TEST(Precision, Fp16ResumeIsBitIdentical) {
  auto data = training_blobs(128, 8);
  std::string path = precision_path("resume.ckpt");
  ::unlink(path.c_str());
  auto run = [&](int64_t epochs, bool resume) {
    auto net = training_mlp(9);
    SupervisedModel model = classifier(net);
    Adam opt(net->named_parameters(), AdamOptions{.lr = 0.01});
    BatchStream train(data, {.batch_size = 16, .seed = 5});
    LoopOptions o = quiet_loop(epochs);
    o.trainer.precision = Precision::Float16;
    o.trainer.grad_scaler.growth_interval = 3;  // the scale changes within the run
    o.checkpoint_path = path;
    o.resume = resume;
    fit(model, opt, train, nullptr, o);
    return flat_parameters(*net);
  };
  std::vector<double> straight = run(4, false);
  ::unlink(path.c_str());
  run(2, false);
  TensorMap middle = load_safetensors(path);
  EXPECT_GT(middle.at("scaler.scale").item<double>(), 65536.0);  // it grew: state worth saving
  std::vector<double> resumed = run(4, true);
  EXPECT_EQ(straight, resumed);
  ::unlink(path.c_str());
}

TEST(Precision, NamesParse) {
  EXPECT_EQ(parse_precision("bf16"), Precision::BFloat16);
  EXPECT_EQ(parse_precision("bfloat16"), Precision::BFloat16);
  EXPECT_EQ(parse_precision("fp16"), Precision::Float16);
  EXPECT_EQ(parse_precision("float32"), Precision::Float32);
  EXPECT_STREQ(precision_name(Precision::BFloat16), "bf16");
  expect_error([] { parse_precision("fp8"); }, {"parse_precision", "fp8", "fp32, bf16 or fp16"});
}

}  // namespace
}  // namespace wick::test
