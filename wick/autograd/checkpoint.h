#pragma once
// Activation checkpointing (torch.utils.checkpoint): a segment of the forward keeps only its
// inputs; its intermediate activations are recomputed during backward, trading one extra
// forward of the segment for the memory its saved tensors would hold until backward.
//
//   Variable y = checkpoint([&](const Variable& h) { return block->forward(h); }, x);
//   loss(y).backward();   // block's forward runs again here, then its backward
//
// As in PyTorch:
// - The recomputation sees the random state the first forward saw: this thread's default
//   generator (wick's one Philox stream for CPU and CUDA ops) is set to where it was, and put
//   back afterwards, so dropout masks are the same. Generators given to modules explicitly
//   are restored only when listed in CheckpointOptions::generators.
// - It runs under the autocast state of the first forward, whatever is active in backward.
// - Parameters the function uses (leaves that require grad) receive their gradients through
//   the checkpoint's node, so hooks on them (data parallelism's reducer) run as without it.
// - The function must compute the same thing twice: no side effects that change its result
//   (a BatchNorm's running statistics are updated twice, as in PyTorch).
// Not supported (a wick::Error): a variable that requires grad and was computed outside the
// function but used inside it without being an input (pass it as an input); a second
// derivative through the checkpoint (create_graph in its backward: the recomputation starts
// from detached inputs, as PyTorch's reentrant checkpoint, which refuses it too).
#include <functional>
#include <vector>

#include <wick/autograd/variable.h>
#include <wick/tensor/generator.h>

namespace wick {

struct CheckpointOptions {
  // Restore the random state for the recomputation (torch's preserve_rng_state).
  bool preserve_rng_state = true;
  // Generators besides this thread's default one that the function draws from.
  std::vector<Generator*> generators;
};

using CheckpointFunction = std::function<std::vector<Variable>(const std::vector<Variable>&)>;

// Runs fn(inputs) now and again during backward; returns its outputs. Without grad mode
// (evaluation) it is just fn(inputs).
std::vector<Variable> checkpoint(const CheckpointFunction& fn, const std::vector<Variable>& inputs,
                                 const CheckpointOptions& options = {});
// The one-input, one-output form.
Variable checkpoint(const std::function<Variable(const Variable&)>& fn, const Variable& input,
                    const CheckpointOptions& options = {});

}  // namespace wick
