#pragma once
// The autocast policy: one row per op that autocast changes, naming the dtype the op computes
// in under an AutocastGuard (wick/autograd/autocast.h). The categories are PyTorch's CUDA autocast
// lists; tests/nn/autocast_test.cpp checks every row's output dtype against
// torch.autocast's own decision (tests/nn/autocast_reference.txt, written by
// autocast_reference.py) and names the rows where wick chooses otherwise, with the reason.
//
//   LowerPrecision  float32 inputs are cast to the guard's 16-bit dtype (products, convolutions:
//                   where tensor cores pay and the float32 accumulate inside the kernel keeps
//                   the sums accurate)
//   Float32         16-bit inputs are cast to float32 (exp/log/pow, softmax, norms, losses,
//                   reductions: range or cancellation make 16 bits lose the answer)
//   Promote         floating inputs are cast to the widest of them (several inputs that must
//                   agree)
//   Refused         a wick::Error when any input is on the guard's device type, whatever its
//                   dtype (torch.autocast's banned list: ops that are unsafe in 16 bits and have
//                   a safe form to use instead)
//
// The unary ops' and the reductions' rows are not here: their category is the autocast
// column of their tables (wick/tensor/op_kinds.h). tools/op_list.py writes the AutocastOp
// enum of all of them (wick/autograd/generated/autocast_ops.inc) and the category and name
// arrays (autocast_ops_defs.inc); the ctest generated_op_files_current fails when they are stale.
//
// float64 inputs are never cast (as PyTorch). Ops that are not listed run in their inputs'
// dtypes; composites that are not listed autocast through the listed ops they call.
#include <wick/tensor/op_kinds.h>

#define WICK_AUTOCAST_POLICY(X)                   \
  X(matmul, LowerPrecision)                       \
  X(mm, LowerPrecision)                           \
  X(bmm, LowerPrecision)                          \
  X(addmm, LowerPrecision)                        \
  X(baddbmm, LowerPrecision)                      \
  X(mv, LowerPrecision)                           \
  X(addmv, LowerPrecision)                        \
  X(linear, LowerPrecision)                       \
  X(conv1d, LowerPrecision)                       \
  X(conv2d, LowerPrecision)                       \
  X(conv3d, LowerPrecision)                       \
  X(conv_transpose1d, LowerPrecision)             \
  X(conv_transpose2d, LowerPrecision)             \
  X(conv_transpose3d, LowerPrecision)             \
  X(prelu, LowerPrecision)                        \
  X(scaled_dot_product_attention, LowerPrecision) \
  X(pow, Float32)                                 \
  X(softmax, Float32)                             \
  X(log_softmax, Float32)                         \
  X(cumsum, Float32)                              \
  X(cumprod, Float32)                             \
  X(normalize, Float32)                           \
  X(cosine_similarity, Float32)                   \
  X(cdist, Float32)                               \
  X(batch_norm, Float32)                          \
  X(layer_norm, Float32)                          \
  X(group_norm, Float32)                          \
  X(rms_norm, Float32)                            \
  X(cross_entropy, Float32)                       \
  X(nll_loss, Float32)                            \
  X(mse_loss, Float32)                            \
  X(l1_loss, Float32)                             \
  X(smooth_l1_loss, Float32)                      \
  X(huber_loss, Float32)                          \
  X(kl_div, Float32)                              \
  X(bce_with_logits, Float32)                     \
  X(margin_ranking_loss, Float32)                 \
  X(cosine_embedding_loss, Float32)               \
  X(triplet_margin_loss, Float32)                 \
  X(poisson_nll_loss, Float32)                    \
  X(interpolate, Float32)                         \
  X(addcmul, Promote)                             \
  X(addcdiv, Promote)                             \
  X(atan2, Promote)                               \
  X(dot, Promote)                                 \
  X(tensordot, Promote)                           \
  X(scatter_add, Promote)                         \
  X(index_put, Promote)                           \
  X(binary_cross_entropy, Refused)
