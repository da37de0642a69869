// Matrix products with PyTorch's rules, all reduced to the 3-d gemm slot.
#include <wick/tensor/dispatch.h>
#include <wick/tensor/factories.h>
#include <wick/tensor/linalg.h>
#include <wick/tensor/matmul_promotion.h>

#include <algorithm>
#include <cmath>

namespace wick {

namespace {

void check_operands(const char* op, const Tensor& a, const Tensor& b) {
  WICK_CHECK(a.defined() && b.defined(), op, ": undefined tensor");
  WICK_CHECK(a.device() == b.device(), op, ": expected both operands on one device, got ", a.device(), " and ",
             b.device());
  WICK_CHECK(a.dtype() == b.dtype(), op, ": expected both operands to have the same dtype, got ", dtype_name(a.dtype()),
             " and ", dtype_name(b.dtype()), " (shapes ", shape_str(a.shape()), " and ", shape_str(b.shape()), ")");
  // Integers multiply on the CPU, wrapping around on overflow (PyTorch's CPU does the same;
  // its CUDA build and wick's refuse them). Bool has no product.
  WICK_CHECK(a.dtype() != DType::Bool, op, ": expected numeric operands, got bool (shapes ", shape_str(a.shape()),
             " and ", shape_str(b.shape()), ")");
}

// PyTorch converts alpha and beta to an integer product's dtype as it converts any number
// (Scalar::to, with c10's overflow check): a whole number must fit the dtype (uint8 also
// takes -255..-1, which wrap), any other must lie in its range and is truncated toward
// zero (alpha 2.7 scales by 2, 0.5 by 0). Returns the scale the product uses.
double integer_scale(const char* op, const char* name, DType t, double v) {
  const Scalar s = std::trunc(v) == v && std::abs(v) < 9.2e18 ? Scalar(static_cast<int64_t>(v)) : Scalar(v);
  try {
    check_fits(op, s, t);
  } catch (const Error&) {
    detail::throw_error(op, ": ", name, " ", v, " cannot be converted to ", dtype_name(t),
                        " (the integer operands' dtype) without overflow");
  }
  return std::trunc(v);
}

void check_inner(const char* op, const Tensor& a, const Tensor& b, int64_t ka, int64_t kb) {
  WICK_CHECK(ka == kb, op, ": shapes ", shape_str(a.shape()), " and ", shape_str(b.shape()), " cannot be multiplied (",
             ka, " != ", kb, ")");
}

// The matrix `m` [..., rows, cols] as the gemm slot wants it: unit stride in one of its last
// two dims, with a leading dimension that covers the other. Size-1 dims get a canonical
// stride (it never moves the address), so only truly strided matrices are copied.
Tensor as_gemm_operand(const Tensor& m) {
  const int64_t nd = m.dim();
  const int64_t rows = m.size(nd - 2), cols = m.size(nd - 1);
  Shape st = m.strides();
  int64_t& rs = st[nd - 2];
  int64_t& cs = st[nd - 1];
  if (m.numel() == 0) {
    rs = std::max<int64_t>(cols, 1);
    cs = 1;
    return Tensor(m.storage(), m.shape(), st, m.offset(), m.dtype());
  }
  if (cols == 1) cs = 1;
  if (rows == 1) rs = cols;
  if (cs == 1 && rs >= std::max<int64_t>(cols, 1)) return Tensor(m.storage(), m.shape(), st, m.offset(), m.dtype());
  if (cols == 1) cs = rows;
  if (rows == 1) rs = 1;
  if (rs == 1 && cs >= std::max<int64_t>(rows, 1)) return Tensor(m.storage(), m.shape(), st, m.offset(), m.dtype());
  return m.contiguous();
}

// Whether dims [0, nd-1) of `t` collapse into one (so [..., M, K] folds into [B*M, K]).
bool leading_dims_fold(const Tensor& t) {
  int64_t expect = -1;
  for (int64_t d = t.dim() - 2; d >= 0; --d) {
    if (t.size(d) == 1) continue;
    if (expect >= 0 && t.stride(d) != expect) return false;
    expect = t.stride(d) * t.size(d);
  }
  return true;
}

// out [batch..., M, N] (contiguous) = alpha * a [batch..., M, K] @ b [batch..., K, N] +
// beta * out, where a and b are already expanded to the batch shape (broadcast batch dims
// have stride 0; a matrix that needs a copy must be copied before it is expanded, see
// as_gemm_operand). Trailing batch dims that collapse in both operands go into one gemm call
// (any batch stride, 0 included); the leading dims left over are looped here, so no
// broadcast operand is ever materialised.
void batched_gemm(const Tensor& out, const Tensor& a, const Tensor& b, double alpha, double beta) {
  if (out.numel() == 0) return;
  const int64_t nb = out.dim() - 2;
  const int64_t M = out.size(-2), N = out.size(-1), K = a.size(-1);
  const Tensor A = as_gemm_operand(a), B = as_gemm_operand(b);
  // Batch dims of size 1 never move an address; drop them.
  Shape sizes, sa, sb, so;
  for (int64_t d = 0; d < nb; ++d)
    if (out.size(d) != 1) {
      sizes.push_back(out.size(d));
      sa.push_back(A.stride(d));
      sb.push_back(B.stride(d));
      so.push_back(out.stride(d));
    }
  int64_t inner = static_cast<int64_t>(sizes.size());  // first dim of the collapsed group
  int64_t group = 1, ga = 0, gb = 0;
  if (inner > 0) {
    --inner;
    group = sizes[inner];
    ga = sa[inner];
    gb = sb[inner];
    while (inner > 0 && sa[inner - 1] == ga * group && sb[inner - 1] == gb * group) {
      --inner;
      group *= sizes[inner];
    }
  }
  const int64_t sam = A.stride(-2), sak = A.stride(-1), sbk = B.stride(-2), sbn = B.stride(-1);
  const auto gemm = kernel_for(&KernelTable::gemm, "matmul", out.device());
  // Walk the leading (uncollapsed) batch dims.
  Shape idx(static_cast<size_t>(inner), 0);
  const int64_t outer = numel_of(Shape(sizes.begin(), sizes.begin() + inner));
  for (int64_t n = 0; n < outer; ++n) {
    int64_t oa = A.offset(), ob = B.offset(), oo = out.offset();
    for (int64_t d = 0; d < inner; ++d) {
      oa += idx[d] * sa[d];
      ob += idx[d] * sb[d];
      oo += idx[d] * so[d];
    }
    Tensor a3(A.storage(), {ga == 0 ? 1 : group, M, K}, {ga, sam, sak}, oa, A.dtype());
    Tensor b3(B.storage(), {gb == 0 ? 1 : group, K, N}, {gb, sbk, sbn}, ob, B.dtype());
    Tensor o3(out.storage(), {group, M, N}, {M * N, N, 1}, oo, out.dtype());
    gemm(o3, a3, b3, alpha, beta);
    for (int64_t d = inner - 1; d >= 0; --d) {
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
    }
  }
}

// a [..., M, K] @ b [..., K, N] with broadcast batch dims (both at least 2-d).
Tensor matmul_batched(const Tensor& a_in, const Tensor& b_in) {
  check_inner("matmul", a_in, b_in, a_in.size(-1), b_in.size(-2));
  const Tensor a = as_gemm_operand(a_in), b = as_gemm_operand(b_in);
  const int64_t M = a.size(-2), K = a.size(-1), N = b.size(-1);
  // A batched a against an unbatched b is one tall product when a's leading dims fold.
  if (b.dim() == 2 && a.dim() > 2 && leading_dims_fold(a)) {
    Shape out_shape(a.shape().begin(), a.shape().end() - 1);
    out_shape.push_back(N);
    Tensor out = empty(out_shape, a.options());
    const int64_t rows = numel_of(Shape(a.shape().begin(), a.shape().end() - 1));
    batched_gemm(out.view({rows, N}), a.reshape({rows, K}), b, 1.0, 0.0);
    return out;
  }
  Shape ba(a.shape().begin(), a.shape().end() - 2), bb(b.shape().begin(), b.shape().end() - 2);
  Shape batch = broadcast_shapes("matmul", ba, bb);
  Shape sa = batch, sb = batch, so = batch;
  sa.insert(sa.end(), {M, K});
  sb.insert(sb.end(), {K, N});
  so.insert(so.end(), {M, N});
  Tensor out = empty(so, a.options());
  batched_gemm(out, a.expand(sa), b.expand(sb), 1.0, 0.0);
  return out;
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  check_operands("matmul", a, b);
  return matmul_promotion::matmul_of(a, b, matmul_batched);
}

Tensor mm(const Tensor& a, const Tensor& b) {
  check_operands("mm", a, b);
  WICK_CHECK(a.dim() == 2 && b.dim() == 2, "mm: expected 2-d operands, got shapes ", shape_str(a.shape()), " and ",
             shape_str(b.shape()));
  check_inner("mm", a, b, a.size(1), b.size(0));
  Tensor out = empty({a.size(0), b.size(1)}, a.options());
  batched_gemm(out, a, b, 1.0, 0.0);
  return out;
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  WICK_CHECK(a.defined() && b.defined(), "bmm: undefined tensor");
  WICK_CHECK(a.dim() == 3 && b.dim() == 3, "bmm: expected 3-d operands, got shapes ", shape_str(a.shape()), " and ",
             shape_str(b.shape()));
  WICK_CHECK(a.size(0) == b.size(0), "bmm: batch sizes differ in shapes ", shape_str(a.shape()), " and ",
             shape_str(b.shape()));
  check_inner("bmm", a, b, a.size(2), b.size(1));
  // PyTorch's bmm compares the dtypes only in the kernel it runs: with an empty result or
  // nothing to contract it returns (zeros) in b's dtype, whatever a's is.
  if (a.device() == b.device() && (a.size(0) * a.size(1) * b.size(2) == 0 || a.size(2) == 0))
    return zeros({a.size(0), a.size(1), b.size(2)}, b.options());
  check_operands("bmm", a, b);
  Tensor out = empty({a.size(0), a.size(1), b.size(2)}, a.options());
  batched_gemm(out, a, b, 1.0, 0.0);
  return out;
}

Tensor addmm(const Tensor& input, const Tensor& a, const Tensor& b, double beta, double alpha) {
  check_operands("addmm", a, b);
  WICK_CHECK(input.defined(), "addmm: undefined input");
  WICK_CHECK(a.dim() == 2 && b.dim() == 2, "addmm: expected 2-d operands, got shapes ", shape_str(a.shape()), " and ",
             shape_str(b.shape()));
  check_inner("addmm", a, b, a.size(1), b.size(0));
  WICK_CHECK(input.dtype() == a.dtype(), "addmm: expected input to have the operands' dtype ", dtype_name(a.dtype()),
             ", got ", dtype_name(input.dtype()));
  WICK_CHECK(input.device() == a.device(), "addmm: input is on ", input.device(), " but the operands are on ",
             a.device());
  Shape shape = {a.size(0), b.size(1)};
  WICK_CHECK(broadcast_shapes("addmm", input.shape(), shape) == shape, "addmm: input of shape ",
             shape_str(input.shape()), " does not broadcast to ", shape_str(shape));
  Tensor out = empty(shape, a.options());
  if (!is_floating(a.dtype())) {
    // With nothing to contract PyTorch scales the input by beta in place, which a
    // fractional beta cannot do to integers.
    WICK_CHECK(a.size(1) > 0 || out.numel() == 0 || std::trunc(beta) == beta, "addmm: result type float can't be ",
               "cast to ", dtype_name(a.dtype()), " (beta ", beta, " scales the input when the inner dim is empty)");
    const double whole_beta = integer_scale("addmm", "beta", a.dtype(), beta);
    alpha = integer_scale("addmm", "alpha", a.dtype(), alpha);
    // The input is read when beta is nonzero before the truncation, as PyTorch.
    if (beta != 0.0) out.copy_(input);
    batched_gemm(out, a, b, alpha, whole_beta);
    return out;
  }
  // beta == 0 ignores input entirely (NaN in it included), like PyTorch.
  if (beta != 0.0) out.copy_(input);
  batched_gemm(out, a, b, alpha, beta);
  return out;
}

Tensor outer(const Tensor& a, const Tensor& b) {
  check_operands("outer", a, b);
  WICK_CHECK(a.dim() == 1 && b.dim() == 1, "outer: expected 1-d operands, got shapes ", shape_str(a.shape()), " and ",
             shape_str(b.shape()));
  Tensor out = empty({a.size(0), b.size(0)}, a.options());
  batched_gemm(out, a.unsqueeze(1), b.unsqueeze(0), 1.0, 0.0);
  return out;
}

Tensor dot(const Tensor& a, const Tensor& b) {
  check_operands("dot", a, b);
  WICK_CHECK(a.dim() == 1 && b.dim() == 1, "dot: expected 1-d operands, got shapes ", shape_str(a.shape()), " and ",
             shape_str(b.shape()));
  check_inner("dot", a, b, a.size(0), b.size(0));
  Tensor out = empty({1, 1}, a.options());
  batched_gemm(out, a.unsqueeze(0), b.unsqueeze(1), 1.0, 0.0);
  return out.view({});
}

Tensor Tensor::matmul(const Tensor& o) const { return wick::matmul(*this, o); }

}  // namespace wick
