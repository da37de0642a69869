#include <wick/nn/loss.h>

#include <cmath>
#include <limits>
#include <numbers>

#include <wick/autograd/autocast.h>
#include <wick/autograd/distances.h>
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

Variable mse_loss(const Variable& input_in, const Variable& target_in, Reduction reduction) {
  AutocastArgs autocast(AutocastOp::mse_loss, input_in, target_in);
  const Variable& input = autocast[0];
  const Variable& target = autocast[1];
  check_pair("mse_loss", input, target);
  return reduce("mse_loss", square(input - target), reduction);
}

Variable l1_loss(const Variable& input_in, const Variable& target_in, Reduction reduction) {
  AutocastArgs autocast(AutocastOp::l1_loss, input_in, target_in);
  const Variable& input = autocast[0];
  const Variable& target = autocast[1];
  check_pair("l1_loss", input, target);
  return reduce("l1_loss", abs(input - target), reduction);
}

Variable smooth_l1_loss(const Variable& input_in, const Variable& target_in, Reduction reduction, double beta) {
  AutocastArgs autocast(AutocastOp::smooth_l1_loss, input_in, target_in);
  const Variable& input = autocast[0];
  const Variable& target = autocast[1];
  check_pair("smooth_l1_loss", input, target);
  WICK_CHECK(beta >= 0, "smooth_l1_loss: beta must be >= 0, got ", beta);
  Variable d = input - target;
  Variable ad = abs(d);
  if (beta == 0) return reduce("smooth_l1_loss", ad, reduction);
  Tensor quadratic = lt(ad.data(), Scalar(beta));
  return reduce("smooth_l1_loss", where(quadratic, mul(square(d), 0.5 / beta), add(ad, -0.5 * beta)), reduction);
}

Variable huber_loss(const Variable& input_in, const Variable& target_in, Reduction reduction, double delta) {
  AutocastArgs autocast(AutocastOp::huber_loss, input_in, target_in);
  const Variable& input = autocast[0];
  const Variable& target = autocast[1];
  check_pair("huber_loss", input, target);
  WICK_CHECK(delta > 0, "huber_loss: delta must be positive, got ", delta);
  Variable d = input - target;
  Tensor quadratic = lt(abs(d.data()), Scalar(delta));
  Variable linear = mul(sub(abs(d), 0.5 * delta), delta);
  return reduce("huber_loss", where(quadratic, mul(square(d), 0.5), linear), reduction);
}

namespace {

// log(x) clamped to >= -100, as PyTorch's binary_cross_entropy; where x is 0 (log -inf) the
// value is -100 and the gradient 0 rather than NaN.
Variable clamped_log(const Variable& x) {
  Tensor positive = gt(x.data(), Scalar(0));
  Variable safe = where(positive, x, Variable(ones_like(x.data())));
  return masked_fill(clamp(log(safe), -100.0, std::nullopt), logical_not(positive), -100.0);
}

}  // namespace

Variable binary_cross_entropy(const Variable& input, const Variable& target, const Tensor& weight,
                              Reduction reduction) {
  // Refused under autocast (a wick::Error), so its body never runs in 16 bits.
  AutocastArgs autocast(AutocastOp::binary_cross_entropy, input, target);
  check_pair("binary_cross_entropy", input, target);
  const Tensor& x = input.data();
  WICK_CHECK(!any(logical_not(logical_and(ge(x, Scalar(0)), le(x, Scalar(1))))).item<bool>(),
             "binary_cross_entropy: every input must be a probability in [0, 1] (input ", shape_str(x.shape()),
             " has values outside or NaN)");
  // y log(x) + (1 - y) log(1 - x), the second log as log1p(-x) (exact near x = 0).
  Variable log_x = clamped_log(input);
  Tensor below_one = lt(x, Scalar(1));
  Variable log_1mx = masked_fill(
      clamp(log1p(neg(where(below_one, input, Variable(zeros_like(x))))), -100.0, std::nullopt),
      logical_not(below_one), -100.0);
  Variable loss = neg(add(mul(target, log_x), mul(sub(1.0, target), log_1mx)));
  if (weight.defined()) {
    WICK_CHECK(broadcast_shapes("binary_cross_entropy: weight", weight.shape(), x.shape()) == x.shape(),
               "binary_cross_entropy: weight ", shape_str(weight.shape()), " does not broadcast to input ",
               shape_str(x.shape()));
    loss = mul(loss, Variable(weight.to(input.dtype())));
  }
  return reduce("binary_cross_entropy", loss, reduction);
}

Variable margin_ranking_loss(const Variable& input1_in, const Variable& input2_in, const Variable& target_in,
                             double margin, Reduction reduction) {
  AutocastArgs autocast(AutocastOp::margin_ranking_loss, input1_in, input2_in, target_in);
  const Variable& input1 = autocast[0];
  const Variable& input2 = autocast[1];
  const Variable& target = autocast[2];
  WICK_CHECK(input1.defined() && input2.defined() && target.defined(),
             "margin_ranking_loss: input1, input2 and target must be defined");
  WICK_CHECK(input1.dim() == input2.dim() && input1.dim() == target.dim(),
             "margin_ranking_loss: input1 ", shape_str(input1.shape()), ", input2 ", shape_str(input2.shape()),
             " and target ", shape_str(target.shape()), " must have the same number of dims");
  WICK_CHECK(input1.data().is_floating_point(), "margin_ranking_loss: needs a floating input, got ",
             dtype_name(input1.dtype()));
  broadcast_shapes("margin_ranking_loss", broadcast_shapes("margin_ranking_loss", input1.shape(), input2.shape()),
                   target.shape());
  Variable loss = clamp(add(neg(mul(target, sub(input1, input2))), margin), 0.0, std::nullopt);
  return reduce("margin_ranking_loss", loss, reduction);
}

Variable cosine_embedding_loss(const Variable& input1_in, const Variable& input2_in, const Tensor& target,
                               double margin, Reduction reduction) {
  AutocastArgs autocast(AutocastOp::cosine_embedding_loss, input1_in, input2_in);
  const Variable& input1 = autocast[0];
  const Variable& input2 = autocast[1];
  WICK_CHECK(input1.defined() && input2.defined() && target.defined(),
             "cosine_embedding_loss: input1, input2 and target must be defined");
  const bool batched = target.dim() == 1;
  WICK_CHECK(target.dim() <= 1, "cosine_embedding_loss: target must be 0-d or 1-d, got ", shape_str(target.shape()));
  WICK_CHECK(input1.shape() == input2.shape() && input1.dim() == (batched ? 2 : 1) &&
                 (!batched || input1.size(0) == target.size(0)),
             "cosine_embedding_loss: inputs ", shape_str(input1.shape()), " and ", shape_str(input2.shape()),
             " do not fit target ", shape_str(target.shape()),
             " (expected [N, D] inputs with a [N] target, or [D] inputs with a 0-d target)");
  WICK_CHECK(input1.data().is_floating_point(), "cosine_embedding_loss: needs a floating input, got ",
             dtype_name(input1.dtype()));
  const int64_t d = input1.dim() - 1;
  const double tiny = 1e-12;  // PyTorch's EPSILON, added to each squared norm
  Variable dot = sum(mul(input1, input2), {d});
  Variable sq1 = add(sum(square(input1), {d}), tiny), sq2 = add(sum(square(input2), {d}), tiny);
  Variable cos = div(dot, sqrt(mul(sq1, sq2)));
  Variable zero(zeros_like(cos.data()));
  Tensor t = target.to(cos.dtype());
  Variable pos = where(eq(t, Scalar(1)), sub(1.0, cos), zero);
  Variable negative = where(eq(t, Scalar(-1)), clamp(sub(cos, margin), 0.0, std::nullopt), zero);
  return reduce("cosine_embedding_loss", add(pos, negative), reduction);
}

Variable triplet_margin_loss(const Variable& anchor_in, const Variable& positive_in, const Variable& negative_in,
                             double margin, double p, double eps, bool swap, Reduction reduction) {
  AutocastArgs autocast(AutocastOp::triplet_margin_loss, anchor_in, positive_in, negative_in);
  const Variable& anchor = autocast[0];
  const Variable& positive = autocast[1];
  const Variable& negative = autocast[2];
  WICK_CHECK(anchor.defined() && positive.defined() && negative.defined(),
             "triplet_margin_loss: anchor, positive and negative must be defined");
  WICK_CHECK(anchor.dim() == positive.dim() && anchor.dim() == negative.dim(), "triplet_margin_loss: anchor ",
             shape_str(anchor.shape()), ", positive ", shape_str(positive.shape()), " and negative ",
             shape_str(negative.shape()), " must have the same number of dims");
  WICK_CHECK(anchor.dim() >= 1, "triplet_margin_loss: inputs need at least 1 dim, got 0-d");
  Variable d_pos = pairwise_distance(anchor, positive, p, eps);
  Variable d_neg = pairwise_distance(anchor, negative, p, eps);
  if (swap) d_neg = minimum(d_neg, pairwise_distance(positive, negative, p, eps));
  Variable loss = clamp(add(sub(d_pos, d_neg), margin), 0.0, std::nullopt);
  return reduce("triplet_margin_loss", loss, reduction);
}

Variable poisson_nll_loss(const Variable& input_in, const Variable& target_in, bool log_input, bool full, double eps,
                          Reduction reduction) {
  AutocastArgs autocast(AutocastOp::poisson_nll_loss, input_in, target_in);
  const Variable& input = autocast[0];
  const Variable& target = autocast[1];
  WICK_CHECK(input.defined() && target.defined(), "poisson_nll_loss: input and target must be defined");
  WICK_CHECK(input.data().is_floating_point(), "poisson_nll_loss: needs a floating input, got ",
             dtype_name(input.dtype()));
  broadcast_shapes("poisson_nll_loss", input.shape(), target.shape());
  Variable loss = log_input ? sub(exp(input), mul(target, input)) : sub(input, mul(target, log(add(input, eps))));
  if (full) {
    // Stirling's term where y > 1; y reads 2 elsewhere so that neither value nor gradient
    // of the unused branch is NaN.
    Tensor big = gt(target.data(), Scalar(1));
    Variable y = where(big, target, Variable(full_like(target.data(), Scalar(2))));
    Variable stirling =
        add(sub(mul(y, log(y)), y), mul(log(mul(y, 2 * std::numbers::pi)), 0.5));
    loss = add(loss, where(big, stirling, Variable(zeros_like(stirling.data()))));
  }
  return reduce("poisson_nll_loss", loss, reduction);
}

Variable gaussian_nll_loss(const Variable& input, const Variable& target, const Variable& var, bool full, double eps,
                           Reduction reduction) {
  WICK_CHECK(input.defined() && target.defined() && var.defined(),
             "gaussian_nll_loss: input, target and var must be defined");
  WICK_CHECK(input.data().is_floating_point(), "gaussian_nll_loss: needs a floating input, got ",
             dtype_name(input.dtype()));
  const Shape& in = input.shape();
  Variable v = var;
  if (var.shape() != in) {
    const Shape lead(in.begin(), in.end() - (in.empty() ? 0 : 1));
    if (var.shape() == lead && !in.empty()) {
      v = unsqueeze(var, -1);  // one variance per row
    } else {
      const Shape& vs = var.shape();
      WICK_CHECK(!in.empty() && !vs.empty() && vs.size() == in.size() && vs.back() == 1 &&
                     Shape(vs.begin(), vs.end() - 1) == lead,
                 "gaussian_nll_loss: var ", shape_str(vs), " is of incorrect size for input ", shape_str(in),
                 " (expected the input's shape, that without its last dim, or that with a last dim of 1)");
    }
  }
  broadcast_shapes("gaussian_nll_loss", in, target.shape());
  WICK_CHECK(!any(lt(v.data(), Scalar(0))).item<bool>(), "gaussian_nll_loss: var ", shape_str(var.shape()),
             " has negative entries");
  // max(var, eps) in value; below eps, (v - v) is exactly 0 and carries v's gradient.
  Variable clamped = where(lt(v.data(), Scalar(eps)), add(sub(v, Variable(v.data())), eps), v);
  Variable loss = mul(add(log(clamped), div(square(sub(input, target)), clamped)), 0.5);
  if (full) loss = add(loss, 0.5 * std::log(2 * std::numbers::pi));
  return reduce("gaussian_nll_loss", loss, reduction);
}

namespace {

const double kNegInf = -std::numeric_limits<double>::infinity();

// log(sum(exp(terms))) elementwise over equally shaped terms: -inf where every term is -inf,
// and then a zero gradient rather than the NaN of -inf - (-inf).
Variable log_add_exp(const std::vector<Variable>& terms) {
  Variable x = stack(terms, 0);
  Tensor m = max(x.data(), 0, /*keepdim=*/true).first;
  m = masked_fill(m, isinf(m), Scalar(0));
  Variable s = sum(exp(sub(x, Variable(m))), {0});
  Tensor some = gt(s.data(), Scalar(0));
  Variable out = add(log(where(some, s, Variable(ones_like(s.data())))), Variable(m.squeeze(0)));
  return masked_fill(out, logical_not(some), kNegInf);
}

// x [N, L] moved k places right along dim 1, -inf coming in on the left.
Variable shift_right(const Variable& x, int64_t k) {
  const int64_t n = x.size(0), l = x.size(1);
  Variable fill(full({n, std::min(k, l)}, Scalar(kNegInf), x.data().options()));
  if (k >= l) return fill;
  return cat({fill, narrow(x, 1, 0, l - k)}, 1);
}

}  // namespace

Variable ctc_loss(const Variable& log_probs, const Tensor& targets, const std::vector<int64_t>& input_lengths,
                  const std::vector<int64_t>& target_lengths, int64_t blank, Reduction reduction,
                  bool zero_infinity) {
  WICK_CHECK(log_probs.defined() && (log_probs.dim() == 3 || log_probs.dim() == 2),
             "ctc_loss: log_probs must be [T, N, C] (or [T, C] unbatched), got ",
             log_probs.defined() ? shape_str(log_probs.shape()) : "undefined");
  WICK_CHECK(log_probs.data().is_floating_point(), "ctc_loss: needs floating log_probs, got ",
             dtype_name(log_probs.dtype()));
  const bool batched = log_probs.dim() == 3;
  Variable lp = batched ? log_probs : unsqueeze(log_probs, 1);
  const int64_t steps = lp.size(0), n = lp.size(1), classes = lp.size(2);
  WICK_CHECK(blank >= 0 && blank < classes, "ctc_loss: blank ", blank, " is out of range for ", classes,
             " classes (log_probs ", shape_str(log_probs.shape()), ")");
  WICK_CHECK(static_cast<int64_t>(input_lengths.size()) == n && static_cast<int64_t>(target_lengths.size()) == n,
             "ctc_loss: ", input_lengths.size(), " input_lengths and ", target_lengths.size(),
             " target_lengths for a batch of ", n, " (log_probs ", shape_str(log_probs.shape()), ")");
  WICK_CHECK(targets.defined() && !targets.is_floating_point() && targets.dtype() != DType::Bool,
             "ctc_loss: targets must be integers, got ", targets.defined() ? dtype_name(targets.dtype()) : "undefined");
  int64_t max_target = 0, total_target = 0;
  for (int64_t b = 0; b < n; ++b) {
    const int64_t il = input_lengths[static_cast<size_t>(b)], tl = target_lengths[static_cast<size_t>(b)];
    WICK_CHECK(il >= 0 && il <= steps, "ctc_loss: input_lengths[", b, "] = ", il, " is outside [0, ", steps,
               "] (log_probs ", shape_str(log_probs.shape()), ")");
    WICK_CHECK(tl >= 0, "ctc_loss: target_lengths[", b, "] = ", tl, " is negative");
    max_target = std::max(max_target, tl);
    total_target += tl;
  }
  const bool padded = targets.dim() == 2;
  if (padded)
    WICK_CHECK(targets.size(0) == n && targets.size(1) >= max_target, "ctc_loss: padded targets ",
               shape_str(targets.shape()), " must be [N, S] with N = ", n, " and S >= the longest target (",
               max_target, ")");
  else
    WICK_CHECK(targets.dim() == 1 && targets.numel() == total_target, "ctc_loss: targets ",
               shape_str(targets.shape()), " must be [N, S] padded or 1-d with the ", total_target,
               " concatenated targets (the sum of target_lengths)");

  // The extended targets: blank, l1, blank, l2, ..., blank (L = 2 S + 1 states), padded with
  // blanks; a state may be entered from two states back when it is a label that differs
  // from the label before it.
  const std::vector<int64_t> tv = targets.to_vector<int64_t>();
  const int64_t states = 2 * max_target + 1;
  std::vector<int64_t> ext(static_cast<size_t>(n * states), blank);
  std::vector<bool> skip(static_cast<size_t>(n * states), false);
  int64_t offset = 0;
  for (int64_t b = 0; b < n; ++b) {
    const int64_t tl = target_lengths[static_cast<size_t>(b)];
    const int64_t start = padded ? b * targets.size(1) : offset;
    offset += tl;
    for (int64_t k = 0; k < tl; ++k) {
      const int64_t label = tv[static_cast<size_t>(start + k)];
      WICK_CHECK(label >= 0 && label < classes, "ctc_loss: target ", label, " (sample ", b,
                 ") is out of range for ", classes, " classes");
      const size_t s = static_cast<size_t>(b * states + 2 * k + 1);
      ext[s] = label;
      skip[s] = k > 0 && label != ext[s - 2];
    }
  }
  const Options idx(DType::Int64, lp.device());
  Tensor ext_t = tensor<int64_t>(ext, {n, states}).to(idx);
  Tensor skip_t = tensor<bool>(skip, {n, states}).to(lp.device());
  Tensor il_t = tensor<int64_t>(input_lengths, {n}).to(idx);
  Tensor tl_t = tensor<int64_t>(target_lengths, {n}).to(idx);

  Variable nll;
  if (steps > 0) {
    // emit[b, t, s] = log_probs[t, b, ext[b, s]]
    Variable emit = gather(permute(lp, {1, 0, 2}), 2, ext_t.unsqueeze(1).expand({n, steps, states}).contiguous());
    Tensor later = ge(arange(0, states, 1, idx), Scalar(2)).unsqueeze(0);
    Variable alpha = masked_fill(select(emit, 1, 0), later, kNegInf);
    for (int64_t t = 1; t < steps; ++t) {
      Variable from_skip = masked_fill(shift_right(alpha, 2), logical_not(skip_t), kNegInf);
      Variable next = add(log_add_exp({alpha, shift_right(alpha, 1), from_skip}), select(emit, 1, t));
      // Samples whose input has ended keep their last alpha.
      alpha = where(gt(il_t, Scalar(t)).unsqueeze(1), next, alpha);
    }
    // Paths end in the last blank or the last label (none for an empty target).
    Tensor last = mul(tl_t, Scalar(2)).unsqueeze(1);
    Variable end_blank = gather(alpha, 1, last);
    Variable end_label = masked_fill(gather(alpha, 1, clamp(sub(last, Scalar(1)), Scalar(0), std::nullopt)),
                                     eq(tl_t, Scalar(0)).unsqueeze(1), kNegInf);
    nll = neg(reshape(log_add_exp({end_blank, end_label}), {n}));
  } else {
    nll = sum(masked_fill(lp, ones(lp.shape(), Options(DType::Bool, lp.device())), 0.0), {0, 2});  // zeros [N]
  }
  // No input steps: probability 1 for an empty target, 0 otherwise.
  Tensor no_input = eq(il_t, Scalar(0));
  Tensor empty_input_nll = where(eq(tl_t, Scalar(0)), zeros({n}, lp.data().options()), Scalar(-kNegInf));
  nll = where(no_input, Variable(empty_input_nll), nll);
  if (steps > 0) {
    // PyTorch's backward gives exp(log_probs) - posterior, not the exact derivative
    // -posterior: add a term whose value is exactly 0 (x - x) and whose gradient is
    // exp(log_probs), over each sample's first input_lengths[b] steps, and only for samples
    // with a finite loss (an impossible or zero_infinity sample passes no gradient).
    Tensor finite = logical_not(isinf(nll.data()));  // [N]
    Tensor valid = logical_and(lt(arange(0, steps, 1, idx).unsqueeze(1), il_t.unsqueeze(0)),
                               finite.unsqueeze(0));  // [T, N]
    Variable p = exp(lp);
    Variable zero_value = where(valid.unsqueeze(2), sub(p, p.detach()), Variable(zeros_like(lp.data())));
    nll = add(nll, sum(zero_value, {0, 2}));
    // An impossible alignment has an infinite loss and no derivative; PyTorch's gradient
    // there is exp(lp) - exp(-inf + inf) = NaN over the sample's input steps (zero_infinity
    // turns it to 0). The same comes from a term of value 0 whose gradient is 0 * inf:
    // sqrt(|q|) * 0 at q = lp - lp (exactly 0), taken only at those entries.
    if (!zero_infinity) {
      const Tensor impossible = logical_and(lt(arange(0, steps, 1, idx).unsqueeze(1), il_t.unsqueeze(0)),
                                            isinf(nll.data()).unsqueeze(0));  // [T, N]
      if (any(impossible).item<bool>()) {
        Variable at = masked_select(lp, impossible.unsqueeze(2).expand(lp.shape()));
        nll = add(nll, mul(sum(sqrt(abs(sub(at, at.detach())))), 0.0));
      }
    }
  }
  if (zero_infinity) nll = where(isinf(nll.data()), Variable(zeros_like(nll.data())), nll);
  switch (reduction) {
    case Reduction::None:
      return batched ? nll : reshape(nll, {});
    case Reduction::Sum:
      return sum(nll);
    case Reduction::Mean:
      return mean(div(nll, Variable(clamp(tl_t, Scalar(1), std::nullopt).to(lp.dtype()))));
  }
  detail::throw_error("ctc_loss: unknown reduction");
}

Variable bce_with_logits(const Variable& input_in, const Variable& target_in, Reduction reduction,
                         const Tensor& pos_weight, const Tensor& weight) {
  AutocastArgs autocast(AutocastOp::bce_with_logits, input_in, target_in);
  const Variable& input = autocast[0];
  const Variable& target = autocast[1];
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

Variable kl_div(const Variable& input_in, const Variable& target_in, KLDivReduction reduction, bool log_target) {
  AutocastArgs autocast(AutocastOp::kl_div, input_in, target_in);
  const Variable& input = autocast[0];
  const Variable& target = autocast[1];
  check_pair("kl_div", input, target);
  Variable pointwise;
  if (log_target) {
    pointwise = mul(exp(target), sub(target, input));
  } else {
    // target * log(target) is taken as 0 where target is 0 (PyTorch's xlogy); log reads 1
    // there so that the value is not NaN. Its derivative in target, log(target) + 1, has no
    // finite value at 0 (-inf from the right), and PyTorch's is NaN there (xlogy's
    // target / target): a term of value 0 whose gradient is 0 * inf = NaN gives the same.
    Tensor positive = gt(target.data(), Scalar(0));
    Variable safe_log = log(where(positive, target, Variable(ones_like(target.data()))));
    pointwise = mul(target, sub(safe_log, input));
    const Tensor at_zero = eq(target.data(), Scalar(0));
    if (any(at_zero).item<bool>())
      pointwise = add(pointwise, where(at_zero, mul(sqrt(abs(target)), 0.0), Variable(zeros_like(target.data()))));
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
  Tensor valid;  // bool [M]: the target is not ignore_index
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
  return {neg(mul(picked, Variable(w))), w, valid};
}

Variable reduce_weighted(const char* op, const PickedLoss& p, const Shape& target_shape, Reduction reduction) {
  switch (reduction) {
    case Reduction::None:
      return reshape(p.loss, target_shape);
    case Reduction::Sum:
      return sum(p.loss);
    case Reduction::Mean: {
      // Every target ignored: 0 / 0 = NaN, as PyTorch, but a zero gradient (PyTorch's
      // backward visits no target); zero weights on kept targets still give NaN in both.
      Tensor total = sum(p.weights);
      if (any(p.valid).item<bool>() || p.valid.numel() == 0) return div(sum(p.loss), Variable(total));
      return add(div(sum(p.loss), Variable(ones_like(total))),
                 Variable(full_like(total, Scalar(std::numeric_limits<double>::quiet_NaN()))));
    }
  }
  detail::throw_error(op, ": unknown reduction");
}

}  // namespace

Variable nll_loss(const Variable& input_in, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                  Reduction reduction) {
  AutocastArgs autocast(AutocastOp::nll_loss, input_in);
  const Variable& input = autocast[0];
  PickedLoss p = pick_targets("nll_loss", input, target, weight, ignore_index);
  return reduce_weighted("nll_loss", p, target.shape(), reduction);
}

}  // namespace wick
