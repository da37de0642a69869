#pragma once
// Initialisers (torch.nn.init). Each writes into `t` in place (pass a parameter's data():
// the write bypasses autograd) and returns it. Random ones take an optional generator
// (default: this thread's). Fans follow PyTorch: for a weight [out, in, k...],
// fan_in = in * prod(k) and fan_out = out * prod(k). A tensor with no elements is left as it
// is.
#include <optional>
#include <utility>

#include <wick/tensor/generator.h>
#include <wick/tensor/tensor.h>

namespace wick::init {

enum class Nonlinearity { Linear, Conv, Sigmoid, Tanh, ReLU, LeakyReLU, SELU };
enum class FanMode { FanIn, FanOut };

// The recommended gain for a nonlinearity: 1 for linear/conv/sigmoid, 5/3 for tanh,
// sqrt(2) for relu, sqrt(2 / (1 + slope^2)) for leaky relu (slope `param`, default 0.01),
// 3/4 for selu.
double calculate_gain(Nonlinearity nonlinearity, std::optional<double> param = std::nullopt);
// (fan_in, fan_out); throws for fewer than 2 dims.
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Shape& shape);

Tensor uniform_(Tensor t, double lo = 0.0, double hi = 1.0, Generator* g = nullptr);
Tensor normal_(Tensor t, double mean = 0.0, double std = 1.0, Generator* g = nullptr);
Tensor constant_(Tensor t, double value);
Tensor zeros_(Tensor t);
Tensor ones_(Tensor t);

// U(-b, b) with b = gain * sqrt(3 / fan), gain from (nonlinearity, a).
Tensor kaiming_uniform_(Tensor t, double a = 0.0, FanMode mode = FanMode::FanIn,
                        Nonlinearity nonlinearity = Nonlinearity::LeakyReLU, Generator* g = nullptr);
// N(0, std^2) with std = gain / sqrt(fan).
Tensor kaiming_normal_(Tensor t, double a = 0.0, FanMode mode = FanMode::FanIn,
                       Nonlinearity nonlinearity = Nonlinearity::LeakyReLU, Generator* g = nullptr);
// U(-b, b) with b = gain * sqrt(6 / (fan_in + fan_out)).
Tensor xavier_uniform_(Tensor t, double gain = 1.0, Generator* g = nullptr);
// N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out)).
Tensor xavier_normal_(Tensor t, double gain = 1.0, Generator* g = nullptr);

// PyTorch's default for Linear and convolution layers: weight ~ kaiming_uniform(a = sqrt(5))
// (U(-1/sqrt(fan_in), 1/sqrt(fan_in))) and, when defined, bias ~ U(-1/sqrt(fan_in),
// 1/sqrt(fan_in)) with fan_in computed from the weight.
void layer_default_(Tensor weight, Tensor bias, Generator* g = nullptr);

}  // namespace wick::init
