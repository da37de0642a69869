// recurrent_cell: the fused element-wise part of a recurrent time step (wick/tensor/recurrent.h),
// one node whose backward calls the fused backward. Under create_graph the same gradients
// are composed of differentiable ops instead (the formulas of kernels/recurrent_math.h), so
// the layers stay differentiable twice as their composition was.
#include <wick/autograd/grad_mode.h>
#include <wick/autograd/nn_ops.h>
#include <wick/autograd/node.h>
#include <wick/autograd/ops.h>
#include <wick/tensor/elementwise.h>
#include <wick/tensor/factories.h>
#include <wick/tensor/recurrent.h>

namespace wick {

namespace {

struct CellGrads {
  Variable gi, gh, state;
};

// The gradients as differentiable functions of the inputs (dh and dc defined).
CellGrads differentiable_grads(RecurrentCell cell, const Variable& gi, const Variable& gh, const Variable& state,
                               const Variable& dh, const Variable& dc) {
  switch (cell) {
    case RecurrentCell::RnnTanh: {
      const Variable h = tanh(add(gi, gh));
      const Variable da = mul(dh, sub(1.0, mul(h, h)));
      return {da, da, Variable()};
    }
    case RecurrentCell::RnnRelu: {
      const Variable da = masked_fill(dh, le(add(gi.data(), gh.data()), 0.0), 0.0);  // NaN passes dh, as relu's
      return {da, da, Variable()};
    }
    case RecurrentCell::Lstm: {
      const std::vector<Variable> a = chunk(add(gi, gh), 4, 1);
      const Variable i = sigmoid(a[0]), f = sigmoid(a[1]), g = tanh(a[2]), o = sigmoid(a[3]);
      const Variable tc = tanh(add(mul(f, state), mul(i, g)));
      const Variable dct = add(dc, mul(mul(dh, o), sub(1.0, mul(tc, tc))));
      const Variable da = cat({mul(mul(dct, g), mul(i, sub(1.0, i))), mul(mul(dct, state), mul(f, sub(1.0, f))),
                               mul(mul(dct, i), sub(1.0, mul(g, g))), mul(mul(dh, tc), mul(o, sub(1.0, o)))},
                              1);
      return {da, da, mul(dct, f)};
    }
    case RecurrentCell::Gru: {
      const std::vector<Variable> x = chunk(gi, 3, 1), hh = chunk(gh, 3, 1);
      const Variable r = sigmoid(add(x[0], hh[0])), z = sigmoid(add(x[1], hh[1]));
      const Variable n = tanh(add(x[2], mul(r, hh[2])));
      const Variable dn = mul(mul(dh, sub(1.0, z)), sub(1.0, mul(n, n)));
      const Variable dr = mul(mul(dn, hh[2]), mul(r, sub(1.0, r)));
      const Variable dz = mul(mul(dh, sub(state, n)), mul(z, sub(1.0, z)));
      return {cat({dr, dz, dn}, 1), cat({dr, dz, mul(dn, r)}, 1), mul(dh, z)};
    }
  }
  throw Error("recurrent_cell: unknown cell");
}

class RecurrentCellBackward final : public Node {
 public:
  RecurrentCellBackward(RecurrentCell cell, Variable gi, Variable gh, Variable state, RecurrentCellResult fwd)
      : cell_(cell), gi_(std::move(gi)), gh_(std::move(gh)), state_(std::move(state)), fwd_(std::move(fwd)) {}
  const char* name() const override { return "RecurrentCellBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    const Variable dh = g[0], dc = g.size() > 1 ? g[1] : Variable();
    CellGrads r;
    if (grad_enabled()) {
      auto or_zeros = [&](const Variable& v) { return v.defined() ? v : Variable(zeros_like(fwd_.h)); };
      r = differentiable_grads(cell_, gi_, gh_, state_, or_zeros(dh), or_zeros(dc));
    } else {
      RecurrentCellGrads t = recurrent_cell_backward(cell_, dh.defined() ? dh.data() : Tensor(),
                                                     dc.defined() ? dc.data() : Tensor(),
                                                     state_.defined() ? state_.data() : Tensor(), fwd_);
      r = {Variable(t.gi), Variable(t.gh), t.state.defined() ? Variable(t.state) : Variable()};
    }
    if (recurrent_has_state(cell_)) return {r.gi, r.gh, r.state};
    return {r.gi, r.gh};
  }
  bool release_saved() override { return release(gi_, gh_, state_, fwd_.h, fwd_.c, fwd_.saved); }

 private:
  RecurrentCell cell_;
  Variable gi_, gh_, state_;
  RecurrentCellResult fwd_;
};

}  // namespace

RecurrentCellOutput recurrent_cell(RecurrentCell cell, const Variable& gi_in, const Variable& gh_in,
                                   const Variable& state_in) {
  // Mixed dtypes (an autocast linear layer's gates and a float32 state) meet in the wider
  // one, as the composed ops' type promotion would.
  DType t = promote_types(gi_in.dtype(), gh_in.dtype());
  if (recurrent_has_state(cell) && state_in.defined()) t = promote_types(t, state_in.dtype());
  auto as = [&](const Variable& v) { return v.defined() && v.dtype() != t ? to(v, t) : v; };
  const Variable gi = as(gi_in), gh = as(gh_in), state = recurrent_has_state(cell) ? as(state_in) : Variable();
  std::vector<const Variable*> inputs = {&gi, &gh};
  if (recurrent_has_state(cell)) inputs.push_back(&state);
  const bool grad = needs_grad(inputs);
  RecurrentCellResult r =
      recurrent_cell_forward(cell, gi.data(), gh.data(), state.defined() ? state.data() : Tensor(), grad);
  RecurrentCellOutput out{Variable(r.h), r.c.defined() ? Variable(r.c) : Variable()};
  if (!grad) return out;
  std::vector<Variable*> outputs = {&out.h};
  if (cell == RecurrentCell::Lstm) outputs.push_back(&out.c);
  connect(std::make_shared<RecurrentCellBackward>(cell, gi, gh, state, std::move(r)), inputs, outputs);
  return out;
}

}  // namespace wick
