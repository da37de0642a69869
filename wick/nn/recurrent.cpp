#include <wick/nn/recurrent.h>

#include <cmath>
#include <string>

#include <wick/autograd/composites.h>
#include <wick/autograd/nn_ops.h>
#include <wick/autograd/ops.h>
#include <wick/nn/dropout.h>
#include <wick/nn/init.h>
#include <wick/tensor/factories.h>

namespace wick {
namespace {

using Kind = RNNBase::Kind;

struct State {
  Variable h, c;  // c: LSTM only
};

RecurrentCell cell_of(Kind kind, RNNActivation act) {
  switch (kind) {
    case Kind::RNN: return act == RNNActivation::Tanh ? RecurrentCell::RnnTanh : RecurrentCell::RnnRelu;
    case Kind::LSTM: return RecurrentCell::Lstm;
    case Kind::GRU: return RecurrentCell::Gru;
  }
  throw Error("recurrent step: unknown layer kind");
}

// One time step of every layer kind (the file comment of recurrent.h has the math): the
// hidden state's product, then the fused element-wise part. `gi` is the input's part,
// x W_ih^T + b_ih [N, G * hidden], computed for all steps at once.
State step(Kind kind, RNNActivation act, const Variable& gi, const State& s, const Variable& w_hh,
           const Variable& b_hh, const Variable& w_hr) {
  const RecurrentCell cell = cell_of(kind, act);
  RecurrentCellOutput o =
      recurrent_cell(cell, gi, linear(s.h, w_hh, b_hh), kind == Kind::LSTM ? s.c : kind == Kind::GRU ? s.h : Variable());
  if (w_hr.defined()) o.h = linear(o.h, w_hr);  // LSTM's projection
  return {o.h, o.c};
}

// A state passed in, or zeros: `given` must be [count, N, features] (unbatched: [count,
// features]); returned batched.
Variable initial_state(const char* layer, const char* what, const Variable& given, int64_t count, int64_t n,
                       int64_t features, bool unbatched, const Variable& x) {
  if (!given.defined()) return Variable(zeros({count, n, features}, Options(x.dtype(), x.device())));
  Shape want = unbatched ? Shape{count, features} : Shape{count, n, features};
  WICK_CHECK(given.shape() == want, layer, ": ", what, " must be ", shape_str(want), " for input ",
             shape_str(x.shape()), ", got ", shape_str(given.shape()));
  WICK_CHECK(given.dtype() == x.dtype() && given.device() == x.device(), layer, ": ", what, " is ",
             dtype_name(given.dtype()), " on ", given.device().str(), ", the input ", dtype_name(x.dtype()), " on ",
             x.device().str());
  return unbatched ? unsqueeze(given, 1) : given;
}

// lengths [N] -> per step t a bool [N, 1] on `device`: whether step t is inside sequence n.
std::vector<Tensor> step_masks(const char* layer, const Tensor& lengths, int64_t l, int64_t n, Device device) {
  WICK_CHECK(lengths.dim() == 1 && lengths.size(0) == n && !is_floating(lengths.dtype()) &&
                 lengths.dtype() != DType::Bool,
             layer, ": lengths must be an integer tensor [N] = ", shape_str({n}), ", got ", dtype_name(lengths.dtype()),
             " ", shape_str(lengths.shape()));
  Tensor len = lengths.to(Device::cpu()).to(DType::Int64).contiguous();
  const int64_t* v = len.data<int64_t>();
  for (int64_t i = 0; i < n; ++i)
    WICK_CHECK(v[i] >= 1 && v[i] <= l, layer, ": lengths[", i, "] = ", v[i], " is outside [1, L] = [1, ", l, "]");
  const Options idx(DType::Int64, device);
  Tensor inside = lt(arange(0, l, 1, idx).unsqueeze(1), len.to(device).unsqueeze(0));  // [L, N]
  return unbind(inside.unsqueeze(2), 0);
}

// torch's initialisation of recurrent layers and cells: every own parameter from
// U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), in registration order.
void reset_uniform(Module& m, int64_t hidden_size, Generator* g) {
  const double bound = 1.0 / std::sqrt(static_cast<double>(hidden_size));
  for (Variable& p : m.parameters(/*recurse=*/false)) init::uniform_(p.data(), -bound, bound, g);
}

}  // namespace

RNNBase::RNNBase(Kind kind, const char* name, int64_t input_size, int64_t hidden_size, const RNNOptions& opt,
                 const Options& o, Generator* g)
    : kind_(kind), name_(name), input_size_(input_size), hidden_size_(hidden_size), opt_(opt), generator_(g) {
  WICK_CHECK(input_size > 0 && hidden_size > 0, name, ": input_size and hidden_size must be positive, got ",
             input_size, " and ", hidden_size);
  WICK_CHECK(opt.num_layers >= 1, name, ": num_layers must be at least 1, got ", opt.num_layers);
  WICK_CHECK(opt.dropout >= 0 && opt.dropout <= 1, name, ": dropout must be in [0, 1], got ", opt.dropout);
  WICK_CHECK(opt.proj_size == 0 || kind == Kind::LSTM, name, ": proj_size is only for LSTM, got ", opt.proj_size);
  WICK_CHECK(opt.proj_size >= 0 && opt.proj_size < hidden_size, name, ": proj_size must be in [0, hidden_size = ",
             hidden_size, "), got ", opt.proj_size);
  WICK_CHECK(opt.nonlinearity == RNNActivation::Tanh || kind == Kind::RNN, name,
             ": nonlinearity is only for RNN (LSTM and GRU have fixed gates)");
  WICK_CHECK(is_floating(o.dtype), name, ": parameters must be floating, not ", dtype_name(o.dtype));
  const int64_t gates = recurrent_gates(cell_of(kind, opt.nonlinearity)) * hidden_size, d = num_directions();
  for (int64_t layer = 0; layer < opt.num_layers; ++layer) {
    for (int64_t dir = 0; dir < d; ++dir) {
      const std::string suffix = "_l" + std::to_string(layer) + (dir == 1 ? "_reverse" : "");
      const int64_t in = layer == 0 ? input_size : output_size() * d;
      Weights w;
      // PyTorch's order (what its _flat_weights_names lists).
      w.weight_ih = register_parameter("weight_ih" + suffix, empty({gates, in}, o));
      w.weight_hh = register_parameter("weight_hh" + suffix, empty({gates, output_size()}, o));
      if (opt.bias) {
        w.bias_ih = register_parameter("bias_ih" + suffix, empty({gates}, o));
        w.bias_hh = register_parameter("bias_hh" + suffix, empty({gates}, o));
      }
      if (opt.proj_size > 0) w.weight_hr = register_parameter("weight_hr" + suffix, empty({opt.proj_size, hidden_size}, o));
      weights_.push_back(std::move(w));
    }
  }
  reset_parameters(g);
}

void RNNBase::reset_parameters(Generator* g) { reset_uniform(*this, hidden_size_, g); }

const RNNBase::Weights& RNNBase::weights(int64_t layer, int64_t direction) const {
  WICK_CHECK(layer >= 0 && layer < opt_.num_layers && direction >= 0 && direction < num_directions(), name_,
             ": no layer ", layer, " direction ", direction, " (", opt_.num_layers, " layers, ", num_directions(),
             " directions)");
  return weights_[static_cast<size_t>(layer * num_directions() + direction)];
}

RNNOutput RNNBase::forward(const Variable& input, const Variable& h0, const Variable& c0, const Tensor& lengths) {
  WICK_CHECK((input.dim() == 2 || input.dim() == 3) && input.size(-1) == input_size_, name_, ": input must be [L, N, ",
             input_size_, "] (", opt_.batch_first ? "[N, L, .] batch_first" : "or [N, L, .] with batch_first",
             ", or unbatched [L, ", input_size_, "]), got ", shape_str(input.shape()));
  WICK_CHECK(kind_ == Kind::LSTM || !c0.defined(), name_, ": c0 is only for LSTM");
  WICK_CHECK(kind_ != Kind::LSTM || h0.defined() == c0.defined(), name_, ": give both h0 and c0 or neither");
  const bool unbatched = input.dim() == 2;
  const Variable x = unbatched ? unsqueeze(input, 1) : opt_.batch_first ? transpose(input, 0, 1) : input;
  const int64_t l = x.size(0), n = x.size(1), d = num_directions(), count = d * opt_.num_layers;
  WICK_CHECK(l > 0, name_, ": the sequence length must be positive, got input ", shape_str(input.shape()));
  WICK_CHECK(!lengths.defined() || !unbatched, name_, ": lengths need a batched input");
  const std::vector<Variable> h_init =
      unbind(initial_state(name_, "h0", h0, count, n, output_size(), unbatched, x), 0);
  const std::vector<Variable> c_init =
      kind_ == Kind::LSTM ? unbind(initial_state(name_, "c0", c0, count, n, hidden_size_, unbatched, x), 0)
                          : std::vector<Variable>();
  const std::vector<Tensor> inside = lengths.defined() ? step_masks(name_, lengths, l, n, x.device()) : std::vector<Tensor>();

  std::vector<Variable> h_n, c_n;
  Variable layer_input = x;
  for (int64_t layer = 0; layer < opt_.num_layers; ++layer) {
    if (layer > 0) layer_input = dropout(layer_input, opt_.dropout, is_training(), generator_);
    std::vector<Variable> direction_outputs;
    for (int64_t dir = 0; dir < d; ++dir) {
      const Weights& w = weights_[static_cast<size_t>(layer * d + dir)];
      const size_t at = static_cast<size_t>(layer * d + dir);
      const std::vector<Variable> gi = unbind(linear(layer_input, w.weight_ih, w.bias_ih), 0);
      State s{h_init[at], c_init.empty() ? Variable() : c_init[at]};
      std::vector<Variable> out(static_cast<size_t>(l));
      for (int64_t k = 0; k < l; ++k) {
        const size_t t = static_cast<size_t>(dir == 0 ? k : l - 1 - k);
        State next = step(kind_, opt_.nonlinearity, gi[t], s, w.weight_hh, w.bias_hh, w.weight_hr);
        if (inside.empty()) {
          out[t] = next.h;
          s = std::move(next);
        } else {
          // Past a sequence's end the output is 0 and the state stays where the sequence left it.
          out[t] = where(inside[t], next.h, 0.0);
          s.h = where(inside[t], next.h, s.h);
          if (s.c.defined()) s.c = where(inside[t], next.c, s.c);
        }
      }
      direction_outputs.push_back(stack(out, 0));
      h_n.push_back(s.h);
      c_n.push_back(s.c);
    }
    layer_input = d == 1 ? direction_outputs[0] : cat(direction_outputs, 2);
  }
  RNNOutput r;
  r.output = unbatched ? squeeze(layer_input, 1) : opt_.batch_first ? transpose(layer_input, 0, 1) : layer_input;
  r.h_n = unbatched ? squeeze(stack(h_n, 0), 1) : stack(h_n, 0);
  if (kind_ == Kind::LSTM) r.c_n = unbatched ? squeeze(stack(c_n, 0), 1) : stack(c_n, 0);
  return r;
}

RNN::RNN(int64_t input_size, int64_t hidden_size, const RNNOptions& opt, const Options& o, Generator* g)
    : RNNBase(Kind::RNN, "RNN", input_size, hidden_size, opt, o, g) {}

LSTM::LSTM(int64_t input_size, int64_t hidden_size, const RNNOptions& opt, const Options& o, Generator* g)
    : RNNBase(Kind::LSTM, "LSTM", input_size, hidden_size, opt, o, g) {}

GRU::GRU(int64_t input_size, int64_t hidden_size, const RNNOptions& opt, const Options& o, Generator* g)
    : RNNBase(Kind::GRU, "GRU", input_size, hidden_size, opt, o, g) {}

RNNCellBase::RNNCellBase(const char* name, int64_t gates, int64_t input_size, int64_t hidden_size, bool bias,
                         const Options& o, Generator* g)
    : name_(name), input_size_(input_size), hidden_size_(hidden_size) {
  WICK_CHECK(input_size > 0 && hidden_size > 0, name, ": input_size and hidden_size must be positive, got ",
             input_size, " and ", hidden_size);
  WICK_CHECK(is_floating(o.dtype), name, ": parameters must be floating, not ", dtype_name(o.dtype));
  weight_ih = register_parameter("weight_ih", empty({gates * hidden_size, input_size}, o));
  weight_hh = register_parameter("weight_hh", empty({gates * hidden_size, hidden_size}, o));
  if (bias) {
    bias_ih = register_parameter("bias_ih", empty({gates * hidden_size}, o));
    bias_hh = register_parameter("bias_hh", empty({gates * hidden_size}, o));
  }
  reset_parameters(g);
}

void RNNCellBase::reset_parameters(Generator* g) { reset_uniform(*this, hidden_size_, g); }

RNNCellBase::Batched RNNCellBase::batch(const Variable& x, const Variable& h, const Variable& c, bool with_c) const {
  WICK_CHECK((x.dim() == 1 || x.dim() == 2) && x.size(-1) == input_size_, name_, ": input must be [N, ", input_size_,
             "] or [", input_size_, "], got ", shape_str(x.shape()));
  const bool unbatched = x.dim() == 1;
  Batched b{unbatched ? unsqueeze(x, 0) : x, Variable(), Variable(), unbatched};
  const int64_t n = b.x.size(0);
  auto state = [&](const Variable& given, const char* what) {
    if (!given.defined()) return Variable(zeros({n, hidden_size_}, Options(x.dtype(), x.device())));
    Shape want = unbatched ? Shape{hidden_size_} : Shape{n, hidden_size_};
    WICK_CHECK(given.shape() == want, name_, ": ", what, " must be ", shape_str(want), " for input ",
               shape_str(x.shape()), ", got ", shape_str(given.shape()));
    return unbatched ? unsqueeze(given, 0) : given;
  };
  b.h = state(h, "h");
  if (with_c) b.c = state(c, "c");
  return b;
}

RNNCell::RNNCell(int64_t input_size, int64_t hidden_size, bool bias, RNNActivation nonlinearity, const Options& o,
                 Generator* g)
    : RNNCellBase("RNNCell", 1, input_size, hidden_size, bias, o, g), nonlinearity_(nonlinearity) {}

Variable RNNCell::forward(const Variable& x, const Variable& h) {
  Batched b = batch(x, h, Variable(), false);
  Variable out = step(Kind::RNN, nonlinearity_, linear(b.x, weight_ih, bias_ih), {b.h, Variable()}, weight_hh,
                      bias_hh, Variable())
                     .h;
  return b.unbatched ? squeeze(out, 0) : out;
}

LSTMCell::LSTMCell(int64_t input_size, int64_t hidden_size, bool bias, const Options& o, Generator* g)
    : RNNCellBase("LSTMCell", 4, input_size, hidden_size, bias, o, g) {}

std::pair<Variable, Variable> LSTMCell::forward(const Variable& x, const Variable& h, const Variable& c) {
  Batched b = batch(x, h, c, true);
  State s = step(Kind::LSTM, RNNActivation::Tanh, linear(b.x, weight_ih, bias_ih), {b.h, b.c}, weight_hh, bias_hh,
                 Variable());
  if (b.unbatched) return {squeeze(s.h, 0), squeeze(s.c, 0)};
  return {s.h, s.c};
}

GRUCell::GRUCell(int64_t input_size, int64_t hidden_size, bool bias, const Options& o, Generator* g)
    : RNNCellBase("GRUCell", 3, input_size, hidden_size, bias, o, g) {}

Variable GRUCell::forward(const Variable& x, const Variable& h) {
  Batched b = batch(x, h, Variable(), false);
  Variable out =
      step(Kind::GRU, RNNActivation::Tanh, linear(b.x, weight_ih, bias_ih), {b.h, Variable()}, weight_hh, bias_hh,
           Variable())
          .h;
  return b.unbatched ? squeeze(out, 0) : out;
}

}  // namespace wick
