// Gradient checks of the fused recurrent step (run by gradcheck_test.cpp, which also checks
// second derivatives: recurrent_cell composes its backward of differentiable ops under
// create_graph). gi and gh are [N, G H] with H = 3; LSTM's h and c each alone, so that an
// output whose gradient never arrives (undefined) is covered.
#include <wick/autograd/nn_ops.h>

#include "tests/autograd/cases.h"

WICK_GRADCHECK_CASES(recurrent) {
  using namespace wick;
  auto cell = [](RecurrentCell c) {
    return [c](auto& v) { return recurrent_cell(c, v[0], v[1], v.size() > 2 ? v[2] : Variable()).h; };
  };
  return {
      {"recurrent_cell rnn_tanh", cell(RecurrentCell::RnnTanh), {{2, 3}, {2, 3}}},
      // relu away from its kink at 0, on both sides.
      {"recurrent_cell rnn_relu positive", cell(RecurrentCell::RnnRelu), {{2, 3}, {2, 3}}, 0.1, 2},
      {"recurrent_cell rnn_relu negative", cell(RecurrentCell::RnnRelu), {{2, 3}, {2, 3}}, -2, -0.1},
      {"recurrent_cell lstm h and c",
       [](auto& v) {
         RecurrentCellOutput o = recurrent_cell(RecurrentCell::Lstm, v[0], v[1], v[2]);
         return cat({o.h, o.c}, 1);
       },
       {{2, 12}, {2, 12}, {2, 3}}},
      {"recurrent_cell lstm h only", cell(RecurrentCell::Lstm), {{2, 12}, {2, 12}, {2, 3}}},
      {"recurrent_cell lstm c only",
       [](auto& v) { return recurrent_cell(RecurrentCell::Lstm, v[0], v[1], v[2]).c; }, {{1, 8}, {1, 8}, {1, 2}}},
      {"recurrent_cell gru", cell(RecurrentCell::Gru), {{2, 9}, {2, 9}, {2, 3}}},
  };
}
