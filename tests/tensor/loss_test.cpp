// The fused cross-entropy (class indices and probabilities; weights, ignore_index, label
// smoothing, every reduction) against a float64 reference written here with plain loops;
// its backward against central differences of that reference.
#include <cmath>

#include "tests/support/reference.h"

namespace wick::test {
namespace {

struct CeCase {
  int64_t n, c, s;
  std::vector<double> w;  // empty: no class weights
  int64_t ignore = -100;
  double eps = 0;
  Reduction red = Reduction::Mean;
};

// The loss as PyTorch defines it: -sum_c w_c q_c log softmax(x)_c with q the smoothed
// one-hot (or probability) target; Mean divides by the summed w[target] of kept positions
// (indices) or by the number of positions (probabilities).
std::vector<double> ref_ce(const std::vector<double>& x, const std::vector<double>& target, bool by_index,
                           const CeCase& k) {
  std::vector<double> per;
  double wsum = 0;
  auto w = [&](int64_t c) { return k.w.empty() ? 1.0 : k.w[c]; };
  for (int64_t n = 0; n < k.n; ++n) {
    for (int64_t s = 0; s < k.s; ++s) {
      auto at = [&](int64_t c) { return (n * k.c + c) * k.s + s; };
      double z = 0;
      for (int64_t c = 0; c < k.c; ++c) z += std::exp(x[at(c)]);
      const double lse = std::log(z);
      double l = 0;
      if (by_index) {
        const int64_t t = static_cast<int64_t>(target[n * k.s + s]);
        if (t == k.ignore) {
          per.push_back(0);
          continue;
        }
        wsum += w(t);
        l = (1 - k.eps) * w(t) * (lse - x[at(t)]);
        for (int64_t c = 0; c < k.c; ++c) l += k.eps / static_cast<double>(k.c) * w(c) * (lse - x[at(c)]);
      } else {
        wsum += 1;
        for (int64_t c = 0; c < k.c; ++c) {
          const double q = (1 - k.eps) * target[at(c)] + k.eps / static_cast<double>(k.c);
          l += w(c) * q * (lse - x[at(c)]);
        }
      }
      per.push_back(l);
    }
  }
  if (k.red == Reduction::None) return per;
  double total = 0;
  for (double v : per) total += v;
  return {k.red == Reduction::Sum ? total : total / wsum};
}

CrossEntropyOptions options(const CeCase& k, DType dt) {
  CrossEntropyOptions o;
  if (!k.w.empty()) o.weight = tensor<double>(k.w).to(dt);
  o.ignore_index = k.ignore;
  o.label_smoothing = k.eps;
  o.reduction = k.red;
  return o;
}

Shape logits_shape(const CeCase& k) { return k.s == 1 ? Shape{k.n, k.c} : Shape{k.n, k.c, 2, k.s / 2}; }
Shape positions_shape(const CeCase& k) { return k.s == 1 ? Shape{k.n} : Shape{k.n, 2, k.s / 2}; }

// Class indices in [0, c), with every third position set to `ignore`.
Tensor index_target(const CeCase& k, uint64_t seed, bool with_ignored) {
  Tensor t = random(positions_shape(k), DType::Int64, seed, 0, static_cast<double>(k.c - 1));
  if (!with_ignored) return t;
  std::vector<int64_t> v = t.to_vector<int64_t>();
  for (size_t i = 0; i < v.size(); i += 3) v[i] = k.ignore;
  return tensor<int64_t>(v, t.shape());
}

std::vector<CeCase> index_cases() {
  std::vector<CeCase> cases;
  for (Reduction red : {Reduction::None, Reduction::Mean, Reduction::Sum}) {
    cases.push_back({5, 4, 1, {}, -100, 0, red});
    cases.push_back({3, 5, 4, {0.5, 1, 2, 0.25, 1.5}, 2, 0.1, red});
    cases.push_back({4, 3, 1, {1, 2, 3}, -1, 0, red});
  }
  return cases;
}

Shape reduced_shape(const CeCase& k) { return k.red == Reduction::None ? positions_shape(k) : Shape{}; }

TEST(CrossEntropy, IndexTargetsEveryOptionLayoutAndDType) {
  for (DType dt : {DType::Float32, DType::Float64}) {
    for (const CeCase& k : index_cases()) {
      for (Layout l : kAllLayouts) {
        SCOPED_TRACE(std::string(dtype_name(dt)) + " " + shape_str(logits_shape(k)) + " " + layout_name(l) +
                     " reduction " + std::to_string(static_cast<int>(k.red)));
        Tensor x = with_layout(random(logits_shape(k), dt, 1, -3, 3), l);
        Tensor t = index_target(k, 2, k.ignore != -100);
        Tensor loss = cross_entropy(x, with_layout(t, l), options(k, dt));
        EXPECT_TRUE(matches(loss, reduced_shape(k), dt, ref_ce(values(x), values(t), true, k)));
      }
    }
  }
}

TEST(CrossEntropy, ProbabilityTargets) {
  for (double eps : {0.0, 0.2}) {
    CeCase k{3, 4, 2, {1, 0.5, 2, 1}, -100, eps, Reduction::Mean};
    Tensor x = random(logits_shape(k), DType::Float64, 3);
    Tensor q = softmax(random(logits_shape(k), DType::Float64, 4), 1);
    EXPECT_TRUE(matches(cross_entropy(x, q, options(k, DType::Float64)), {}, DType::Float64,
                        ref_ce(values(x), values(q), false, k)));
  }
}

TEST(CrossEntropy, BackwardMatchesNumericGradients) {
  std::vector<CeCase> cases = index_cases();
  for (const CeCase& k : cases) {
    SCOPED_TRACE(shape_str(logits_shape(k)) + " reduction " + std::to_string(static_cast<int>(k.red)));
    Tensor x = random(logits_shape(k), DType::Float64, 5);
    Tensor t = index_target(k, 6, k.ignore != -100);
    const CrossEntropyOptions o = options(k, DType::Float64);
    CrossEntropyResult r = cross_entropy_forward(x, t, o);
    Tensor g = random(reduced_shape(k), DType::Float64, 7);
    Tensor dx = cross_entropy_backward(with_layout(g, Layout::Offset), x, t, r, o);
    std::vector<double> xv = values(x), gv = values(g), tv = values(t), e;
    for (size_t i = 0; i < xv.size(); ++i) {
      const double h = 1e-6, keep = xv[i];
      xv[i] = keep + h;
      std::vector<double> up = ref_ce(xv, tv, true, k);
      xv[i] = keep - h;
      std::vector<double> down = ref_ce(xv, tv, true, k);
      xv[i] = keep;
      double d = 0;
      for (size_t j = 0; j < gv.size(); ++j) d += gv[j] * (up[j] - down[j]) / (2 * h);
      e.push_back(d);
    }
    EXPECT_TRUE(matches(dx, logits_shape(k), DType::Float64, e, 1e-6, 1e-8));
  }
}

// The gradient the forward writes (for autograd), scaled by the incoming one, equals the
// backward from the saved lse (checked numerically above), in place or not.
TEST(CrossEntropy, GradientWrittenByTheForwardMatchesTheBackward) {
  std::vector<CeCase> cases = index_cases();
  cases.push_back({2, 3, 2, {2, 1, 0.5}, -100, 0.1, Reduction::Mean});
  for (size_t i = 0; i < cases.size(); ++i) {
    const CeCase& k = cases[i];
    for (bool probabilities : {false, true}) {
      SCOPED_TRACE(shape_str(logits_shape(k)) + " reduction " + std::to_string(static_cast<int>(k.red)) +
                   (probabilities ? " probabilities" : " indices"));
      Tensor x = random(logits_shape(k), DType::Float64, 10);
      Tensor t = probabilities ? softmax(random(logits_shape(k), DType::Float64, 11), 1)
                               : index_target(k, 12, k.ignore != -100);
      const CrossEntropyOptions o = options(k, DType::Float64);
      Tensor g = random(reduced_shape(k), DType::Float64, 13);
      const Tensor expected = cross_entropy_backward(g, x, t, cross_entropy_forward(x, t, o), o);
      const CrossEntropyResult r = cross_entropy_forward(x, t, o, /*gradient=*/true);
      EXPECT_TRUE(matches(cross_entropy_backward_from_forward(g, r, o), logits_shape(k), DType::Float64,
                          values(expected), 1e-12, 1e-14));
      // The incoming gradient 1 leaves the forward's gradient as it is.
      const Tensor once = cross_entropy_backward(ones_like(g), x, t, cross_entropy_forward(x, t, o), o);
      EXPECT_TRUE(matches(r.dlogits, logits_shape(k), DType::Float64, values(once), 1e-12, 1e-14));
      const Tensor in_place = cross_entropy_backward_from_forward(g, r, o, /*in_place=*/true);
      EXPECT_EQ(in_place.data_ptr(), r.dlogits.data_ptr());
      EXPECT_TRUE(matches(in_place, logits_shape(k), DType::Float64, values(expected), 1e-12, 1e-14));
    }
  }
}

TEST(CrossEntropy, ProbabilityBackwardMatchesNumericGradients) {
  CeCase k{2, 3, 1, {2, 1, 0.5}, -100, 0.1, Reduction::Sum};
  Tensor x = random({2, 3}, DType::Float64, 8), q = softmax(random({2, 3}, DType::Float64, 9), 1);
  const CrossEntropyOptions o = options(k, DType::Float64);
  Tensor dx = cross_entropy_backward(scalar_tensor(1.5, DType::Float64), x, q, cross_entropy_forward(x, q, o), o);
  std::vector<double> xv = values(x), qv = values(q), e;
  for (size_t i = 0; i < xv.size(); ++i) {
    const double keep = xv[i];
    xv[i] = keep + 1e-6;
    const double up = ref_ce(xv, qv, false, k)[0];
    xv[i] = keep - 1e-6;
    const double down = ref_ce(xv, qv, false, k)[0];
    xv[i] = keep;
    e.push_back(1.5 * (up - down) / 2e-6);
  }
  EXPECT_TRUE(matches(dx, {2, 3}, DType::Float64, e, 1e-6, 1e-8));
}

TEST(CrossEntropy, OneExampleLargeLogitsAndManyRows) {
  // [C] logits with a 0-d target; logits of 1000 must not overflow exp.
  Tensor x = tensor<float>({1000.f, 999.f, 0.f});
  Tensor loss = cross_entropy(x, scalar_tensor(1, DType::Int64));
  EXPECT_TRUE(matches(loss, {}, DType::Float32, {1 + std::log(1 + std::exp(-1.0) + std::exp(-1000.0)) - 0.0}));
  CeCase k{512, 10, 1, {}, -100, 0.05, Reduction::Mean};
  Tensor big = random({512, 10}, DType::Float32, 10);
  Tensor t = index_target(k, 11, false);
  EXPECT_TRUE(matches(cross_entropy(big, t, options(k, DType::Float32)), {}, DType::Float32,
                      ref_ce(values(big), values(t), true, k)));
}

TEST(CrossEntropy, EmptyBatch) {
  CrossEntropyOptions o;
  EXPECT_TRUE(std::isnan(cross_entropy(zeros({0, 3}), zeros({0}, DType::Int64), o).item<float>()));
  o.reduction = Reduction::Sum;
  EXPECT_TRUE(matches(cross_entropy(zeros({0, 3}), zeros({0}, DType::Int64), o), {}, DType::Float32, {0}));
  o.reduction = Reduction::None;
  EXPECT_EQ(cross_entropy(zeros({0, 3, 2}), zeros({0, 2}, DType::Int64), o).shape(), Shape({0, 2}));
}

TEST(CrossEntropy, RejectsMisuse) {
  Tensor x = random({2, 3}, DType::Float32, 12);
  expect_error([&] { cross_entropy(x, tensor<int64_t>({0, 3})); },
               {"cross_entropy", "target 3", "out of range for 3 classes"});
  expect_error([&] { cross_entropy(x, tensor<int64_t>({0, 1, 2})); },
               {"cross_entropy", "must have shape [2]", "[2, 3]", "[3]"});
  CrossEntropyOptions o;
  o.weight = ones({2});
  expect_error([&] { cross_entropy(x, tensor<int64_t>({0, 1}), o); }, {"cross_entropy", "weight must be [3]", "[2]"});
  o = {};
  o.label_smoothing = 1.5;
  expect_error([&] { cross_entropy(x, tensor<int64_t>({0, 1}), o); }, {"cross_entropy", "label_smoothing", "1.5"});
  expect_error([&] { cross_entropy(zeros({2, 3}, DType::Int32), tensor<int64_t>({0, 1})); },
               {"cross_entropy", "floating point logits", "int32"});
  expect_error([&] { cross_entropy(x, zeros({2, 3}, DType::Float64)); },
               {"cross_entropy", "probabilities", "float64"});
}

}  // namespace
}  // namespace wick::test
