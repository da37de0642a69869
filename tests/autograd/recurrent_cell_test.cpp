// The fused recurrent step (autograd's recurrent_cell, wick/tensor/recurrent.h) against its
// composition of element-wise ops in float64: h, c and the gradients of gi, gh and the
// state, for every cell, every floating dtype, a transposed gi, undefined output gradients,
// NaN, an empty batch; then the errors. (Finite differences and second derivatives:
// gradcheck_recurrent_test.cpp; the CUDA kernels: tests/kernels/cuda_recurrent_test.cpp;
// the layers against torch: tests/nn/recurrent_test.cpp.)
#include <cmath>
#include <limits>

#include <wick/autograd/grad_mode.h>
#include <wick/autograd/nn_ops.h>
#include <wick/autograd/node.h>
#include <wick/autograd/ops.h>
#include <wick/tensor/factories.h>

#include "tests/support/reference.h"

namespace wick::test {
namespace {

// The step as torch.nn composes it (wick/nn/recurrent.h's file comment), in float64.
RecurrentCellOutput composed(RecurrentCell cell, const Variable& gi, const Variable& gh, const Variable& state) {
  switch (cell) {
    case RecurrentCell::RnnTanh: return {tanh(add(gi, gh)), Variable()};
    case RecurrentCell::RnnRelu: return {relu(add(gi, gh)), Variable()};
    case RecurrentCell::Lstm: {
      std::vector<Variable> g = chunk(add(gi, gh), 4, 1);
      Variable c = add(mul(sigmoid(g[1]), state), mul(sigmoid(g[0]), tanh(g[2])));
      return {mul(sigmoid(g[3]), tanh(c)), c};
    }
    case RecurrentCell::Gru: {
      std::vector<Variable> x = chunk(gi, 3, 1), h = chunk(gh, 3, 1);
      Variable r = sigmoid(add(x[0], h[0])), z = sigmoid(add(x[1], h[1]));
      Variable n = tanh(add(x[2], mul(r, h[2])));
      return {add(n, mul(z, sub(state, n))), Variable()};
    }
  }
  throw Error("unknown cell");
}

const RecurrentCell kCells[] = {RecurrentCell::RnnTanh, RecurrentCell::RnnRelu, RecurrentCell::Lstm,
                                RecurrentCell::Gru};

// h, c and the input gradients for output gradients dh and dc (either may be undefined).
std::vector<Tensor> run(bool fused, RecurrentCell cell, const std::vector<Tensor>& in, const Tensor& dh,
                        const Tensor& dc) {
  Variable gi(in[0], true), gh(in[1], true), state(in[2], recurrent_has_state(cell));
  RecurrentCellOutput o = fused ? recurrent_cell(cell, gi, gh, recurrent_has_state(cell) ? state : Variable())
                                : composed(cell, gi, gh, state);
  std::vector<Variable> outs, grads;
  if (dh.defined()) outs.push_back(o.h), grads.push_back(Variable(dh));
  if (dc.defined()) outs.push_back(o.c), grads.push_back(Variable(dc));
  std::vector<Variable> inputs = {gi, gh};
  if (recurrent_has_state(cell)) inputs.push_back(state);
  std::vector<Variable> g = grad(outs, inputs, grads);
  std::vector<Tensor> r = {o.h.data()};
  if (o.c.defined()) r.push_back(o.c.data());
  for (const Variable& v : g) r.push_back(v.data());
  return r;
}

// Random gi, gh [N, G H] (gi transposed in memory when asked) and state [N, H] of dtype t.
std::vector<Tensor> inputs(RecurrentCell cell, int64_t n, int64_t hidden, DType t, bool transposed, uint64_t seed) {
  const int64_t w = recurrent_gates(cell) * hidden;
  Tensor gi = transposed ? random({w, n}, t, seed, -3, 3).t() : random({n, w}, t, seed, -3, 3);
  return {gi, random({n, w}, t, seed + 1, -3, 3), random({n, hidden}, t, seed + 2)};
}

std::vector<Tensor> as_float64(const std::vector<Tensor>& v) {
  std::vector<Tensor> r;
  for (const Tensor& t : v) r.push_back(t.defined() ? t.to(DType::Float64) : t);
  return r;
}

TEST(RecurrentCell, FusedEqualsTheCompositionInEveryDtype) {
  for (RecurrentCell cell : kCells) {
    for (DType t : {DType::Float64, DType::Float32, DType::Float16, DType::BFloat16}) {
      for (bool transposed : {false, true}) {
        for (int with : {3, 1, 2}) {  // bit 0: dh given, bit 1: dc given (LSTM)
          if (with != 1 && cell != RecurrentCell::Lstm) continue;
          SCOPED_TRACE(std::string(recurrent_cell_name(cell)) + " " + dtype_name(t) + (transposed ? " transposed" : "") +
                       " with " + std::to_string(with));
          const std::vector<Tensor> in = inputs(cell, 5, 7, t, transposed, 11);
          const Tensor dh = with & 1 ? random({5, 7}, t, 21) : Tensor();
          const Tensor dc = with & 2 && cell == RecurrentCell::Lstm ? random({5, 7}, t, 22) : Tensor();
          const std::vector<Tensor> got = run(true, cell, in, dh, dc);
          // The reference: the composition on the same values in float64.
          const std::vector<Tensor> want = run(false, cell, as_float64(in), dh.defined() ? dh.to(DType::Float64) : dh,
                                               dc.defined() ? dc.to(DType::Float64) : dc);
          ASSERT_EQ(got.size(), want.size());
          // One rounding per output against the composition's several: a few ulp of the dtype.
          const double tol = t == DType::Float64 ? 1e-13 : t == DType::Float32 ? 1e-6 : t == DType::Float16 ? 4e-3 : 3e-2;
          for (size_t i = 0; i < got.size(); ++i) {
            EXPECT_EQ(got[i].dtype(), t) << "result " << i;
            EXPECT_TRUE(all_close(values(got[i]), values(want[i]), tol, tol)) << "result " << i;
          }
        }
      }
    }
  }
}

// NaN in one gate value reaches that element's outputs and gradients only, as in the
// composition; the other rows stay finite.
TEST(RecurrentCell, NanStaysInItsRow) {
  for (RecurrentCell cell : kCells) {
    SCOPED_TRACE(recurrent_cell_name(cell));
    std::vector<Tensor> in = inputs(cell, 3, 2, DType::Float32, false, 31);
    in[0].select(0, 1).select(0, 0).fill_(std::numeric_limits<double>::quiet_NaN());
    const Tensor dh = random({3, 2}, DType::Float32, 32);
    const std::vector<Tensor> got = run(true, cell, in, dh, Tensor());
    const std::vector<Tensor> want = run(false, cell, in, dh, Tensor());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_TRUE(all_close(values(got[i]), values(want[i]), 1e-6, 1e-6)) << "result " << i;
      for (int64_t row : {0, 2})
        for (double v : values(got[i].select(0, row))) EXPECT_TRUE(std::isfinite(v)) << "result " << i;
    }
    bool nan_seen = false;
    for (double v : values(got[0].select(0, 1))) nan_seen = nan_seen || std::isnan(v);
    EXPECT_TRUE(nan_seen);
  }
}

// Without a backward to come (no input requires grad) nothing is saved, and h and c are the
// same; a backward from such a forward is refused.
TEST(RecurrentCell, InferenceSavesNothing) {
  for (RecurrentCell cell : kCells) {
    SCOPED_TRACE(recurrent_cell_name(cell));
    const std::vector<Tensor> in = inputs(cell, 4, 5, DType::Float32, false, 61);
    const Tensor state = recurrent_has_state(cell) ? in[2] : Tensor();
    const RecurrentCellResult kept = recurrent_cell_forward(cell, in[0], in[1], state);
    const RecurrentCellResult bare = recurrent_cell_forward(cell, in[0], in[1], state, /*for_backward=*/false);
    EXPECT_FALSE(bare.saved.defined());
    EXPECT_EQ(values(bare.h), values(kept.h));
    if (cell == RecurrentCell::Lstm) EXPECT_EQ(values(bare.c), values(kept.c));
    const RecurrentCellOutput o =
        recurrent_cell(cell, Variable(in[0]), Variable(in[1]), state.defined() ? Variable(state) : Variable());
    EXPECT_EQ(values(o.h.data()), values(kept.h));
    if (recurrent_has_state(cell))
      expect_error([&] { recurrent_cell_backward(cell, kept.h, Tensor(), state, bare); },
                   {"recurrent_cell_backward", "a forward run with for_backward"});
  }
}

TEST(RecurrentCell, EmptyBatchGivesEmptyResults) {
  for (RecurrentCell cell : kCells) {
    const std::vector<Tensor> in = inputs(cell, 0, 4, DType::Float32, false, 41);
    const std::vector<Tensor> got = run(true, cell, in, zeros({0, 4}), Tensor());
    for (const Tensor& t : got) EXPECT_EQ(t.size(0), 0);
  }
}

TEST(RecurrentCell, BadInputIsRefusedNamingTheCell) {
  const Tensor gi = zeros({2, 8}), state = zeros({2, 2});
  expect_error([&] { recurrent_cell_forward(RecurrentCell::Lstm, gi, zeros({2, 6}), state); },
               {"recurrent_cell_forward (LSTM)", "gi and gh must be [N, 4 H] alike", "[2, 6]"});
  expect_error([&] { recurrent_cell_forward(RecurrentCell::Gru, zeros({2, 8}), zeros({2, 8}), state); },
               {"recurrent_cell_forward (GRU)", "[N, 3 H]", "[2, 8]"});
  expect_error([&] { recurrent_cell_forward(RecurrentCell::Lstm, gi, gi, Tensor()); },
               {"recurrent_cell_forward (LSTM)", "needs the previous state"});
  expect_error([&] { recurrent_cell_forward(RecurrentCell::Lstm, gi, gi, zeros({2, 3})); },
               {"recurrent_cell_forward", "state must be floating [N, H] = [2, 2]", "[2, 3]"});
  expect_error([&] { recurrent_cell_forward(RecurrentCell::RnnTanh, gi.to(DType::Int32), gi.to(DType::Int32), Tensor()); },
               {"recurrent_cell_forward (RNN_TANH)", "floating", "int32"});
  expect_error([&] { recurrent_cell_forward(RecurrentCell::RnnTanh, gi, gi.to(DType::Float64), Tensor()); },
               {"recurrent_cell_forward (RNN_TANH)", "share a floating dtype", "float64"});
  const RecurrentCellResult r = recurrent_cell_forward(RecurrentCell::Gru, zeros({2, 6}), zeros({2, 6}), state);
  expect_error([&] { recurrent_cell_backward(RecurrentCell::Gru, zeros({2, 2}), zeros({2, 2}), state, r); },
               {"recurrent_cell_backward (GRU)", "dc is only for LSTM"});
  expect_error([&] { recurrent_cell_backward(RecurrentCell::Gru, zeros({3, 2}), Tensor(), state, r); },
               {"recurrent_cell_backward", "dh must be floating [N, H] = [2, 2]", "[3, 2]"});
}

// A float32 state with bfloat16 gates (an autocast linear layer) meets in float32, as the
// composition's type promotion does.
TEST(RecurrentCell, MixedDtypesPromote) {
  Variable gi(random({2, 8}, DType::BFloat16, 51), true), state(random({2, 2}, DType::Float32, 52), true);
  RecurrentCellOutput o = recurrent_cell(RecurrentCell::Lstm, gi, gi, state);
  EXPECT_EQ(o.h.dtype(), DType::Float32);
  EXPECT_EQ(o.c.dtype(), DType::Float32);
  sum(o.c).backward();
  EXPECT_EQ(gi.grad().dtype(), DType::BFloat16);
  EXPECT_EQ(state.grad().dtype(), DType::Float32);
}

}  // namespace
}  // namespace wick::test
