// Losses against float64 references, every reduction, and gradient checks of the composites.
#include "tests/support/reference.h"

#include <cmath>

#include <wick/autograd/gradcheck.h>
#include <wick/autograd/ops.h>
#include <wick/nn/loss.h>

#include "tests/nn/reductions.h"

namespace wick::test {
namespace {

// kl_div's reduction matching a Reduction.
KLDivReduction kl_reduction(Reduction r) {
  return r == Reduction::None ? KLDivReduction::None : r == Reduction::Sum ? KLDivReduction::Sum : KLDivReduction::Mean;
}


TEST(Loss, ElementwiseLossesMatchReferences) {
  const double beta = 0.7;
  for (DType dt : {DType::Float32, DType::Float64}) {
    for (const Shape& s : {Shape{3, 4}, Shape{}, Shape{5}}) {
      Tensor x = random(s, dt, 1), y = random(s, dt, 2);
      Tensor p = random(s, dt, 3, 0.0, 1.0);
      Tensor q = random(s, dt, 4, 0.05, 1.0);
      std::vector<double> xv = values(x), yv = values(y), pv = values(p), qv = values(q);
      std::vector<double> mse, l1, sl1, bce, kl, kl_log;
      for (size_t i = 0; i < xv.size(); ++i) {
        const double d = xv[i] - yv[i];
        mse.push_back(d * d);
        l1.push_back(std::abs(d));
        sl1.push_back(std::abs(d) < beta ? 0.5 * d * d / beta : std::abs(d) - 0.5 * beta);
        const double sig = 1 / (1 + std::exp(-xv[i]));
        bce.push_back(-(pv[i] * std::log(sig) + (1 - pv[i]) * std::log(1 - sig)));
        kl.push_back(qv[i] * (std::log(qv[i]) - xv[i]));
        kl_log.push_back(std::exp(yv[i]) * (yv[i] - xv[i]));
      }
      for (Layout l : kAllLayouts) {
        if (l == Layout::Transposed && s.size() < 2) continue;
        Variable xl(with_layout(x, l)), yl(with_layout(y, l)), pl(with_layout(p, l)), ql(with_layout(q, l));
        std::string what = std::string(dtype_name(dt)) + " " + shape_str(s) + " " + layout_name(l);
        expect_reductions([&](Reduction r) { return mse_loss(xl, yl, r); }, s, mse, dt, "mse " + what);
        expect_reductions([&](Reduction r) { return l1_loss(xl, yl, r); }, s, l1, dt, "l1 " + what);
        expect_reductions([&](Reduction r) { return smooth_l1_loss(xl, yl, r, beta); }, s, sl1, dt, "sl1 " + what);
        expect_reductions([&](Reduction r) { return smooth_l1_loss(xl, yl, r, 0.0); }, s, l1, dt, "sl1 b=0 " + what);
        expect_reductions([&](Reduction r) { return bce_with_logits(xl, pl, r); }, s, bce, dt, "bce " + what);
        expect_reductions([&](Reduction r) { return kl_div(xl, ql, kl_reduction(r)); }, s, kl, dt, "kl " + what);
        expect_reductions([&](Reduction r) { return kl_div(xl, yl, kl_reduction(r), true); }, s, kl_log, dt, "kl log " + what);
      }
    }
  }
  // Empty inputs: Sum is 0, Mean NaN (as in PyTorch).
  Variable e(zeros({0, 3}));
  EXPECT_EQ(mse_loss(e, e, Reduction::Sum).item<float>(), 0.0f);
  EXPECT_TRUE(std::isnan(mse_loss(e, e).item<float>()));
  expect_error([] { mse_loss(Variable(zeros({2, 3})), Variable(zeros({3}))); }, {"mse_loss", "[2, 3]", "[3]",
                                                                                    "same shape"});
  expect_error([] { smooth_l1_loss(Variable(zeros({2})), Variable(zeros({2})), Reduction::Mean, -1); },
               {"smooth_l1_loss", "beta"});
}

TEST(Loss, BceWithLogitsIsStableAndWeighted) {
  // Large logits give the exact limits, not inf or NaN.
  Variable x(tensor<float>({100.f, -100.f, 0.f})), y(tensor<float>({0.f, 1.f, 1.f}));
  EXPECT_TRUE(matches(bce_with_logits(x, y, Reduction::None).data(), {3}, DType::Float32, {100, 100, std::log(2.0)}));
  Tensor xs = random({4, 3}, DType::Float64, 5), ys = random({4, 3}, DType::Float64, 6, 0, 1);
  Tensor pw = tensor<double>({0.5, 2.0, 3.0}), w = tensor<double>({1.0, 0.5, 2.0, 0.0}, {4, 1});
  std::vector<double> xv = values(xs), yv = values(ys), expected;
  for (size_t i = 0; i < xv.size(); ++i) {
    const double sig = 1 / (1 + std::exp(-xv[i]));
    const double pos = values(pw)[i % 3], wt = values(w)[i / 3];
    expected.push_back(-wt * (pos * yv[i] * std::log(sig) + (1 - yv[i]) * std::log(1 - sig)));
  }
  EXPECT_TRUE(matches(bce_with_logits(Variable(xs), Variable(ys), Reduction::None, pw, w).data(), {4, 3},
                      DType::Float64, expected, 1e-10, 1e-12));
  expect_error([&] { bce_with_logits(Variable(xs), Variable(ys), Reduction::Mean, tensor<double>({1.0, 2.0})); },
               {"bce_with_logits", "pos_weight", "[2]", "[4, 3]"});
  // A pos_weight of shape [1] broadcasts, as in PyTorch (issue 13, item 9).
  Tensor one = tensor<double>({2.0});
  Tensor three = tensor<double>({2.0, 2.0, 2.0});
  EXPECT_TRUE(all_close(values(bce_with_logits(Variable(xs), Variable(ys), Reduction::None, one).data()),
                        values(bce_with_logits(Variable(xs), Variable(ys), Reduction::None, three).data()), 1e-15, 0));
  expect_error([&] { bce_with_logits(Variable(xs), Variable(ys), Reduction::Mean, Tensor(), ones({3, 1})); },
               {"bce_with_logits", "[3, 1]", "[4, 3]"});
}

TEST(Loss, KlDivBatchMeanAndZeroTargets) {
  Tensor x = random({4, 3}, DType::Float64, 7);
  Tensor q = tensor<double>({0.2, 0.0, 0.8, 0.5, 0.5, 0.0, 1.0, 0.0, 0.0, 0.1, 0.3, 0.6}, {4, 3});
  std::vector<double> xv = values(x), qv = values(q);
  double total = 0;
  for (size_t i = 0; i < xv.size(); ++i)
    if (qv[i] > 0) total += qv[i] * (std::log(qv[i]) - xv[i]);
  EXPECT_TRUE(matches(kl_div(Variable(x), Variable(q), KLDivReduction::BatchMean).data(), {}, DType::Float64,
                      {total / 4}, 1e-12, 1e-12));
  // Zero targets contribute nothing to the value. Their gradient: d/dt t (log t - x) =
  // log t + 1 - x has no finite value at t = 0 (-inf from the right); PyTorch's is NaN there
  // (xlogy's t / t) and so is wick's. Positive targets get log t + 1 - x; the input -t.
  Variable qv_var(q, true), xv_var(x, true);
  kl_div(xv_var, qv_var, KLDivReduction::Sum).backward();
  const std::vector<double> gq = values(qv_var.grad().data()), gx = values(xv_var.grad().data());
  for (size_t i = 0; i < qv.size(); ++i) {
    if (qv[i] == 0) EXPECT_TRUE(std::isnan(gq[i])) << i;
    else EXPECT_NEAR(gq[i], std::log(qv[i]) + 1 - xv[i], 1e-12) << i;
    EXPECT_EQ(gx[i], -qv[i]) << i;
  }
}

TEST(Loss, NllMeanWithEveryTargetIgnoredHasAZeroGradient) {
  // 0 / 0 = NaN as the value, as PyTorch; its backward visits no target, so the gradient is
  // 0 (wick's was NaN). Zero weights on targets that are kept still give NaN in both.
  Variable lp(log_softmax(random({3, 4}, DType::Float64, 9), 1), true);
  Variable l = nll_loss(lp, tensor<int64_t>({-100, -100, -100}));
  EXPECT_TRUE(std::isnan(l.item<double>()));
  l.backward();
  EXPECT_TRUE(matches(lp.grad().data(), {3, 4}, DType::Float64, std::vector<double>(12, 0.0)));
  Variable lw(lp.data(), true);
  Variable z = nll_loss(lw, tensor<int64_t>({1, 2, 1}), zeros({4}, DType::Float64));
  z.backward();
  EXPECT_TRUE(std::isnan(z.item<double>()));
  EXPECT_TRUE(std::isnan(values(lw.grad().data())[1]));
  // One kept target: the usual mean.
  Variable lk(lp.data(), true);
  nll_loss(lk, tensor<int64_t>({-100, 3, -100})).backward();
  EXPECT_EQ(values(lk.grad().data())[7], -1.0);
}

// Reference cross-entropy / nll over rows of log-probabilities [M, C] (after moving the
// class dim last) with PyTorch's rules.
struct RefCE {
  std::vector<double> per_element;
  double sum = 0, mean = 0;
};

// logp: [N, C, D] flattened; targets [N, D]; returns per (n, d).
RefCE ref_nll(const std::vector<double>& logp, int64_t n, int64_t c, int64_t d, const std::vector<int64_t>& t,
              const std::vector<double>& weight, int64_t ignore, double eps) {
  RefCE r;
  double wsum = 0, smooth_sum = 0, nll_sum = 0;
  std::vector<double> nll(static_cast<size_t>(n * d)), smooth(static_cast<size_t>(n * d));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < d; ++j) {
      const size_t e = static_cast<size_t>(i * d + j);
      const int64_t k = t[e];
      if (k == ignore) continue;
      auto lp = [&](int64_t cls) { return logp[static_cast<size_t>((i * c + cls) * d + j)]; };
      auto w = [&](int64_t cls) { return weight.empty() ? 1.0 : weight[static_cast<size_t>(cls)]; };
      nll[e] = -w(k) * lp(k);
      for (int64_t cls = 0; cls < c; ++cls) smooth[e] -= w(cls) * lp(cls);
      wsum += w(k);
      nll_sum += nll[e];
      smooth_sum += smooth[e];
    }
  const double sc = eps / static_cast<double>(c);
  for (size_t e = 0; e < nll.size(); ++e) r.per_element.push_back((1 - eps) * nll[e] + sc * smooth[e]);
  r.sum = (1 - eps) * nll_sum + sc * smooth_sum;
  r.mean = ((1 - eps) * nll_sum + sc * smooth_sum) / wsum;
  return r;
}

std::vector<double> ref_log_softmax(const std::vector<double>& x, int64_t n, int64_t c, int64_t d) {
  std::vector<double> out(x.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < d; ++j) {
      double mx = -INFINITY, s = 0;
      for (int64_t k = 0; k < c; ++k) mx = std::max(mx, x[static_cast<size_t>((i * c + k) * d + j)]);
      for (int64_t k = 0; k < c; ++k) s += std::exp(x[static_cast<size_t>((i * c + k) * d + j)] - mx);
      for (int64_t k = 0; k < c; ++k) {
        const size_t e = static_cast<size_t>((i * c + k) * d + j);
        out[e] = x[e] - mx - std::log(s);
      }
    }
  return out;
}

TEST(Loss, CrossEntropyAndNllWithIndices) {
  struct Case {
    Shape input;
    std::vector<int64_t> target;
    bool weighted;
    double eps;
  };
  const int64_t ig = -100;
  std::vector<Case> cases = {
      {{4, 3}, {0, 2, 1, 2}, false, 0.0},
      {{4, 3}, {0, ig, 1, 2}, true, 0.0},
      {{4, 3}, {0, 2, ig, 1}, true, 0.2},
      {{4, 3}, {1, 1, 0, 2}, false, 0.1},
      {{2, 3, 2}, {0, 2, ig, 1}, true, 0.3},  // [N, C, d]
      {{2, 3, 2, 2}, {0, 2, 1, 1, 2, 0, 0, 1}, false, 0.0},
  };
  const std::vector<double> class_w = {0.5, 2.0, 1.5};
  for (DType dt : {DType::Float32, DType::Float64}) {
    for (const Case& c : cases) {
      const int64_t n = c.input[0], cls = c.input[1];
      int64_t d = 1;
      for (size_t i = 2; i < c.input.size(); ++i) d *= c.input[i];
      Shape tshape = c.input;
      tshape.erase(tshape.begin() + 1);
      Tensor x = random(c.input, dt, 11);
      Tensor t = tensor<int64_t>(c.target, tshape);
      std::vector<double> w = c.weighted ? class_w : std::vector<double>{};
      std::vector<double> logp = ref_log_softmax(values(x), n, cls, d);
      RefCE ref = ref_nll(logp, n, cls, d, c.target, w, ig, c.eps);
      CrossEntropyOptions o;
      if (c.weighted) o.weight = tensor<double>(class_w).to(dt);
      o.label_smoothing = c.eps;
      const double rtol = dt == DType::Float32 ? 2e-5 : 1e-10, atol = dt == DType::Float32 ? 1e-5 : 1e-12;
      std::string what = std::string(dtype_name(dt)) + " " + shape_str(c.input) + " eps=" + std::to_string(c.eps);
      for (Layout l : {Layout::Contiguous, Layout::Transposed, Layout::Offset}) {
        Variable xl(with_layout(x, l));
        o.reduction = Reduction::None;
        EXPECT_TRUE(matches(cross_entropy(xl, t, o).data(), tshape, dt, ref.per_element, rtol, atol)) << what;
        o.reduction = Reduction::Sum;
        EXPECT_TRUE(matches(cross_entropy(xl, t, o).data(), {}, dt, {ref.sum}, rtol, atol)) << what;
        o.reduction = Reduction::Mean;
        EXPECT_TRUE(matches(cross_entropy(xl, t, o).data(), {}, dt, {ref.mean}, rtol, atol)) << what;
        if (c.eps == 0) {
          Variable lp(with_layout(tensor<double>(logp, c.input).to(dt), l));
          RefCE nref = ref_nll(logp, n, cls, d, c.target, w, ig, 0.0);
          EXPECT_TRUE(matches(nll_loss(lp, t, o.weight, ig, Reduction::None).data(), tshape, dt, nref.per_element,
                              rtol, atol))
              << what;
          EXPECT_TRUE(matches(nll_loss(lp, t, o.weight, ig, Reduction::Mean).data(), {}, dt, {nref.mean}, rtol,
                              atol))
              << what;
        }
      }
    }
  }
  // Unbatched: input [C], target 0-d; a custom ignore_index.
  Tensor x1 = tensor<double>({0.5, -1.0, 2.0});
  std::vector<double> lp1 = ref_log_softmax(values(x1), 1, 3, 1);
  EXPECT_TRUE(matches(cross_entropy(Variable(x1), scalar_tensor(2, DType::Int64)).data(), {}, DType::Float64,
                      {-lp1[2]}, 1e-12, 1e-12));
  CrossEntropyOptions ign;
  ign.ignore_index = 1;
  ign.reduction = Reduction::None;
  Tensor x3 = random({3, 3}, DType::Float64, 1);
  std::vector<double> lp3 = ref_log_softmax(values(x3), 3, 3, 1);
  EXPECT_TRUE(matches(cross_entropy(Variable(x3), tensor<int64_t>({1, 0, 1}), ign).data(), {3}, DType::Float64,
                      {0.0, -lp3[3], 0.0}, 1e-12, 1e-12));
}

TEST(Loss, CrossEntropyWithProbabilities) {
  Tensor x = random({3, 4}, DType::Float64, 21);
  Tensor p = softmax(random({3, 4}, DType::Float64, 22), 1);
  std::vector<double> logp = ref_log_softmax(values(x), 3, 4, 1), pv = values(p);
  const std::vector<double> w = {1.0, 0.5, 2.0, 1.5};
  for (double eps : {0.0, 0.25}) {
    for (bool weighted : {false, true}) {
      std::vector<double> per(3, 0.0);
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t k = 0; k < 4; ++k) {
          const double t = pv[static_cast<size_t>(i * 4 + k)] * (1 - eps) + eps / 4;
          per[static_cast<size_t>(i)] -= (weighted ? w[static_cast<size_t>(k)] : 1.0) * t * logp[static_cast<size_t>(i * 4 + k)];
        }
      CrossEntropyOptions o;
      o.label_smoothing = eps;
      if (weighted) o.weight = tensor<double>(w);
      o.reduction = Reduction::None;
      EXPECT_TRUE(matches(cross_entropy(Variable(x), p, o).data(), {3}, DType::Float64, per, 1e-10, 1e-12));
      o.reduction = Reduction::Mean;
      EXPECT_TRUE(matches(cross_entropy(Variable(x), p, o).data(), {}, DType::Float64, {ref_sum(per) / 3}, 1e-10,
                          1e-12));
      o.reduction = Reduction::Sum;
      EXPECT_TRUE(matches(cross_entropy(Variable(x), p, o).data(), {}, DType::Float64, {ref_sum(per)}, 1e-10, 1e-12));
    }
  }
  expect_error([&] { cross_entropy(Variable(x), zeros({3, 5}, DType::Float64)); },
               {"cross_entropy", "[3, 5]", "[3, 4]"});
}

TEST(Loss, ClassTargetErrors) {
  Variable x(zeros({2, 3}));
  expect_error([&] { cross_entropy(x, tensor<int64_t>({0, 3})); }, {"cross_entropy", "target 3", "3 classes"});
  expect_error([&] { nll_loss(x, tensor<int64_t>({-1, 0})); }, {"nll_loss", "target -1", "3 classes"});
  expect_error([&] { nll_loss(x, tensor<int64_t>({0, 1, 2})); }, {"nll_loss", "target [3]", "input [2, 3]"});
  expect_error([&] { nll_loss(x, tensor<float>({0, 1})); }, {"nll_loss", "integers", "float32"});
  expect_error([&] { nll_loss(x, tensor<int64_t>({0, 1}), ones({2})); }, {"nll_loss", "weight [2]", "3"});
  expect_error([&] { nll_loss(Variable(zeros({})), scalar_tensor(0, DType::Int64)); }, {"nll_loss", "class dim"});
  CrossEntropyOptions o;
  o.label_smoothing = 1.5;
  expect_error([&] { cross_entropy(x, tensor<int64_t>({0, 1}), o); }, {"cross_entropy", "label_smoothing", "1.5"});
  // Every target ignored: Mean is 0/0, NaN as in PyTorch.
  EXPECT_TRUE(std::isnan(nll_loss(x, tensor<int64_t>({-100, -100})).item<float>()));
}

TEST(Loss, GradientsByFiniteDifferences) {
  using Fn = std::function<Variable(const std::vector<Variable>&)>;
  Tensor cls = tensor<int64_t>({2, 0, -100, 1});
  Tensor cls_spatial = tensor<int64_t>({0, 2, 1, -100, 2, 1}, {2, 3});
  Tensor probs = softmax(random({4, 3}, DType::Float64, 3), 1);
  Tensor w = tensor<double>({0.3, 1.2, 2.0});
  CrossEntropyOptions smooth;
  smooth.weight = w;
  smooth.label_smoothing = 0.2;
  CrossEntropyOptions prob_o;
  prob_o.label_smoothing = 0.1;
  prob_o.weight = w;
  prob_o.reduction = Reduction::Sum;
  struct Case {
    const char* name;
    Fn f;
    std::vector<Tensor> inputs;
  };
  auto in = [](const Shape& s, uint64_t seed, double lo = -2, double hi = 2) {
    return random(s, DType::Float64, seed, lo, hi);
  };
  std::vector<Case> cases = {
      {"mse", [](auto& v) { return mse_loss(v[0], v[1]); }, {in({3, 4}, 1), in({3, 4}, 2)}},
      {"l1", [](auto& v) { return l1_loss(v[0], v[1], Reduction::Sum); }, {in({3, 4}, 1), in({3, 4}, 2)}},
      {"smooth_l1", [](auto& v) { return smooth_l1_loss(v[0], v[1], Reduction::None, 0.8); },
       {in({3, 4}, 3), in({3, 4}, 4)}},
      {"bce_with_logits",
       [&](auto& v) { return bce_with_logits(v[0], v[1], Reduction::Mean, tensor<double>({0.5, 2.0, 1.0, 3.0})); },
       {in({3, 4}, 5), in({3, 4}, 6, 0, 1)}},
      {"kl_div", [](auto& v) { return kl_div(v[0], v[1], KLDivReduction::BatchMean); }, {in({3, 4}, 7), in({3, 4}, 8, 0.1, 1)}},
      {"kl_div log_target", [](auto& v) { return kl_div(v[0], v[1], KLDivReduction::Sum, true); },
       {in({3, 4}, 9), in({3, 4}, 10)}},
      {"nll weighted ignore", [&](auto& v) { return nll_loss(v[0], cls, w); }, {in({4, 3}, 11)}},
      {"nll spatial sum", [&](auto& v) { return nll_loss(v[0], cls_spatial, w, -100, Reduction::Sum); },
       {in({2, 3, 3}, 16)}},
      {"cross_entropy", [&](auto& v) { return cross_entropy(v[0], cls); }, {in({4, 3}, 12)}},
      {"cross_entropy smoothing weights", [&](auto& v) { return cross_entropy(v[0], cls, smooth); }, {in({4, 3}, 13)}},
      {"cross_entropy spatial", [&](auto& v) { return cross_entropy(v[0], cls_spatial, smooth); },
       {in({2, 3, 3}, 14)}},
      {"cross_entropy probabilities", [&](auto& v) { return cross_entropy(v[0], probs, prob_o); }, {in({4, 3}, 15)}},
  };
  for (const Case& c : cases) {
    GradcheckResult r = gradcheck(c.f, c.inputs);
    EXPECT_TRUE(r.ok) << c.name << ": " << r.message;
  }
}

}  // namespace
}  // namespace wick::test
