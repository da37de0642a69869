// Activation checkpointing (wick/autograd/checkpoint.h): the same gradients as without it,
// bit for bit in float64 with dropout (the random state is replayed), under autocast and on
// CUDA; fewer bytes held between forward and backward; parameter hooks run once; errors.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include <wick/autograd/activations.h>
#include <wick/autograd/autocast.h>
#include <wick/autograd/checkpoint.h>
#include <wick/autograd/grad_mode.h>
#include <wick/autograd/ops.h>
#include <wick/nn/activation.h>
#include <wick/nn/dropout.h>
#include <wick/nn/linear.h>
#include <wick/nn/transformer.h>
#include <wick/tensor/cuda.h>
#include <wick/tensor/factories.h>

#include "../support/reference.h"

namespace wick {
namespace {

using test::tensors_equal;

// One step of a model made by `make` (a fresh copy, the same initial weights each time),
// its forward optionally checkpointed: the input's and every parameter's gradient, and the
// generator's offset after the step.
struct Grads {
  std::vector<Tensor> grads;
  uint64_t offset_after = 0;
};

struct Block : Module {
  std::shared_ptr<Linear> a, b;
  std::shared_ptr<Dropout> drop;
  Block(const Options& o, Generator* g) {
    a = register_module("a", std::make_shared<Linear>(6, 16, true, o, g));
    b = register_module("b", std::make_shared<Linear>(16, 6, true, o, g));
    drop = register_module("drop", std::make_shared<Dropout>(0.4));
  }
  const char* type_name() const override { return "Block"; }
  Variable forward(const Variable& x) { return b->forward(drop->forward(gelu(a->forward(x)))); }
};

Grads step(bool checkpointed, const Options& o, std::optional<DType> autocast = std::nullopt,
           CheckpointOptions copts = {}) {
  Generator init(7);
  auto b1 = std::make_shared<Block>(o, &init);
  auto b2 = std::make_shared<Block>(o, &init);
  Variable x(test::random({5, 6}, o.dtype, 3).to(o.device), true);
  manual_seed(1234);
  Variable loss;
  {
    std::optional<AutocastGuard> guard;
    if (autocast) guard.emplace(o.device, *autocast);
    auto run1 = [&](const Variable& h) { return b1->forward(h); };
    auto run2 = [&](const Variable& h) { return b2->forward(h); };
    Variable h = checkpointed ? checkpoint(run1, x, copts) : run1(x);
    h = relu(h);
    h = checkpointed ? checkpoint(run2, h, copts) : run2(h);
    loss = sum(mul(to(h, o.dtype), to(h, o.dtype)));
  }
  // Draw between forward and backward: the recomputation must not see these numbers.
  (void)rand({3}, DType::Float32);
  loss.backward();
  Grads r;
  r.grads.push_back(x.grad().data().to(Device::cpu()));
  for (auto* m : {static_cast<Module*>(b1.get()), static_cast<Module*>(b2.get())})
    for (const Variable& p : m->parameters()) r.grads.push_back(p.grad().data().to(Device::cpu()));
  r.offset_after = default_generator().offset();
  return r;
}

void expect_same(const Grads& a, const Grads& b) {
  ASSERT_EQ(a.grads.size(), b.grads.size());
  for (size_t i = 0; i < a.grads.size(); ++i) EXPECT_TRUE(tensors_equal(a.grads[i], b.grads[i])) << "gradient " << i;
  EXPECT_EQ(a.offset_after, b.offset_after);
}

TEST(Checkpoint, SameGradientsWithDropoutInFloat64) {
  for (Device d : test::cpu_and_cuda()) {
    SCOPED_TRACE(d.str());
    const Options o(DType::Float64, d);
    expect_same(step(false, o), step(true, o));
  }
}

TEST(Checkpoint, WithoutTheRandomStateTheMasksDiffer) {
  // The test above can fail: recomputed without the saved random state, dropout draws other
  // masks and the gradients change.
  const Options o(DType::Float64);
  Grads plain = step(false, o), unrestored = step(true, o, std::nullopt, {.preserve_rng_state = false});
  bool differ = false;
  for (size_t i = 0; i < plain.grads.size(); ++i)
    differ = differ || !tensors_equal(plain.grads[i], unrestored.grads[i]);
  EXPECT_TRUE(differ);
}

TEST(Checkpoint, SameGradientsUnderAutocast) {
  for (Device d : test::cpu_and_cuda()) {
    SCOPED_TRACE(d.str());
    const Options o(DType::Float32, d);
    // Backward runs outside the guard: the recomputation must autocast as the forward did.
    expect_same(step(false, o, DType::BFloat16), step(true, o, DType::BFloat16));
  }
}

TEST(Checkpoint, SameGradientsThroughATransformerBlockWithDropout) {
  const Options o(DType::Float64);
  auto grads = [&](bool checkpointed) {
    Generator init(3);
    TransformerEncoderLayer block(8, 2, {.dim_feedforward = 16, .dropout = 0.3, .norm_first = true}, o, &init);
    Variable x(test::random({2, 5, 8}, DType::Float64, 9), true);
    manual_seed(99);
    auto run = [&](const Variable& in) { return block.forward(in, Tensor(), Tensor(), /*is_causal=*/true); };
    // The block's dropouts draw from `init` (given to its constructor), not from the default
    // generator: the checkpoint must be told.
    Variable y = checkpointed ? checkpoint(run, x, {.generators = {&init}}) : run(x);
    sum(mul(y, y)).backward();
    std::vector<Tensor> g = {x.grad().data()};
    for (const Variable& p : block.parameters()) g.push_back(p.grad().data());
    return g;
  };
  std::vector<Tensor> a = grads(false), b = grads(true);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(tensors_equal(a[i], b[i])) << "gradient " << i;
}

TEST(Checkpoint, HoldsFewerBytesBetweenForwardAndBackward) {
  WICK_REQUIRE_CUDA();  // the CUDA allocator counts live bytes (the simulator's too)
  const Options o(DType::Float32, Device::cuda());
  Generator init(1);
  std::vector<std::shared_ptr<Linear>> layers;
  for (int i = 0; i < 4; ++i) layers.push_back(std::make_shared<Linear>(64, 64, true, o, &init));
  Variable x(randn({256, 64}, o), true);
  auto held = [&](bool checkpointed) {
    cuda::synchronize();
    const size_t before = cuda::memory_stats().allocated;
    Variable h = x;
    for (auto& l : layers) {
      auto run = [&](const Variable& in) { return tanh(relu(l->forward(in))); };
      h = checkpointed ? checkpoint(run, h) : run(h);
    }
    Variable loss = sum(h);
    cuda::synchronize();
    const size_t after = cuda::memory_stats().allocated - before;
    loss.backward();
    return after;
  };
  const size_t plain = held(false), checkpointed = held(true);
  // Without: each layer keeps the activations its relu and tanh saved for backward; with:
  // only each segment's output.
  const size_t activation = 256 * 64 * 4;
  EXPECT_GE(plain, 8 * activation) << "plain " << plain;
  EXPECT_LE(checkpointed, 5 * activation) << "checkpointed " << checkpointed;
  std::printf("bytes held between forward and backward: %zu without checkpointing, %zu with\n", plain, checkpointed);
}

TEST(Checkpoint, ParameterHooksRunOnceAndGradientsAccumulate) {
  Generator init(2);
  Linear lin(3, 3, true, Options(DType::Float64), &init);
  int calls = 0;
  lin.weight.register_post_accumulate_grad_hook([&](const Variable&) { ++calls; });
  Variable x(test::random({4, 3}, DType::Float64, 1), false);
  auto run = [&](const Variable& in) { return lin.forward(in); };
  sum(checkpoint(run, x)).backward();
  EXPECT_EQ(calls, 1);
  Tensor once = lin.weight.grad().data().clone();
  sum(checkpoint(run, x)).backward();
  EXPECT_EQ(calls, 2);
  EXPECT_TRUE(tensors_equal(lin.weight.grad().data(), mul(once, Scalar(2.0))));
  EXPECT_FALSE(x.grad().defined());
}

TEST(Checkpoint, WithoutGradModeItOnlyRunsTheFunction) {
  Generator init(2);
  Linear lin(3, 3, true, Options(DType::Float64), &init);
  Variable x(test::random({4, 3}, DType::Float64, 1), true);
  NoGradGuard no_grad;
  int runs = 0;
  Variable y = checkpoint(
      [&](const Variable& in) {
        ++runs;
        return lin.forward(in);
      },
      x);
  EXPECT_EQ(runs, 1);
  EXPECT_FALSE(y.requires_grad());
}

TEST(Checkpoint, ACapturedNonInputThatRequiresGradIsRefused) {
  Variable w = test::leaf({1, 2, 3}, {3});
  Variable outside = mul(w, 2.0);  // computed before the segment: not a leaf
  Variable x = test::leaf({4, 5, 6}, {3});
  test::expect_error([&] { checkpoint([&](const Variable& in) { return mul(in, outside); }, x); },
                     {"checkpoint", "computed outside", "MulScalarBackward", "pass that variable as an input"});
}

TEST(Checkpoint, AFunctionThatComputesSomethingElseTheSecondTimeIsNamed) {
  Variable x = test::leaf({1, 2, 3, 4}, {4});
  int runs = 0;
  Variable y = checkpoint([&](const Variable& in) { return ++runs == 1 ? mul(in, in) : narrow(in, 0, 0, 2); }, x);
  test::expect_error([&] { sum(y).backward(); },
                     {"CheckpointBackward", "[2]", "[4]", "must compute the same thing twice"});
}

}  // namespace
}  // namespace wick
