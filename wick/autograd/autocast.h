#pragma once
// Autocast: under an AutocastGuard the ops of wick/autograd/autocast_policy.h choose the dtype they
// compute in (16-bit products, float32 exp/softmax/norms/losses), as torch.autocast does:
//
//   {
//     AutocastGuard autocast(Device::cuda(), DType::BFloat16);
//     Variable loss = cross_entropy(model.forward(x), y);   // conv/linear in bf16, loss in fp32
//   }
//   loss.backward();   // each op's gradient in the dtype its forward used; fp32 into the weights
//
// Only Variable ops autocast (Tensor ops are the explicit-dtype layer below). Inputs on the
// guard's device type are cast through the differentiable to(), so gradients flow back into
// float32 parameters. Casts of parameters (leaves that require grad) are cached until the
// outermost guard of this thread ends: one cast per weight per forward, however often it is
// used. Backward never autocasts (the engine turns it off). The state is per thread and per
// device type, like grad mode.
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>

#include <wick/autograd/autocast_policy.h>
#include <wick/autograd/variable.h>

namespace wick {

enum class AutocastCategory : uint8_t { LowerPrecision, Float32, Promote, Refused };

#include <wick/autograd/generated/autocast_ops.inc>

AutocastCategory autocast_category(AutocastOp op);
const char* autocast_op_name(AutocastOp op);

// Turns autocast on (or off, with enabled = false) for `device`'s type for its scope on this
// thread; `dtype` is the low precision, Float16 or BFloat16 (anything else is a wick::Error).
class AutocastGuard {
 public:
  explicit AutocastGuard(Device device, DType dtype = DType::BFloat16, bool enabled = true);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  DeviceType type_;
  bool previous_enabled_;
  DType previous_dtype_;
};

bool autocast_enabled(DeviceType type);
DType autocast_dtype(DeviceType type);
// Whether autocast is on for any device type on this thread (one thread-local read: the test
// every listed op makes first).
bool autocast_any();
// The number of parameter casts cached now (for tests).
size_t autocast_cache_size();

namespace detail {
// Fills cast[i] with inputs[i] cast as `op`'s category says, left undefined where nothing
// changes (or where inputs[i] is undefined). Suspends autocast until resume_autocast().
void begin_autocast_op(AutocastOp op, const Variable* const* inputs, Variable* cast, size_t n);
// Autocast off (nestable) without ending any guard: listed ops' bodies and backward.
void suspend_autocast();
void resume_autocast();

// What autocast does on this thread now, as a checkpointed forward must see it again when it
// is recomputed inside backward (where the engine has turned autocast off).
struct AutocastSnapshot {
  bool enabled[kNumDeviceTypes] = {false, false};  // by DeviceType; false while suspended
  DType dtype[kNumDeviceTypes] = {DType::BFloat16, DType::BFloat16};
};
AutocastSnapshot autocast_snapshot();
// Sets this thread's autocast to `s`, not suspended, with a cast cache of its own, and puts
// everything back when it ends. The own cache keeps a segment's parameter casts inside the
// segment's graph: a cast cached by the surrounding forward would be a node outside it.
class AutocastReplay {
 public:
  explicit AutocastReplay(const AutocastSnapshot& s);
  ~AutocastReplay();
  AutocastReplay(const AutocastReplay&) = delete;
  AutocastReplay& operator=(const AutocastReplay&) = delete;

 private:
  struct Saved;
  std::unique_ptr<Saved> saved_;
};
}  // namespace detail

// What a listed op does first: `AutocastArgs args(AutocastOp::matmul, a, b);` then uses args[0],
// args[1] for a and b. While it lives (the op's body) autocast is off, so an op's internals
// run in the dtype it chose, as PyTorch's autocast wrappers do. Costs one thread-local read
// when no guard is active.
template <size_t N>
class AutocastArgs {
 public:
  template <class... V>
  explicit AutocastArgs(AutocastOp op, const V&... inputs) : inputs_{&inputs...} {
    if (autocast_any()) {
      active_ = true;
      detail::begin_autocast_op(op, inputs_.data(), cast_.data(), N);
    }
  }
  ~AutocastArgs() {
    if (active_) detail::resume_autocast();
  }
  AutocastArgs(const AutocastArgs&) = delete;
  AutocastArgs& operator=(const AutocastArgs&) = delete;

  const Variable& operator[](size_t i) const { return cast_[i].defined() ? cast_[i] : *inputs_[i]; }

 private:
  std::array<const Variable*, N> inputs_;
  std::array<Variable, N> cast_;
  bool active_ = false;
};
template <class... V>
AutocastArgs(AutocastOp, const V&...) -> AutocastArgs<sizeof...(V)>;

}  // namespace wick
