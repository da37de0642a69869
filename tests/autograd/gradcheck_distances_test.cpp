// The distances of wick/autograd/distances.h: float64 references computed element by element, the
// Tensor and Variable paths equal, PyTorch's gradients where the formulas have a choice
// (clamped norms, zero distances), refusals, and finite-difference gradients (in the
// gradcheck table).
#include "tests/autograd/cases.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <wick/autograd/distances.h>
#include "tests/support/reference.h"

namespace wick::test {
namespace {


// ||v||_p as PyTorch's vector norm: p = 0 counts the nonzero entries, inf is the largest |v|.
double ref_norm(const std::vector<double>& v, double p) {
  double acc = 0;
  for (double x : v) {
    if (p == 0) acc += x != 0;
    else if (std::isinf(p)) acc = std::max(acc, std::abs(x));
    else acc += std::pow(std::abs(x), p);
  }
  return p == 0 || std::isinf(p) ? acc : std::pow(acc, 1 / p);
}

// The vectors of row-major values of `shape` along `dim`, in the row-major order of the
// shape without that dim.
std::vector<std::vector<double>> along(const std::vector<double>& v, const Shape& shape, int64_t dim) {
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < dim; ++i) outer *= shape[static_cast<size_t>(i)];
  for (size_t i = static_cast<size_t>(dim) + 1; i < shape.size(); ++i) inner *= shape[i];
  const int64_t n = shape[static_cast<size_t>(dim)];
  std::vector<std::vector<double>> groups;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      std::vector<double> g;
      for (int64_t k = 0; k < n; ++k) g.push_back(v[static_cast<size_t>((o * n + k) * inner + i)]);
      groups.push_back(g);
    }
  return groups;
}

Shape without(Shape s, int64_t dim) {
  s.erase(s.begin() + dim);
  return s;
}

TEST(Distances, NormalizeMatchesReference) {
  for (DType dt : {DType::Float32, DType::Float64}) {
    Tensor x = random({3, 4}, dt, 1);
    std::vector<double> xv = values(x);
    xv[4] = 0;  // a zero entry, counted by p = 0
    x = tensor<double>(xv, {3, 4}).to(dt);
    for (double p : {1.0, 2.0, 3.0, kInf, 0.0}) {
      for (int64_t dim : {0, 1}) {
        // Reference: divide each vector along dim by max(||v||_p, eps).
        std::vector<double> expected(xv.size());
        const int64_t n = dim == 0 ? 3 : 4, stride = dim == 0 ? 4 : 1, count = dim == 0 ? 4 : 3;
        for (int64_t g = 0; g < count; ++g) {
          const int64_t base = dim == 0 ? g : g * 4;
          std::vector<double> vec;
          for (int64_t k = 0; k < n; ++k) vec.push_back(xv[static_cast<size_t>(base + k * stride)]);
          const double d = std::max(ref_norm(vec, p), 1e-12);
          for (int64_t k = 0; k < n; ++k)
            expected[static_cast<size_t>(base + k * stride)] = xv[static_cast<size_t>(base + k * stride)] / d;
        }
        const std::string what = std::string(dtype_name(dt)) + " p=" + std::to_string(p) + " dim=" + std::to_string(dim);
        const double tol = dt == DType::Float32 ? 1e-5 : 1e-12;
        EXPECT_TRUE(matches(normalize(with_layout(x, Layout::Transposed), p, dim), {3, 4}, dt, expected, tol, tol))
            << what;
        EXPECT_TRUE(matches(normalize(Variable(x), p, dim).data(), {3, 4}, dt, expected, tol, tol)) << what;
      }
    }
  }
  // A zero vector stays zero (the norm is clamped to eps) and its gradient is finite: 1 / eps.
  Variable z(zeros({2, 3}, DType::Float64), true);
  sum(normalize(z)).backward();
  for (double g : values(z.grad().data())) EXPECT_DOUBLE_EQ(g, 1 / 1e-12);
  EXPECT_TRUE(matches(normalize(zeros({2, 3})), {2, 3}, DType::Float32, std::vector<double>(6, 0.0)));
  expect_error([] { normalize(tensor<int64_t>({1, 2}, {1, 2})); }, {"normalize", "floating", "int64"});
  // p = inf over an empty dim is a max over nothing: refused, as PyTorch's vector_norm does;
  // other p give an empty result, and so does inf along a non-empty dim of an empty tensor.
  expect_error([] { normalize(zeros({3, 0}), INFINITY, 1); }, {"norm", "inf norm", "size 0", "[3, 0]"});
  expect_error([] { normalize(Variable(zeros({0, 2})), INFINITY, 0); }, {"norm", "inf norm", "size 0"});
  EXPECT_EQ(normalize(zeros({3, 0}), 2.0, 1).shape(), (Shape{3, 0}));
  EXPECT_EQ(normalize(zeros({0, 2}), INFINITY, 1).shape(), (Shape{0, 2}));
  expect_error([] { normalize(zeros({2, 3}), -1.0); }, {"normalize", "p must be >= 0", "-1"});
  expect_error([] { normalize(zeros({3}), 2.0, 1); }, {"normalize", "dim"});
}

TEST(Distances, CosineSimilarityBroadcastsAndClampsEachNorm) {
  struct Case {
    Shape a, b;
    int64_t dim;
  };
  for (const Case& c : {Case{{4, 5}, {4, 5}, 1}, Case{{2, 1, 5}, {3, 5}, -1}, Case{{2, 3, 4}, {1, 3, 1}, 1},
                        Case{{5}, {5}, 0}}) {
    Tensor a = random(c.a, DType::Float64, 3), b = random(c.b, DType::Float64, 4);
    const Shape s = broadcast_shapes("test", c.a, c.b);
    const int64_t d = c.dim < 0 ? c.dim + static_cast<int64_t>(s.size()) : c.dim;
    auto ga = along(ref_broadcast(values(a), c.a, s), s, d), gb = along(ref_broadcast(values(b), c.b, s), s, d);
    std::vector<double> expected;
    for (size_t i = 0; i < ga.size(); ++i) {
      double dot = 0;
      for (size_t k = 0; k < ga[i].size(); ++k) dot += ga[i][k] * gb[i][k];
      expected.push_back(dot / (std::max(ref_norm(ga[i], 2), 1e-8) * std::max(ref_norm(gb[i], 2), 1e-8)));
    }
    EXPECT_TRUE(matches(cosine_similarity(a, b, c.dim), without(s, d), DType::Float64, expected, 1e-12, 1e-12))
        << shape_str(c.a) << " " << shape_str(c.b);
    EXPECT_TRUE(matches(cosine_similarity(Variable(a), Variable(b), c.dim).data(), without(s, d), DType::Float64,
                        expected, 1e-12, 1e-12));
  }
  // float32: parallel vectors whose squared norms multiply past float32's range still give 1.
  Tensor big = mul(ones({2, 3}), 1e15);
  EXPECT_TRUE(matches(cosine_similarity(big, big), {2}, DType::Float32, {1, 1}, 1e-6, 1e-6));
  // A zero vector: similarity 0, finite gradients.
  Variable z(zeros({1, 3}, DType::Float64), true), w(tensor<double>({1, 2, 2}, {1, 3}), true);
  Variable cz = cosine_similarity(z, w);
  EXPECT_EQ(cz.item<double>(), 0.0);
  cz.backward();
  for (double g : values(z.grad().data())) EXPECT_TRUE(std::isfinite(g));
  for (double g : values(w.grad().data())) EXPECT_EQ(g, 0.0);

  // Below eps the clamp changes the value only: the gradient flows through ||x1|| itself, as
  // PyTorch's no-grad clamp. With x1 = (0.06, 0.08) (norm 0.1), eps = 0.5, x2 = (3, 4):
  // value = x1.x2n / 0.5, d/dx1 = x2n / 0.5 - (x1.x2n) / 0.25 * x1 / ||x1||.
  Variable x1(tensor<double>({0.06, 0.08}), true), x2(tensor<double>({3.0, 4.0}));
  Variable cs = cosine_similarity(x1, x2, 0, 0.5);
  const double x2n[2] = {0.6, 0.8}, x1v[2] = {0.06, 0.08}, dotn = 0.06 * 0.6 + 0.08 * 0.8;
  EXPECT_NEAR(cs.item<double>(), dotn / 0.5, 1e-15);
  cs.backward();
  std::vector<double> g = values(x1.grad().data());
  for (int k = 0; k < 2; ++k) EXPECT_NEAR(g[static_cast<size_t>(k)], x2n[k] / 0.5 - dotn / 0.25 * x1v[k] / 0.1, 1e-12);

  expect_error([] { cosine_similarity(zeros({2, 3}), zeros({2, 4})); }, {"cosine_similarity", "[2, 3]", "[2, 4]"});
  expect_error([] { cosine_similarity(zeros({2, 3}), zeros({2, 3}), 1, -1.0); }, {"cosine_similarity", "eps"});
  expect_error([] { cosine_similarity(zeros({2, 3}), zeros({2, 3}), 2); }, {"cosine_similarity", "dim"});
}

TEST(Distances, PairwiseDistanceMatchesReference) {
  struct Case {
    Shape a, b;
  };
  for (const Case& c : {Case{{4, 5}, {4, 5}}, Case{{4, 5}, {5}}, Case{{2, 3, 4}, {3, 4}}, Case{{6}, {6}}}) {
    for (double p : {1.0, 2.0, 0.5, 3.0, kInf, 0.0}) {
      for (bool keepdim : {false, true}) {
        Tensor a = random(c.a, DType::Float64, 5), b = random(c.b, DType::Float64, 6);
        const Shape s = broadcast_shapes("test", c.a, c.b);
        const int64_t d = static_cast<int64_t>(s.size()) - 1;
        std::vector<double> diff = ref_binary(values(a), c.a, values(b), c.b, [](double x, double y) { return x - y + 1e-6; });
        std::vector<double> expected;
        for (const auto& v : along(diff, s, d)) expected.push_back(ref_norm(v, p));
        Shape out = without(s, d);
        if (keepdim) out.push_back(1);
        const std::string what = shape_str(c.a) + " " + shape_str(c.b) + " p=" + std::to_string(p);
        EXPECT_TRUE(matches(pairwise_distance(a, b, p, 1e-6, keepdim), out, DType::Float64, expected, 1e-12, 1e-12))
            << what;
        EXPECT_TRUE(matches(pairwise_distance(Variable(a), Variable(b), p, 1e-6, keepdim).data(), out,
                            DType::Float64, expected, 1e-12, 1e-12))
            << what;
      }
    }
  }
  // Equal rows: distance ||eps||, and a finite gradient; p = 0 keeps the graph with gradient 0.
  Variable x(ones({2, 3}, DType::Float64), true);
  Variable dist = pairwise_distance(x, Variable(ones({2, 3}, DType::Float64)));
  EXPECT_TRUE(matches(dist.data(), {2}, DType::Float64, {std::sqrt(3.0) * 1e-6, std::sqrt(3.0) * 1e-6}, 1e-9, 0));
  sum(dist).backward();
  for (double g : values(x.grad().data())) EXPECT_NEAR(g, 1 / std::sqrt(3.0), 1e-9);
  Variable y(random({2, 3}, DType::Float64, 7), true);
  sum(pairwise_distance(y, Variable(zeros({2, 3}, DType::Float64)), 0.0)).backward();
  for (double gy : values(y.grad().data())) EXPECT_EQ(gy, 0.0);
  expect_error([] { pairwise_distance(zeros({2, 3}), zeros({2, 4})); }, {"pairwise_distance", "[2, 3]", "[2, 4]"});
  expect_error([] { pairwise_distance(zeros({2, 3}), zeros({2, 3}), -2.0); }, {"pairwise_distance", "p must be"});
}

TEST(Distances, CdistMatchesReferenceAndHasZeroGradientAtZeroDistance) {
  struct Case {
    Shape a, b, out;
  };
  for (const Case& c : {Case{{3, 4}, {5, 4}, {3, 5}}, Case{{2, 3, 4}, {2, 5, 4}, {2, 3, 5}},
                        Case{{2, 1, 3, 2}, {3, 4, 2}, {2, 3, 3, 4}}, Case{{3, 2}, {2, 4, 2}, {2, 3, 4}}}) {
    for (double p : {2.0, 1.0, 0.5, 3.0, kInf, 0.0}) {
      for (DType dt : {DType::Float64, DType::Float32}) {
        Tensor a = random(c.a, dt, 8), b = random(c.b, dt, 9);
        // Reference: each batch (broadcast), each pair of rows.
        const int64_t P = c.a[c.a.size() - 2], R = c.b[c.b.size() - 2], M = c.a.back();
        Shape batch(c.out.begin(), c.out.end() - 2);
        Shape ba = batch, bb = batch;
        ba.insert(ba.end(), {P, M});
        bb.insert(bb.end(), {R, M});
        std::vector<double> av = ref_broadcast(values(a), c.a, ba), bv = ref_broadcast(values(b), c.b, bb);
        std::vector<double> expected;
        for (int64_t n = 0; n < numel_of(batch); ++n)
          for (int64_t i = 0; i < P; ++i)
            for (int64_t j = 0; j < R; ++j) {
              std::vector<double> d;
              for (int64_t k = 0; k < M; ++k)
                d.push_back(av[static_cast<size_t>((n * P + i) * M + k)] - bv[static_cast<size_t>((n * R + j) * M + k)]);
              expected.push_back(ref_norm(d, p));
            }
        const double tol = dt == DType::Float32 ? 1e-5 : 1e-12;
        const std::string what = shape_str(c.a) + " " + shape_str(c.b) + " p=" + std::to_string(p);
        EXPECT_TRUE(matches(cdist(with_layout(a, Layout::Offset), b, p), c.out, dt, expected, tol, tol)) << what;
        EXPECT_TRUE(matches(cdist(Variable(a), Variable(b), p).data(), c.out, dt, expected, tol, tol)) << what;
      }
    }
  }
  // Identical points: distance 0 and gradient 0 (PyTorch's cdist backward), not NaN.
  for (double p : {2.0, 1.0, 3.0, 0.5, kInf}) {
    Tensor pts = random({3, 2}, DType::Float64, 10);
    Variable a(pts, true), b(pts.clone(), true);
    Variable d = cdist(a, b, p);
    for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(values(d.data())[static_cast<size_t>(i * 3 + i)], 0.0);
    sum(d).backward();
    for (double g : values(a.grad().data())) EXPECT_TRUE(std::isfinite(g)) << "p=" << p;
    Variable a1(pts.narrow(0, 0, 1).clone(), true);
    cdist(a1, Variable(pts.narrow(0, 0, 1).clone()), p).backward(ones({1, 1}, DType::Float64));
    for (double g : values(a1.grad().data())) EXPECT_EQ(g, 0.0) << "p=" << p;
  }
  // Empty inputs: no rows gives an empty result, no columns gives zeros.
  EXPECT_EQ(cdist(zeros({0, 3}), zeros({4, 3})).shape(), Shape({0, 4}));
  EXPECT_TRUE(matches(cdist(zeros({2, 0}), zeros({3, 0})), {2, 3}, DType::Float32, std::vector<double>(6, 0.0)));
  expect_error([] { cdist(zeros({3}), zeros({2, 3})); }, {"cdist", "at least 2 dims", "[3]", "[2, 3]"});
  expect_error([] { cdist(zeros({2, 3}), zeros({2, 4})); }, {"cdist", "[2, 3]", "[2, 4]", "columns"});
  expect_error([] { cdist(zeros({2, 2, 3}), zeros({3, 2, 3})); }, {"cdist", "batch"});
  expect_error([] { cdist(zeros({2, 3}), zeros({2, 3}), -1.0); }, {"cdist", "p must be >= 0"});
  expect_error([] { cdist(tensor<int64_t>({1, 2}, {1, 2}), tensor<int64_t>({1, 2}, {1, 2})); }, {"cdist", "floating"});
}

// Over zero features every distance is 0, for every p, p = inf included (PyTorch's zeros;
// the inf-norm's max has no identity), with an empty gradient for each input.
TEST(Distances, CdistOverZeroFeaturesIsZeroForEveryP) {
  for (Device device : cpu_and_cuda())
    for (double p : {2.0, 1.0, 0.5, 3.0, 0.0, kInf}) {
      SCOPED_TRACE(device.str() + " p=" + std::to_string(p));
      Variable a(zeros({2, 4, 0}, Options(DType::Float64, device)), true);
      Variable b(zeros({1, 3, 0}, Options(DType::Float64, device)), true);
      Variable d = cdist(a, b, p);
      EXPECT_TRUE(matches(d.data().to(Device::cpu()), {2, 4, 3}, DType::Float64, std::vector<double>(24, 0.0), 0, 0));
      sum(d).backward();
      EXPECT_EQ(a.grad().shape(), (Shape{2, 4, 0}));
      EXPECT_EQ(b.grad().shape(), (Shape{1, 3, 0}));
      const Options f32(DType::Float32, device);
      EXPECT_TRUE(matches(cdist(zeros({2, 0}, f32), zeros({3, 0}, f32), p).to(Device::cpu()), {2, 3}, DType::Float32,
                          std::vector<double>(6, 0.0), 0, 0));
    }
}

}  // namespace
}  // namespace wick::test

WICK_GRADCHECK_CASES(distances) {
  using namespace wick;
  return {
      {"normalize p=2", [](auto& v) { return normalize(v[0]); }, {{3, 4}}},
      {"normalize p=3 dim 0", [](auto& v) { return normalize(v[0], 3.0, 0); }, {{3, 4}}},
      {"normalize p=1", [](auto& v) { return normalize(v[0], 1.0, -1); }, {{2, 3, 2}}},
      {"cosine_similarity", [](auto& v) { return cosine_similarity(v[0], v[1]); }, {{3, 4}, {3, 4}}},
      {"cosine_similarity broadcast", [](auto& v) { return cosine_similarity(v[0], v[1], -1); },
       {{2, 1, 4}, {3, 4}}},
      {"pairwise_distance", [](auto& v) { return pairwise_distance(v[0], v[1]); }, {{4, 5}, {4, 5}}},
      {"pairwise_distance p=1 keepdim", [](auto& v) { return pairwise_distance(v[0], v[1], 1.0, 1e-6, true); },
       {{3, 4}, {4}}},
      {"pairwise_distance p=inf", [](auto& v) { return pairwise_distance(v[0], v[1], INFINITY); }, {{3, 4}, {3, 4}}},
      {"cdist", [](auto& v) { return cdist(v[0], v[1]); }, {{3, 4}, {5, 4}}},
      {"cdist batched p=1.5", [](auto& v) { return cdist(v[0], v[1], 1.5); }, {{2, 3, 2}, {2, 2, 2}}},
      {"cdist broadcast p=inf", [](auto& v) { return cdist(v[0], v[1], INFINITY); }, {{2, 1, 3, 2}, {2, 2, 2}}},
      {"cdist p=0", [](auto& v) { return add(cdist(v[0], v[1], 0.0), cdist(v[0], v[1])); }, {{2, 3}, {2, 3}}},
  };
}
