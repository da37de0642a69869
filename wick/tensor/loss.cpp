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

CrossEntropyResult cross_entropy_forward(const Tensor& logits, const Tensor& target, const CrossEntropyOptions& o) {
  const char* op = "cross_entropy";
  const CeShape p = plan_cross_entropy(op, logits, target, o);
  const Options so{logits.dtype() == DType::Float64 ? DType::Float64 : DType::Float32, logits.device()};
  Tensor per_position = empty({p.n, p.s}, logits.options());
  Tensor target_weight = p.by_index ? empty({p.n, p.s}, logits.options()) : Tensor();
  CrossEntropyResult r{Tensor(), empty({p.n, p.s}, so), Tensor()};
  if (p.n * p.s > 0) {
    const Tensor t = p.by_index ? target.contiguous().view({p.n, p.s}) : target.contiguous().view({p.n, p.c, p.s});
    kernel_for(&KernelTable::cross_entropy, op, logits.device())(per_position, r.lse, target_weight, logits.contiguous().view({p.n, p.c, p.s}), t,
                    contiguous_or_undefined(o.weight), o.ignore_index, o.label_smoothing);
  }
  switch (o.reduction) {
    case Reduction::None:
      r.loss = per_position.view(p.positions);
      break;
    case Reduction::Sum:
      r.loss = sum(per_position);
      break;
    case Reduction::Mean:
      r.total_weight =
          p.by_index ? sum(target_weight) : scalar_tensor(static_cast<double>(p.n * p.s), logits.options());
      r.loss = div(sum(per_position), r.total_weight);
      break;
  }
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

}  // namespace wick
