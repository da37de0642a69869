#include <wick/optim/clip.h>

#include <cmath>

#include <wick/autograd/grad_mode.h>
#include <wick/tensor/cuda.h>
#include <wick/tensor/elementwise.h>
#include <wick/tensor/factories.h>
#include <wick/tensor/join.h>
#include <wick/tensor/reduce.h>

namespace wick {

double clip_grad_norm_(const std::vector<Variable>& params, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  bool inf = std::isinf(norm_type) && norm_type > 0;
  WICK_CHECK(norm_type > 0, "clip_grad_norm_: norm_type must be positive (or infinity), got ", norm_type);
  WICK_CHECK(max_norm >= 0, "clip_grad_norm_: max_norm must be non-negative, got ", max_norm);
  NoGradGuard no_grad;
  std::vector<Tensor> grads, norms;
  for (const Variable& p : params) {
    Variable g = p.grad();
    if (!g.defined()) continue;
    Tensor t = g.data();
    if (!grads.empty())
      WICK_CHECK(t.device() == grads[0].device(), "clip_grad_norm_: gradients on ", grads[0].device(), " and ",
                 t.device());
    grads.push_back(t);
    // Per-tensor norms in float64 so that mixed-dtype gradients stack into one vector.
    if (t.numel() == 0) norms.push_back(zeros({}, Options(DType::Float64, t.device())));
    else norms.push_back((inf ? max(abs(t)) : norm(t, norm_type)).to(DType::Float64));
  }
  if (grads.empty()) return 0.0;
  WICK_CHECK(!grads[0].is_cuda() || !cuda::is_capturing(grads[0].device().index),
             "clip_grad_norm_: returns the total norm as a double, which waits for the device: not possible while ",
             grads[0].device(), " captures a CUDA graph");
  Tensor all = stack(norms);
  Tensor total = inf ? max(all) : norm(all, norm_type);
  if (error_if_nonfinite) {
    const double t = total.item<double>();
    WICK_CHECK(std::isfinite(t), "clip_grad_norm_: the total norm of order ", norm_type, " of the gradients is ", t,
               ", so they cannot be clipped (error_if_nonfinite)");
  }
  Tensor coef = clamp(max_norm / add(total, 1e-6), std::nullopt, 1.0);
  for (Tensor& g : grads) g.mul_(coef.to(g.dtype()));
  return total.item<double>();
}

void clip_grad_value_(const std::vector<Variable>& params, double clip_value) {
  WICK_CHECK(clip_value >= 0, "clip_grad_value_: clip_value must be non-negative, got ", clip_value);
  for (const Variable& p : params) {
    Variable g = p.grad();
    if (g.defined()) g.data().clamp_(-clip_value, clip_value);
  }
}

}  // namespace wick
