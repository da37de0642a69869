#pragma once
// The fused element-wise part of a recurrent layer's time step (RNN, LSTM, GRU), forward
// (returning what backward needs) and backward; the matrix products before it are plain
// linear layers. Autograd's recurrent_cell (wick/autograd/nn_ops.h) records these; use that one.
#include <cstdint>

#include <wick/tensor/tensor.h>

namespace wick {

// The element-wise part of one time step of a recurrent layer (the slots are after attention
// in KernelTable; kernels/recurrent_math.h has the math).
enum class RecurrentCell : uint8_t { RnnTanh, RnnRelu, Lstm, Gru };
// Gates per step: RNN 1, LSTM 4 (i, f, g, o), GRU 3 (r, z, n).
constexpr int64_t recurrent_gates(RecurrentCell cell) {
  return cell == RecurrentCell::Lstm ? 4 : cell == RecurrentCell::Gru ? 3 : 1;
}

struct RecurrentCellResult {
  Tensor h;      // [N, H]
  Tensor c;      // [N, H], LSTM only
  Tensor saved;  // the activated gates backward reads (kernels/recurrent_math.h)
};

struct RecurrentCellGrads {
  Tensor gi, gh;  // [N, G H]; the same tensor for RNN and LSTM
  Tensor state;   // [N, H]: through the state's direct path (LSTM c', GRU h'); undefined for RNN
};

// Whether the cell carries a state besides h into the step: LSTM's c, GRU's h (the RNN's
// step reads only the gates).
constexpr bool recurrent_has_state(RecurrentCell cell) {
  return cell == RecurrentCell::Lstm || cell == RecurrentCell::Gru;
}
// The name torch gives the cell's mode ("RNN_TANH", "RNN_RELU", "LSTM", "GRU").
const char* recurrent_cell_name(RecurrentCell cell);

// gi = x W_ih^T + b_ih and gh = h' W_hh^T + b_hh, [N, G H] of one floating dtype and device;
// state [N, H]: the previous c (LSTM) or h (GRU); ignored (may be undefined) for RNN.
// for_backward = false saves nothing (result.saved undefined): no backward can follow.
RecurrentCellResult recurrent_cell_forward(RecurrentCell cell, const Tensor& gi, const Tensor& gh, const Tensor& state,
                                           bool for_backward = true);
// The gradients for dh and dc ([N, H]; either undefined = zero; dc only for LSTM), from the
// forward's inputs (state) and result.
RecurrentCellGrads recurrent_cell_backward(RecurrentCell cell, const Tensor& dh, const Tensor& dc, const Tensor& state,
                                           const RecurrentCellResult& forward);

}  // namespace wick
