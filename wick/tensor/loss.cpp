// Entry points of the fused cross-entropy: argument checks, the [N, C, S] view the kernels
// see, the reduction, then one kernel slot each way (see wick/tensor/dispatch.h).
#include <wick/tensor/dispatch.h>
#include <wick/tensor/elementwise.h>
#include <wick/tensor/loss.h>
#include <wick/tensor/reduce.h>

namespace wick {

namespace {

struct CeShape {
  int64_t n, c, s;
  Shape positions;  // the unreduced loss's shape: logits' without the class dim
  bool by_index;
};

CeShape plan_cross_entropy(const char* op, const Tensor& logits, const Tensor& target, const CrossEntropyOptions& o) {
  WICK_CHECK(logits.defined() && target.defined(), op, ": undefined logits or target");
  WICK_CHECK(logits.is_floating_point(), op, ": expects floating point logits, got ", dtype_name(logits.dtype()),
             " of shape ", shape_str(logits.shape()));
  WICK_CHECK(logits.dim() >= 1, op, ": expects logits [C], [N, C] or [N, C, d...], got shape ",
             shape_str(logits.shape()));
  CeShape p{1, 0, 1, {}, target.dtype() == DType::Int64};
  if (logits.dim() == 1) {
    p.c = logits.size(0);
  } else {
    p.n = logits.size(0);
    p.c = logits.size(1);
    p.positions.push_back(p.n);
    for (int64_t d = 2; d < logits.dim(); ++d) {
      p.s *= logits.size(d);
      p.positions.push_back(logits.size(d));
    }
  }
  if (p.by_index) {
    WICK_CHECK(target.shape() == p.positions, op, ": class-index target must have shape ", shape_str(p.positions),
               " for logits of shape ", shape_str(logits.shape()), ", got ", shape_str(target.shape()));
  } else {
    WICK_CHECK(target.dtype() == logits.dtype() && target.shape() == logits.shape(), op,
               ": target must be int64 class indices or probabilities with the logits' shape and dtype (",
               shape_str(logits.shape()), ", ", dtype_name(logits.dtype()), "), got ", dtype_name(target.dtype()),
               " of shape ", shape_str(target.shape()));
  }
  WICK_CHECK(target.device() == logits.device(), op, ": target is on ", target.device().str(),
             " but the logits are on ", logits.device().str());
  WICK_CHECK(p.c > 0 || p.n * p.s == 0, op, ": logits of shape ", shape_str(logits.shape()), " have no classes");
  if (o.weight.defined()) {
    WICK_CHECK(
        o.weight.shape() == Shape{p.c} && o.weight.dtype() == logits.dtype() && o.weight.device() == logits.device(),
        op, ": weight must be [", p.c, "] ", dtype_name(logits.dtype()), " on ", logits.device().str(),
        " for logits of shape ", shape_str(logits.shape()), ", got ", shape_str(o.weight.shape()), " ",
        dtype_name(o.weight.dtype()), " on ", o.weight.device().str());
  }
  WICK_CHECK(o.label_smoothing >= 0 && o.label_smoothing <= 1, op, ": label_smoothing must be in [0, 1], got ",
             o.label_smoothing);
  return p;
}

Tensor contiguous_or_undefined(const Tensor& t) { return t.defined() ? t.contiguous() : t; }

}  // namespace

CrossEntropyResult cross_entropy_forward(const Tensor& logits, const Tensor& target, const CrossEntropyOptions& o,
                                         bool gradient) {
  const char* op = "cross_entropy";
  const CeShape p = plan_cross_entropy(op, logits, target, o);
  const Options so{logits.dtype() == DType::Float64 ? DType::Float64 : DType::Float32, logits.device()};
  const bool mean = o.reduction == Reduction::Mean;
  Tensor per_position = empty({p.n, p.s}, logits.options());
  Tensor target_weight = p.by_index ? empty({p.n, p.s}, logits.options()) : Tensor();
  CrossEntropyResult r{Tensor(), empty({p.n, p.s}, so), Tensor(), Tensor()};
  if (gradient) r.dlogits = empty({p.n, p.c, p.s}, logits.options());
  // The gradient written with the forward is already divided by Mean's divisor, so that a
  // backward with the loss's own gradient (1) leaves it as it is: for index targets the
  // divisor (the kept targets' weights) is summed first.
  const bool divisor_first = p.by_index && mean && gradient;
  if (p.n * p.s > 0) {
    const Tensor t = p.by_index ? target.contiguous().view({p.n, p.s}) : target.contiguous().view({p.n, p.c, p.s});
    const Tensor w = contiguous_or_undefined(o.weight);
    if (divisor_first) {
      kernel_for(&KernelTable::cross_entropy_target_weight, op, logits.device())(target_weight, t, w, p.c,
                                                                                 o.ignore_index);
      r.total_weight = sum(target_weight);
    }
    const double scale = !p.by_index && mean ? 1.0 / static_cast<double>(p.n * p.s) : 1.0;
    kernel_for(&KernelTable::cross_entropy, op, logits.device())(
        per_position, r.lse, target_weight, r.dlogits, logits.contiguous().view({p.n, p.c, p.s}), t, w,
        o.ignore_index, o.label_smoothing, r.total_weight, scale);
  }
  switch (o.reduction) {
    case Reduction::None:
      r.loss = per_position.view(p.positions);
      break;
    case Reduction::Sum:
      r.loss = sum(per_position);
      break;
    case Reduction::Mean:
      if (!r.total_weight.defined())
        r.total_weight =
            p.by_index ? sum(target_weight) : scalar_tensor(static_cast<double>(p.n * p.s), logits.options());
      r.loss = div(sum(per_position), r.total_weight);
      break;
  }
  if (gradient) r.dlogits = r.dlogits.view(logits.shape());
  return r;
}

Tensor cross_entropy(const Tensor& logits, const Tensor& target, const CrossEntropyOptions& o) {
  return cross_entropy_forward(logits, target, o).loss;
}

Tensor cross_entropy_backward(const Tensor& grad, const Tensor& logits, const Tensor& target,
                              const CrossEntropyResult& saved, const CrossEntropyOptions& o) {
  const char* op = "cross_entropy_backward";
  const CeShape p = plan_cross_entropy(op, logits, target, o);
  const Shape grad_shape = o.reduction == Reduction::None ? p.positions : Shape{};
  WICK_CHECK(grad.defined() && grad.shape() == grad_shape && grad.device() == logits.device(), op,
             ": grad must have the loss's shape ", shape_str(grad_shape), ", got ",
             grad.defined() ? shape_str(grad.shape()) : std::string("undefined"));
  WICK_CHECK(saved.lse.defined() && saved.lse.shape() == Shape({p.n, p.s}), op,
             ": the saved forward result does not belong to logits of shape ", shape_str(logits.shape()));
  Tensor dlogits = empty({p.n, p.c, p.s}, logits.options());
  if (dlogits.numel() == 0) return dlogits.view(logits.shape());
  Tensor g = grad.to(logits.dtype());
  // Every target ignored: the mean is 0/0 = NaN, but no logit affects it, so its gradient
  // is 0 (PyTorch's too), not 0 * (g / 0) = NaN.
  if (o.reduction == Reduction::Mean)
    g = where(eq(saved.total_weight, 0), Scalar(0.0), div(g, saved.total_weight).to(logits.dtype()));
  const Tensor t = p.by_index ? target.contiguous().view({p.n, p.s}) : target.contiguous().view({p.n, p.c, p.s});
  kernel_for(&KernelTable::cross_entropy_backward, op, logits.device())(dlogits, g.contiguous(), logits.contiguous().view({p.n, p.c, p.s}), saved.lse, t,
                           contiguous_or_undefined(o.weight), o.ignore_index, o.label_smoothing);
  return dlogits.view(logits.shape());
}

Tensor cross_entropy_backward_from_forward(const Tensor& grad, const CrossEntropyResult& saved,
                                           const CrossEntropyOptions& o, bool in_place) {
  const char* op = "cross_entropy_backward";
  const Tensor& d = saved.dlogits;
  WICK_CHECK(d.defined() && d.is_contiguous(), op,
             ": the forward wrote no gradient (cross_entropy_forward with gradient = true)");
  // [C] is one example; [N, C, d...] has positions [N, d...].
  Shape positions;
  int64_t n = 1, c = d.dim() == 1 ? d.size(0) : d.size(1), s = 1;
  if (d.dim() > 1) {
    n = d.size(0);
    positions.push_back(n);
    for (int64_t k = 2; k < d.dim(); ++k) {
      s *= d.size(k);
      positions.push_back(d.size(k));
    }
  }
  const Shape grad_shape = o.reduction == Reduction::None ? positions : Shape{};
  WICK_CHECK(grad.defined() && grad.shape() == grad_shape && grad.device() == d.device(), op,
             ": grad must have the loss's shape ", shape_str(grad_shape), ", got ",
             grad.defined() ? shape_str(grad.shape()) : std::string("undefined"));
  Tensor out = in_place ? d : d.clone();
  if (out.numel() == 0) return out;
  kernel_for(&KernelTable::cross_entropy_scale, op, d.device())(out.view({n, c, s}), grad.to(d.dtype()).contiguous());
  return out;
}

}  // namespace wick
