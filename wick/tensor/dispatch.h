#pragma once
// The table of kernels per device type, and the contracts every kernel keeps.
//
// Op entry points (wick/tensor/*.cpp: elementwise.cpp, reduce.cpp, linalg.cpp...) check
// arguments, compute the output shape and dtype, allocate the output, then call one slot of
// the table for the tensors' device. Each backend fills its table once, by an explicit call
// (register_cpu_kernels, register_cuda_kernels) made on first use (dispatch.cpp's
// all_backends); nothing registers itself from a static initialiser. An empty slot, or a
// dtype a kernel does not support, throws wick::Error naming the op and the device.
//
// Shared contracts, unless a slot says otherwise:
// - `out` has been allocated by the entry point with the right shape and dtype. It is
//   contiguous, except for the in-place-capable slots (copy, fill, unary, binary, where),
//   whose `out` may have any strides (never overlapping itself: entry points guarantee
//   that inputs which partially overlap `out` have been copied first).
// - Inputs may have any strides, including 0 (broadcast), and are already expanded to the
//   shape the slot states. All tensors are on the same device.
// - Kernels run on the current stream of their device and do not synchronise.
// - Kernels must handle numel() == 0 (usually by returning at once).
#include <array>
#include <cstdint>
#include <vector>

#include <wick/tensor/device.h>
#include <wick/tensor/dtype.h>
#include <wick/tensor/attention.h>
#include <wick/tensor/generator.h>
#include <wick/tensor/kernel_params.h>
#include <wick/tensor/op_kinds.h>
#include <wick/tensor/optim_hyper.h>
#include <wick/tensor/recurrent.h>
#include <wick/tensor/scalar.h>

namespace wick {

class Tensor;
class Allocator;
struct FusedTables;

// The state lists of a fused optimizer step, kState's order; the ones a step does not use
// are empty.
using FusedStateLists = std::array<std::vector<Tensor>, kMaxFusedStates>;

struct KernelTable {
  // dst[i] = convert(src[i]); src expanded to dst's shape; any dtypes on both sides.
  void (*copy)(const Tensor& dst, const Tensor& src) = nullptr;
  // out[i] = v converted to out's dtype.
  void (*fill)(const Tensor& out, const Scalar& v) = nullptr;
  // out[i] = start + i * step (contiguous out, computed in double then converted).
  void (*sequence)(const Tensor& out, double start, double step) = nullptr;
  // out = op(in); `in` has out's shape. Input dtype == out dtype, except LogicalNot (bool out).
  void (*unary)(UnaryOp op, const Tensor& out, const Tensor& in, const UnaryParams& p) = nullptr;
  // out = op(a, b); a and b have out's shape and the same dtype; out has that dtype,
  // or bool for comparisons and logical ops.
  void (*binary)(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) = nullptr;
  // out = cond ? a : b; cond is bool; a, b have out's dtype; all expanded to out's shape.
  void (*where)(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) = nullptr;
  // out[kept] = reduce over the dims set in `dims_mask` (bit d = dim d) of `in`.
  // out is contiguous with in's shape, reduced dims set to 1. `param`: correction for Var,
  // p for NormP. Output dtype is decided by the entry point (Sum of ints -> int64, All/Any
  // -> bool, otherwise in's dtype). in.numel() may be 0 (Sum -> 0, Prod -> 1, Max/Min are
  // rejected by the entry point).
  void (*reduce)(ReduceOp op, const Tensor& out, const Tensor& in, uint64_t dims_mask, double param) = nullptr;
  // Max or Min along one dim with its index: values (in's dtype) and indices (int64), both
  // contiguous with in's shape except dim -> 1. The first index wins ties; NaN wins over numbers.
  void (*reduce_with_index)(ReduceOp op, const Tensor& values, const Tensor& indices, const Tensor& in,
                            int64_t dim) = nullptr;
  // Softmax (or log-softmax) of contiguous `in` along `dim`; out contiguous, same shape.
  void (*softmax)(const Tensor& out, const Tensor& in, int64_t dim, bool log) = nullptr;
  // Inclusive scan of contiguous `in` along dim; out contiguous with in's shape. Sum and Prod
  // of bool and integers give int64 (wrapping), otherwise out has in's dtype; 16-bit floats
  // accumulate in float or wider. LogSumExp is floating only. Max and Min also write
  // `indices` (int64, contiguous; undefined for the other ops): the index of the element
  // each value came from, the last of equal values, and once a NaN is seen the latest NaN.
  void (*scan)(ScanOp op, const Tensor& out, const Tensor& indices, const Tensor& in, int64_t dim) = nullptr;
  // Stable sort of each row of contiguous `in` seen as [rows, n] (n = its last dim; the
  // entry point moves the sorted dim last): values (in's dtype) and indices (int64, the
  // position within the row), both contiguous with in's shape. Ascending puts NaN after
  // every number, descending before; -0.0 equals 0.0; equal keys keep their input order in
  // both directions (kernels/sort_order.h).
  void (*sort)(const Tensor& values, const Tensor& indices, const Tensor& in, bool descending) = nullptr;
  // out[b] = alpha * a[b] @ b[b] + beta * out[b] for 3-d a [B|1, M, K], b [B|1, K, N],
  // out [B, M, N] contiguous. In a and b, each matrix has unit stride in one of its two
  // dims (row- or column-major, any leading dimension); the batch stride may be 0.
  // All three share a floating dtype. beta == 0 means out is not read.
  void (*gemm)(const Tensor& out, const Tensor& a, const Tensor& b, double alpha, double beta) = nullptr;
  // Bad indices (outside [0, size)): the CPU kernels of index_select and index_add have them
  // checked by the entry point, and gather/scatter's throw; CUDA's kernels skip each and
  // report the first on the device, raised at the host's next wait (device_error.cuh).
  // out = in.index_select(dim, index); index is contiguous 1-d int64.
  void (*index_select)(const Tensor& out, const Tensor& in, int64_t dim, const Tensor& index) = nullptr;
  // out[i][j][k] = in[i][index[i][j][k]][k] (for dim 1); index int64 with out's shape.
  void (*gather)(const Tensor& out, const Tensor& in, int64_t dim, const Tensor& index) = nullptr;
  // self[i][index[i][j][k]][k] (= or +=) src[i][j][k] (for dim 1), over index's shape;
  // self is written in place (contiguous); accumulate selects +=.
  void (*scatter)(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, bool accumulate) = nullptr;
  // self.select(dim, index[i]) += src.select(dim, i) (self contiguous, in place).
  void (*index_add)(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) = nullptr;
  // The number of nonzero elements of contiguous `in`, and their coordinates written to
  // out ([count, in.dim()] int64, contiguous) when out is defined: call once with an
  // undefined out to count, then again to fill.
  int64_t (*nonzero)(const Tensor& out, const Tensor& in) = nullptr;
  // Random numbers into contiguous out: Uniform [a, b), Normal (mean a, std b),
  // RandInt [a, b), Bernoulli (p = a).
  void (*random)(const Tensor& out, RandomKind kind, double a, double b, PhiloxState state) = nullptr;
  // out (bfloat16) = in (float32) rounded stochastically, element i with Philox counter
  // offset + i (kernels/random_draw.h stochastic_round_draw); both contiguous, one numel.
  void (*stochastic_round)(const Tensor& out, const Tensor& in, PhiloxState state) = nullptr;
  // Copies between host and this device type (either side may be this device): both
  // contiguous, same dtype and numel. non_blocking may return before the copy finishes.
  void (*copy_across_devices)(const Tensor& dst, const Tensor& src, bool non_blocking) = nullptr;

  // --- normalisation, loss, optimizer steps (kernels/{cpu,cuda}/norm, loss, optim) ------
  // Norm kernels see contiguous x and dy as 3-d [N, C, S]; out and dx are contiguous with
  // x's shape. weight and bias are [C] in x's dtype, or undefined. mean and invstd are
  // contiguous in the statistics dtype (x's dtype, float32 for 16-bit x).
  // Batch norm: statistics per channel over N*S. Training writes the batch mean and
  // 1/sqrt(biased var + eps) and, when defined, updates running_mean / running_var ([C],
  // x's dtype) in place: r = (1 - momentum) r + momentum * batch stat (unbiased variance).
  // Eval writes running_mean and 1/sqrt(running_var + eps) as mean / invstd and uses them.
  void (*batch_norm)(const Tensor& out, const Tensor& mean, const Tensor& invstd, const Tensor& x, const Tensor& weight,
                     const Tensor& bias, const Tensor& running_mean, const Tensor& running_var, bool training,
                     double momentum, double eps) = nullptr;
  // dx, and dweight / dbias ([C], each undefined when not wanted), from the forward's
  // mean / invstd; `training` selects the batch-statistics gradient.
  void (*batch_norm_backward)(const Tensor& dx, const Tensor& dweight, const Tensor& dbias, const Tensor& dy,
                              const Tensor& x, const Tensor& weight, const Tensor& mean, const Tensor& invstd,
                              bool training) = nullptr;
  // Group norm: statistics per (n, g) over its C/G*S contiguous elements; mean / invstd are
  // [N * groups].
  void (*group_norm)(const Tensor& out, const Tensor& mean, const Tensor& invstd, const Tensor& x, const Tensor& weight,
                     const Tensor& bias, int64_t groups, double eps) = nullptr;
  void (*group_norm_backward)(const Tensor& dx, const Tensor& dweight, const Tensor& dbias, const Tensor& dy,
                              const Tensor& x, const Tensor& weight, const Tensor& mean, const Tensor& invstd,
                              int64_t groups) = nullptr;
  // Layer norm and RMS norm over the rows of contiguous x [M, K] (the normalised dims
  // flattened; K > 0); weight / bias are [K] or undefined, mean / invstd contiguous [M].
  // Layer norm: mean = sum x / K, invstd = 1 / sqrt(sum (x - mean)^2 / K + eps),
  // out = (x - mean) * invstd * w + b. rms: the same with mean 0 (invstd = 1 / sqrt(mean of
  // x^2 + eps)), mean and bias undefined.
  void (*layer_norm)(const Tensor& out, const Tensor& mean, const Tensor& invstd, const Tensor& x, const Tensor& weight,
                     const Tensor& bias, bool rms, double eps) = nullptr;
  // Per row, with g = dy * w and xhat = (x - mean) * invstd:
  //   dx = invstd * (g - sum(g) / K - xhat * sum(g xhat) / K)   (rms: no sum(g) term),
  // and over the rows dweight = sum dy * xhat, dbias = sum dy ([K]); each output is
  // undefined when not wanted (dbias always for rms).
  void (*layer_norm_backward)(const Tensor& dx, const Tensor& dweight, const Tensor& dbias, const Tensor& dy,
                              const Tensor& x, const Tensor& weight, const Tensor& mean, const Tensor& invstd,
                              bool rms) = nullptr;
  // Fused log-softmax + cross-entropy over contiguous logits [N, C, S] (classes on dim 1).
  // target: int64 [N, S] class indices (checked in range by the kernel, ignore_index
  // skipped), or logits' dtype [N, C, S] class probabilities. weight: [C] or undefined.
  // Writes loss [N, S] (logits' dtype, unreduced, label smoothing applied), lse [N, S]
  // (statistics dtype: log-sum-exp over the classes) and, for index targets,
  // target_weight [N, S] (logits' dtype: weight[target], 0 where ignored). With dlogits
  // defined ([N, C, S], contiguous, logits' dtype) also the gradient, from the same read:
  // dlogits (=) = s * d loss_i / d logits, s = scale / total_weight (0 where total_weight is
  // 0) when total_weight (0-d, logits' dtype) is defined, else scale. An out-of-range
  // target: the CPU throws; CUDA records it on the device and the host raises it at its
  // next wait (kernels/cuda/device_error.cuh); its position gets loss 0 and gradient 0.
  void (*cross_entropy)(const Tensor& loss, const Tensor& lse, const Tensor& target_weight, const Tensor& dlogits,
                        const Tensor& logits, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                        double label_smoothing, const Tensor& total_weight, double scale) = nullptr;
  // target_weight [N, S] (=) = weight[target] (1 without weight), 0 where the int64 target
  // [N, S] is ignore_index or outside [0, classes).
  void (*cross_entropy_target_weight)(const Tensor& target_weight, const Tensor& target, const Tensor& weight,
                                      int64_t classes, int64_t ignore_index) = nullptr;
  // dlogits [N, C, S] *= grad, in place; grad contiguous in dlogits' dtype with numel 1 (one
  // gradient for every position) or N*S. Positions whose grad is exactly 1 are not touched.
  void (*cross_entropy_scale)(const Tensor& dlogits, const Tensor& grad) = nullptr;
  // dlogits [N, C, S] (=) = grad_i * d loss_i / d logits; grad is contiguous in logits'
  // dtype with numel 1 (one gradient for every position) or N*S.
  void (*cross_entropy_backward)(const Tensor& dlogits, const Tensor& grad, const Tensor& logits, const Tensor& lse,
                                 const Tensor& target, const Tensor& weight, int64_t ignore_index,
                                 double label_smoothing) = nullptr;
  // Attention row by row, the score matrix never in memory (kernels/attention_math.h has
  // the math). q [B, Hq, L, E], k [B, Hk, S, E], v [B, Hk, S, Ev] and out [B, Hq, L, Ev]
  // in one floating dtype, any strides whose last is 1 (rows of unit stride: heads split
  // from a [B, L, H, E] projection are not copied); query head h reads key/value head
  // h / (Hq / Hk). out, dq, dk and dv are never expanded (no zero strides).
  // bias: undefined, or [B, Hq, L, S] with any strides (0 to broadcast) in the statistics
  // dtype (stats_t: float64 for float64, else float32), -inf where masked. Writes out (=)
  // and lse [B, Hq, L] (statistics dtype, contiguous) = log sum_s exp(score); a row whose
  // every key is masked gets out = 0 and lse = -inf. p.dropout > 0 drops weights by the
  // mask of AttentionParams (lse stays the undropped one); the backward gets the same p.
  void (*attention_forward)(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v,
                            const Tensor& bias, const AttentionParams& p) = nullptr;
  // dq, dk and dv (=; dk and dv summed over the query heads that share them) for dout
  // [B, Hq, L, Ev] (rows of unit stride, q's dtype), from the forward's lse and delta [B, Hq, L]
  // (statistics dtype) = sum_e dout * out per row. The bias gets no gradient.
  void (*attention_backward)(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dout, const Tensor& q,
                             const Tensor& k, const Tensor& v, const Tensor& lse, const Tensor& delta,
                             const Tensor& bias, const AttentionParams& p) = nullptr;
  // One recurrent time step after its two matrix products: gi = x W_ih^T + b_ih and gh =
  // h W_hh^T + b_hh, [N, G H] with G gates of H features (RNN 1; LSTM 4: i, f, g, o; GRU 3:
  // r, z, n). state [N, H]: the previous c (LSTM) or h (GRU), undefined for RNN. Writes h
  // [N, H], c [N, H] (LSTM; undefined otherwise) and saved (what backward reads; LSTM the
  // four activated gates [N, 4H], GRU r, z, n and gh's n part [N, 4H]; undefined for RNN and
  // when no backward will run).
  // Every tensor contiguous, one floating dtype; 16-bit types compute in float.
  void (*recurrent_cell_forward)(RecurrentCell cell, const Tensor& h, const Tensor& c, const Tensor& saved,
                                 const Tensor& gi, const Tensor& gh, const Tensor& state) = nullptr;
  // The gradients (=) of gi (dgi), of gh where it differs (dgh: GRU only, else undefined)
  // and of state through its direct path (dstate: LSTM and GRU), for dh and dc (LSTM only;
  // both defined: the entry point passes zeros for a missing one), from the forward's h, c,
  // saved and state.
  void (*recurrent_cell_backward)(RecurrentCell cell, const Tensor& dgi, const Tensor& dgh, const Tensor& dstate,
                                  const Tensor& dh, const Tensor& dc, const Tensor& h, const Tensor& c,
                                  const Tensor& saved, const Tensor& state) = nullptr;
  // The fused multi-tensor optimizer steps (a row of WICK_FUSED_OPTIMIZERS, optim_hyper.h, is
  // an alternative of FusedHyper), in place. The lists have equal lengths; entry i of each is
  // contiguous with params[i]'s shape and floating dtype (the lists may mix dtypes). state[k]
  // is the Hyper's kState[k] when h.uses_state(k), else empty.
  void (*fused_step)(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const FusedStateLists& state,
                     const FusedHyper& h) = nullptr;
  // adam_step_capturable (optim_step.h): Adam's fused step with the step count and learning
  // rate read from `scalars` on the device, after a kernel adds 1 to the count; the tables
  // cached in `tables`. One floating dtype. CUDA only.
  void (*adam_step_capturable)(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                               const FusedStateLists& state, const AdamHyper& h, const Tensor& scalars,
                               FusedTables& tables) = nullptr;
  // GradScaler's unscale: grads[i] *= inv_scale in place (contiguous, any floating dtypes,
  // math in compute_t), and found_inf (float32, one element, on the grads' device) = 1 when
  // any element was inf or NaN before scaling (left as it is otherwise).
  void (*unscale_grads)(const std::vector<Tensor>& grads, const Tensor& found_inf, double inv_scale) = nullptr;

  // --- conv and pooling. NCHW; every tensor contiguous and of one floating dtype.
  // out [N, Co, Ho, Wo] = cross-correlation of in [N, Ci, H, W] with weight
  // [Co, Ci / groups, KH, KW] (no bias); writes out.
  void (*conv2d_forward)(const Tensor& out, const Tensor& in, const Tensor& weight, const ConvParams& p) = nullptr;
  // grad_in [N, Ci, H, W] = d conv2d / d in applied to grad_out [N, Co, Ho, Wo]; writes grad_in
  // (its shape fixes H and W; this is also conv_transpose2d's forward).
  void (*conv2d_backward_input)(const Tensor& grad_in, const Tensor& grad_out, const Tensor& weight,
                                const ConvParams& p) = nullptr;
  // grad_weight [Co, Ci / groups, KH, KW] = d conv2d / d weight for grad_out and in; writes it.
  void (*conv2d_backward_weight)(const Tensor& grad_weight, const Tensor& grad_out, const Tensor& in,
                                 const ConvParams& p) = nullptr;
  // out [N, C, Ho, Wo] = max over each window of in [N, C, H, W] (padding never wins, NaN
  // does); indices (int64, out's shape) = h * W + w of the winner within its plane.
  void (*max_pool2d_forward)(const Tensor& out, const Tensor& indices, const Tensor& in, const PoolParams& p) = nullptr;
  // grad_in [N, C, H, W] = 0, then grad_in[plane][indices] += grad_out.
  void (*max_pool2d_backward)(const Tensor& grad_in, const Tensor& grad_out, const Tensor& indices) = nullptr;
  // out = mean over each window (divisor as PoolParams::count_include_pad says); writes out.
  void (*avg_pool2d_forward)(const Tensor& out, const Tensor& in, const PoolParams& p) = nullptr;
  // grad_in = avg_pool2d's input gradient for grad_out; writes grad_in.
  void (*avg_pool2d_backward)(const Tensor& grad_in, const Tensor& grad_out, const PoolParams& p) = nullptr;
  // out [N, C, Ho, Wo]: cell (i, j) averages rows [floor(i H / Ho), ceil((i + 1) H / Ho)) and
  // the same for columns; the backward writes grad_in.
  void (*adaptive_avg_pool2d_forward)(const Tensor& out, const Tensor& in) = nullptr;
  void (*adaptive_avg_pool2d_backward)(const Tensor& grad_in, const Tensor& grad_out) = nullptr;
};

// Every slot of KernelTable, one X(slot) line each, in the struct's order. A new slot adds
// its line here (the static_assert below fails until it does), and then the CUDA test
// binary fails until one of its CUDA-vs-CPU cases calls the slot
// (tests/kernels/slot_coverage_test.cpp).
#define WICK_KERNEL_SLOTS(X)     \
  X(copy)                        \
  X(fill)                        \
  X(sequence)                    \
  X(unary)                       \
  X(binary)                      \
  X(where)                       \
  X(reduce)                      \
  X(reduce_with_index)           \
  X(softmax)                     \
  X(scan)                        \
  X(sort)                        \
  X(gemm)                        \
  X(index_select)                \
  X(gather)                      \
  X(scatter)                     \
  X(index_add)                   \
  X(nonzero)                     \
  X(random)                      \
  X(stochastic_round)            \
  X(copy_across_devices)         \
  X(batch_norm)                  \
  X(batch_norm_backward)         \
  X(group_norm)                  \
  X(group_norm_backward)         \
  X(layer_norm)                  \
  X(layer_norm_backward)         \
  X(cross_entropy)               \
  X(cross_entropy_backward)      \
  X(cross_entropy_target_weight) \
  X(cross_entropy_scale)         \
  X(attention_forward)           \
  X(attention_backward)          \
  X(recurrent_cell_forward)      \
  X(recurrent_cell_backward)     \
  X(fused_step)                  \
  X(adam_step_capturable)        \
  X(unscale_grads)               \
  X(conv2d_forward)              \
  X(conv2d_backward_input)       \
  X(conv2d_backward_weight)      \
  X(max_pool2d_forward)          \
  X(max_pool2d_backward)         \
  X(avg_pool2d_forward)          \
  X(avg_pool2d_backward)         \
  X(adaptive_avg_pool2d_forward) \
  X(adaptive_avg_pool2d_backward)

#define WICK_KERNEL_SLOT_COUNT(slot) +1
static_assert(sizeof(KernelTable) == (0 WICK_KERNEL_SLOTS(WICK_KERNEL_SLOT_COUNT)) * sizeof(void (*)()),
              "a KernelTable slot is missing from WICK_KERNEL_SLOTS");
#undef WICK_KERNEL_SLOT_COUNT

struct Backend {
  KernelTable kernels;
  Allocator* allocator = nullptr;
  int (*device_count)() = nullptr;
};

// Throws "op: no <device> kernel for <dtype>"; kernels call it for unsupported dtypes.
[[noreturn]] void throw_unsupported_dtype(const char* op, Device d, DType t);
[[noreturn]] void throw_missing_kernel(const char* op, Device d);

// The backend of a device type (filled on first use). Throws for a device type whose
// backend is not built in, or a device index that does not exist.
const Backend& backend(Device d);
const KernelTable& kernels(Device d);
// The same table, writable: for test binaries only, which may wrap its slots before any op
// runs (tests/kernels/slot_coverage_test.cpp counts the calls of each CUDA slot).
KernelTable& kernel_table_for_testing(Device d);

// The one way entry points reach a kernel: the slot of d's table, e.g.
//   kernel_for(&KernelTable::gather, "gather", x.device())(out, x, dim, index);
// throws "op: no <device> kernel" when the backend leaves the slot empty. (A slot that is
// filled but lacks a dtype throws from the kernel, through throw_unsupported_dtype.)
template <class Fn>
Fn kernel_for(Fn KernelTable::*slot, const char* op, Device d) {
  Fn k = kernels(d).*slot;
  if (!k) throw_missing_kernel(op, d);
  return k;
}

// Registration calls, made once on first use (dispatch.cpp's all_backends; defined in
// kernels/cpu/register.cpp and kernels/cuda/register.cu, or kernels/cuda/none.cpp without CUDA).
void register_cpu_kernels(Backend& b);
void register_cuda_kernels(Backend& b);

}  // namespace wick
