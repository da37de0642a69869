#pragma once
// Tensor factories. Random factories take an optional generator (default: this thread's).
#include <wick/tensor/generator.h>
#include <wick/tensor/tensor.h>

namespace wick {

Tensor zeros(const Shape& shape, const Options& o = {});
Tensor ones(const Shape& shape, const Options& o = {});
Tensor full(const Shape& shape, const Scalar& value, const Options& o = {});
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
Tensor full_like(const Tensor& t, const Scalar& value);
Tensor rand_like(const Tensor& t, Generator* g = nullptr);
Tensor randn_like(const Tensor& t, Generator* g = nullptr);

}  // namespace wick
