#pragma once
// Multi-tensor fused optimizer steps (and the gradient unscale of mixed precision) over lists
// of tensors, updating parameters and state in
// place (one kernel launch per dtype on CUDA). The optimizers of optim/ call these; the
// hyper-parameter structs (SgdHyper, AdamHyper) are in wick/tensor/op_kinds.h.
#include <vector>

#include <wick/tensor/op_kinds.h>
#include <wick/tensor/generator.h>
#include <wick/tensor/tensor.h>

namespace wick {

// params[i] -= lr * update (PyTorch's SGD). momentum_buffers: one per param when
// h.momentum != 0 (written in place; set h.first_step on the first step), else may be empty.
void sgd_step(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
              const std::vector<Tensor>& momentum_buffers, const SgdHyper& h);

// Adam / AdamW (h.decoupled_weight_decay) step h.step (from 1); exp_avg and exp_avg_sq are
// the first and second moments, updated in place.
void adam_step(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
               const std::vector<Tensor>& exp_avg, const std::vector<Tensor>& exp_avg_sq, const AdamHyper& h);

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
