#include <wick/tensor/dispatch.h>
#include <wick/tensor/elementwise.h>
#include <wick/tensor/factories.h>

#include <cmath>

namespace wick {

Generator& default_generator() {
  thread_local Generator g;
  return g;
}

Tensor zeros(const Shape& shape, const Options& o) { return full(shape, 0, o); }
Tensor ones(const Shape& shape, const Options& o) { return full(shape, 1, o); }

Tensor full(const Shape& shape, const Scalar& value, const Options& o) {
  Tensor t = empty(shape, o);
  t.fill_(value);
  return t;
}

DType inferred_dtype(const Scalar& value) {
  return value.is_bool() ? DType::Bool : value.is_integral() ? DType::Int64 : kDefaultFloat;
}

Tensor full(const Shape& shape, const Scalar& value) { return full(shape, value, Options(inferred_dtype(value))); }

Tensor full(const Shape& shape, const Scalar& value, Device device) {
  return full(shape, value, Options(inferred_dtype(value), device));
}

Tensor arange(const Scalar& end) { return arange(0, end, 1); }

Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step) {
  bool all_int = !start.is_floating() && !end.is_floating() && !step.is_floating();
  return arange(start, end, step, all_int ? DType::Int64 : kDefaultFloat);
}

Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, const Options& o) {
  double a = start.to_double(), b = end.to_double(), s = step.to_double();
  WICK_CHECK(s != 0 && std::isfinite(a) && std::isfinite(b) && std::isfinite(s), "arange: invalid range start=", a,
             " end=", b, " step=", s);
  WICK_CHECK((b - a) * s >= 0, "arange: step ", s, " goes the wrong way from ", a, " to ", b);
  // PyTorch's bound: a count beyond int64 (1e19 steps, or b - a overflowing to inf) is
  // refused; converting it would be undefined.
  const double count = std::ceil((b - a) / s);
  WICK_CHECK(count < 0x1p63, "arange: start=", a, " end=", b, " step=", s, " gives ", count,
             " elements, more than int64 can count");
  const auto n = static_cast<int64_t>(count);
  Tensor t = empty({n}, o);
  if (n > 0) kernel_for(&KernelTable::sequence, "arange", o.device)(t, a, s);
  return t;
}

Tensor linspace(double start, double end, int64_t steps, const Options& o) {
  WICK_CHECK(steps >= 0, "linspace: steps must be non-negative, got ", steps);
  Tensor t = empty({steps}, o);
  // One step through the same kernel too, so start converts to an integer dtype as every
  // other value does (fill_ would refuse a value beyond the dtype).
  if (steps > 0)
    kernel_for(&KernelTable::sequence, "linspace", o.device)(t, start,
                                                             steps == 1 ? 0.0 : (end - start) / static_cast<double>(steps - 1));
  return t;
}

Tensor eye(int64_t n, int64_t m, const Options& o) {
  if (m < 0) m = n;
  WICK_CHECK(n >= 0, "eye: n must be non-negative, got ", n);
  Tensor t = zeros({n, m}, o);
  int64_t k = std::min(n, m);
  if (k > 0) t.as_strided({k}, {m + 1}, 0).fill_(1);  // the diagonal as a strided view
  return t;
}

namespace {
Tensor random_tensor(const char* op, const Shape& shape, const Options& o, RandomKind kind, double a, double b,
                     Generator* g) {
  Tensor t = empty(shape, o);
  if (t.numel() == 0) return t;
  PhiloxState st = (g ? *g : default_generator()).advance(static_cast<uint64_t>(t.numel()));
  kernel_for(&KernelTable::random, op, o.device)(t, kind, a, b, st);
  return t;
}
}  // namespace

Tensor rand(const Shape& shape, const Options& o, Generator* g) { return uniform(shape, 0.0, 1.0, o, g); }
Tensor randn(const Shape& shape, const Options& o, Generator* g) { return normal(shape, 0.0, 1.0, o, g); }

Tensor uniform(const Shape& shape, double lo, double hi, const Options& o, Generator* g) {
  WICK_CHECK(is_floating(o.dtype), "uniform: expects a floating dtype, got ", o.dtype);
  WICK_CHECK(lo <= hi, "uniform: lo ", lo, " is greater than hi ", hi);
  return random_tensor("uniform", shape, o, RandomKind::Uniform, lo, hi, g);
}

Tensor normal(const Shape& shape, double mean, double std, const Options& o, Generator* g) {
  WICK_CHECK(is_floating(o.dtype), "normal: expects a floating dtype, got ", o.dtype);
  WICK_CHECK(std >= 0, "normal: std must be non-negative, got ", std);
  return random_tensor("normal", shape, o, RandomKind::Normal, mean, std, g);
}

Tensor randint(int64_t low, int64_t high, const Shape& shape, const Options& o, Generator* g) {
  WICK_CHECK(low < high, "randint: low ", low, " must be less than high ", high);
  WICK_CHECK(o.dtype != DType::Bool, "randint: bool is not a valid dtype");
  return random_tensor("randint", shape, o, RandomKind::RandInt, static_cast<double>(low), static_cast<double>(high),
                       g);
}

Tensor bernoulli(const Shape& shape, double p, const Options& o, Generator* g) {
  WICK_CHECK(p >= 0 && p <= 1, "bernoulli: p must be in [0, 1], got ", p);
  return random_tensor("bernoulli", shape, o, RandomKind::Bernoulli, p, 0.0, g);
}

Tensor bernoulli(const Tensor& p, Generator* g) {
  WICK_CHECK(p.is_floating_point(), "bernoulli: p must be floating, got ", p.dtype());
  Tensor u = rand(p.shape(), Options(p.dtype(), p.device()), g);
  return lt(u, p).to(p.dtype());
}

Tensor empty_like(const Tensor& t) { return empty(t.shape(), t.options()); }
Tensor zeros_like(const Tensor& t) { return zeros(t.shape(), t.options()); }
Tensor ones_like(const Tensor& t) { return ones(t.shape(), t.options()); }
Tensor full_like(const Tensor& t, const Scalar& value) { return full(t.shape(), value, t.options()); }
Tensor full_like(const Tensor& t, const Scalar& value, DType dtype) {
  return full(t.shape(), value, Options(dtype, t.device()));
}
Tensor rand_like(const Tensor& t, Generator* g) { return rand(t.shape(), t.options(), g); }
Tensor randn_like(const Tensor& t, Generator* g) { return randn(t.shape(), t.options(), g); }

}  // namespace wick
