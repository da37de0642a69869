#pragma once
// Tensor factories. Random factories take an optional generator (default: this thread's).
#include <wick/tensor/generator.h>
#include <wick/tensor/tensor.h>

namespace wick {

Tensor zeros(const Shape& shape, const Options& o = {});
Tensor ones(const Shape& shape, const Options& o = {});
// `shape` filled with `value`. Without a dtype (no argument, or only a device) the dtype
// follows how the value was written, as torch.full's: a bool gives Bool, an integer Int64,
// a floating value float32 (kDefaultFloat); so full({4}, int64_t{5}) is int64 and
// full({4}, 5.0) float32. An Options (or a DType, which converts to one) always carries a
// dtype, float32 unless set, and that is the dtype: full({4}, 5, Options(Device::cuda()))
// is float32, full({4}, 5, Device::cuda()) int64.
Tensor full(const Shape& shape, const Scalar& value);
Tensor full(const Shape& shape, const Scalar& value, Device device);
Tensor full(const Shape& shape, const Scalar& value, const Options& o);
// The dtype full() infers for `value` when none is given.
DType inferred_dtype(const Scalar& value);
// [start, end) by step. The dtype defaults to int64 when all three are integers, else float32.
Tensor arange(const Scalar& end);
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step = 1);
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, const Options& o);
Tensor linspace(double start, double end, int64_t steps, const Options& o = {});
Tensor eye(int64_t n, int64_t m = -1, const Options& o = {});

Tensor rand(const Shape& shape, const Options& o = {}, Generator* g = nullptr);   // U[0, 1)
Tensor randn(const Shape& shape, const Options& o = {}, Generator* g = nullptr);  // N(0, 1)
Tensor randint(int64_t low, int64_t high, const Shape& shape, const Options& o = DType::Int64,
               Generator* g = nullptr);                                          // [low, high)
Tensor bernoulli(const Tensor& p, Generator* g = nullptr);                        // 0/1 in p's dtype
Tensor bernoulli(const Shape& shape, double p, const Options& o = {}, Generator* g = nullptr);
// Uniform in [lo, hi) and normal(mean, std) into a new tensor.
Tensor uniform(const Shape& shape, double lo, double hi, const Options& o = {}, Generator* g = nullptr);
Tensor normal(const Shape& shape, double mean, double std, const Options& o = {}, Generator* g = nullptr);

Tensor empty_like(const Tensor& t);
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
// t's shape, dtype and device, as torch.full_like: the dtype is t's whatever the value's
// kind (full_like(float_tensor, 5) is float32); pass `dtype` for another.
Tensor full_like(const Tensor& t, const Scalar& value);
Tensor full_like(const Tensor& t, const Scalar& value, DType dtype);
Tensor rand_like(const Tensor& t, Generator* g = nullptr);
Tensor randn_like(const Tensor& t, Generator* g = nullptr);

}  // namespace wick
