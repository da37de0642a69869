#pragma once
// Distances and similarities (torch.nn.functional's), built from primitives and written once
// for Tensor and Variable like composites.h: no backward of their own, so they run wherever
// the primitives run. p may be any p > 0, INFINITY, or 0 (the count of nonzero entries,
// whose gradient is 0); a p-norm of zero has gradient 0, as PyTorch's norm and cdist.
//
//   normalize(x, p, dim, eps)            x / max(||x||_p, eps), the norm taken along dim
//                                        (the clamp is an ordinary one: no gradient flows
//                                        through a norm below eps)
//   cosine_similarity(x1, x2, dim, eps)  sum(x1 / max(||x1||, eps) * x2 / max(||x2||, eps))
//                                        along dim of the broadcast shape, which is removed.
//                                        As PyTorch (2.x), each norm is clamped on its own and
//                                        the clamp changes the value only: the gradient flows
//                                        through the unclamped norm.
//   pairwise_distance(x1, x2, p, eps, keepdim)
//                                        ||x1 - x2 + eps||_p along the last dim of the
//                                        broadcast shape (the eps keeps the gradient of equal
//                                        rows finite)
//   cdist(x1, x2, p)                     x1 [B..., P, M], x2 [B..., R, M] -> [B..., P, R]:
//                                        ||x1[.., i, :] - x2[.., j, :]||_p, batch dims
//                                        broadcast. Computed from the [B..., P, R, M]
//                                        differences (exact, also for p = 2, where PyTorch
//                                        switches to a matmul form for P or R > 25; memory
//                                        grows with P R M). The gradient at zero distance is
//                                        0, as PyTorch's; over zero features (M = 0) every
//                                        p gives zeros, p = inf too.
#include <wick/autograd/variable.h>
#include <wick/tensor/tensor.h>

namespace wick {

// One row each, declared for Tensor and for Variable (wick/tensor/mirrored_ops.h).
#define WICK_DISTANCE_OPS(X, In, Out)                                                                          \
  X(Out, normalize, (In x, double p = 2.0, int64_t dim = 1, double eps = 1e-12), normalize_of(x, p, dim, eps), \
    Autocast)                                                                                                  \
  X(Out, cosine_similarity, (In x1, In x2, int64_t dim = 1, double eps = 1e-8),                                \
    cosine_similarity_of(x1, x2, dim, eps), Autocast)                                                          \
  X(Out, pairwise_distance, (In x1, In x2, double p = 2.0, double eps = 1e-6, bool keepdim = false),           \
    pairwise_distance_of(x1, x2, p, eps, keepdim))                                                             \
  X(Out, cdist, (In x1, In x2, double p = 2.0), cdist_of(x1, x2, p), Autocast)
#include <wick/autograd/generated/distance_ops_tensor.inc>
#include <wick/autograd/generated/distance_ops.inc>
}  // namespace wick
