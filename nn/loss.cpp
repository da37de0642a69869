#include <wick/nn/loss.h>

#include <wick/autograd/ops.h>
#include <wick/tensor/elementwise.h>
#include <wick/tensor/factories.h>
#include <wick/tensor/indexing.h>
#include <wick/tensor/reduce.h>

namespace wick {

namespace {

Variable reduce(const char* op, const Variable& loss, Reduction reduction) {
  switch (reduction) {
    case Reduction::None:
      return loss;
    case Reduction::Mean:
      return mean(loss);
    case Reduction::Sum:
      return sum(loss);
  }
  detail::throw_error(op, ": unknown reduction");
}

void check_pair(const char* op, const Variable& input, const Variable& target) {
  WICK_CHECK(input.defined() && target.defined(), op, ": input and target must be defined");
  WICK_CHECK(input.shape() == target.shape(), op, ": input ", shape_str(input.shape()), " and target ",
             shape_str(target.shape()), " must have the same shape");
  WICK_CHECK(input.data().is_floating_point(), op, ": needs a floating input, got ", dtype_name(input.dtype()));
}

// The class dim of a loss input: 1 for [N, C, ...], 0 for an unbatched [C].
int64_t class_dim(const char* op, const Variable& input) {
  WICK_CHECK(input.dim() >= 1, op, ": input must have a class dim, got shape ", shape_str(input.shape()));
  WICK_CHECK(input.data().is_floating_point(), op, ": needs a floating input, got ", dtype_name(input.dtype()));
  return input.dim() == 1 ? 0 : 1;
}

// Shape a class-index target must have for `input`: the input without its class dim.
Shape target_shape_for(const Shape& input, int64_t cdim) {
  Shape s = input;
  s.erase(s.begin() + cdim);
  return s;
}

}  // namespace

Variable mse_loss(const Variable& input, const Variable& target, Reduction reduction) {
  check_pair("mse_loss", input, target);
  return reduce("mse_loss", square(input - target), reduction);
}

Variable l1_loss(const Variable& input, const Variable& target, Reduction reduction) {
  check_pair("l1_loss", input, target);
  return reduce("l1_loss", abs(input - target), reduction);
}

Variable smooth_l1_loss(const Variable& input, const Variable& target, Reduction reduction, double beta) {
  check_pair("smooth_l1_loss", input, target);
  WICK_CHECK(beta >= 0, "smooth_l1_loss: beta must be >= 0, got ", beta);
  Variable d = input - target;
  Variable ad = abs(d);
  if (beta == 0) return reduce("smooth_l1_loss", ad, reduction);
  Tensor quadratic = lt(ad.data(), Scalar(beta));
  return reduce("smooth_l1_loss", where(quadratic, mul(square(d), 0.5 / beta), add(ad, -0.5 * beta)), reduction);
}

Variable bce_with_logits(const Variable& input, const Variable& target, Reduction reduction,
                         const Tensor& pos_weight, const Tensor& weight) {
  check_pair("bce_with_logits", input, target);
  // log(1 + exp(-x)) without overflow for either sign of x.
  Variable log1p_exp_neg = add(log1p(exp(neg(abs(input)))), relu(neg(input)));
  Variable loss = mul(sub(1.0, target), input);
  if (pos_weight.defined()) {
    // Broadcast against the input, as PyTorch ([C] per class, [1] for all).
    WICK_CHECK(broadcast_shapes("bce_with_logits: pos_weight", pos_weight.shape(), input.shape()) == input.shape(),
               "bce_with_logits: pos_weight ", shape_str(pos_weight.shape()), " does not broadcast to input ",
               shape_str(input.shape()));
    Variable log_weight = add(mul(target, Variable(sub(pos_weight.to(input.dtype()), Scalar(1)))), 1.0);
    loss = add(loss, mul(log_weight, log1p_exp_neg));
  } else {
    loss = add(loss, log1p_exp_neg);
  }
  if (weight.defined()) {
    broadcast_shapes("bce_with_logits", weight.shape(), input.shape());
    loss = mul(loss, Variable(weight.to(input.dtype())));
    WICK_CHECK(loss.shape() == input.shape(), "bce_with_logits: weight ", shape_str(weight.shape()),
               " must broadcast to the input ", shape_str(input.shape()));
  }
  return reduce("bce_with_logits", loss, reduction);
}

Variable kl_div(const Variable& input, const Variable& target, KLDivReduction reduction, bool log_target) {
  check_pair("kl_div", input, target);
  Variable pointwise;
  if (log_target) {
    pointwise = mul(exp(target), sub(target, input));
  } else {
    // target * log(target) is taken as 0 where target is 0; log reads 1 there so that
    // neither the value nor the gradient becomes NaN.
    Tensor positive = gt(target.data(), Scalar(0));
    Variable safe_log = log(where(positive, target, Variable(ones_like(target.data()))));
    pointwise = mul(target, sub(safe_log, input));
  }
  switch (reduction) {
    case KLDivReduction::None:
      return pointwise;
    case KLDivReduction::Mean:
      return mean(pointwise);
    case KLDivReduction::Sum:
      return sum(pointwise);
    case KLDivReduction::BatchMean:
      break;
  }
  WICK_CHECK(input.dim() >= 1, "kl_div: BatchMean needs a batch dim, got shape ", shape_str(input.shape()));
  return div(sum(pointwise), Scalar(static_cast<double>(input.size(0))));
}

namespace {

// -weight[t] * logp[.., t, ..] for each of the M target elements, flattened to [M], with
// the per-element weights (0 where the target is ignored): what every reduction needs.
struct PickedLoss {
  Variable loss;
  Tensor weights;
};

PickedLoss pick_targets(const char* op, const Variable& logp, const Tensor& target, const Tensor& weight,
                        int64_t ignore_index) {
  const int64_t cdim = class_dim(op, logp);
  const int64_t classes = logp.size(cdim);
  WICK_CHECK(target.defined() && !target.is_floating_point() && target.dtype() != DType::Bool, op,
             ": class targets must be integers, got ", target.defined() ? dtype_name(target.dtype()) : "undefined");
  WICK_CHECK(target.shape() == target_shape_for(logp.shape(), cdim), op, ": target ", shape_str(target.shape()),
             " does not match input ", shape_str(logp.shape()), " (expected the input's shape without dim ", cdim,
             ")");
  if (weight.defined())
    WICK_CHECK(weight.dim() == 1 && weight.size(0) == classes, op, ": weight ", shape_str(weight.shape()),
               " must hold one weight per class (", classes, ")");

  // Classes last, then one row per target element.
  Variable rows = logp;
  if (logp.dim() > 2) {
    std::vector<int64_t> order{0};
    for (int64_t d = 2; d < logp.dim(); ++d) order.push_back(d);
    order.push_back(1);
    rows = permute(logp, order);
  }
  const int64_t m = target.numel();
  rows = reshape(rows, {m, classes});
  Tensor t = target.to(DType::Int64).reshape({m});
  Tensor valid = ne(t, Scalar(ignore_index));
  Tensor kept = masked_select(t, valid);
  if (kept.numel() > 0) {
    const int64_t lo = min(kept).item<int64_t>(), hi = max(kept).item<int64_t>();
    WICK_CHECK(lo >= 0 && hi < classes, op, ": target ", lo < 0 ? lo : hi, " is out of range for ", classes,
               " classes (input ", shape_str(logp.shape()), ")");
  }
  Tensor safe = where(valid, t, Scalar(0));
  Tensor w = weight.defined() ? index_select(weight.to(logp.dtype()), 0, safe) : ones({m}, logp.data().options());
  w = mul(w, valid.to(logp.dtype()));
  Variable picked = reshape(gather(rows, 1, safe.unsqueeze(1)), {m});
  return {neg(mul(picked, Variable(w))), w};
}

Variable reduce_weighted(const char* op, const PickedLoss& p, const Shape& target_shape, Reduction reduction) {
  switch (reduction) {
    case Reduction::None:
      return reshape(p.loss, target_shape);
    case Reduction::Sum:
      return sum(p.loss);
    case Reduction::Mean:
      return div(sum(p.loss), Variable(sum(p.weights)));
  }
  detail::throw_error(op, ": unknown reduction");
}

}  // namespace

Variable nll_loss(const Variable& input, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                  Reduction reduction) {
  PickedLoss p = pick_targets("nll_loss", input, target, weight, ignore_index);
  return reduce_weighted("nll_loss", p, target.shape(), reduction);
}

}  // namespace wick
