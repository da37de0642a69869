// Activation checkpointing's node (CheckpointBackward, wick/autograd/checkpoint.h) in the
// gradient table: the recomputed forward's first and second derivatives against finite
// differences, with one input and with two (tests/nn/checkpoint_test.cpp has the rest).
#include "tests/autograd/cases.h"

#include <wick/autograd/checkpoint.h>

WICK_GRADCHECK_CASES(checkpoint) {
  using namespace wick;
  return {
      {"checkpoint tanh(x) x",
       [](auto& v) { return checkpoint([](const Variable& x) { return mul(tanh(x), x); }, v[0]); },
       {{3, 4}}},
      {"checkpoint two inputs",
       [](auto& v) {
         auto f = [](const std::vector<Variable>& in) {
           return std::vector<Variable>{matmul(in[0], sigmoid(in[1])), sum(mul(in[0], in[0]))};
         };
         const std::vector<Variable> out = checkpoint(f, {v[0], v[1]});
         return add(sum(square(out[0])), out[1]);
       },
       {{2, 3}, {3, 2}}},
  };
}
