#pragma once
// Recurrent layers: RNN (tanh or relu), LSTM (with proj_size) and GRU, multi-layer and
// bidirectional, and their single-step cells, with PyTorch's parameter names, layouts,
// gate orders and initialisation, so a torch.nn state dict loads and gives the same outputs.
//
//   LSTM lstm(32, 64, {.num_layers = 2, .batch_first = true});
//   auto [out, h_n, c_n] = lstm.forward(x);          // x [N, L, 32] -> out [N, L, 64]
//   auto r = lstm.forward(x, h0, c0, lengths);       // lengths [N]: sequences of different lengths
//
// Per time step t and layer (W_* from the state dict, gates in PyTorch's order):
//   RNN:  h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh)
//   LSTM: i, f, g, o = chunks of (x W_ih^T + b_ih + h W_hh^T + b_hh)
//         c' = sigmoid(f) c + sigmoid(i) tanh(g);  h' = sigmoid(o) tanh(c')  [then h' W_hr^T]
//   GRU:  r, z, n-parts of x W_ih^T + b_ih and of h W_hh^T + b_hh;
//         r = sigmoid(x_r + h_r), z = sigmoid(x_z + h_z), n = tanh(x_n + r h_n),
//         h' = (1 - z) n + z h
// The input products of all steps are one matrix product per layer and direction; each step
// then multiplies by W_hh, and the rest of the step (gates, state update) is one fused
// kernel, forward and backward (autograd's recurrent_cell, wick/tensor/recurrent.h). Sequences of different lengths: `lengths` (int64 [N], each in
// [1, L]) stands for PyTorch's packed sequences: the output is zero after a sequence's end
// (pad_packed_sequence's padding, here always to the input's L), h_n/c_n are the states at
// its last step, and the reverse direction starts at its last step.
#include <memory>
#include <utility>
#include <vector>

#include <wick/nn/module.h>
#include <wick/tensor/generator.h>

namespace wick {

enum class RNNActivation { Tanh, ReLU };

// torch.nn.RNN/LSTM/GRU's constructor options after input_size and hidden_size.
struct RNNOptions {
  int64_t num_layers = 1;
  bool bias = true;           // b_ih and b_hh
  bool batch_first = false;   // input and output [N, L, features] instead of [L, N, features]
  double dropout = 0.0;       // on each layer's output but the last, in training
  bool bidirectional = false;
  int64_t proj_size = 0;      // LSTM only: h is projected to proj_size (< hidden_size) features
  RNNActivation nonlinearity = RNNActivation::Tanh;  // RNN only
};

struct RNNOutput {
  Variable output;  // [L, N, D * H_out] (D = 2 when bidirectional; [N, L, ...] batch_first; [L, D * H_out] unbatched)
  Variable h_n;     // [D * num_layers, N, H_out] (never batch-first; [D * num_layers, H_out] unbatched)
  Variable c_n;     // LSTM: [D * num_layers, N, hidden_size]; undefined for RNN and GRU
};

// What the three layers share; construct RNN, LSTM or GRU.
class RNNBase : public Module {
 public:
  enum class Kind { RNN, LSTM, GRU };

  // input [L, N, input_size] ([N, L, input_size] batch_first, or unbatched [L, input_size]);
  // h0 [D * num_layers, N, H_out] and, for LSTM, c0 [D * num_layers, N, hidden_size]
  // (undefined: zeros; an LSTM takes both or neither); lengths: see the file comment.
  RNNOutput forward(const Variable& input, const Variable& h0 = Variable(), const Variable& c0 = Variable(),
                    const Tensor& lengths = Tensor());
  // Draws every weight and bias from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as PyTorch.
  void reset_parameters(Generator* g = nullptr);

  Kind kind() const { return kind_; }
  int64_t input_size() const { return input_size_; }
  int64_t hidden_size() const { return hidden_size_; }
  const RNNOptions& options() const { return opt_; }
  int64_t num_directions() const { return opt_.bidirectional ? 2 : 1; }
  // Features of h: proj_size when set, else hidden_size.
  int64_t output_size() const { return opt_.proj_size > 0 ? opt_.proj_size : hidden_size_; }

  // The parameters of one layer and direction (bias_* and weight_hr undefined when absent).
  struct Weights {
    Variable weight_ih, weight_hh, bias_ih, bias_hh, weight_hr;
  };
  const Weights& weights(int64_t layer, int64_t direction) const;

 protected:
  RNNBase(Kind kind, const char* name, int64_t input_size, int64_t hidden_size, const RNNOptions& opt,
          const Options& o, Generator* g);

 private:
  Kind kind_;
  const char* name_;
  int64_t input_size_, hidden_size_;
  RNNOptions opt_;
  Generator* generator_;
  std::vector<Weights> weights_;  // [layer * D + direction]
};

class RNN : public RNNBase {
 public:
  RNN(int64_t input_size, int64_t hidden_size, const RNNOptions& opt = {}, const Options& o = {},
      Generator* g = nullptr);
  const char* type_name() const override { return "RNN"; }
};

class LSTM : public RNNBase {
 public:
  LSTM(int64_t input_size, int64_t hidden_size, const RNNOptions& opt = {}, const Options& o = {},
       Generator* g = nullptr);
  const char* type_name() const override { return "LSTM"; }
};

class GRU : public RNNBase {
 public:
  GRU(int64_t input_size, int64_t hidden_size, const RNNOptions& opt = {}, const Options& o = {},
      Generator* g = nullptr);
  const char* type_name() const override { return "GRU"; }
};

// One time step (torch.nn.RNNCell, LSTMCell, GRUCell): parameters weight_ih [G * hidden,
// input], weight_hh [G * hidden, hidden], bias_ih and bias_hh [G * hidden] (G = 1, 4, 3).
// x [N, input_size] or unbatched [input_size]; a state undefined is zeros.
class RNNCellBase : public Module {
 public:
  void reset_parameters(Generator* g = nullptr);
  int64_t input_size() const { return input_size_; }
  int64_t hidden_size() const { return hidden_size_; }

  Variable weight_ih, weight_hh, bias_ih, bias_hh;

 protected:
  RNNCellBase(const char* name, int64_t gates, int64_t input_size, int64_t hidden_size, bool bias, const Options& o,
              Generator* g);
  // x as [N, input_size] and h (and c when with_c) as [N, hidden_size] (zeros when
  // undefined); whether x was unbatched (the results lose the batch dim again).
  struct Batched {
    Variable x, h, c;
    bool unbatched;
  };
  Batched batch(const Variable& x, const Variable& h, const Variable& c, bool with_c) const;

 private:
  const char* name_;
  int64_t input_size_, hidden_size_;
};

class RNNCell : public RNNCellBase {
 public:
  RNNCell(int64_t input_size, int64_t hidden_size, bool bias = true, RNNActivation nonlinearity = RNNActivation::Tanh,
          const Options& o = {}, Generator* g = nullptr);
  const char* type_name() const override { return "RNNCell"; }
  Variable forward(const Variable& x, const Variable& h = Variable());

 private:
  RNNActivation nonlinearity_;
};

class LSTMCell : public RNNCellBase {
 public:
  LSTMCell(int64_t input_size, int64_t hidden_size, bool bias = true, const Options& o = {}, Generator* g = nullptr);
  const char* type_name() const override { return "LSTMCell"; }
  // (h', c')
  std::pair<Variable, Variable> forward(const Variable& x, const Variable& h = Variable(),
                                        const Variable& c = Variable());
};

class GRUCell : public RNNCellBase {
 public:
  GRUCell(int64_t input_size, int64_t hidden_size, bool bias = true, const Options& o = {}, Generator* g = nullptr);
  const char* type_name() const override { return "GRUCell"; }
  Variable forward(const Variable& x, const Variable& h = Variable());
};

}  // namespace wick
