#pragma once
// Multi-tensor fused optimizer steps (and the gradient unscale of mixed precision) over lists
// of tensors, updating parameters and state in
// place (one kernel launch per dtype on CUDA). The optimizers of optim/ call these; the
// hyper-parameter structs (SgdHyper, AdamHyper, ...) are in wick/tensor/optim_hyper.h.
#include <array>
#include <vector>

#include <wick/tensor/optim_hyper.h>
#include <wick/tensor/generator.h>
#include <wick/tensor/tensor.h>

namespace wick {

// The fused optimizer steps, one function per row of WICK_FUSED_OPTIMIZERS (optim_hyper.h):
//   sgd_step(params, grads, {momentum_buffers}, SgdHyper{...})
//   adam_step(params, grads, {exp_avg, exp_avg_sq}, AdamHyper{...})
//   rmsprop_step(params, grads, {square_avg, grad_avg, momentum_buffer}, RMSpropHyper{...})
// update params and the state lists in place, in the order of the Hyper's kState (a list the
// step does not use with these values, such as SGD's buffers without momentum, may be
// empty). Every list is checked before any tensor changes: as long as params, each entry of
// params' shape, dtype and device, what is written contiguous, params floating and on one
// device. The lists may mix dtypes; on CUDA each dtype is one launch.
template <class Hyper>
using FusedState = std::array<std::vector<Tensor>, kFusedStates<Hyper>>;
#include <wick/tensor/generated/fused_optimizer_ops.inc>

// For CUDA graphs (AdamOptions::capturable): adam_step with what changes from step to step on
// the device, so that a replayed graph steps as the eager calls would. `scalars` is float64
// [2] on the params' device: the step count before this step and the learning rate; a kernel
// adds 1 to the count, then builds the update's numbers from both in double as adam_step
// does on the host (h.step and h.lr are not used). The slot and chunk tables stay in
// `tables` and are written again, by kernels from their arguments (no copy from pageable
// memory), only when the tensors' addresses change. Params of one floating dtype; CUDA only.
struct FusedTables {
  Tensor device;                   // the tables, then the update's numbers
  std::vector<unsigned char> key;  // what the tables hold, as the host built them
};
void adam_step_capturable(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                          const FusedState<AdamHyper>& state, const AdamHyper& h, const Tensor& scalars,
                          FusedTables& tables);

// GradScaler's unscale (torch._amp_foreach_non_finite_check_and_unscale_): grads[i] *=
// inv_scale in place, in one pass that also sets found_inf (float32, one element, on the
// grads' device) to 1 when any element was inf or NaN; found_inf is left alone otherwise, so
// several calls accumulate into one flag. The grads share one device; dtypes may mix.
void unscale_grads_(const std::vector<Tensor>& grads, const Tensor& found_inf, double inv_scale);

// out (bfloat16) = in (float32) rounded stochastically: each element goes to the bfloat16
// above or below with probabilities that make its expectation the float32 value (what
// master-weight training writes back, so that updates below half an ulp survive on
// average). Draws numel numbers from `g` (default: the default generator); the same on the
// CPU and CUDA. out and in: same shape and device, contiguous.
void stochastic_round_(const Tensor& out, const Tensor& in, Generator* g = nullptr);

}  // namespace wick
