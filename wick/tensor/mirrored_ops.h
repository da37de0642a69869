#pragma once
// Ops whose Tensor and Variable forms differ only in the types of their differentiable
// arguments and result are declared once, as rows of a table kept next to the Tensor
// header that holds them (WICK_LINALG_OPS in linalg.h, WICK_INDEXING_OPS in indexing.h...):
//
//   #define WICK_LINALG_OPS(X, In, Out)  X(Out, matmul, (In a, In b))  X(Out, mm, ...)  ...
//
// Each side expands the table with its own types: the Tensor header with
// WICK_LINALG_OPS(WICK_DECLARE_FUNCTION, const Tensor&, Tensor), wick/autograd/ops.h with
// WICK_LINALG_OPS(WICK_DECLARE_FUNCTION, const Variable&, Variable). The views, which are
// Tensor methods, are declared in class Tensor with WICK_DECLARE_METHOD and as Variable
// functions taking the Variable first with WICK_DECLARE_FUNCTION_OF_METHOD. A row's
// default arguments hold for both forms; a row's comment is written /* */, since a //
// comment would swallow the line's continuation.
#include <utility>

namespace wick {
class Tensor;
// The result of the selections (sort, topk, max along a dim...): values of the input's
// kind (Tensor or Variable) and int64 indices, a Tensor in both; one name so that a row can
// write it without a comma (WithIndices<Out>).
template <class T>
using WithIndices = std::pair<T, Tensor>;
}  // namespace wick

#define WICK_DECLARE_FUNCTION(result, name, params) result name params;
#define WICK_DECLARE_METHOD(result, name, params) result name params const;
#define WICK_UNPARENTHESIZE(...) __VA_ARGS__
#define WICK_DECLARE_FUNCTION_OF_METHOD(result, name, params) \
  result name(const Variable& x, WICK_UNPARENTHESIZE params);
