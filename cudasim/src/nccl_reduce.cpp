// Element types and reductions of the simulated NCCL (see nccl_reduce.h).
#include "nccl_reduce.h"

#include <type_traits>

#include "float_formats.h"

namespace cudasim::nccl {

size_t type_size(ncclDataType_t type) {
  switch (type) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2: return 1;
    case ncclFloat16:
    case ncclBfloat16: return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32: return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64: return 8;
    default: return 0;
  }
}

bool type_reduces(ncclDataType_t type) {
  return type_size(type) != 0 && type != ncclFloat8e4m3 && type != ncclFloat8e5m2;
}

const char* type_name(ncclDataType_t type) {
  switch (type) {
    case ncclInt8: return "ncclInt8";
    case ncclUint8: return "ncclUint8";
    case ncclInt32: return "ncclInt32";
    case ncclUint32: return "ncclUint32";
    case ncclInt64: return "ncclInt64";
    case ncclUint64: return "ncclUint64";
    case ncclFloat16: return "ncclFloat16";
    case ncclFloat32: return "ncclFloat32";
    case ncclFloat64: return "ncclFloat64";
    case ncclBfloat16: return "ncclBfloat16";
    case ncclFloat8e4m3: return "ncclFloat8e4m3";
    case ncclFloat8e5m2: return "ncclFloat8e5m2";
    default: return "an invalid datatype";
  }
}

const char* op_name(ncclRedOp_t op) {
  switch (op) {
    case ncclSum: return "sum";
    case ncclProd: return "prod";
    case ncclMax: return "max";
    case ncclMin: return "min";
    case ncclAvg: return "avg";
    default: return nullptr;
  }
}

namespace {

// Arithmetic of one storage type S, for reduce(). `kScaleAvg`: ncclAvg multiplies inputs by a
// scalar before summing (floating types) instead of dividing the total (integers).
template <class T>
struct IntArith {
  using S = T;
  using U = std::make_unsigned_t<T>;
  static constexpr bool kScaleAvg = false;
  static S add(S a, S b) { return S(U(U(a) + U(b))); }  // unsigned: wraps instead of UB
  static S mul(S a, S b) { return S(U(U(a) * U(b))); }
  static S max(S a, S b) { return a < b ? b : a; }
  static S min(S a, S b) { return b < a ? b : a; }
  static S divide(S a, int n) { return S(a / n); }  // promotes; C++ division truncates toward zero
  static S scalar(int) { return S(1); }
  static S scale(S a, S) { return a; }
};

template <class T>
struct FloatArith {
  using S = T;
  static constexpr bool kScaleAvg = true;
  static S add(S a, S b) { return a + b; }
  static S mul(S a, S b) { return a * b; }
  static S max(S a, S b) { return a < b ? b : a; }
  static S min(S a, S b) { return b < a ? b : a; }
  static S divide(S a, int) { return a; }
  static S scalar(int n) { return S(1.0 / n); }
  static S scale(S a, S s) { return a * s; }
};

// half / bfloat16 stored as 16 bits; every step is done in float and rounded back.
template <float (*Widen)(uint16_t), uint16_t (*Narrow)(float)>
struct Arith16 {
  using S = uint16_t;
  static constexpr bool kScaleAvg = true;
  static S add(S a, S b) { return Narrow(Widen(a) + Widen(b)); }
  static S mul(S a, S b) { return Narrow(Widen(a) * Widen(b)); }
  static S max(S a, S b) { return Widen(a) < Widen(b) ? b : a; }
  static S min(S a, S b) { return Widen(b) < Widen(a) ? b : a; }
  static S divide(S a, int) { return a; }
  static S scalar(int n) { return Narrow(1.0f / float(n)); }
  static S scale(S a, S s) { return Narrow(Widen(a) * Widen(s)); }
};

// Folds rank by rank (the outer loop over ranks keeps the inner loop simple enough to vectorise
// for the native types) with `f`, after mapping every input through `pre`.
template <class S, class F, class Pre>
void fold(S* out, const void* const* in, int n, size_t count, F f, Pre pre) {
  const S* first = static_cast<const S*>(in[0]);
  for (size_t i = 0; i < count; ++i) out[i] = pre(first[i]);
  for (int q = 1; q < n; ++q) {
    const S* next = static_cast<const S*>(in[q]);
    for (size_t i = 0; i < count; ++i) out[i] = f(out[i], pre(next[i]));
  }
}

template <class A>
void reduce_as(void* out_, const void* const* in, int n, size_t count, ncclRedOp_t op) {
  using S = typename A::S;
  S* out = static_cast<S*>(out_);
  // Lambdas rather than function pointers, so that the compiler inlines them into the loops.
  auto same = [](S x) { return x; };
  auto add = [](S a, S b) { return A::add(a, b); };
  switch (op) {
    case ncclSum: fold(out, in, n, count, add, same); break;
    case ncclProd: fold(out, in, n, count, [](S a, S b) { return A::mul(a, b); }, same); break;
    case ncclMax: fold(out, in, n, count, [](S a, S b) { return A::max(a, b); }, same); break;
    case ncclMin: fold(out, in, n, count, [](S a, S b) { return A::min(a, b); }, same); break;
    case ncclAvg:
      if constexpr (A::kScaleAvg) {
        const S s = A::scalar(n);
        fold(out, in, n, count, add, [s](S x) { return A::scale(x, s); });
      } else {
        fold(out, in, n, count, add, same);
        for (size_t i = 0; i < count; ++i) out[i] = A::divide(out[i], n);
      }
      break;
    default: break;  // rejected before any work is enqueued
  }
}

}  // namespace

void reduce(void* out, const void* const* in, int n, size_t count, ncclDataType_t type, ncclRedOp_t op) {
  switch (type) {
    case ncclInt8: return reduce_as<IntArith<int8_t>>(out, in, n, count, op);
    case ncclUint8: return reduce_as<IntArith<uint8_t>>(out, in, n, count, op);
    case ncclInt32: return reduce_as<IntArith<int32_t>>(out, in, n, count, op);
    case ncclUint32: return reduce_as<IntArith<uint32_t>>(out, in, n, count, op);
    case ncclInt64: return reduce_as<IntArith<int64_t>>(out, in, n, count, op);
    case ncclUint64: return reduce_as<IntArith<uint64_t>>(out, in, n, count, op);
    case ncclFloat32: return reduce_as<FloatArith<float>>(out, in, n, count, op);
    case ncclFloat64: return reduce_as<FloatArith<double>>(out, in, n, count, op);
    case ncclFloat16: return reduce_as<Arith16<half_to_float, float_to_half>>(out, in, n, count, op);
    case ncclBfloat16: return reduce_as<Arith16<bf16_to_float, float_to_bf16>>(out, in, n, count, op);
    default: return;  // rejected before any work is enqueued
  }
}

}  // namespace cudasim::nccl
