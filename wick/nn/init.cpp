#include <wick/nn/init.h>

#include <cmath>

#include <wick/tensor/factories.h>

namespace wick::init {

double calculate_gain(Nonlinearity nonlinearity, std::optional<double> param) {
  switch (nonlinearity) {
    case Nonlinearity::Linear:
    case Nonlinearity::Conv:
    case Nonlinearity::Sigmoid:
      return 1.0;
    case Nonlinearity::Tanh:
      return 5.0 / 3.0;
    case Nonlinearity::ReLU:
      return std::sqrt(2.0);
    case Nonlinearity::LeakyReLU: {
      const double slope = param.value_or(0.01);
      return std::sqrt(2.0 / (1.0 + slope * slope));
    }
    case Nonlinearity::SELU:
      return 0.75;
  }
  detail::throw_error("calculate_gain: unknown nonlinearity");
}

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Shape& shape) {
  WICK_CHECK(shape.size() >= 2, "calculate_fan_in_and_fan_out: fans need at least 2 dims, got shape ",
             shape_str(shape));
  int64_t receptive = 1;
  for (size_t i = 2; i < shape.size(); ++i) receptive *= shape[i];
  return {shape[1] * receptive, shape[0] * receptive};
}

namespace {

Tensor check_floating(const char* op, Tensor t) {
  WICK_CHECK(t.defined(), op, ": the tensor is undefined");
  WICK_CHECK(t.is_floating_point(), op, ": needs a floating tensor, got ", dtype_name(t.dtype()), " of shape ",
             shape_str(t.shape()));
  return t;
}

double fan(const Shape& shape, FanMode mode) {
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(shape);
  return static_cast<double>(mode == FanMode::FanIn ? fan_in : fan_out);
}

}  // namespace

Tensor uniform_(Tensor t, double lo, double hi, Generator* g) {
  check_floating("uniform_", t);
  WICK_CHECK(lo <= hi, "uniform_: lower bound ", lo, " is above upper bound ", hi);
  if (t.numel() == 0) return t;
  t.copy_(uniform(t.shape(), lo, hi, t.options(), g));
  return t;
}

Tensor normal_(Tensor t, double mean, double std, Generator* g) {
  check_floating("normal_", t);
  WICK_CHECK(std >= 0, "normal_: std must be >= 0, got ", std);
  if (t.numel() == 0) return t;
  t.copy_(normal(t.shape(), mean, std, t.options(), g));
  return t;
}

Tensor constant_(Tensor t, double value) {
  check_floating("constant_", t);
  t.fill_(value);
  return t;
}

Tensor zeros_(Tensor t) { return constant_(std::move(t), 0.0); }
Tensor ones_(Tensor t) { return constant_(std::move(t), 1.0); }

Tensor kaiming_uniform_(Tensor t, double a, FanMode mode, Nonlinearity nonlinearity, Generator* g) {
  check_floating("kaiming_uniform_", t);
  if (t.numel() == 0) return t;
  const double bound = calculate_gain(nonlinearity, a) * std::sqrt(3.0 / fan(t.shape(), mode));
  return uniform_(std::move(t), -bound, bound, g);
}

Tensor kaiming_normal_(Tensor t, double a, FanMode mode, Nonlinearity nonlinearity, Generator* g) {
  check_floating("kaiming_normal_", t);
  if (t.numel() == 0) return t;
  const double std = calculate_gain(nonlinearity, a) / std::sqrt(fan(t.shape(), mode));
  return normal_(std::move(t), 0.0, std, g);
}

Tensor xavier_uniform_(Tensor t, double gain, Generator* g) {
  check_floating("xavier_uniform_", t);
  if (t.numel() == 0) return t;
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t.shape());
  const double bound = gain * std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
  return uniform_(std::move(t), -bound, bound, g);
}

Tensor xavier_normal_(Tensor t, double gain, Generator* g) {
  check_floating("xavier_normal_", t);
  if (t.numel() == 0) return t;
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t.shape());
  const double std = gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out));
  return normal_(std::move(t), 0.0, std, g);
}

void layer_default_(Tensor weight, Tensor bias, Generator* g) {
  kaiming_uniform_(weight, std::sqrt(5.0), FanMode::FanIn, Nonlinearity::LeakyReLU, g);
  if (!bias.defined()) return;
  const int64_t fan_in = calculate_fan_in_and_fan_out(weight.shape()).first;
  const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
  uniform_(std::move(bias), -bound, bound, g);
}

}  // namespace wick::init
