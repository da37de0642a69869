// GradScaler: torch.amp.GradScaler's trajectory replayed (grad_scaler_reference.txt, written
// by grad_scaler_reference.py), exact resume from its state, fp16 underflow shown and fixed,
// the found-inf combiner, and misuse.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/reference.h"

namespace wick::test {
namespace {

constexpr int kReferenceSteps = 24;

// The gradient of step k in grad_scaler_reference.py, times the scale (as torch computes it:
// float32 values times a Python float).
Tensor reference_grad(int k, double scale, Device device) {
  std::vector<float> g(4);
  for (int i = 0; i < 4; ++i) g[i] = static_cast<float>(std::sin(static_cast<double>(k + i)) / (1 + k));
  if (k == 2 || k == 9 || k == 10) g[k % 4] = INFINITY;
  if (k == 5) g[k % 4] = NAN;
  for (float& v : g) v = static_cast<float>(v * static_cast<float>(scale));
  return tensor<float>(g).to(device);
}

struct Row {
  int step, stepped;
  double scale;
  int64_t tracker;
  std::vector<double> p;
};

std::vector<Row> reference() {
  std::ifstream in(std::string(WICK_SOURCE_DIR) + "/tests/optim/grad_scaler_reference.txt");
  EXPECT_TRUE(in.good());
  std::vector<Row> rows;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream s(line);
    Row r;
    r.p.resize(4);
    s >> r.step >> r.stepped >> r.scale >> r.tracker >> r.p[0] >> r.p[1] >> r.p[2] >> r.p[3];
    rows.push_back(r);
  }
  return rows;
}

struct Replay {
  Variable p;
  SGD opt;
  GradScaler scaler;
  explicit Replay(Device d)
      : p(tensor<float>({0.5f, -0.25f, 1.0f, 2.0f}).to(d), true),
        opt({{"p", p}}, SGDOptions{.lr = 0.1, .momentum = 0.9}),
        scaler(GradScalerOptions{.init_scale = 1024, .growth_interval = 3}) {}
  bool step(int k) {
    p.set_grad(Variable(reference_grad(k, scaler.get_scale(), p.device())));
    bool stepped = scaler.step(opt);
    scaler.update();
    return stepped;
  }
};

std::vector<Device> devices() {
  std::vector<Device> d = {Device::cpu()};
  if (cuda::device_count() > 0) d.push_back(Device::cuda());
  return d;
}

TEST(GradScaler, ReplaysTorchTrajectory) {
  const std::vector<Row> rows = reference();
  ASSERT_EQ(rows.size(), static_cast<size_t>(kReferenceSteps));
  for (Device d : devices()) {
    SCOPED_TRACE(d.str());
    Replay r(d);
    for (const Row& row : rows) {
      SCOPED_TRACE("step " + std::to_string(row.step));
      EXPECT_EQ(r.step(row.step), row.stepped == 1);
      EXPECT_EQ(r.scaler.get_scale(), row.scale);
      EXPECT_EQ(r.scaler.growth_tracker(), row.tracker);
      EXPECT_TRUE(matches(r.p.data().to(Device::cpu()), {4}, DType::Float32, row.p, 1e-6, 1e-7));
    }
  }
}

// Stopping after any step, saving the scaler and the optimizer, and resuming in fresh
// objects gives the same scales and parameters as running straight through.
TEST(GradScaler, ResumesExactlyFromItsState) {
  for (int stop : {1, 2, 7, 10}) {
    SCOPED_TRACE("stop after " + std::to_string(stop));
    Replay straight(Device::cpu()), first(Device::cpu());
    for (int k = 0; k < stop; ++k) first.step(k);
    TensorMap scaler_state = first.scaler.state_dict(), opt_state = first.opt.state_dict();
    Replay resumed(Device::cpu());
    resumed.p.data().copy_(first.p.data());
    resumed.opt.load_state_dict(opt_state);
    resumed.scaler.load_state_dict(scaler_state);
    for (int k = 0; k < kReferenceSteps; ++k) {
      bool a = straight.step(k);
      if (k < stop) continue;
      EXPECT_EQ(resumed.step(k), a);
      EXPECT_EQ(resumed.scaler.get_scale(), straight.scaler.get_scale());
      EXPECT_EQ(resumed.scaler.growth_tracker(), straight.scaler.growth_tracker());
      EXPECT_TRUE(tensors_equal(resumed.p.data(), straight.p.data()));
    }
  }
}

TEST(GradScaler, GrowthStopsBeforeFloat32Overflows) {
  GradScaler s(GradScalerOptions{.init_scale = std::ldexp(1.0, 127), .growth_interval = 1});
  Variable p(zeros({2}), true);
  SGD opt({{"p", p}}, SGDOptions{.lr = 0.1});
  p.set_grad(Variable(ones({2})));
  EXPECT_TRUE(s.step(opt));
  s.update();
  EXPECT_EQ(s.get_scale(), std::ldexp(1.0, 127));
  EXPECT_EQ(s.growth_tracker(), 0);
}

// fp16 autocast: a loss gradient of 1e-9 flushes to zero in float16 (the smallest subnormal is
// 6e-8), so the weight's gradient is zero without scaling; with the scaler it is within
// float16's resolution of the float64 value.
TEST(GradScaler, Float16UnderflowsWithoutScalingAndNotWith) {
  Tensor x = random({8, 16}, DType::Float32, 5, 0.5, 1.0);
  Tensor w0 = random({4, 16}, DType::Float32, 6);
  auto grad_of_w = [&](GradScaler* scaler) {
    Variable w(w0.clone(), true);
    Variable loss;
    {
      AutocastGuard autocast(Device::cpu(), DType::Float16);
      loss = mul(sum(linear(Variable(x), w)), 1e-9);
    }
    (scaler ? scaler->scale(loss) : loss).backward();
    if (scaler) {
      SGD opt({{"w", w}}, SGDOptions{.lr = 0.0});
      scaler->unscale_(opt);
      EXPECT_TRUE(scaler->step(opt));
      scaler->update();
    }
    return w.grad().data();
  };
  Tensor unscaled = grad_of_w(nullptr);
  EXPECT_EQ(max(abs(unscaled)).item<float>(), 0.0f);
  GradScaler scaler;
  Tensor scaled = grad_of_w(&scaler);
  // d/dw sum(x w^T) * 1e-9 = 1e-9 * column sums of x, for every row of w.
  Tensor col = x.to(DType::Float16).to(DType::Float64).sum({0}, true);
  Tensor expected = mul(col.expand({4, 16}), 1e-9);
  EXPECT_TRUE(matches(scaled, {4, 16}, DType::Float32, values(expected), 2e-3, 0));
}

// A replica whose gradients are finite still skips when the combiner says another found an
// inf (what an all-reduce with max does across ranks); the scale backs off on both.
TEST(GradScaler, CombinerMakesEveryReplicaSkipTogether) {
  Variable p(ones({3}), true);
  SGD opt({{"p", p}}, SGDOptions{.lr = 0.5});
  GradScaler s;
  int calls = 0;
  s.set_found_inf_combiner([&](Tensor& flag) {
    ++calls;
    EXPECT_EQ(flag.item<float>(), 0.0f);  // this replica's own gradients are finite
    flag.fill_(Scalar(1.0));              // another replica's were not
  });
  p.set_grad(Variable(full({3}, Scalar(s.get_scale()))));
  EXPECT_FALSE(s.step(opt));
  s.update();
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(tensors_equal(p.data(), ones({3})));
  EXPECT_EQ(s.get_scale(), 32768.0);
}

TEST(GradScaler, DisabledIsATransparentWrapper) {
  GradScaler s(GradScalerOptions{.enabled = false});
  Variable p(ones({2}), true);
  SGD opt({{"p", p}}, SGDOptions{.lr = 1.0});
  Variable loss(full({}, Scalar(3.0)));
  EXPECT_TRUE(s.scale(loss).is_same(loss));
  p.set_grad(Variable(full({2}, Scalar(INFINITY))));
  EXPECT_TRUE(s.step(opt));  // no check: the step happens
  s.update();
  EXPECT_EQ(s.get_scale(), 1.0);
  EXPECT_TRUE(s.state_dict().empty());
}

TEST(GradScaler, RejectsMisuse) {
  Variable p(ones({2}), true);
  SGD opt({{"p", p}}, SGDOptions{.lr = 0.1});
  GradScaler s;
  p.set_grad(Variable(ones({2})));
  expect_error([&] { s.update(); }, {"GradScaler::update", "no optimizer"});
  s.unscale_(opt);
  expect_error([&] { s.unscale_(opt); }, {"GradScaler::unscale_", "already called", "SGD"});
  s.step(opt);
  expect_error([&] { s.step(opt); }, {"GradScaler::step", "already called"});
  expect_error([&] { s.unscale_(opt); }, {"GradScaler::unscale_", "after step()"});
  s.update();
  expect_error([&] { s.update(-1.0); }, {"GradScaler::update", "positive"});
  expect_error([] { GradScaler g(GradScalerOptions{.init_scale = 0}); }, {"GradScaler", "init_scale"});
  expect_error([] { GradScaler g(GradScalerOptions{.init_scale = 1e39}); }, {"GradScaler", "init_scale"});
  expect_error([] { GradScaler g(GradScalerOptions{.growth_factor = 1.0}); }, {"GradScaler", "growth_factor"});
  expect_error([] { GradScaler g(GradScalerOptions{.backoff_factor = 1.0}); }, {"GradScaler", "backoff_factor"});
  expect_error([] { GradScaler g(GradScalerOptions{.growth_interval = 0}); }, {"GradScaler", "growth_interval"});
  // A transposed gradient cannot be unscaled in place.
  Variable q(ones({2, 3}), true);
  SGD opt2({{"q", q}}, SGDOptions{.lr = 0.1});
  q.set_grad(Variable(ones({3, 2}).t()));
  expect_error([&] { s.unscale_(opt2); }, {"GradScaler::unscale_", "q", "contiguous"});
}

TEST(GradScaler, LoadStateDictChecksEveryEntryFirst) {
  GradScaler s;
  TensorMap good = GradScaler(GradScalerOptions{.init_scale = 8, .growth_interval = 5}).state_dict();
  auto with = [&](const std::string& key, Tensor v) {
    TensorMap m = good;
    m[key] = v;
    return m;
  };
  auto num = [](double v) { return full({}, Scalar(v), Options(DType::Float64)); };
  expect_error([&] { s.load_state_dict({}); }, {"GradScaler::load_state_dict", "empty"});
  expect_error([&] { s.load_state_dict(with("growth_tracker", num(5))); }, {"growth_tracker", "[0, growth_interval)"});
  expect_error([&] { s.load_state_dict(with("growth_tracker", num(1.5))); }, {"growth_tracker", "whole number"});
  expect_error([&] { s.load_state_dict(with("growth_interval", num(0))); }, {"growth_interval"});
  expect_error([&] { s.load_state_dict(with("scale", num(NAN))); }, {"init_scale"});
  expect_error([&] { s.load_state_dict(with("scale", zeros({2}))); }, {"\"scale\"", "one floating point number"});
  expect_error([&] { s.load_state_dict(with("extra", num(1))); }, {"unknown entry \"extra\""});
  TensorMap missing = good;
  missing.erase("backoff_factor");
  expect_error([&] { s.load_state_dict(missing); }, {"no \"backoff_factor\" entry"});
  EXPECT_EQ(s.get_scale(), 65536.0);  // nothing changed by the failures
  s.load_state_dict(good);
  EXPECT_EQ(s.get_scale(), 8.0);
  EXPECT_EQ(s.options().growth_interval, 5);
}

}  // namespace
}  // namespace wick::test
