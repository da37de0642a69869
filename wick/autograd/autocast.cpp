#include <wick/autograd/autocast.h>

#include <unordered_map>
#include <utility>

#include <wick/autograd/grad_mode.h>
#include <wick/autograd/ops.h>
#include <wick/tensor/error.h>

namespace wick {

namespace {

#include "wick/autograd/generated/autocast_ops_defs.inc"

struct CacheKey {
  const Variable::Impl* source;
  DType dtype;
  bool operator==(const CacheKey& o) const { return source == o.source && dtype == o.dtype; }
};
struct CacheKeyHash {
  size_t operator()(const CacheKey& k) const {
    return std::hash<const void*>()(k.source) ^ (static_cast<size_t>(k.dtype) << 1);
  }
};
struct CacheEntry {
  Variable source;  // keeps the key's address from being reused while the entry lives
  Variable cast;
};

struct AutocastState {
  bool enabled[kNumDeviceTypes] = {false, false};
  DType dtype[kNumDeviceTypes] = {DType::BFloat16, DType::BFloat16};
  int guards = 0;     // AutocastGuards alive on this thread
  int suspended = 0;  // listed ops' bodies and backward passes in progress
  bool any = false;   // some device type enabled and nothing suspended
  std::unordered_map<CacheKey, CacheEntry, CacheKeyHash> cache;

  void refresh() { any = suspended == 0 && (enabled[0] || enabled[1]); }
};

thread_local AutocastState tls;

size_t index_of(DeviceType t) { return static_cast<size_t>(t); }

// Whether autocast may cast x at all: floating, not float64 (as PyTorch), on an enabled type.
bool eligible(const Variable& x) {
  if (!x.defined()) return false;
  DType t = x.dtype();
  return (t == DType::Float32 || t == DType::Float16 || t == DType::BFloat16) && tls.enabled[index_of(x.device().type)];
}

// Parameters are cast once per outermost guard; anything else each time it is used.
Variable cast_to(const Variable& x, DType target) {
  if (x.dtype() == target) return Variable();
  bool cacheable = x.is_leaf() && x.requires_grad() && grad_enabled();
  if (!cacheable) return to(x, target);
  CacheKey key{x.impl().get(), target};
  auto it = tls.cache.find(key);
  if (it != tls.cache.end()) return it->second.cast;
  Variable cast = to(x, target);
  tls.cache.emplace(key, CacheEntry{x, cast});
  return cast;
}

// What to use instead of a Refused op.
const char* refusal_reason(AutocastOp op) {
  switch (op) {
    case AutocastOp::binary_cross_entropy:
      return "it is unsafe in 16 bits (a sigmoid's output near 1 rounds to 1, where log(1 - x) is lost); give the "
             "logits to bce_with_logits, which is safe to autocast, or compute it outside the guard";
    default: return "it is unsafe in 16 bits";
  }
}

}  // namespace

AutocastCategory autocast_category(AutocastOp op) { return kCategories[static_cast<size_t>(op)]; }
const char* autocast_op_name(AutocastOp op) { return kNames[static_cast<size_t>(op)]; }

AutocastGuard::AutocastGuard(Device device, DType dtype, bool enabled)
    : type_(device.type), previous_enabled_(tls.enabled[index_of(type_)]), previous_dtype_(tls.dtype[index_of(type_)]) {
  WICK_CHECK(dtype == DType::BFloat16 || dtype == DType::Float16,
             "AutocastGuard: the low precision must be float16 or ", "bfloat16, got ", dtype_name(dtype));
  tls.enabled[index_of(type_)] = enabled;
  tls.dtype[index_of(type_)] = dtype;
  ++tls.guards;
  tls.refresh();
}

AutocastGuard::~AutocastGuard() {
  tls.enabled[index_of(type_)] = previous_enabled_;
  tls.dtype[index_of(type_)] = previous_dtype_;
  if (--tls.guards == 0) tls.cache.clear();
  tls.refresh();
}

bool autocast_enabled(DeviceType type) { return tls.enabled[index_of(type)]; }
DType autocast_dtype(DeviceType type) { return tls.dtype[index_of(type)]; }
bool autocast_any() { return tls.any; }
size_t autocast_cache_size() { return tls.cache.size(); }

namespace detail {

void suspend_autocast() {
  ++tls.suspended;
  tls.refresh();
}

void resume_autocast() {
  --tls.suspended;
  tls.refresh();
}

AutocastSnapshot autocast_snapshot() {
  AutocastSnapshot s;
  for (int i = 0; i < kNumDeviceTypes; ++i) {
    s.enabled[i] = tls.enabled[i] && tls.suspended == 0;
    s.dtype[i] = tls.dtype[i];
  }
  return s;
}

struct AutocastReplay::Saved {
  AutocastState state;
};

AutocastReplay::AutocastReplay(const AutocastSnapshot& s) : saved_(std::make_unique<Saved>()) {
  std::swap(saved_->state, tls);
  for (int i = 0; i < kNumDeviceTypes; ++i) {
    tls.enabled[i] = s.enabled[i];
    tls.dtype[i] = s.dtype[i];
  }
  tls.guards = 1;  // the replay is the outermost guard of its cache
  tls.refresh();
}

AutocastReplay::~AutocastReplay() { std::swap(saved_->state, tls); }

void begin_autocast_op(AutocastOp op, const Variable* const* inputs, Variable* cast, size_t n) {
  switch (autocast_category(op)) {
    case AutocastCategory::LowerPrecision:
      for (size_t i = 0; i < n; ++i)
        if (eligible(*inputs[i])) cast[i] = cast_to(*inputs[i], tls.dtype[index_of(inputs[i]->device().type)]);
      break;
    case AutocastCategory::Float32:
      for (size_t i = 0; i < n; ++i)
        if (eligible(*inputs[i])) cast[i] = cast_to(*inputs[i], DType::Float32);
      break;
    case AutocastCategory::Promote: {
      bool any_floating = false;
      DType widest = DType::Float16;
      for (size_t i = 0; i < n; ++i) {
        if (!inputs[i]->defined() || !is_floating(inputs[i]->dtype())) continue;
        widest = any_floating ? promote_types(widest, inputs[i]->dtype()) : inputs[i]->dtype();
        any_floating = true;
      }
      for (size_t i = 0; i < n && any_floating; ++i)
        if (eligible(*inputs[i])) cast[i] = cast_to(*inputs[i], widest);
      break;
    }
    case AutocastCategory::Refused:
      // Any dtype, float64 included: torch.autocast refuses the op itself, not a cast.
      for (size_t i = 0; i < n; ++i) {
        const Variable& x = *inputs[i];
        if (!x.defined() || !tls.enabled[index_of(x.device().type)]) continue;
        detail::throw_error(autocast_op_name(op), ": refused under autocast (", dtype_name(x.dtype()), " ",
                            shape_str(x.shape()), " on ", x.device().str(),
                            "), as torch.autocast refuses it: ", refusal_reason(op));
      }
      break;
  }
  suspend_autocast();
}

}  // namespace detail

}  // namespace wick
