// matmul, mm, bmm, addmm, outer and dot against a float64 reference.
#include "tests/support/reference.h"

namespace wick::test {
namespace {

struct Ref {
  std::vector<double> v;
  Shape shape;
};

// torch.matmul on row-major double values: 1-d operands become a row / a column (removed
// again from the result), batch dims broadcast.
Ref ref_matmul(const std::vector<double>& va, Shape sa, const std::vector<double>& vb, Shape sb) {
  const bool a_vec = sa.size() == 1, b_vec = sb.size() == 1;
  if (a_vec) sa.insert(sa.begin(), 1);
  if (b_vec) sb.push_back(1);
  const int64_t M = sa[sa.size() - 2], K = sa.back(), N = sb.back();
  Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  Shape batch = broadcast_shapes("ref", ba, bb);
  Shape ea = batch, eb = batch;
  ea.insert(ea.end(), {M, K});
  eb.insert(eb.end(), {K, N});
  auto xa = ref_broadcast(va, sa, ea), xb = ref_broadcast(vb, sb, eb);
  const int64_t B = numel_of(batch);
  Ref r;
  r.v.assign(static_cast<size_t>(B * M * N), 0.0);
  for (int64_t i = 0; i < B; ++i)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k) s += xa[(i * M + m) * K + k] * xb[(i * K + k) * N + n];
        r.v[(i * M + m) * N + n] = s;
      }
  r.shape = batch;
  if (!a_vec) r.shape.push_back(M);
  if (!b_vec) r.shape.push_back(N);
  return r;
}

Ref ref_matmul(const Tensor& a, const Tensor& b) { return ref_matmul(values(a), a.shape(), values(b), b.shape()); }

// The same values with the last two dims stored transposed (a column-major matrix).
Tensor column_major(const Tensor& t) { return t.transpose(-1, -2).contiguous().transpose(-1, -2); }

struct MatmulCase {
  Shape a, b, out;
};

const std::vector<MatmulCase> kCases = {
    {{5}, {5}, {}},                           // dot
    {{3, 5}, {5}, {3}},                       // matrix-vector
    {{5}, {5, 4}, {4}},                       // vector-matrix
    {{3, 5}, {5, 4}, {3, 4}},                 // matrix-matrix
    {{2, 1, 3, 4}, {5, 4, 6}, {2, 5, 3, 6}},  // broadcast batch dims
    {{2, 3, 4}, {4, 5}, {2, 3, 5}},           // batched against one matrix (folded into one product)
    {{4, 5}, {2, 5, 3}, {2, 4, 3}},           // one matrix against a batch
    {{1, 3, 4}, {3, 4, 2}, {3, 3, 2}},        // size-1 batch broadcast
    {{2, 3, 4}, {4}, {2, 3}},                 // batched matrix-vector
    {{4}, {2, 4, 3}, {2, 3}},                 // vector against a batch
    {{2, 0, 4}, {4, 3}, {2, 0, 3}},           // empty rows
    {{3, 0}, {0, 2}, {3, 2}},                 // empty inner dim: zeros
    {{0}, {0}, {}},                           // empty dot: zero
    {{1, 1}, {1, 1}, {1, 1}},
};

TEST(Matmul, ShapesAndValuesFollowPyTorch) {
  uint64_t seed = 1;
  for (const auto& c : kCases) {
    for (DType t : {DType::Float32, DType::Float64}) {
      Tensor a = random(c.a, t, seed++), b = random(c.b, t, seed++);
      Ref r = ref_matmul(a, b);
      ASSERT_EQ(r.shape, c.out);
      for (Layout la : kAllLayouts)
        for (Layout lb : kAllLayouts)
          EXPECT_TRUE(matches(matmul(with_layout(a, la), with_layout(b, lb)), c.out, t, r.v))
              << shape_str(c.a) << " @ " << shape_str(c.b) << " " << dtype_name(t) << " " << layout_name(la) << "/"
              << layout_name(lb);
      if (a.dim() >= 2 && b.dim() >= 2)
        EXPECT_TRUE(matches(column_major(a).matmul(column_major(b)), c.out, t, r.v))
            << shape_str(c.a) << " @ " << shape_str(c.b) << " column-major";
    }
  }
}

TEST(Matmul, SixteenBitFloatsMultiplyInFloat32) {
  for (DType t : {DType::Float16, DType::BFloat16}) {
    for (const auto& c : kCases) {
      Tensor a = random(c.a, t, 11), b = random(c.b, t, 12);
      Ref r = ref_matmul(a, b);  // from the rounded 16-bit inputs
      double tol = t == DType::Float16 ? 4e-3 : 2e-2;
      EXPECT_TRUE(matches(matmul(a, b.dim() >= 2 ? column_major(b) : b), c.out, t, r.v, tol, tol))
          << shape_str(c.a) << " @ " << shape_str(c.b) << " " << dtype_name(t);
    }
    // A broadcast batch operand of a 16-bit bmm.
    Tensor a = random({1, 3, 4}, t, 13), b = random({5, 4, 2}, t, 14);
    EXPECT_TRUE(matches(bmm(a.expand({5, 3, 4}), b), {5, 3, 2}, t, ref_matmul(a, b).v, 2e-2, 2e-2));
  }
}

// PyTorch's CPU multiplies integer tensors (exactly, wrapping around on overflow).
TEST(Matmul, IntegersMultiplyExactlyOnTheCpu) {
  uint64_t seed = 100;
  for (const auto& c : kCases) {
    for (DType t : {DType::UInt8, DType::Int32, DType::Int64}) {
      const double lo = t == DType::UInt8 ? 0 : -6;
      Tensor a = round(random(c.a, DType::Float64, seed++, lo, 6)).to(t);
      Tensor b = round(random(c.b, DType::Float64, seed++, lo, 6)).to(t);
      Ref r = ref_matmul(a, b);  // exact in double: |values| < 2^53
      if (t == DType::UInt8)
        for (double& v : r.v) v = std::fmod(v, 256.0);
      for (Layout la : kAllLayouts)
        for (Layout lb : kAllLayouts)
          EXPECT_TRUE(matches(matmul(with_layout(a, la), with_layout(b, lb)), c.out, t, r.v, 0, 0))
              << shape_str(c.a) << " @ " << shape_str(c.b) << " " << dtype_name(t) << " " << layout_name(la) << "/"
              << layout_name(lb);
    }
  }
  // Overflow wraps around in the operand's width.
  EXPECT_TRUE(matches(dot(full({1}, 65536, DType::Int32), full({1}, 65536, DType::Int32)), {}, DType::Int32, {0}));
  EXPECT_TRUE(matches(mm(full({1, 2}, 16, DType::UInt8), full({2, 1}, 8, DType::UInt8)), {1, 1}, DType::UInt8, {0}));
  EXPECT_TRUE(matches(outer(full({1}, int64_t{1} << 62, DType::Int64), full({2}, 2, DType::Int64)), {1, 2},
                      DType::Int64, {static_cast<double>(INT64_MIN), static_cast<double>(INT64_MIN)}));
  // addmm with whole-number scales; beta == 0 ignores the input.
  Tensor x = tensor<int64_t>({1, 2, 3, 4}, {2, 2}), m = tensor<int64_t>({1, 2, 3, 4}, {2, 2});
  EXPECT_TRUE(matches(addmm(x, m, m, 3, -2), {2, 2}, DType::Int64, {3 - 14, 6 - 20, 9 - 30, 12 - 44}));
  EXPECT_TRUE(matches(addmm(x, m, m, 0, 1), {2, 2}, DType::Int64, {7, 10, 15, 22}));
  EXPECT_TRUE(matches(bmm(m.unsqueeze(0).expand({3, 2, 2}), m.t().contiguous().t().unsqueeze(0).expand({3, 2, 2})),
                      {3, 2, 2}, DType::Int64, {7, 10, 15, 22, 7, 10, 15, 22, 7, 10, 15, 22}));
}

TEST(Matmul, IntegerAddmmTruncatesFractionalScales) {
  // PyTorch converts alpha and beta to the integers' dtype (checked, then truncated toward
  // zero) and reads the input whenever beta was nonzero: alpha 2.7 scales by 2, beta 0.5 by 0.
  Tensor x = tensor<int64_t>({1, 2, 3, 4}, {2, 2}), m = tensor<int64_t>({1, 2, 3, 4}, {2, 2});
  const std::vector<double> p = {7, 10, 15, 22};  // m @ m
  auto scaled = [&](double beta, double alpha) {
    std::vector<double> e(4);
    for (int i = 0; i < 4; ++i) e[i] = std::trunc(beta) * (i + 1) + std::trunc(alpha) * p[i];
    return e;
  };
  for (auto [beta, alpha] : std::vector<std::pair<double, double>>{{1, 2.7}, {0.5, 1}, {-1.5, -2.9}, {2.2, 0.5}})
    for (DType t : {DType::Int64, DType::Int32})
      EXPECT_TRUE(matches(addmm(x.to(t), m.to(t), m.to(t), beta, alpha), {2, 2}, t, scaled(beta, alpha)))
          << dtype_name(t) << " beta " << beta << " alpha " << alpha;
  // uint8 takes a fractional scale in [0, 255] and a whole one from -255 (wrapping).
  EXPECT_TRUE(matches(addmm(x.to(DType::UInt8), m.to(DType::UInt8), m.to(DType::UInt8), 1.9, 3.5), {2, 2}, DType::UInt8,
                      {22, 32, 48, 70}));
  EXPECT_TRUE(matches(addmm(x.to(DType::UInt8), m.to(DType::UInt8), m.to(DType::UInt8), 0, -1), {2, 2}, DType::UInt8,
                      {249, 246, 241, 234}));
  expect_error([&] { addmm(x.to(DType::Int32), m.to(DType::Int32), m.to(DType::Int32), 1, 3e9); },
               {"addmm", "alpha 3e+09", "int32", "overflow"});
  expect_error([&] { addmm(x.to(DType::UInt8), m.to(DType::UInt8), m.to(DType::UInt8), 256.5, 1); },
               {"addmm", "beta 256.5", "uint8"});
  // Nothing to contract: PyTorch multiplies the input by beta in place, which a fractional
  // beta cannot do to integers; a whole beta scales it. (PyTorch refuses any Python float
  // there, 3.0 too; wick's beta is a double, which cannot tell 3.0 from 3, so a whole value is
  // the integer: decided in issue 48, README.)
  Tensor e = zeros({2, 0}, DType::Int64), f = zeros({0, 2}, DType::Int64);
  EXPECT_TRUE(matches(addmm(x, e, f, 3, 0.5), {2, 2}, DType::Int64, {3, 6, 9, 12}));
  expect_error([&] { addmm(x, e, f, 0.5, 1); }, {"addmm", "can't be cast to int64", "beta 0.5"});
  // Floating operands are untouched: alpha 0.5 halves.
  EXPECT_TRUE(matches(addmm(x.to(DType::Float64), m.to(DType::Float64), m.to(DType::Float64), 0.5, 0.5), {2, 2},
                      DType::Float64, {4, 6, 9, 13}));
}

TEST(Matmul, BmmOfMixedDtypesWithAnEmptyDimGivesBsDtype) {
  // PyTorch's bmm checks the dtypes only in the kernel, which an empty result or an empty
  // inner dim never reaches: the result is b's dtype (zeros when the inner dim is empty).
  Tensor a = random({2, 3, 4}, DType::Float32, 1), b = random({2, 4, 5}, DType::Float64, 2);
  EXPECT_TRUE(matches(bmm(a.narrow(1, 0, 0), b), {2, 0, 5}, DType::Float64, {}));
  EXPECT_TRUE(matches(bmm(a, b.narrow(2, 0, 0)), {2, 3, 0}, DType::Float64, {}));
  EXPECT_TRUE(matches(bmm(a.narrow(0, 0, 0), b.narrow(0, 0, 0)), {0, 3, 5}, DType::Float64, {}));
  EXPECT_TRUE(
      matches(bmm(a.narrow(2, 0, 0), b.narrow(1, 0, 0)), {2, 3, 5}, DType::Float64, std::vector<double>(30, 0.0)));
  EXPECT_TRUE(matches(bmm(zeros({2, 3, 0}, DType::Int32), zeros({2, 0, 2}, DType::Bool)), {2, 3, 2}, DType::Bool,
                      std::vector<double>(12, 0.0)));
  expect_error([&] { bmm(a, b); }, {"bmm", "same dtype", "float32", "float64"});
  expect_error([&] { bmm(a.narrow(2, 0, 0), b); }, {"bmm", "0 != 4"});
}

TEST(Matmul, NonContiguousBatchesNeedNoCopy) {
  // Batch dims permuted (so they do not collapse) and broadcast by stride 0, matrices
  // column-major: all handled by strides.
  Tensor base = random({4, 3, 5, 6}, DType::Float64, 21);
  Tensor a = base.permute({1, 0, 3, 2});                          // [3, 4, 6, 5], column-major matrices
  Tensor b = random({4, 5, 2}, DType::Float64, 22).unsqueeze(0);  // [1, 4, 5, 2]
  Tensor be = b.expand({3, 4, 5, 2});
  Ref r = ref_matmul(a, b);
  EXPECT_TRUE(matches(matmul(a, b), {3, 4, 6, 2}, DType::Float64, r.v));
  EXPECT_TRUE(matches(matmul(a, be), {3, 4, 6, 2}, DType::Float64, r.v));
  // A weight [K, N] shared by a batch through stride 0.
  Tensor w = random({5, 7}, DType::Float32, 23);
  Tensor x = random({6, 3, 5}, DType::Float32, 24);
  EXPECT_TRUE(matches(bmm(x, w.unsqueeze(0).expand({6, 5, 7})), {6, 3, 7}, DType::Float32, ref_matmul(x, w).v));
  // Rows picked with a step: neither matrix dim has unit stride, so a copy is made.
  Tensor s = random({6, 10}, DType::Float64, 25).slice(0, 0, 6, 2).slice(1, 0, 10, 2);  // [3, 5]
  EXPECT_TRUE(matches(mm(s, w.to(DType::Float64)), {3, 7}, DType::Float64, ref_matmul(s, w.to(DType::Float64)).v));
}

TEST(Matmul, ManySmallAndOneLargeProduct) {
  // Many small matrices run one per thread; a large one uses Eigen's blocking.
  Tensor a = random({300, 4, 5}, DType::Float64, 31), b = random({300, 5, 6}, DType::Float64, 32);
  EXPECT_TRUE(matches(bmm(a, b), {300, 4, 6}, DType::Float64, ref_matmul(a, b).v));
  Tensor c = random({130, 97}, DType::Float32, 33), d = random({97, 81}, DType::Float32, 34);
  EXPECT_TRUE(matches(mm(c, column_major(d)), {130, 81}, DType::Float32, ref_matmul(c, d).v, 1e-5, 1e-4));
}

TEST(Matmul, MmBmmOuterDot) {
  Tensor a = random({3, 4}, DType::Float64, 41), b = random({4, 2}, DType::Float64, 42);
  EXPECT_TRUE(matches(mm(a.t().contiguous().t(), b), {3, 2}, DType::Float64, ref_matmul(a, b).v));
  Tensor x = random({2, 3, 4}, DType::Float64, 43), y = random({2, 4, 5}, DType::Float64, 44);
  for (Layout l : kAllLayouts)
    EXPECT_TRUE(matches(bmm(with_layout(x, l), y), {2, 3, 5}, DType::Float64, ref_matmul(x, y).v)) << layout_name(l);
  Tensor u = random({3}, DType::Float64, 45), v = random({4}, DType::Float64, 46);
  std::vector<double> expect;
  for (double p : values(u))
    for (double q : values(v)) expect.push_back(p * q);
  EXPECT_TRUE(matches(outer(u, with_layout(v, Layout::Sliced)), {3, 4}, DType::Float64, expect));
  Tensor w = random({3}, DType::Float64, 47);
  double d = 0;
  for (int i = 0; i < 3; ++i) d += values(u)[i] * values(w)[i];
  EXPECT_TRUE(matches(dot(u, with_layout(w, Layout::Offset)), {}, DType::Float64, {d}));
  EXPECT_TRUE(matches(outer(zeros({0}), zeros({2})), {0, 2}, DType::Float32, {}));
}

TEST(Matmul, AddmmScalesAndBroadcastsInput) {
  Tensor a = random({3, 4}, DType::Float64, 51), b = random({4, 2}, DType::Float64, 52);
  auto prod = ref_matmul(a, b).v;
  for (const Shape& is : std::vector<Shape>{{3, 2}, {2}, {3, 1}, {}}) {
    Tensor input = random(is, DType::Float64, 53);
    auto in = ref_broadcast(values(input), is, {3, 2});
    std::vector<double> expect(6);
    for (int i = 0; i < 6; ++i) expect[i] = 0.5 * in[i] + 2.0 * prod[i];
    EXPECT_TRUE(matches(addmm(input, a, column_major(b), 0.5, 2.0), {3, 2}, DType::Float64, expect)) << shape_str(is);
  }
  // beta == 0 ignores the input, NaN included.
  Tensor nan_input = full({3, 2}, NAN, DType::Float64);
  EXPECT_TRUE(matches(addmm(nan_input, a, b, 0.0, 1.0), {3, 2}, DType::Float64, prod));
  // An empty inner dim leaves beta * input.
  Tensor in = random({3, 2}, DType::Float32, 54);
  std::vector<double> scaled;
  for (double x : values(in)) scaled.push_back(3 * x);
  EXPECT_TRUE(matches(addmm(in, zeros({3, 0}), zeros({0, 2}), 3.0, 1.0), {3, 2}, DType::Float32, scaled));
  // 16-bit with beta reads the input through float32.
  Tensor h = random({3, 2}, DType::BFloat16, 55);
  auto hv = values(h);
  auto hp = ref_matmul(a.to(DType::BFloat16), b.to(DType::BFloat16)).v;
  std::vector<double> he(6);
  for (int i = 0; i < 6; ++i) he[i] = hv[i] + hp[i];
  EXPECT_TRUE(matches(addmm(h, a.to(DType::BFloat16), b.to(DType::BFloat16)), {3, 2}, DType::BFloat16, he, 2e-2, 2e-2));
}

TEST(Matmul, ErrorsNameShapesAndDtypes) {
  expect_error([] { matmul(zeros({2, 3}), zeros({4, 5})); }, {"matmul", "[2, 3]", "[4, 5]", "3 != 4"});
  expect_error([] { matmul(zeros({3}), zeros({4})); }, {"matmul", "[3]", "[4]", "3 != 4"});
  expect_error([] { matmul(zeros({2, 3}), zeros({2, 3}, DType::Float64)); }, {"matmul", "float32", "float64"});
  expect_error([] { matmul(zeros({2, 3}, DType::Bool), zeros({3, 2}, DType::Bool)); }, {"matmul", "bool", "[2, 3]"});
  expect_error(
      [] {
        addmm(zeros({2, 2}, DType::UInt8), zeros({2, 3}, DType::UInt8), zeros({3, 2}, DType::UInt8), 1, -0.5);
      },
      {"addmm", "alpha -0.5", "uint8", "overflow"});
  expect_error([] { matmul(scalar_tensor(1.0), zeros({3})); }, {"matmul", "at least 1 dim", "[]"});
  expect_error([] { matmul(zeros({2, 2, 3}), zeros({3, 3, 4})); }, {"matmul", "[2]", "[3]"});
  expect_error([] { mm(zeros({2, 3, 4}), zeros({4, 2})); }, {"mm", "2-d", "[2, 3, 4]"});
  expect_error([] { mm(zeros({2, 3}), zeros({4, 2})); }, {"mm", "[2, 3]", "[4, 2]"});
  expect_error([] { bmm(zeros({2, 3, 4}), zeros({3, 4, 2})); }, {"bmm", "batch", "[2, 3, 4]", "[3, 4, 2]"});
  expect_error([] { bmm(zeros({3, 4}), zeros({4, 2})); }, {"bmm", "3-d"});
  expect_error([] { addmm(zeros({4}), zeros({2, 3}), zeros({3, 2})); }, {"addmm", "[4]", "[2, 2]"});
  expect_error(
      [] {
        addmm(zeros({2, 2}, DType::Float64), zeros({2, 3}), zeros({3, 2}));
      },
      {"addmm", "float64", "float32"});
  expect_error([] { outer(zeros({2, 2}), zeros({2})); }, {"outer", "1-d", "[2, 2]"});
  expect_error([] { dot(zeros({2}), zeros({2}, DType::Float16)); }, {"dot", "float32", "float16"});
}

}  // namespace
}  // namespace wick::test
