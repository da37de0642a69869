// The losses of issue 13 (huber, binary_cross_entropy, margin_ranking, cosine_embedding,
// triplet_margin, poisson_nll, gaussian_nll, ctc) against float64 references computed
// element by element (CTC by enumerating every alignment), every reduction, edge cases and
// refusals; their finite-difference gradient checks are in the gradcheck table below.
#include "tests/autograd/cases.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include <wick/nn/loss.h>

#include "tests/nn/reductions.h"
#include "tests/support/reference.h"

namespace wick::test {
namespace {



// A constant (no-grad) Variable.
Variable cv(const Tensor& t) { return Variable(t); }

TEST(LossReference, HuberMatchesReference) {
  for (DType dt : {DType::Float32, DType::Float64}) {
    for (double delta : {1.0, 0.7, 2.5}) {
      Tensor x = random({3, 4}, dt, 1, -3, 3), y = random({3, 4}, dt, 2, -3, 3);
      std::vector<double> xv = values(x), yv = values(y), expected;
      for (size_t i = 0; i < xv.size(); ++i) {
        const double z = std::abs(xv[i] - yv[i]);
        expected.push_back(z < delta ? 0.5 * z * z : delta * (z - 0.5 * delta));
      }
      Variable xt = cv(with_layout(x, Layout::Transposed));
      expect_reductions([&](Reduction r) { return huber_loss(xt, cv(y), r, delta); },
                        {3, 4}, expected, dt, "huber delta=" + std::to_string(delta));
    }
  }
  // Default delta 1: huber equals smooth_l1 with beta 1.
  Tensor x = random({5}, DType::Float64, 3), y = random({5}, DType::Float64, 4);
  EXPECT_TRUE(all_close(values(huber_loss(cv(x), cv(y), Reduction::None).data()),
                        values(smooth_l1_loss(cv(x), cv(y), Reduction::None).data()), 1e-15, 0));
  Variable e(zeros({0, 3}));
  EXPECT_EQ(huber_loss(e, e, Reduction::Sum).item<float>(), 0.0f);
  EXPECT_TRUE(std::isnan(huber_loss(e, e).item<float>()));
  expect_error([] { huber_loss(cv(zeros({2})), cv(zeros({2})), Reduction::Mean, 0.0); }, {"huber_loss", "delta"});
  expect_error([] { huber_loss(cv(zeros({2, 3})), cv(zeros({3}))); }, {"huber_loss", "[2, 3]", "[3]"});
}

TEST(LossReference, BinaryCrossEntropyOnProbabilities) {
  for (DType dt : {DType::Float32, DType::Float64}) {
    std::vector<double> xv = values(random({4, 3}, dt, 5, 0, 1));  // the values in dt
    xv[0] = 0, xv[1] = 1, xv[2] = 0, xv[3] = 1;                       // exact 0 and 1: the clamped logs
    std::vector<double> yv = values(random({4, 3}, dt, 6, 0, 1));
    yv[0] = 1, yv[1] = 0, yv[2] = 0, yv[3] = 1;
    const std::vector<double> wv = {2.0, 0.5, 1.0, 0.0};  // [4, 1], broadcast over the rows
    std::vector<double> plain, weighted;
    for (size_t i = 0; i < xv.size(); ++i) {
      const double lx = std::max(std::log(xv[i]), -100.0), l1x = std::max(std::log(1 - xv[i]), -100.0);
      plain.push_back(-(yv[i] * lx + (1 - yv[i]) * l1x));
      weighted.push_back(wv[i / 3] * plain.back());
    }
    Tensor x = tensor<double>(xv, {4, 3}).to(dt), y = tensor<double>(yv, {4, 3}).to(dt);
    Tensor w = tensor<double>(wv, {4, 1}).to(dt);
    const std::string what = dtype_name(dt);
    expect_reductions([&](Reduction r) { return binary_cross_entropy(cv(x), cv(y), Tensor(), r); }, {4, 3}, plain,
                      dt, "bce " + what);
    Variable xs_layout = cv(with_layout(x, Layout::Sliced));
    expect_reductions([&](Reduction r) { return binary_cross_entropy(xs_layout, cv(y), w, r); },
                      {4, 3}, weighted, dt, "bce weighted " + what);
    // Saturated inputs give the clamped loss (100) and finite gradients.
    Variable xs(x, true);
    binary_cross_entropy(xs, cv(y)).backward();
    for (double g : values(xs.grad().data())) EXPECT_TRUE(std::isfinite(g)) << what;
  }
  // Inside (0, 1), the gradient is w (x - y) / (x (1 - x)), PyTorch's.
  Tensor x = random({6}, DType::Float64, 7, 0.05, 0.95), y = random({6}, DType::Float64, 8, 0, 1);
  Variable xg(x, true);
  binary_cross_entropy(xg, cv(y), Tensor(), Reduction::Sum).backward();
  std::vector<double> expected;
  const std::vector<double> xv = values(x), yv = values(y);
  for (size_t i = 0; i < 6; ++i) expected.push_back((xv[i] - yv[i]) / (xv[i] * (1 - xv[i])));
  EXPECT_TRUE(matches(xg.grad().data(), {6}, DType::Float64, expected, 1e-10, 1e-12));
  expect_error([] { binary_cross_entropy(cv(tensor<float>({0.5f, 1.5f})), cv(tensor<float>({0.f, 1.f}))); },
               {"binary_cross_entropy", "[0, 1]", "[2]"});
  expect_error([] { binary_cross_entropy(cv(tensor<float>({-0.1f})), cv(tensor<float>({0.f}))); },
               {"binary_cross_entropy", "[0, 1]"});
  expect_error([] { binary_cross_entropy(cv(tensor<float>({NAN})), cv(tensor<float>({0.f}))); },
               {"binary_cross_entropy", "NaN"});
  expect_error([] { binary_cross_entropy(cv(full({2, 3}, 0.5)), cv(full({3}, 0.5))); },
               {"binary_cross_entropy", "[2, 3]", "[3]", "same shape"});
  expect_error([] { binary_cross_entropy(cv(full({2, 3}, 0.5)), cv(full({2, 3}, 0.5)), ones({3, 3})); },
               {"binary_cross_entropy", "weight", "[3, 3]"});
  Variable e(zeros({0}));
  EXPECT_EQ(binary_cross_entropy(e, e, Tensor(), Reduction::Sum).item<float>(), 0.0f);
}

TEST(LossReference, MarginRankingMatchesReference) {
  Tensor a = random({3, 4}, DType::Float64, 9), b = random({3, 4}, DType::Float64, 10);
  Tensor y = tensor<double>({1, -1, 1, -1, -1, 1, 1, 1, -1, -1, 1, -1}, {3, 4});
  for (double margin : {0.0, 0.5}) {
    std::vector<double> expected;
    for (size_t i = 0; i < 12; ++i)
      expected.push_back(std::max(0.0, -values(y)[i] * (values(a)[i] - values(b)[i]) + margin));
    expect_reductions([&](Reduction r) { return margin_ranking_loss(cv(a), cv(b), cv(y), margin, r); }, {3, 4},
                      expected, DType::Float64, "margin " + std::to_string(margin));
  }
  // Broadcasting among inputs with the same number of dims.
  Tensor a1 = random({3, 1}, DType::Float64, 11), b1 = random({1, 4}, DType::Float64, 12);
  Tensor y1 = tensor<double>({1, -1, 1, -1}, {1, 4});
  std::vector<double> expected;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      expected.push_back(std::max(0.0, -values(y1)[j] * (values(a1)[i] - values(b1)[j]) + 0.1));
  EXPECT_TRUE(matches(margin_ranking_loss(cv(a1), cv(b1), cv(y1), 0.1, Reduction::None).data(), {3, 4},
                      DType::Float64, expected, 1e-12, 1e-12));
  expect_error([] { margin_ranking_loss(cv(zeros({3})), cv(zeros({3})), cv(zeros({1, 3}))); },
               {"margin_ranking_loss", "[3]", "[1, 3]", "number of dims"});
  expect_error([] { margin_ranking_loss(cv(zeros({3})), cv(zeros({4})), cv(zeros({3}))); },
               {"margin_ranking_loss", "[3]", "[4]"});
}

TEST(LossReference, CosineEmbeddingMatchesReference) {
  Tensor a = random({5, 4}, DType::Float64, 13), b = random({5, 4}, DType::Float64, 14);
  std::vector<double> av = values(a), bv = values(b);
  for (int k = 0; k < 4; ++k) av[static_cast<size_t>(8 + k)] = 0;  // a zero row: cos 0, no NaN
  a = tensor<double>(av, {5, 4});
  Tensor y = tensor<int64_t>({1, -1, 1, -1, 0});  // 0: neither case, loss 0
  for (double margin : {0.0, -0.3, 0.4}) {
    std::vector<double> expected;
    for (int i = 0; i < 5; ++i) {
      double dot = 0, s1 = 0, s2 = 0;
      for (int k = 0; k < 4; ++k) {
        const double p = av[static_cast<size_t>(i * 4 + k)], q = bv[static_cast<size_t>(i * 4 + k)];
        dot += p * q, s1 += p * p, s2 += q * q;
      }
      const double cos = dot / std::sqrt((s1 + 1e-12) * (s2 + 1e-12));
      const int64_t t = values(y)[static_cast<size_t>(i)] > 0 ? 1 : values(y)[static_cast<size_t>(i)] < 0 ? -1 : 0;
      expected.push_back(t == 1 ? 1 - cos : t == -1 ? std::max(0.0, cos - margin) : 0.0);
    }
    expect_reductions([&](Reduction r) { return cosine_embedding_loss(cv(a), cv(b), y, margin, r); }, {5},
                      expected, DType::Float64, "cosine_embedding margin " + std::to_string(margin));
  }
  // Unbatched: [D] inputs and a 0-d target.
  Tensor u = tensor<double>({1, 2, 3}), v = tensor<double>({-1, 0.5, 2});
  const double cos = (-1 + 1 + 6) / std::sqrt((14 + 1e-12) * (5.25 + 1e-12));
  EXPECT_TRUE(matches(cosine_embedding_loss(cv(u), cv(v), scalar_tensor(1.0), 0, Reduction::None).data(), {},
                      DType::Float64, {1 - cos}, 1e-12, 1e-12));
  Variable zero_row(zeros({1, 3}, DType::Float64), true);
  cosine_embedding_loss(zero_row, cv(ones({1, 3}, DType::Float64)), tensor<int64_t>({1})).backward();
  for (double g : values(zero_row.grad().data())) EXPECT_TRUE(std::isfinite(g));
  expect_error([] { cosine_embedding_loss(cv(zeros({2, 3})), cv(zeros({2, 3})), zeros({2, 1})); },
               {"cosine_embedding_loss", "[2, 1]"});
  expect_error([] { cosine_embedding_loss(cv(zeros({2, 3})), cv(zeros({2, 4})), zeros({2})); },
               {"cosine_embedding_loss", "[2, 3]", "[2, 4]", "[2]"});
  expect_error([] { cosine_embedding_loss(cv(zeros({2, 3})), cv(zeros({2, 3})), zeros({3})); },
               {"cosine_embedding_loss", "[3]"});
}

double ref_distance(const std::vector<double>& a, const std::vector<double>& b, size_t row, size_t d, double p,
                    double eps) {
  double acc = 0;
  for (size_t k = 0; k < d; ++k) {
    const double z = std::abs(a[row * d + k] - b[row * d + k] + eps);
    acc = std::isinf(p) ? std::max(acc, z) : acc + std::pow(z, p);
  }
  return std::isinf(p) ? acc : std::pow(acc, 1 / p);
}

TEST(LossReference, TripletMarginMatchesReference) {
  Tensor a = random({4, 5}, DType::Float64, 15), p = random({4, 5}, DType::Float64, 16),
         n = random({4, 5}, DType::Float64, 17);
  std::vector<double> av = values(a), pv = values(p), nv = values(n);
  for (double norm_p : {2.0, 1.0, kInf}) {
    for (bool swap : {false, true}) {
      for (double margin : {1.0, 0.3}) {
        std::vector<double> expected;
        for (size_t i = 0; i < 4; ++i) {
          const double dp = ref_distance(av, pv, i, 5, norm_p, 1e-6);
          double dn = ref_distance(av, nv, i, 5, norm_p, 1e-6);
          if (swap) dn = std::min(dn, ref_distance(pv, nv, i, 5, norm_p, 1e-6));
          expected.push_back(std::max(0.0, margin + dp - dn));
        }
        expect_reductions(
            [&](Reduction r) { return triplet_margin_loss(cv(a), cv(p), cv(n), margin, norm_p, 1e-6, swap, r); },
            {4}, expected, DType::Float64, "triplet p=" + std::to_string(norm_p) + " swap=" + std::to_string(swap));
      }
    }
  }
  // Unbatched [D]: a 0-d loss.
  Tensor a1 = a.narrow(0, 0, 1).reshape({5}), p1 = p.narrow(0, 0, 1).reshape({5}), n1 = n.narrow(0, 0, 1).reshape({5});
  const double one = std::max(0.0, 1 + ref_distance(av, pv, 0, 5, 2, 1e-6) - ref_distance(av, nv, 0, 5, 2, 1e-6));
  EXPECT_TRUE(matches(triplet_margin_loss(cv(a1), cv(p1), cv(n1), 1.0, 2.0, 1e-6, false, Reduction::None).data(),
                      {}, DType::Float64, {one}, 1e-12, 1e-12));
  expect_error([] { triplet_margin_loss(cv(zeros({2, 3})), cv(zeros({2, 3})), cv(zeros({3}))); },
               {"triplet_margin_loss", "[2, 3]", "[3]", "number of dims"});
}

TEST(LossReference, PoissonNllMatchesReference) {
  Tensor x = random({3, 4}, DType::Float64, 18, 0.1, 3);
  Tensor y = tensor<double>({0, 0.5, 1, 2, 3.7, 0, 1.5, 6, 1, 0.2, 10, 4}, {3, 4});
  std::vector<double> xv = values(x), yv = values(y);
  for (bool log_input : {true, false}) {
    for (bool full : {false, true}) {
      for (double eps : {1e-8, 0.5}) {
        std::vector<double> expected;
        for (size_t i = 0; i < xv.size(); ++i) {
          double l = log_input ? std::exp(xv[i]) - yv[i] * xv[i] : xv[i] - yv[i] * std::log(xv[i] + eps);
          if (full && yv[i] > 1)
            l += yv[i] * std::log(yv[i]) - yv[i] + 0.5 * std::log(2 * std::numbers::pi * yv[i]);
          expected.push_back(l);
        }
        for (DType dt : {DType::Float64, DType::Float32})
          expect_reductions(
              [&](Reduction r) { return poisson_nll_loss(cv(x.to(dt)), cv(y.to(dt)), log_input, full, eps, r); },
              {3, 4}, expected, dt,
              "poisson log_input=" + std::to_string(log_input) + " full=" + std::to_string(full));
      }
    }
  }
  // The target broadcasts with the input, as PyTorch; full keeps the gradients finite at y = 0.
  Tensor row = tensor<double>({0, 1, 2, 3});
  std::vector<double> expected;
  for (size_t i = 0; i < 12; ++i) expected.push_back(std::exp(xv[i]) - values(row)[i % 4] * xv[i]);
  EXPECT_TRUE(matches(poisson_nll_loss(cv(x), cv(row), true, false, 1e-8, Reduction::None).data(), {3, 4},
                      DType::Float64, expected, 1e-12, 1e-12));
  // full: Stirling's term is 0 for y <= 1, so its derivative there is 0 and the target's
  // gradient is -log(x + eps) (-x with log_input), also at y = 0. PyTorch's is NaN at y = 0
  // (its masked term computes 0 * log(0) and 0 / 0 first); wick keeps the derivative.
  for (bool log_input : {false, true}) {
    Variable xg(x, true), yg(y, true);
    poisson_nll_loss(xg, yg, log_input, true, 1e-8, Reduction::Sum).backward();
    const std::vector<double> gy = values(yg.grad().data());
    for (size_t i = 0; i < yv.size(); ++i) {
      const double base = log_input ? -xv[i] : -std::log(xv[i] + 1e-8);
      const double stirling = yv[i] > 1 ? std::log(yv[i]) + 0.5 / yv[i] : 0.0;
      EXPECT_NEAR(gy[i], base + stirling, 1e-12) << i << " y " << yv[i];
    }
  }
  expect_error([] { poisson_nll_loss(cv(zeros({2, 3})), cv(zeros({2}))); }, {"poisson_nll_loss", "[2, 3]", "[2]"});
}

TEST(LossReference, GaussianNllMatchesReferenceAndVarShapes) {
  Tensor x = random({3, 4}, DType::Float64, 19), y = random({3, 4}, DType::Float64, 20);
  std::vector<double> xv = values(x), yv = values(y);
  auto ref = [&](const std::function<double(size_t)>& v, bool full, double eps) {
    std::vector<double> out;
    for (size_t i = 0; i < xv.size(); ++i) {
      const double c = std::max(v(i), eps), d = xv[i] - yv[i];
      out.push_back(0.5 * (std::log(c) + d * d / c) + (full ? 0.5 * std::log(2 * std::numbers::pi) : 0.0));
    }
    return out;
  };
  Tensor v_full = random({3, 4}, DType::Float64, 21, 0.1, 2);
  v_full = tensor<double>([&] {
    std::vector<double> v = values(v_full);
    v[0] = 0, v[1] = 1e-9;  // below eps: clamped
    return v;
  }(), {3, 4});
  Tensor v_row = tensor<double>({0.5, 1.5, 2.0}), v_row1 = v_row.reshape({3, 1});
  for (bool full : {false, true}) {
    for (double eps : {1e-6, 0.3}) {
      const std::string what = "full=" + std::to_string(full) + " eps=" + std::to_string(eps);
      expect_reductions([&](Reduction r) { return gaussian_nll_loss(cv(x), cv(y), cv(v_full), full, eps, r); },
                        {3, 4}, ref([&](size_t i) { return values(v_full)[i]; }, full, eps), DType::Float64, what);
      auto per_row = ref([&](size_t i) { return values(v_row)[i / 4]; }, full, eps);
      expect_reductions([&](Reduction r) { return gaussian_nll_loss(cv(x), cv(y), cv(v_row), full, eps, r); },
                        {3, 4}, per_row, DType::Float64, "var [N] " + what);
      expect_reductions([&](Reduction r) { return gaussian_nll_loss(cv(x), cv(y), cv(v_row1), full, eps, r); },
                        {3, 4}, per_row, DType::Float64, "var [N, 1] " + what);
    }
  }
  // Below eps the clamp changes the value only: d/dvar = 0.5 (1 / eps - d^2 / eps^2), as
  // PyTorch's no-grad clamp; d/dinput uses the clamped var.
  Variable vg(tensor<double>({1e-9}), true), xg(tensor<double>({0.5}), true);
  gaussian_nll_loss(xg, cv(tensor<double>({0.25})), vg, false, 0.01, Reduction::Sum).backward();
  EXPECT_NEAR(vg.grad().item<double>(), 0.5 * (1 / 0.01 - 0.0625 / 1e-4), 1e-9);
  EXPECT_NEAR(xg.grad().item<double>(), 0.25 / 0.01, 1e-12);
  // The target broadcasts; a var of the wrong shape or with a negative entry is refused.
  EXPECT_EQ(gaussian_nll_loss(cv(x), cv(y.narrow(0, 0, 1)), cv(v_row), false, 1e-6, Reduction::None).shape(),
            Shape({3, 4}));
  expect_error([&] { gaussian_nll_loss(cv(x), cv(y), cv(ones({4}, DType::Float64))); },
               {"gaussian_nll_loss", "var [4]", "[3, 4]", "incorrect size"});
  expect_error([&] { gaussian_nll_loss(cv(x), cv(y), cv(ones({3, 2}, DType::Float64))); },
               {"gaussian_nll_loss", "var [3, 2]"});
  expect_error([&] { gaussian_nll_loss(cv(x), cv(y), cv(tensor<double>({1, -1, 1}))); },
               {"gaussian_nll_loss", "negative"});
  expect_error([&] { gaussian_nll_loss(cv(x), cv(zeros({2, 4}, DType::Float64)), cv(v_row)); },
               {"gaussian_nll_loss", "[3, 4]", "[2, 4]"});
}

// CTC by brute force: every path of il steps over C classes that collapses (repeats merged,
// then blanks removed) to the target, its probability, and the derivative of -log P with
// respect to each log-probability: -(probability of the paths through (t, c)) / P.
struct RefCtc {
  double nll;
  std::vector<double> grad;  // [T, C]
};
RefCtc ref_ctc(const std::vector<double>& lp, int64_t steps, int64_t classes, int64_t il,
               const std::vector<int64_t>& target, int64_t blank) {
  std::vector<double> through(static_cast<size_t>(steps * classes), 0.0);
  double total = 0;
  std::vector<int64_t> path(static_cast<size_t>(il), 0);
  while (true) {
    std::vector<int64_t> out;
    int64_t prev = -1;
    for (int64_t c : path) {
      if (c != prev && c != blank) out.push_back(c);
      prev = c;
    }
    if (out == target) {
      double logp = 0;
      for (int64_t t = 0; t < il; ++t) logp += lp[static_cast<size_t>(t * classes + path[static_cast<size_t>(t)])];
      const double pr = std::exp(logp);
      total += pr;
      for (int64_t t = 0; t < il; ++t) through[static_cast<size_t>(t * classes + path[static_cast<size_t>(t)])] += pr;
    }
    int64_t k = 0;  // next path, as a base-C counter
    while (k < il && ++path[static_cast<size_t>(k)] == classes) path[static_cast<size_t>(k++)] = 0;
    if (k == il) break;
  }
  RefCtc r{-std::log(total), {}};
  for (double v : through) r.grad.push_back(total > 0 ? -v / total : 0.0);
  return r;
}

// The [T, C] log-probabilities of sample b of lp [T, N, C].
std::vector<double> sample_of(const std::vector<double>& lp, int64_t steps, int64_t n, int64_t classes, int64_t b) {
  std::vector<double> out;
  for (int64_t t = 0; t < steps; ++t)
    for (int64_t c = 0; c < classes; ++c) out.push_back(lp[static_cast<size_t>((t * n + b) * classes + c)]);
  return out;
}

TEST(LossReference, CtcMatchesEnumerationOfAlignments) {
  struct Case {
    int64_t steps, classes, blank;
    std::vector<std::vector<int64_t>> targets;
    std::vector<int64_t> input_lengths;
  };
  const std::vector<Case> cases = {
      {5, 4, 0, {{1, 2}, {3, 3}, {2}, {}}, {5, 5, 3, 4}},  // repeated label, short input, empty target
      {5, 4, 2, {{0, 1, 3}, {3}}, {5, 2}},                 // blank not 0
      {6, 3, 0, {{1, 1, 1}, {2, 1}}, {6, 6}},              // repeats needing a blank between each
      {2, 3, 0, {{1, 1}, {1}}, {2, 2}},                    // first sample impossible (inf)
      {4, 3, 1, {{0}, {2, 0}, {}}, {0, 3, 0}},             // empty inputs: inf and 0
  };
  for (DType dt : {DType::Float64, DType::Float32}) {
    for (const Case& c : cases) {
      const int64_t n = static_cast<int64_t>(c.targets.size());
      Tensor lp = log_softmax(random({c.steps, n, c.classes}, DType::Float64, 22), 2);
      std::vector<double> lpv = values(lp);
      std::vector<int64_t> tl, concat;
      int64_t longest = 0;
      for (const auto& t : c.targets) {
        tl.push_back(static_cast<int64_t>(t.size()));
        concat.insert(concat.end(), t.begin(), t.end());
        longest = std::max(longest, static_cast<int64_t>(t.size()));
      }
      std::vector<int64_t> padded(static_cast<size_t>(n * (longest + 1)), 1);  // padding: any valid class
      for (int64_t b = 0; b < n; ++b)
        for (size_t k = 0; k < c.targets[static_cast<size_t>(b)].size(); ++k)
          padded[static_cast<size_t>(b * (longest + 1)) + k] = c.targets[static_cast<size_t>(b)][k];
      std::vector<double> nll;
      double mean = 0;
      for (int64_t b = 0; b < n; ++b) {
        nll.push_back(ref_ctc(sample_of(lpv, c.steps, n, c.classes, b), c.steps, c.classes,
                              c.input_lengths[static_cast<size_t>(b)], c.targets[static_cast<size_t>(b)], c.blank)
                          .nll);
        mean += nll.back() / std::max<double>(1.0, static_cast<double>(tl[static_cast<size_t>(b)])) /
                static_cast<double>(n);
      }
      const double tol = dt == DType::Float32 ? 1e-5 : 1e-10;
      const std::string what = std::string(dtype_name(dt)) + " T=" + std::to_string(c.steps) + " blank=" +
                               std::to_string(c.blank);
      for (bool use_padded : {true, false}) {
        Tensor targets = use_padded ? tensor<int64_t>(padded, {n, longest + 1}) : tensor<int64_t>(concat);
        Variable x(lp.to(dt));
        EXPECT_TRUE(matches(ctc_loss(x, targets, c.input_lengths, tl, c.blank, Reduction::None).data(), {n}, dt, nll,
                            tol, tol))
            << what;
        EXPECT_TRUE(matches(ctc_loss(x, targets, c.input_lengths, tl, c.blank, Reduction::Sum).data(), {}, dt,
                            {ref_sum(nll)}, tol, tol))
            << what;
        EXPECT_TRUE(matches(ctc_loss(x, targets, c.input_lengths, tl, c.blank).data(), {}, dt, {mean}, tol, tol))
            << what;
        // zero_infinity: impossible samples count 0.
        std::vector<double> zeroed = nll;
        for (double& v : zeroed)
          if (std::isinf(v)) v = 0;
        EXPECT_TRUE(matches(ctc_loss(x, targets, c.input_lengths, tl, c.blank, Reduction::None, true).data(), {n}, dt,
                            zeroed, tol, tol))
            << what;
      }
    }
  }
}

TEST(LossReference, CtcGradientIsPyTorchs) {
  // PyTorch's backward, the formula wick reproduces: d loss / d log_probs[t, b, c] =
  // (exp(log_probs[t, b, c]) - posterior of class c at step t) * (the reduction's scale for
  // sample b) for t < input_lengths[b], 0 beyond; the posterior comes from the enumeration.
  // The log-probabilities here are not normalised (no log_softmax), so exp(lp) does not
  // cancel and the formula differs from the exact derivative -posterior.
  const int64_t steps = 5, n = 4, classes = 4;
  const std::vector<std::vector<int64_t>> targets = {{1, 2}, {3, 3}, {}, {1, 1, 1}};
  const std::vector<int64_t> il = {5, 4, 3, 4}, tl = {2, 2, 0, 3};  // the last one impossible (inf)
  Tensor lp = random({steps, n, classes}, DType::Float64, 23, -3, -0.5);
  const std::vector<double> lpv = values(lp);
  std::vector<RefCtc> refs;
  for (int64_t b = 0; b < n; ++b)
    refs.push_back(ref_ctc(sample_of(lpv, steps, n, classes, b), steps, classes, il[static_cast<size_t>(b)],
                           targets[static_cast<size_t>(b)], 0));
  ASSERT_TRUE(std::isinf(refs[3].nll));
  // The formula, with scale[b] the derivative of the reduced loss by sample b's loss.
  auto pytorch_grad = [&](const std::vector<double>& scale) {
    std::vector<double> g(static_cast<size_t>(steps * n * classes), 0.0);
    for (int64_t b = 0; b < n; ++b)
      for (int64_t t = 0; t < il[static_cast<size_t>(b)]; ++t)
        for (int64_t c = 0; c < classes; ++c) {
          const size_t i = static_cast<size_t>((t * n + b) * classes + c);
          const double posterior = -refs[static_cast<size_t>(b)].grad[static_cast<size_t>(t * classes + c)];
          g[i] = (std::exp(lpv[i]) - posterior) * scale[static_cast<size_t>(b)];
        }
    return g;
  };
  const Tensor t = tensor<int64_t>({1, 2, 3, 3, 1, 1, 1});
  // zero_infinity: the impossible sample counts 0 and gets a zero gradient. (Without it
  // the gradient there is NaN, PyTorch's and wick's, checked below.)
  {
    Variable x(lp, true);
    ctc_loss(x, t, il, tl, 0, Reduction::Sum, true).backward();
    EXPECT_TRUE(all_close(values(x.grad().data()), pytorch_grad({1, 1, 1, 0}), 1e-12, 1e-12));
  }
  {
    Variable x(lp, true);
    Variable loss = ctc_loss(x, t, il, tl, 0, Reduction::Mean, true);
    EXPECT_NEAR(loss.item<double>(), (refs[0].nll / 2 + refs[1].nll / 2 + refs[2].nll) / 4, 1e-12);  // value unchanged
    loss.backward();
    EXPECT_TRUE(all_close(values(x.grad().data()), pytorch_grad({1.0 / 8, 1.0 / 8, 1.0 / 4, 0}), 1e-12, 1e-12));
  }
  {
    // None with an incoming gradient per sample.
    Variable x(lp, true);
    ctc_loss(x, t, il, tl, 0, Reduction::None, true).backward(tensor<double>({0.5, -2.0, 3.0, 7.0}));
    EXPECT_TRUE(all_close(values(x.grad().data()), pytorch_grad({0.5, -2.0, 3.0, 0}), 1e-12, 1e-12));
  }
  // Not the exact derivative: it differs by exp(lp) on the valid steps.
  {
    Variable x(lp, true);
    ctc_loss(x, t, il, tl, 0, Reduction::Sum, true).backward();
    EXPECT_GT(std::abs(values(x.grad().data())[0] - refs[0].grad[0]), 0.01);
  }
  // An impossible alignment without zero_infinity: loss inf, gradient NaN as PyTorch's (0
  // with zero_infinity; CtcUnbatchedEmptyAndRefusals checks the steps and the other samples).
  for (bool zero_inf : {false, true}) {
    Variable y(log_softmax(random({2, 1, 3}, DType::Float64, 24), 2), true);
    Variable loss = ctc_loss(y, tensor<int64_t>({1, 1}, {1, 2}), {2}, {2}, 0, Reduction::Sum, zero_inf);
    EXPECT_EQ(loss.item<double>(), zero_inf ? 0.0 : kInf);
    loss.backward();
    for (double v : values(y.grad().data())) EXPECT_TRUE(zero_inf ? v == 0.0 : std::isnan(v));
  }
}

TEST(LossReference, CtcLogitsGradientThroughLogSoftmaxIsTheExactDerivative) {
  // Through log_softmax, sum_c exp(lp) = 1 = sum_c posterior at every valid step, so the
  // logits' gradient is softmax - posterior: the exact derivative of the loss by the logits.
  const int64_t steps = 5, n = 3, classes = 4;
  const std::vector<std::vector<int64_t>> targets = {{1, 2}, {3, 3}, {}};
  const std::vector<int64_t> il = {5, 4, 3}, tl = {2, 2, 0};
  Tensor logits = random({steps, n, classes}, DType::Float64, 25);
  Variable x(logits, true);
  ctc_loss(log_softmax(x, 2), tensor<int64_t>({1, 2, 3, 3}), il, tl, 0, Reduction::Sum).backward();
  const std::vector<double> g = values(x.grad().data()), lpv = values(log_softmax(logits, 2));
  for (int64_t b = 0; b < n; ++b) {
    RefCtc r = ref_ctc(sample_of(lpv, steps, n, classes, b), steps, classes, il[static_cast<size_t>(b)],
                       targets[static_cast<size_t>(b)], 0);
    for (int64_t t = 0; t < steps; ++t)
      for (int64_t c = 0; c < classes; ++c) {
        const size_t i = static_cast<size_t>((t * n + b) * classes + c);
        // d(-log P)/d logit = sum_c' (d/d lp_c') (d lp_c' / d logit_c) = -posterior_c + softmax_c
        // (sum_c' posterior_c' = 1 on valid steps); beyond the input length, 0.
        const double expected = t < il[static_cast<size_t>(b)]
                                    ? std::exp(lpv[i]) + r.grad[static_cast<size_t>(t * classes + c)]
                                    : 0.0;
        EXPECT_NEAR(g[i], expected, 1e-10) << "b=" << b << " t=" << t << " c=" << c;
      }
  }
}

TEST(LossReference, CtcUnbatchedEmptyAndRefusals) {
  Tensor lp = log_softmax(random({5, 4}, DType::Float64, 25), 1);
  const double ref = ref_ctc(values(lp), 5, 4, 5, {2, 3}, 0).nll;
  Variable one = ctc_loss(Variable(lp), tensor<int64_t>({2, 3}), {5}, {2}, 0, Reduction::None);
  EXPECT_TRUE(matches(one.data(), {}, DType::Float64, {ref}, 1e-10, 1e-12));
  // Empty batch: [N] = [0]; Sum 0, Mean NaN (0 / 0, as PyTorch).
  Variable none(zeros({5, 0, 4}, DType::Float64));
  EXPECT_EQ(ctc_loss(none, zeros({0, 2}, DType::Int64), {}, {}, 0, Reduction::None).shape(), Shape({0}));
  EXPECT_EQ(ctc_loss(none, zeros({0}, DType::Int64), {}, {}, 0, Reduction::Sum).item<double>(), 0.0);
  EXPECT_TRUE(std::isnan(ctc_loss(none, zeros({0}, DType::Int64), {}, {}).item<double>()));
  // An impossible alignment (two equal labels need three steps; there are two): the loss is
  // inf and has no derivative. PyTorch's gradient is NaN over that sample's input steps and
  // 0 past them, or 0 everywhere with zero_infinity; the other sample is untouched.
  {
    Tensor lp2 = log_softmax(random({3, 2, 3}, DType::Float64, 27), 2);
    Tensor tg = tensor<int64_t>({1, 1, 2, 0}, {2, 2});
    for (bool zero_inf : {false, true}) {
      Variable v(lp2, true);
      Variable l = ctc_loss(v, tg, {2, 3}, {2, 1}, 0, Reduction::None, zero_inf);
      EXPECT_EQ(values(l.data())[0], zero_inf ? 0.0 : kInf);
      sum(l).backward();
      const Tensor g = v.grad().data();
      for (int64_t t = 0; t < 3; ++t)
        for (double e : values(g.select(0, t).select(0, 0))) {
          if (t < 2 && !zero_inf) EXPECT_TRUE(std::isnan(e)) << t;
          else EXPECT_EQ(e, 0.0) << t << " zero_infinity " << zero_inf;
        }
      Variable alone(lp2.narrow(1, 1, 1), true);
      sum(ctc_loss(alone, tg.narrow(0, 1, 1), {3}, {1}, 0, Reduction::None)).backward();
      EXPECT_TRUE(all_close(values(g.narrow(1, 1, 1)), values(alone.grad().data()), 1e-12, 1e-12));
    }
  }
  // No time steps at all.
  Variable no_steps(zeros({0, 2, 3}, DType::Float64), true);
  Variable l0 = ctc_loss(no_steps, tensor<int64_t>({1}), {0, 0}, {0, 1}, 0, Reduction::None);
  EXPECT_TRUE(matches(l0.data(), {2}, DType::Float64, {0.0, kInf}));
  Variable x(log_softmax(random({5, 2, 4}, DType::Float64, 26), 2));
  Tensor t = tensor<int64_t>({1, 2, 3, 1}, {2, 2});
  expect_error([&] { ctc_loss(x, t, {6, 5}, {2, 2}); }, {"ctc_loss", "input_lengths[0] = 6", "[5, 2, 4]"});
  expect_error([&] { ctc_loss(x, t, {5}, {2}); }, {"ctc_loss", "batch of 2"});
  expect_error([&] { ctc_loss(x, t, {5, 5}, {3, 2}); }, {"ctc_loss", "[2, 2]", "longest target (3)"});
  expect_error([&] { ctc_loss(x, tensor<int64_t>({1, 2, 3}), {5, 5}, {2, 2}); }, {"ctc_loss", "[3]", "4"});
  expect_error([&] { ctc_loss(x, tensor<int64_t>({1, 4, 3, 1}, {2, 2}), {5, 5}, {2, 2}); },
               {"ctc_loss", "target 4", "4 classes"});
  expect_error([&] { ctc_loss(x, t, {5, 5}, {2, 2}, 4); }, {"ctc_loss", "blank 4", "4 classes"});
  expect_error([&] { ctc_loss(x, t.to(DType::Float32), {5, 5}, {2, 2}); }, {"ctc_loss", "integers", "float32"});
  expect_error([&] { ctc_loss(Variable(zeros({5, 4, 2, 2})), t, {5, 5}, {2, 2}); }, {"ctc_loss", "[5, 4, 2, 2]"});
}

}  // namespace
}  // namespace wick::test

WICK_GRADCHECK_CASES(losses) {
  using namespace wick;
  auto labels = [] { return Variable(tensor<double>({1, -1, 1, -1})); };
  return {
      {"huber_loss", [](auto& v) { return huber_loss(v[0], v[1], Reduction::Mean, 0.8); }, {{3, 4}, {3, 4}}},
      {"huber_loss none", [](auto& v) { return huber_loss(v[0], v[1], Reduction::None); }, {{5}, {5}}},
      {"binary_cross_entropy weighted",
       [](auto& v) { return binary_cross_entropy(v[0], v[1], tensor<double>({0.5, 2.0, 1.0}), Reduction::Sum); },
       {{2, 3}, {2, 3}}, 0.05, 0.95},
      {"margin_ranking_loss", [=](auto& v) { return margin_ranking_loss(v[0], v[1], labels(), 0.2); }, {{4}, {4}}},
      {"margin_ranking_loss target", [](auto& v) { return margin_ranking_loss(v[0], v[1], v[2], 0.1, Reduction::None); },
       {{2, 3}, {2, 3}, {2, 3}}},
      {"cosine_embedding_loss",
       [](auto& v) { return cosine_embedding_loss(v[0], v[1], tensor<int64_t>({1, -1, -1, 1}), -0.5); },
       {{4, 3}, {4, 3}}},
      {"triplet_margin_loss", [](auto& v) { return triplet_margin_loss(v[0], v[1], v[2], 3.0); }, {{3, 4}, {3, 4}, {3, 4}}},
      {"triplet_margin_loss swap p=1",
       [](auto& v) { return triplet_margin_loss(v[0], v[1], v[2], 3.0, 1.0, 1e-6, true, Reduction::Sum); },
       {{3, 4}, {3, 4}, {3, 4}}},
      {"poisson_nll_loss log_input", [](auto& v) { return poisson_nll_loss(v[0], v[1]); }, {{3, 4}, {3, 4}}, 0.1, 3},
      {"poisson_nll_loss rate full", [](auto& v) { return poisson_nll_loss(v[0], v[1], false, true, 1e-8, Reduction::Sum); },
       {{3, 4}, {3, 4}}, 0.1, 3},
      {"gaussian_nll_loss", [](auto& v) { return gaussian_nll_loss(v[0], v[1], v[2], true); }, {{3, 4}, {3, 4}, {3, 4}},
       0.2, 2},
      {"gaussian_nll_loss var per row",
       [](auto& v) { return gaussian_nll_loss(v[0], v[1], v[2], false, 1e-6, Reduction::None); },
       {{3, 4}, {3, 4}, {3}}, 0.2, 2},
      // CTC, T = 5, C = 4, S = 2, through log_softmax (on raw log-probabilities the gradient
      // is PyTorch's, not the derivative: CtcGradientIsPyTorchs); a repeated label, a short input.
      {"ctc_loss log_softmax",
       [](auto& v) {
         return ctc_loss(log_softmax(v[0], 2), tensor<int64_t>({1, 2, 3, 3}, {2, 2}), {5, 4}, {2, 2});
       },
       {{5, 2, 4}}},
      {"ctc_loss zero_infinity impossible sample",
       [](auto& v) {
         return ctc_loss(log_softmax(v[0], 2), tensor<int64_t>({1, 1, 2, 0}, {2, 2}), {2, 3}, {2, 1}, 0, Reduction::Mean,
                         true);
       },
       {{3, 2, 3}}},
      {"ctc_loss none blank 3",
       [](auto& v) {
         return ctc_loss(log_softmax(v[0], 1), tensor<int64_t>({0, 0}), {5}, {2}, 3, Reduction::None);
       },
       {{5, 4}}},
  };
}
