// Entry points of the reductions, softmax family and scans: argument checks, output shape
// and dtype, then one kernel slot (see wick/tensor/dispatch.h).
#include <wick/tensor/dispatch.h>
#include <wick/tensor/elementwise.h>
#include <wick/tensor/reduce.h>

#include <cmath>

namespace wick {

namespace {

// Which dims a reduction folds and the shapes of its result.
struct Reduction {
  uint64_t mask = 0;  // bit d: dim d is reduced
  Shape kept_shape;   // x's shape with reduced dims set to 1 (what the kernel writes)
  Shape out_shape;    // kept_shape, or without the reduced dims unless keepdim
};

Reduction plan_reduction(const char* op, const Tensor& x, const Dims& dims, bool keepdim) {
  WICK_CHECK(x.defined(), op, ": undefined tensor");
  const int64_t nd = x.dim();
  WICK_CHECK(nd <= 64, op, ": tensors with more than 64 dims are not supported, got shape ", shape_str(x.shape()));
  uint64_t seen = 0;
  for (int64_t d : dims) {
    int64_t w = wrap_dim(op, d, nd);
    WICK_CHECK(!((seen >> w) & 1), op, ": dim ", d, " appears more than once in the dims of a reduction over shape ",
               shape_str(x.shape()));
    seen |= uint64_t{1} << w;
  }
  Reduction r;
  // A 0-d tensor has nothing to fold: dims 0/-1 name its single element.
  r.mask = nd == 0 ? 0 : dims.empty() ? ~uint64_t{0} >> (64 - nd) : seen;
  for (int64_t d = 0; d < nd; ++d) {
    bool reduced = (r.mask >> d) & 1;
    r.kept_shape.push_back(reduced ? 1 : x.shape()[d]);
    if (!reduced || keepdim) r.out_shape.push_back(r.kept_shape.back());
  }
  return r;
}

Tensor reduce(ReduceOp op, const Tensor& x, const Dims& dims, bool keepdim, DType out_dtype, double param = 0) {
  const char* name = reduce_op_name(op);
  Reduction r = plan_reduction(name, x, dims, keepdim);
  Tensor out = empty(r.kept_shape, Options(out_dtype, x.device()));
  if (out.numel() > 0) kernel_for(&KernelTable::reduce, name, x.device())(op, out, x, r.mask, param);
  return out.view(r.out_shape);
}

// Sum and prod widen bool and integers to int64, like PyTorch.
DType widened(DType t) { return is_integral(t, true) ? DType::Int64 : t; }

// x as row `op` of the reduction table takes it (op_kinds.h): refused, converted or as it is.
// `name` is the function called, which for std is not the row's own.
Tensor row_input(ReduceOp op, const char* name, const Tensor& x) {
  WICK_CHECK(x.defined(), name, ": undefined tensor");
  switch (reduce_op_input(op)) {
    case ReduceInput::Any: break;
    case ReduceInput::Floating:
      WICK_CHECK(x.is_floating_point(), name, ": the input must be floating point to give a floating result, got ",
                 dtype_name(x.dtype()), " of shape ", shape_str(x.shape()),
                 " (convert it with .to(DType::Float32) first)");
      break;
    case ReduceInput::ToFloat: return x.is_floating_point() ? x : x.to(kDefaultFloat);
  }
  return x;
}

std::pair<Tensor, Tensor> reduce_with_index(ReduceOp op, const char* name, const Tensor& x, int64_t dim, bool keepdim) {
  WICK_CHECK(x.defined(), name, ": undefined tensor");
  int64_t d = wrap_dim(name, dim, x.dim());
  // A 0-d tensor reduces as a 1-element vector and stays 0-d.
  Tensor in = x.dim() == 0 ? x.view({1}) : x;
  WICK_CHECK(in.size(d) > 0, name, ": cannot reduce dim ", dim, " of size 0 of a tensor of shape ",
             shape_str(x.shape()), " (the result has no identity)");
  Shape kept = in.shape();
  kept[d] = 1;
  Tensor values = empty(kept, x.options());
  Tensor indices = empty(kept, Options(DType::Int64, x.device()));
  if (values.numel() > 0) kernel_for(&KernelTable::reduce_with_index, name, x.device())(op, values, indices, in, d);
  Shape out_shape = x.dim() == 0 ? Shape{} : kept;
  if (x.dim() > 0 && !keepdim) out_shape.erase(out_shape.begin() + d);
  return {values.view(out_shape), indices.view(out_shape)};
}

Tensor extremum(ReduceOp op, const Tensor& x) {
  const char* name = reduce_op_name(op);
  WICK_CHECK(x.defined(), name, ": undefined tensor");
  WICK_CHECK(x.numel() > 0, name, ": cannot take the ", name, " of an empty tensor of shape ", shape_str(x.shape()),
             " (the result has no identity)");
  return reduce(op, x, {}, false, x.dtype());
}

// The flattened index when no dim is given; keepdim then keeps every dim as size 1.
Tensor arg_extremum(ReduceOp op, const char* name, const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  if (dim) return reduce_with_index(op, name, x, *dim, keepdim).second;
  WICK_CHECK(x.defined(), name, ": undefined tensor");
  WICK_CHECK(x.numel() > 0, name, ": cannot take the ", name, " of an empty tensor of shape ", shape_str(x.shape()));
  Tensor index = reduce_with_index(op, name, x.reshape({-1}), 0, false).second;
  return keepdim ? index.view(Shape(x.dim(), 1)) : index;
}

// Runs a kernel that maps contiguous x to a contiguous result of the same shape along dim.
template <class Run>
Tensor along_dim(const char* op, const Tensor& x, int64_t dim, DType out_dtype, Run run) {
  WICK_CHECK(x.defined(), op, ": undefined tensor");
  int64_t d = wrap_dim(op, dim, x.dim());
  Tensor out = empty(x.shape(), Options(out_dtype, x.device()));
  if (out.numel() == 0) return out;
  // A 0-d tensor is handled as a 1-element vector.
  Tensor in = x.dim() == 0 ? x.view({1}) : x.contiguous();
  run(x.dim() == 0 ? out.view({1}) : out, in, d);
  return out;
}

Tensor softmax_family(const char* op, const Tensor& x, int64_t dim, bool log) {
  WICK_CHECK(x.defined(), op, ": undefined tensor");
  WICK_CHECK(x.is_floating_point(), op, ": expects a floating point input, got ", dtype_name(x.dtype()), " of shape ",
             shape_str(x.shape()), " (convert it with .to(DType::Float32) first)");
  return along_dim(op, x, dim, x.dtype(), [&](const Tensor& out, const Tensor& in, int64_t d) {
    kernel_for(&KernelTable::softmax, op, x.device())(out, in, d, log);
  });
}

}  // namespace

// max / min over several dims (all when dims is empty); every reduced dim must be non-empty.
Tensor extremum_over(ReduceOp op, const char* name, const Tensor& x, const Dims& dims, bool keepdim) {
  WICK_CHECK(x.defined(), name, ": undefined tensor");
  const uint64_t mask = plan_reduction(name, x, dims, keepdim).mask;
  for (int64_t d = 0; d < x.dim(); ++d)
    WICK_CHECK(!((mask >> d) & 1) || x.size(d) > 0, name, ": cannot reduce dim ", d, " of size 0 of a tensor of shape ",
               shape_str(x.shape()), " (the result has no identity)");
  return reduce(op, x, dims, keepdim, x.dtype());
}

Tensor var(const Tensor& x, const Dims& dims, double correction, bool keepdim) {
  const Tensor in = row_input(ReduceOp::Var, "var", x);
  return reduce(ReduceOp::Var, in, dims, keepdim, in.dtype(), correction);
}

Tensor std(const Tensor& x, const Dims& dims, double correction, bool keepdim) {
  const Tensor in = row_input(ReduceOp::Var, "std", x);
  return wick::sqrt(reduce(ReduceOp::Var, in, dims, keepdim, in.dtype(), correction));
}

Tensor norm(const Tensor& x, double p, const Dims& dims, bool keepdim) {
  row_input(ReduceOp::NormP, "norm", x);
  WICK_CHECK(p >= 0, "norm: p must be non-negative (or inf), got ", p, " for a tensor of shape ", shape_str(x.shape()));
  // The inf-norm is a max, which has no value over nothing (torch.linalg.vector_norm): an
  // empty tensor reduced whole or along an empty dim is refused.
  if (std::isinf(p) && x.numel() == 0) {
    WICK_CHECK(!dims.empty(), "norm: cannot take the inf norm of an empty tensor of shape ", shape_str(x.shape()),
               " (a max over nothing has no identity)");
    for (int64_t d : dims)
      WICK_CHECK(x.size(wrap_dim("norm", d, x.dim())) != 0, "norm: cannot take the inf norm over dim ", d,
                 " of size 0 of a tensor of shape ", shape_str(x.shape()), " (a max over nothing has no identity)");
  }
  // The "0-norm" counts the nonzero entries (NaN counts), as torch.linalg.vector_norm.
  if (p == 0) return sum(ne(x, 0), dims, keepdim).to(x.dtype());
  return reduce(ReduceOp::NormP, x, dims, keepdim, x.dtype(), p);
}

namespace {

// A row of the reduction table (op_kinds.h): its input rule, then its output dtype.
Tensor reduce_row(ReduceOp op, const Tensor& x, const Dims& dims, bool keepdim) {
  const Tensor in = row_input(op, reduce_op_name(op), x);
  switch (reduce_op_output(op)) {
    case ReduceOutput::Same: return reduce(op, in, dims, keepdim, in.dtype());
    case ReduceOutput::Widened: return reduce(op, in, dims, keepdim, widened(in.dtype()));
    case ReduceOutput::Truth: {
      Tensor out = reduce(op, in, dims, keepdim, DType::Bool);
      return in.dtype() == DType::UInt8 ? out.to(DType::UInt8) : out;
    }
  }
  return {};
}

}  // namespace

#include "wick/tensor/generated/reduce_ops_defs.inc"

Tensor max(const Tensor& x) { return extremum(ReduceOp::Max, x); }
Tensor amax(const Tensor& x, const Dims& dims, bool keepdim) {
  return extremum_over(ReduceOp::Max, "amax", x, dims, keepdim);
}
Tensor amin(const Tensor& x, const Dims& dims, bool keepdim) {
  return extremum_over(ReduceOp::Min, "amin", x, dims, keepdim);
}
Tensor min(const Tensor& x) { return extremum(ReduceOp::Min, x); }

std::pair<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim) {
  return reduce_with_index(ReduceOp::Max, "max", x, dim, keepdim);
}
std::pair<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim) {
  return reduce_with_index(ReduceOp::Min, "min", x, dim, keepdim);
}

Tensor argmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  WICK_CHECK(!x.defined() || x.dtype() != DType::Bool, "argmax: not supported for bool tensors");
  return arg_extremum(ReduceOp::Max, "argmax", x, dim, keepdim);
}
Tensor argmin(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  WICK_CHECK(!x.defined() || x.dtype() != DType::Bool, "argmin: not supported for bool tensors");
  return arg_extremum(ReduceOp::Min, "argmin", x, dim, keepdim);
}

Tensor softmax(const Tensor& x, int64_t dim) { return softmax_family("softmax", x, dim, false); }
Tensor log_softmax(const Tensor& x, int64_t dim) { return softmax_family("log_softmax", x, dim, true); }

namespace {

Tensor scan(ScanOp op, const Tensor& x, int64_t dim, DType out_dtype, const Tensor& indices = {}) {
  const char* name = scan_op_name(op);
  return along_dim(name, x, dim, out_dtype, [&](const Tensor& out, const Tensor& in, int64_t d) {
    kernel_for(&KernelTable::scan, name, x.device())(
        op, out, x.dim() == 0 && indices.defined() ? indices.view({1}) : indices, in, d);
  });
}

std::pair<Tensor, Tensor> scan_with_index(ScanOp op, const Tensor& x, int64_t dim) {
  WICK_CHECK(x.defined(), scan_op_name(op), ": undefined tensor");
  Tensor indices = empty(x.shape(), Options(DType::Int64, x.device()));
  Tensor values = scan(op, x, dim, x.dtype(), indices);
  return {values, indices};
}

}  // namespace

Tensor cumsum(const Tensor& x, int64_t dim) {
  WICK_CHECK(x.defined(), "cumsum: undefined tensor");
  return scan(ScanOp::Sum, x, dim, widened(x.dtype()));
}

Tensor cumprod(const Tensor& x, int64_t dim) {
  WICK_CHECK(x.defined(), "cumprod: undefined tensor");
  return scan(ScanOp::Prod, x, dim, widened(x.dtype()));
}

std::pair<Tensor, Tensor> cummax(const Tensor& x, int64_t dim) { return scan_with_index(ScanOp::Max, x, dim); }
std::pair<Tensor, Tensor> cummin(const Tensor& x, int64_t dim) { return scan_with_index(ScanOp::Min, x, dim); }

Tensor logcumsumexp(const Tensor& x, int64_t dim) {
  WICK_CHECK(x.defined(), "logcumsumexp: undefined tensor");
  WICK_CHECK(x.is_floating_point(), "logcumsumexp: expects a floating point input, got ", dtype_name(x.dtype()),
             " of shape ", shape_str(x.shape()), " (convert it with .to(DType::Float32) first)");
  return scan(ScanOp::LogSumExp, x, dim, x.dtype());
}

Tensor Tensor::sum() const { return wick::sum(*this); }
Tensor Tensor::sum(const std::vector<int64_t>& dims, bool keepdim) const { return wick::sum(*this, dims, keepdim); }
Tensor Tensor::mean() const { return wick::mean(*this); }
Tensor Tensor::mean(const std::vector<int64_t>& dims, bool keepdim) const { return wick::mean(*this, dims, keepdim); }
Tensor Tensor::argmax(std::optional<int64_t> dim, bool keepdim) const { return wick::argmax(*this, dim, keepdim); }

}  // namespace wick
