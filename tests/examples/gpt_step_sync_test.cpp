// A GPT training step on CUDA waits for the device nowhere (issue 45, item 7): forward, loss,
// backward, gradient clipping and the fused AdamW step, in float32 and under bfloat16
// autocast, counted by the CUDA simulator (cudasimHostSynchronizations: stream, device and
// event synchronize, and copies that return once done). A wait inside the step drains the
// GPU's queue every step and makes the step impossible to capture in a CUDA graph. Built
// only with -DWICK_CUDA=SIM.
#include <cudasim/cudasim.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include <wick/wick.h>

#include "examples/gpt/model.h"
#include "tests/support/reference.h"

namespace wick {
namespace {

using examples::GPT;
using examples::GPTConfig;

// Host synchronisations made by step(), after two warm-up calls (the first makes per-device
// state, the optimizer's slots and the allocator's blocks).
unsigned long long step_synchronizations(const std::function<void()>& step) {
  step();
  step();
  cuda::synchronize();
  const unsigned long long before = cudasimHostSynchronizations();
  step();
  const unsigned long long made = cudasimHostSynchronizations() - before;
  cuda::synchronize();
  return made;
}

TEST(GPTStep, ACudaTrainingStepMakesNoHostSynchronization) {
  WICK_REQUIRE_CUDA();
  const GPTConfig config{.vocab_size = 64, .block_size = 16, .n_layer = 2, .n_head = 2, .n_embd = 32, .dropout = 0.1};
  Generator g(3);
  const Tensor idx = randint(0, config.vocab_size, {4, 16}, DType::Int64, &g).cuda();
  const Tensor targets = randint(0, config.vocab_size, {4, 16}, DType::Int64, &g).cuda();
  for (bool autocast : {false, true}) {
    {
      SCOPED_TRACE(autocast ? "bfloat16 autocast" : "float32");
      Generator init(4);
      auto model = std::make_shared<GPT>(config, Options(DType::Float32, Device::cuda()), &init);
      model->train();
      AdamW opt(model->named_parameters(), AdamOptions{.lr = 1e-3, .weight_decay = 0.1});
      const auto step = [&] {
        opt.zero_grad();
        Variable loss;
        if (autocast) {
          AutocastGuard guard(Device::cuda(), DType::BFloat16);
          loss = model->loss(idx, targets);
        } else {
          loss = model->loss(idx, targets);
        }
        loss.backward();
        opt.step();
      };
      EXPECT_EQ(step_synchronizations(step), 0u);
    }
  }
}

// Copies from or to pageable host memory (cudasimPageableCopies), which the driver stages and
// a CUDA graph cannot capture: none in a step whose AdamW is capturable (its tables are
// written by kernels only when the tensors change; today's AdamW uploads them from pageable
// memory once per step and dtype).
TEST(GPTStep, ACapturableCudaTrainingStepMakesNoPageableCopy) {
  WICK_REQUIRE_CUDA();
  const GPTConfig config{.vocab_size = 64, .block_size = 16, .n_layer = 2, .n_head = 2, .n_embd = 32, .dropout = 0};
  Generator g(3);
  const Tensor idx = randint(0, config.vocab_size, {4, 16}, DType::Int64, &g).cuda();
  const Tensor targets = randint(0, config.vocab_size, {4, 16}, DType::Int64, &g).cuda();
  for (bool capturable : {true, false}) {
    SCOPED_TRACE(capturable ? "capturable AdamW" : "AdamW");
    Generator init(4);
    auto model = std::make_shared<GPT>(config, Options(DType::Float32, Device::cuda()), &init);
    AdamW opt(model->named_parameters(), AdamOptions{.lr = 1e-3, .weight_decay = 0.1, .capturable = capturable});
    const auto step = [&] {
      opt.zero_grad();
      model->loss(idx, targets).backward();
      opt.step();
    };
    step();
    step();
    cuda::synchronize();
    const unsigned long long before = cudasimPageableCopies(), waits_before = cudasimHostSynchronizations();
    step();
    const unsigned long long made = cudasimPageableCopies() - before;
    const unsigned long long waits = cudasimHostSynchronizations() - waits_before;
    cuda::synchronize();
    EXPECT_EQ(made, capturable ? 0u : 1u);
    EXPECT_EQ(waits, 0u);
  }
}

}  // namespace
}  // namespace wick
