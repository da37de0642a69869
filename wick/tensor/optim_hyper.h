#pragma once
// The fused optimizer steps' hyper-parameters (wick/tensor/optim_step.h runs them; the
// optimizers of wick/optim/ fill them) and their table.
#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <tuple>
#include <variant>

namespace wick {

// The fused multi-tensor optimizer steps, one row each: X(Hyper, name). From a row come
// `void name(params, grads, state, const Hyper&)` (wick/tensor/optim_step.h: its lists
// checked, then one kernel slot for every optimizer), its alternative of FusedHyper (what the
// slot takes) and its name in errors and the README's op list. The Hyper struct, above the
// table, holds the step's hyper-parameters and says which state buffers the step keeps
// (kState: their names, in the order its update reads them) and which of them it uses with
// these values (uses_state; an unused list may be empty), and what it refuses (refusal: a
// reason, empty when the values are fine). Its per-element update, once for the CPU and
// CUDA, is FusedUpdate<C, Hyper> in kernels/optim_math.h; its test row (a float64
// reference update), tests/tensor/fused_optim_table.h.

// SGD (torch.optim.SGD semantics).
struct SgdHyper {
  double lr = 0, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false;
  bool first_step = false;  // momentum buffers are set to the gradient rather than blended
  static constexpr std::array<const char*, 1> kState = {"momentum_buffer"};
  bool uses_state(size_t) const { return momentum != 0; }
  std::string refusal() const {
    return nesterov && (momentum <= 0 || dampening != 0) ? "nesterov momentum requires a momentum and zero dampening"
                                                         : "";
  }
};

// Adam / AdamW; `step` counts from 1.
struct AdamHyper {
  double lr = 0, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0;
  int64_t step = 1;
  bool decoupled_weight_decay = true;  // AdamW: p *= 1 - lr * wd; Adam: g += wd * p
  static constexpr std::array<const char*, 2> kState = {"exp_avg", "exp_avg_sq"};
  bool uses_state(size_t) const { return true; }
  std::string refusal() const { return step >= 1 ? "" : "step counts from 1, got " + std::to_string(step); }
};

// RMSprop (torch.optim.RMSprop semantics): grad_avg only when centered, momentum_buffer only
// with a momentum.
struct RMSpropHyper {
  double lr = 0.01, alpha = 0.99, eps = 1e-8, weight_decay = 0, momentum = 0;
  bool centered = false;
  static constexpr std::array<const char*, 3> kState = {"square_avg", "grad_avg", "momentum_buffer"};
  bool uses_state(size_t k) const { return k == 0 || (k == 1 && centered) || (k == 2 && momentum != 0); }
  std::string refusal() const { return ""; }
};

#define WICK_FUSED_OPTIMIZERS(X) \
  X(SgdHyper, sgd_step)          \
  X(AdamHyper, adam_step)        \
  X(RMSpropHyper, rmsprop_step)

// How many state buffers optimizer H keeps; the most any row keeps.
template <class H>
inline constexpr size_t kFusedStates = std::tuple_size_v<decltype(H::kState)>;
#define WICK_FUSED_STATES(H, name) kFusedStates<H>,
inline constexpr size_t kMaxFusedStates = std::max({WICK_FUSED_OPTIMIZERS(WICK_FUSED_STATES) size_t{0}});
#undef WICK_FUSED_STATES

// A row's function name (its op name in errors).
template <class H>
inline constexpr const char* fused_step_name = nullptr;
#define WICK_FUSED_NAME(H, name) \
  template <>                    \
  inline constexpr const char* fused_step_name<H> = #name;
WICK_FUSED_OPTIMIZERS(WICK_FUSED_NAME)
#undef WICK_FUSED_NAME

// One alternative per row: the hyper-parameters the fused_step kernel slot takes.
namespace detail {
template <class Tuple>
struct VariantOf;
template <class... H>
struct VariantOf<std::tuple<H...>> {
  using type = std::variant<H...>;
};
}  // namespace detail
#define WICK_FUSED_TUPLE(H, name) std::tuple<H>{},
using FusedHyper =
    detail::VariantOf<decltype(std::tuple_cat(WICK_FUSED_OPTIMIZERS(WICK_FUSED_TUPLE) std::tuple<>{}))>::type;
#undef WICK_FUSED_TUPLE

}  // namespace wick
