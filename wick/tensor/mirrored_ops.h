#pragma once
// Ops whose Tensor and Variable forms differ only in the types of their differentiable
// arguments and result are declared once, as rows of a table kept next to the Tensor
// header that holds them (WICK_LINALG_OPS in linalg.h, WICK_INDEXING_OPS in indexing.h...):
//
//   #define WICK_LINALG_OPS(X, In, Out)  X(Out, matmul, (In a, In b))  X(Out, mm, ...)  ...
//
// tools/op_list.py writes each side as plain declarations: the Tensor header includes
// wick/tensor/generated/linalg_ops.inc (In = const Tensor&, Out = Tensor), wick/autograd/ops.h
// includes wick/autograd/generated/linalg_ops.inc (const Variable&, Variable); a Tensor side
// declared in wick/autograd/ is <table>_tensor.inc. The views (WICK_VIEW_OPS(X, Out)) become
// Tensor methods and Variable functions taking the Variable first. A row's default arguments
// hold for both forms; its comment, written /* */ after it (a // comment would swallow the
// line's continuation), goes above each declaration. A fourth field gives the body (an
// expression both forms return, or Record<Node>(arguments) for a kernel op's Variable form;
// a fifth, Autocast, casts first): the definitions go to <table>_defs.inc, included by the
// .cpp that holds what they call (docs/testing.md). The ctest generated_op_files_current
// fails when a generated file differs from its table: after editing a row, run
// python3 tools/op_list.py --write.
#include <utility>

namespace wick {
class Tensor;
// The result of the selections (sort, topk, max along a dim...): values of the input's
// kind (Tensor or Variable) and int64 indices, a Tensor in both; one name so that a row can
// write it without a comma (WithIndices<Out>).
template <class T>
using WithIndices = std::pair<T, Tensor>;
}  // namespace wick
