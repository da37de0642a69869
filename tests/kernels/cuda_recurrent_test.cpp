// The CUDA recurrent-step kernels (forward and backward) against the CPU kernels on the same
// inputs: every cell and floating dtype; one row and one feature, odd sizes, a batch larger
// than a block; a transposed gi; undefined output gradients; NaN; an empty batch. The CPU
// kernels are checked against the composition in tests/autograd/recurrent_cell_test.cpp.
#include <limits>

#include <wick/tensor/recurrent.h>

#include "tests/support/cuda_compare.h"

namespace wick::test {
namespace {

struct RecurrentCase {
  int64_t n, hidden;
  bool transposed, with_dh, with_dc, nan;
};

TEST(CudaRecurrent, ForwardAndBackwardMatchTheCpu) {
  WICK_REQUIRE_CUDA();
  const std::vector<RecurrentCase> cases = {
      {1, 1, false, true, true, false},   {5, 7, true, true, false, false}, {3, 33, false, false, true, false},
      {300, 3, false, true, true, true},  {0, 4, false, true, true, false},
  };
  for (RecurrentCell cell : {RecurrentCell::RnnTanh, RecurrentCell::RnnRelu, RecurrentCell::Lstm, RecurrentCell::Gru}) {
    const bool lstm = cell == RecurrentCell::Lstm, stateful = recurrent_has_state(cell);
    for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
      uint64_t seed = 1;
      for (const RecurrentCase& c : cases) {
        const std::string what = std::string(recurrent_cell_name(cell)) + " " + dtype_name(dt) + " N" +
                                 std::to_string(c.n) + " H" + std::to_string(c.hidden) +
                                 (c.transposed ? " transposed" : "") + (c.with_dh ? " dh" : "") +
                                 (c.with_dc ? " dc" : "") + (c.nan ? " nan" : "");
        const int64_t w = recurrent_gates(cell) * c.hidden;
        Tensor gi = c.transposed ? random({w, c.n}, dt, ++seed, -3, 3).t() : random({c.n, w}, dt, ++seed, -3, 3);
        if (c.nan) gi.select(0, 7).select(0, 1).fill_(std::numeric_limits<double>::quiet_NaN());
        // inputs: gi, gh, state, dh, dc (zeros stand for an undefined gradient's slot).
        const std::vector<Tensor> in = {gi, random({c.n, w}, dt, ++seed, -3, 3), random({c.n, c.hidden}, dt, ++seed),
                                        random({c.n, c.hidden}, dt, ++seed), random({c.n, c.hidden}, dt, ++seed)};
        const double tol = dt == DType::Float64 ? 1e-12 : dt == DType::Float32 ? 1e-5 : 1e-2;
        const char* names[] = {"h", "c", "saved", "dgi", "dgh", "dstate", "h saving nothing"};
        for (int k = 0; k < 7; ++k) {
          if ((k == 1 && !lstm) || (k == 4 && cell != RecurrentCell::Gru) || ((k == 2 || k == 5) && !stateful))
            continue;
          expect_cuda_matches_cpu(what + " " + names[k], in, [&](const std::vector<Tensor>& v) {
            const Tensor state = stateful ? v[2] : Tensor();
            if (k == 6) return recurrent_cell_forward(cell, v[0], v[1], state, /*for_backward=*/false).h;
            RecurrentCellResult r = recurrent_cell_forward(cell, v[0], v[1], state);
            if (k < 3) return k == 0 ? r.h : k == 1 ? r.c : r.saved;
            RecurrentCellGrads g = recurrent_cell_backward(cell, c.with_dh ? v[3] : Tensor(),
                                                           c.with_dc && lstm ? v[4] : Tensor(), state, r);
            return k == 3 ? g.gi : k == 4 ? g.gh : g.state;
          }, tol, tol);
        }
      }
    }
  }
}

}  // namespace
}  // namespace wick::test
