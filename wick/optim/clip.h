#pragma once
// Gradient clipping, as torch.nn.utils.clip_grad_norm_ / clip_grad_value_. Parameters whose
// grad is undefined are skipped.
#include <vector>

#include <wick/autograd/variable.h>

namespace wick {

// Scales every gradient by min(1, max_norm / (total + 1e-6)), where total is the p-norm
// (any norm_type p > 0, or infinity) of all gradients taken together as one vector; returns
// total. With error_if_nonfinite, a NaN or infinite total throws and nothing is scaled.
// The per-tensor norms stay on the device and are combined there: the returned value is the
// only host round trip. All gradients must be on one device.
double clip_grad_norm_(const std::vector<Variable>& params, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);

// Clamps every gradient element into [-clip_value, clip_value].
void clip_grad_value_(const std::vector<Variable>& params, double clip_value);

}  // namespace wick
