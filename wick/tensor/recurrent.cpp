#include <wick/tensor/recurrent.h>

#include <wick/tensor/dispatch.h>
#include <wick/tensor/factories.h>

namespace wick {
namespace {

// [N, H] in t's dtype and device, contiguous; undefined stays undefined.
Tensor as_row_state(const char* op, const char* what, const Tensor& t, const Tensor& like, int64_t n, int64_t hidden) {
  if (!t.defined()) return t;
  WICK_CHECK(t.shape() == (Shape{n, hidden}) && t.device() == like.device() && is_floating(t.dtype()), op, ": ", what,
             " must be floating [N, H] = ", shape_str({n, hidden}), " on ", like.device().str(), ", got ",
             dtype_name(t.dtype()), " ", shape_str(t.shape()), " on ", t.device().str());
  return t.to(like.dtype()).contiguous();
}

}  // namespace

const char* recurrent_cell_name(RecurrentCell cell) {
  switch (cell) {
    case RecurrentCell::RnnTanh: return "RNN_TANH";
    case RecurrentCell::RnnRelu: return "RNN_RELU";
    case RecurrentCell::Lstm: return "LSTM";
    case RecurrentCell::Gru: return "GRU";
  }
  throw Error("recurrent cell: unknown cell");
}

RecurrentCellResult recurrent_cell_forward(RecurrentCell cell, const Tensor& gi_in, const Tensor& gh_in,
                                           const Tensor& state_in, bool for_backward) {
  const char* op = "recurrent_cell_forward";
  const int64_t g = recurrent_gates(cell);
  WICK_CHECK(gi_in.dim() == 2 && gh_in.shape() == gi_in.shape() && gi_in.size(1) % g == 0 && gi_in.size(1) > 0, op,
             " (", recurrent_cell_name(cell), "): gi and gh must be [N, ", g, " H] alike, got ",
             shape_str(gi_in.shape()), " and ", shape_str(gh_in.shape()));
  WICK_CHECK(is_floating(gi_in.dtype()) && gh_in.dtype() == gi_in.dtype() && gh_in.device() == gi_in.device(), op,
             " (", recurrent_cell_name(cell), "): gi and gh must share a floating dtype and device, got ",
             dtype_name(gi_in.dtype()), " on ", gi_in.device().str(), " and ", dtype_name(gh_in.dtype()), " on ",
             gh_in.device().str());
  const int64_t n = gi_in.size(0), hidden = gi_in.size(1) / g;
  WICK_CHECK(!recurrent_has_state(cell) || state_in.defined(), op, " (", recurrent_cell_name(cell),
             "): needs the previous state");
  const Tensor gi = gi_in.contiguous(), gh = gh_in.contiguous();
  const Tensor state = recurrent_has_state(cell) ? as_row_state(op, "state", state_in, gi, n, hidden) : Tensor();
  const Options o(gi.dtype(), gi.device());
  RecurrentCellResult r;
  r.h = empty({n, hidden}, o);
  if (cell == RecurrentCell::Lstm) r.c = empty({n, hidden}, o);
  if (recurrent_has_state(cell) && for_backward) r.saved = empty({n, 4 * hidden}, o);
  if (n == 0) return r;
  kernel_for(&KernelTable::recurrent_cell_forward, op, gi.device())(cell, r.h, r.c, r.saved, gi, gh, state);
  return r;
}

RecurrentCellGrads recurrent_cell_backward(RecurrentCell cell, const Tensor& dh_in, const Tensor& dc_in,
                                           const Tensor& state_in, const RecurrentCellResult& fwd) {
  const char* op = "recurrent_cell_backward";
  const int64_t n = fwd.h.size(0), hidden = fwd.h.size(1), g = recurrent_gates(cell);
  WICK_CHECK(!dc_in.defined() || cell == RecurrentCell::Lstm, op, " (", recurrent_cell_name(cell),
             "): dc is only for LSTM");
  // A missing gradient is zeros (an unused h_n or c_n: the first backward step only).
  auto grad_or_zeros = [&](const char* what, const Tensor& t, bool wanted) {
    if (!wanted) return Tensor();
    return t.defined() ? as_row_state(op, what, t, fwd.h, n, hidden)
                       : zeros({n, hidden}, Options(fwd.h.dtype(), fwd.h.device()));
  };
  const Tensor dh = grad_or_zeros("dh", dh_in, true), dc = grad_or_zeros("dc", dc_in, cell == RecurrentCell::Lstm);
  const Tensor state = recurrent_has_state(cell) ? as_row_state(op, "state", state_in, fwd.h, n, hidden) : Tensor();
  WICK_CHECK(!recurrent_has_state(cell) || (state.defined() && fwd.saved.defined()), op, " (", recurrent_cell_name(cell),
             "): needs the previous state and a forward run with for_backward");
  const Options o(fwd.h.dtype(), fwd.h.device());
  RecurrentCellGrads r;
  r.gi = empty({n, g * hidden}, o);
  r.gh = cell == RecurrentCell::Gru ? empty({n, g * hidden}, o) : r.gi;
  if (recurrent_has_state(cell)) r.state = empty({n, hidden}, o);
  if (n == 0) return r;
  kernel_for(&KernelTable::recurrent_cell_backward, op, fwd.h.device())(
      cell, r.gi, cell == RecurrentCell::Gru ? r.gh : Tensor(), r.state, dh, dc, fwd.h, fwd.c, fwd.saved, state);
  return r;
}

}  // namespace wick
