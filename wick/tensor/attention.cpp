#include <wick/tensor/attention.h>

#include <wick/tensor/dispatch.h>
#include <wick/tensor/elementwise.h>
#include <wick/tensor/factories.h>
#include <wick/tensor/reduce.h>

namespace wick {
namespace {

DType stats_dtype(DType t) { return t == DType::Float64 ? DType::Float64 : DType::Float32; }

void check_inputs(const char* op, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& bias) {
  WICK_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, op, ": q, k and v must be 4-d [B, H, len, dim], got ",
             shape_str(q.shape()), ", ", shape_str(k.shape()), ", ", shape_str(v.shape()));
  const int64_t b = q.size(0), hq = q.size(1), hk = k.size(1);
  WICK_CHECK(k.size(0) == b && v.size(0) == b && v.size(1) == hk && k.size(3) == q.size(3) && v.size(2) == k.size(2) &&
                 hk > 0 && hq % hk == 0,
             op, ": expected q [B, Hq, L, E], k [B, Hk, S, E], v [B, Hk, S, Ev] with Hk dividing Hq, got ",
             shape_str(q.shape()), ", ", shape_str(k.shape()), ", ", shape_str(v.shape()));
  WICK_CHECK(is_floating(q.dtype()) && k.dtype() == q.dtype() && v.dtype() == q.dtype(), op,
             ": q, k and v must share a floating dtype, got ", dtype_name(q.dtype()), ", ", dtype_name(k.dtype()), ", ",
             dtype_name(v.dtype()));
  WICK_CHECK(k.device() == q.device() && v.device() == q.device(), op, ": q, k and v must be on one device");
  if (bias.defined())
    WICK_CHECK(bias.shape() == (Shape{b, hq, q.size(2), k.size(2)}) && is_floating(bias.dtype()) &&
                   bias.device() == q.device(),
               op, ": the bias must be floating [B, Hq, L, S] = ", shape_str({b, hq, q.size(2), k.size(2)}),
               " on the inputs' device, got ", dtype_name(bias.dtype()), " ", shape_str(bias.shape()));
}

// The bias in the statistics dtype, keeping broadcast (0) strides where it already has that dtype.
Tensor bias_for_kernel(const Tensor& bias, DType stats) {
  if (!bias.defined() || bias.dtype() == stats) return bias;
  return bias.to(stats);
}

// t itself when its rows (the last dim) have unit stride, which is all the kernels need: heads
// split from one projection ([B, L, H, E] memory seen as [B, H, L, E]) are read in place.
Tensor rows_of(const Tensor& t) { return t.size(3) <= 1 || t.stride(3) == 1 ? t : t.contiguous(); }

// A new [B, H, N, D] tensor laid out as `like` is when `like`'s heads interleave within a
// position ([B, N, H, D] memory, as projections split into heads are): then the output's
// heads merge back into [B, N, H D] without a copy (what MultiheadAttention does next, and
// the gradient of such a q, k or v flows back into its projection the same way).
Tensor empty_heads_like(const Tensor& like, int64_t d) {
  const Options o(like.dtype(), like.device());
  const int64_t b = like.size(0), h = like.size(1), n = like.size(2);
  if (h > 1 && n > 1 && like.stride(1) < like.stride(2)) return empty({b, n, h, d}, o).permute({0, 2, 1, 3});
  return empty({b, h, n, d}, o);
}

}  // namespace

Tensor causal_mask(int64_t l, int64_t s, Device device) {
  WICK_CHECK(l >= 0 && s >= 0, "causal_mask: sizes must be >= 0, got ", l, " and ", s);
  const Options idx(DType::Int64, device);
  return gt(arange(0, s, 1, idx).unsqueeze(0), arange(0, l, 1, idx).unsqueeze(1));
}

AttentionResult attention_forward(const Tensor& q_in, const Tensor& k_in, const Tensor& v_in, const Tensor& bias,
                                  const AttentionParams& p) {
  const char* op = "attention_forward";
  check_inputs(op, q_in, k_in, v_in, bias);
  WICK_CHECK(p.dropout >= 0 && p.dropout <= 1, op, ": dropout must be in [0, 1], got ", p.dropout);
  const Tensor q = rows_of(q_in), k = rows_of(k_in), v = rows_of(v_in);
  const DType stats = stats_dtype(q.dtype());
  AttentionResult r{empty_heads_like(q, v.size(3)), empty({q.size(0), q.size(1), q.size(2)}, Options(stats, q.device()))};
  if (r.lse.numel() == 0) return r;
  kernel_for(&KernelTable::attention_forward, op, q.device())(r.out, r.lse, q, k, v, bias_for_kernel(bias, stats), p);
  return r;
}

AttentionGrads attention_backward(const Tensor& grad_out, const Tensor& q_in, const Tensor& k_in, const Tensor& v_in,
                                  const Tensor& bias, const AttentionResult& fwd, const AttentionParams& p) {
  const char* op = "attention_backward";
  check_inputs(op, q_in, k_in, v_in, bias);
  WICK_CHECK(p.dropout >= 0 && p.dropout <= 1, op, ": dropout must be in [0, 1], got ", p.dropout);
  WICK_CHECK(grad_out.shape() == fwd.out.shape(), op, ": grad_out ", shape_str(grad_out.shape()), " must be ",
             shape_str(fwd.out.shape()));
  const Tensor q = rows_of(q_in), k = rows_of(k_in), v = rows_of(v_in);
  const Tensor dout = rows_of(grad_out.to(q.dtype()));
  const DType stats = stats_dtype(q.dtype());
  AttentionGrads g{empty_heads_like(q, q.size(3)), empty_heads_like(k, k.size(3)), empty_heads_like(v, v.size(3))};
  if (q.numel() == 0 && k.numel() == 0 && v.numel() == 0) return g;
  // delta_i = dout_i . out_i, in the statistics dtype.
  const Tensor delta = sum(mul(dout.to(stats), fwd.out.to(stats)), {-1}).contiguous();
  kernel_for(&KernelTable::attention_backward, op, q.device())(g.q, g.k, g.v, dout, q, k, v, fwd.lse.contiguous(), delta,
                                                               bias_for_kernel(bias, stats), p);
  return g;
}

}  // namespace wick
