// Entry points of the multi-tensor optimizer steps: every list is checked against params
// (length, shape, dtype, device, contiguity of what is written) before any tensor changes.
#include <wick/tensor/optim_step.h>

#include <cmath>
#include <string>

#include <wick/tensor/dispatch.h>

namespace wick {

namespace {

// Checks list `what` against params; `written` lists must be contiguous (updated in place).
// Returns the list with read-only entries made contiguous.
std::vector<Tensor> checked_list(const char* op, const char* what, const std::vector<Tensor>& list,
                                 const std::vector<Tensor>& params, bool written) {
  WICK_CHECK(list.size() == params.size(), op, ": ", what, " has ", list.size(), " tensors but params has ",
             params.size());
  std::vector<Tensor> out;
  out.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    const Tensor& t = list[i];
    const Tensor& p = params[i];
    WICK_CHECK(t.defined(), op, ": ", what, "[", i, "] is undefined");
    WICK_CHECK(t.shape() == p.shape() && t.dtype() == p.dtype() && t.device() == p.device(), op, ": ", what, "[", i,
               "] is ", shape_str(t.shape()), " ", dtype_name(t.dtype()), " on ", t.device().str(), " but params[", i,
               "] is ", shape_str(p.shape()), " ", dtype_name(p.dtype()), " on ", p.device().str());
    WICK_CHECK(!written || t.is_contiguous(), op, ": ", what, "[", i, "] of shape ", shape_str(t.shape()),
               " must be contiguous (it is updated in place)");
    out.push_back(written ? t : t.contiguous());
  }
  return out;
}

// Checks params themselves: defined, floating, contiguous, all on one device. Returns it.
Device checked_params(const char* op, const std::vector<Tensor>& params) {
  Device d = params.empty() ? Device::cpu() : params[0].device();
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    WICK_CHECK(p.defined(), op, ": params[", i, "] is undefined");
    WICK_CHECK(p.is_floating_point(), op, ": params[", i, "] has dtype ", dtype_name(p.dtype()),
               "; only floating point parameters can be stepped");
    WICK_CHECK(p.is_contiguous(), op, ": params[", i, "] of shape ", shape_str(p.shape()),
               " must be contiguous (it is updated in place)");
    WICK_CHECK(p.device() == d, op, ": params[", i, "] is on ", p.device().str(), " but params[0] is on ", d.str(),
               "; step each device's parameters separately");
  }
  return d;
}

// A row of WICK_FUSED_OPTIMIZERS: its refusal, then every list, then its kernel.
template <class Hyper>
void fused_step(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const FusedState<Hyper>& state,
                const Hyper& h) {
  const char* op = fused_step_name<Hyper>;
  const Device d = checked_params(op, params);
  const std::string refusal = h.refusal();
  WICK_CHECK(refusal.empty(), op, ": ", refusal);
  const std::vector<Tensor> g = checked_list(op, "grads", grads, params, false);
  FusedStateLists s;
  for (size_t k = 0; k < state.size(); ++k)
    if (h.uses_state(k)) s[k] = checked_list(op, Hyper::kState[k], state[k], params, true);
  if (params.empty()) return;
  kernel_for(&KernelTable::fused_step, op, d)(params, g, s, FusedHyper(h));
}

}  // namespace

#include "wick/tensor/generated/fused_optimizer_ops_defs.inc"

void adam_step_capturable(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                          const FusedState<AdamHyper>& state, const AdamHyper& h, const Tensor& scalars,
                          FusedTables& tables) {
  const char* op = "adam_step_capturable";
  const Device d = checked_params(op, params);
  const std::vector<Tensor> g = checked_list(op, "grads", grads, params, false);
  FusedStateLists s;
  for (size_t k = 0; k < state.size(); ++k) s[k] = checked_list(op, AdamHyper::kState[k], state[k], params, true);
  for (size_t i = 0; i < params.size(); ++i)
    WICK_CHECK(params[i].dtype() == params[0].dtype(), op, ": params[", i, "] is ", dtype_name(params[i].dtype()),
               " but params[0] is ", dtype_name(params[0].dtype()), "; one dtype per call");
  WICK_CHECK(scalars.defined() && scalars.dtype() == DType::Float64 && scalars.numel() == 2 &&
                 scalars.is_contiguous() && scalars.device() == d,
             op, ": scalars must be a contiguous float64 tensor of 2 elements on ", d.str(), ", got ",
             scalars.defined()
                 ? shape_str(scalars.shape()) + " " + dtype_name(scalars.dtype()) + " on " + scalars.device().str()
                 : std::string("undefined"));
  if (params.empty()) return;
  kernel_for(&KernelTable::adam_step_capturable, op, d)(params, g, s, h, scalars, tables);
}

void unscale_grads_(const std::vector<Tensor>& grads, const Tensor& found_inf, double inv_scale) {
  const char* op = "unscale_grads_";
  WICK_CHECK(found_inf.defined() && found_inf.dtype() == DType::Float32 && found_inf.numel() == 1, op,
             ": found_inf must be a float32 tensor of one element, got ",
             found_inf.defined() ? shape_str(found_inf.shape()) + " " + dtype_name(found_inf.dtype()) : "undefined");
  WICK_CHECK(std::isfinite(inv_scale), op, ": inv_scale must be finite, got ", inv_scale);
  const Device d = found_inf.device();
  for (size_t i = 0; i < grads.size(); ++i) {
    const Tensor& g = grads[i];
    WICK_CHECK(g.defined(), op, ": grads[", i, "] is undefined");
    WICK_CHECK(g.is_floating_point(), op, ": grads[", i, "] has dtype ", dtype_name(g.dtype()),
               "; only floating point gradients are scaled");
    WICK_CHECK(g.is_contiguous(), op, ": grads[", i, "] of shape ", shape_str(g.shape()),
               " must be contiguous (it is updated in place)");
    WICK_CHECK(g.device() == d, op, ": grads[", i, "] is on ", g.device().str(), " but found_inf is on ", d.str(),
               "; unscale each device's gradients with its own flag");
  }
  if (grads.empty()) return;
  kernel_for(&KernelTable::unscale_grads, op, d)(grads, found_inf, inv_scale);
}

void stochastic_round_(const Tensor& out, const Tensor& in, Generator* g) {
  const char* op = "stochastic_round_";
  WICK_CHECK(out.defined() && in.defined(), op, ": out and in must be defined");
  WICK_CHECK(out.dtype() == DType::BFloat16 && in.dtype() == DType::Float32, op,
             ": rounds float32 into bfloat16, got in ", dtype_name(in.dtype()), " and out ", dtype_name(out.dtype()));
  WICK_CHECK(out.shape() == in.shape() && out.device() == in.device(), op, ": out is ", shape_str(out.shape()), " on ",
             out.device().str(), " but in is ", shape_str(in.shape()), " on ", in.device().str());
  WICK_CHECK(out.is_contiguous() && in.is_contiguous(), op, ": out and in must be contiguous");
  if (out.numel() == 0) return;
  PhiloxState st = (g ? *g : default_generator()).advance(static_cast<uint64_t>(out.numel()));
  kernel_for(&KernelTable::stochastic_round, op, out.device())(out, in, st);
}

}  // namespace wick
