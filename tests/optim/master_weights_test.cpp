// MasterWeights::Nearest: 16-bit parameters stepped through float32 copies follow the float32
// run exactly (rounded once into the parameter), where stepping them in 16 bits loses
// updates below half an ulp; the copies and float32 buffers ride in the state dict.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/reference.h"

namespace wick::test {
namespace {

// Starting values near 1, exactly representable in bfloat16 (so every run starts equal).
Tensor start() { return random({3, 5}, DType::Float32, 7, 0.5, 1.5).to(DType::BFloat16).to(DType::Float32); }
// Gradients in [0.1, 1] exactly representable in bfloat16 and float16 (so widening them
// loses nothing), all positive so that small updates add up.
Tensor grad_at(int step) {
  return random({3, 5}, DType::Float32, 100 + step, 0.1, 1.0).to(DType::BFloat16).to(DType::Float32);
}

// Steps [from, to) of an optimizer on one parameter of `dtype`; returns the parameter after
// each step, and the optimizer's state at the end in *saved.
template <class Opt, class Options>
std::vector<Tensor> run(DType dtype, MasterWeights mode, const Options& options, int from, int to,
                        const Tensor& initial, const TensorMap* resume = nullptr, TensorMap* saved = nullptr) {
  Variable p(initial.to(dtype).clone(), true);
  Opt opt({{"w", p}}, options);
  opt.set_master_weights(mode);
  if (resume) opt.load_state_dict(*resume);
  std::vector<Tensor> after;
  for (int k = from; k < to; ++k) {
    p.set_grad(Variable(grad_at(k).to(dtype)));
    opt.step();
    after.push_back(p.data().clone());
  }
  if (saved) *saved = opt.state_dict();
  return after;
}

template <class Opt, class Options>
void expect_master_follows_float32(const Options& o, int steps) {
  std::vector<Tensor> f32 = run<Opt>(DType::Float32, MasterWeights::Off, o, 0, steps, start());
  for (DType low : {DType::BFloat16, DType::Float16}) {
    SCOPED_TRACE(dtype_name(low));
    std::vector<Tensor> master = run<Opt>(low, MasterWeights::Nearest, o, 0, steps, start());
    for (int k = 0; k < steps; ++k) {
      ASSERT_EQ(master[k].dtype(), low);
      EXPECT_TRUE(tensors_equal(master[k], f32[k].to(low))) << "step " << k;
    }
  }
}

TEST(MasterWeights, SgdFollowsFloat32AndPlain16BitLosesTheUpdates) {
  expect_master_follows_float32<SGD>(SGDOptions{.lr = 1e-3, .momentum = 0.9}, 40);
  // lr 5e-4 on values in [0.5, 1.5]: every update is below bfloat16's half ulp there
  // (2^-9 or more), while 200 of them add up to several ulps.
  SGDOptions o{.lr = 5e-4};
  std::vector<Tensor> plain = run<SGD>(DType::BFloat16, MasterWeights::Off, o, 0, 200, start());
  std::vector<Tensor> master = run<SGD>(DType::BFloat16, MasterWeights::Nearest, o, 0, 200, start());
  const Tensor initial = start().to(DType::BFloat16);
  EXPECT_TRUE(tensors_equal(plain.back(), initial));                   // every update lost
  EXPECT_EQ(sum(ne(master.back(), initial)).item<int64_t>(), 15);  // all accumulated
}

TEST(MasterWeights, AdamAndAdamWFollowFloat32) {
  expect_master_follows_float32<Adam>(AdamOptions{.lr = 1e-3}, 20);
  expect_master_follows_float32<AdamW>(AdamOptions{.lr = 1e-3, .weight_decay = 0.1}, 20);
}

// The state holds the float32 master and float32 buffers; resuming from it continues
// exactly, and a float32 parameter gets no master copy.
TEST(MasterWeights, StateDictHoldsTheMasterAndResumesExactly) {
  AdamOptions o{.lr = 1e-3};
  TensorMap middle;
  std::vector<Tensor> first = run<Adam>(DType::BFloat16, MasterWeights::Nearest, o, 0, 5, start(), nullptr, &middle);
  ASSERT_TRUE(middle.count("state.w.master"));
  EXPECT_EQ(middle.at("state.w.master").dtype(), DType::Float32);
  EXPECT_EQ(middle.at("state.w.exp_avg").dtype(), DType::Float32);
  std::vector<Tensor> straight = run<Adam>(DType::BFloat16, MasterWeights::Nearest, o, 0, 10, start());
  std::vector<Tensor> resumed = run<Adam>(DType::BFloat16, MasterWeights::Nearest, o, 5, 10, first.back(), &middle);
  for (int k = 0; k < 5; ++k) EXPECT_TRUE(tensors_equal(resumed[k], straight[5 + k])) << "step " << 5 + k;
  TensorMap f32_state;
  run<Adam>(DType::Float32, MasterWeights::Nearest, o, 0, 2, start(), nullptr, &f32_state);
  EXPECT_FALSE(f32_state.count("state.w.master"));
  // Without master weights a bfloat16 parameter's state has no master entry to load.
  Variable p(start().to(DType::BFloat16), true);
  Adam plain({{"w", p}}, o);
  expect_error([&] { plain.load_state_dict(middle); }, {"unknown buffer 'master'"});
}

// Stochastic write-back: 10 steps of 1e-4 from 1.0 leave the float32 copy at 0.999, a quarter
// of a bfloat16 ulp below 1 (the ulp under 1 is 2^-8): rounding to nearest keeps every element
// at 1.0, stochastic rounding puts about a quarter of them at 1 - 2^-8, so that the mean is
// right; float16 parameters are rounded to nearest.
TEST(MasterWeights, StochasticRoundingKeepsTheMeanOfSmallUpdates) {
  auto step10 = [](DType dtype, MasterWeights mode) {
    Variable p(ones({20000}, dtype), true);
    SGD opt({{"w", p}}, SGDOptions{.lr = 1e-4});
    opt.set_master_weights(mode);
    for (int k = 0; k < 10; ++k) {
      p.set_grad(Variable(ones({20000}, dtype)));
      opt.step();
    }
    return p.data().to(DType::Float64);
  };
  manual_seed(3);
  EXPECT_EQ(mean(step10(DType::BFloat16, MasterWeights::Nearest)).item<double>(), 1.0);
  Tensor sr = step10(DType::BFloat16, MasterWeights::Stochastic);
  EXPECT_NEAR(mean(sr).item<double>(), 1.0 - 1e-3, 1e-4);
  const double below = static_cast<double>(sum(eq(sr, 1.0 - std::ldexp(1.0, -8))).item<int64_t>()) / 20000;
  EXPECT_NEAR(below, 0.256, 0.02);
  EXPECT_EQ(sum(ne(sr, 1.0)).item<int64_t>() + sum(eq(sr, 1.0)).item<int64_t>(), 20000);
  // float16 has 2^-11 below 1: 0.999 rounds to nearest, 1 - 2 * 2^-11 (stochastic is bfloat16 only).
  Tensor f16 = step10(DType::Float16, MasterWeights::Stochastic);
  EXPECT_EQ(mean(f16).item<double>(), static_cast<double>(static_cast<float>(Half(0.999f))));
}

}  // namespace
}  // namespace wick::test
