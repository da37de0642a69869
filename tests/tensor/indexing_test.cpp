// index_select, gather, scatter, scatter_add, index_add, masked_fill, masked_select,
// nonzero, one_hot and embedding against float64 references.
#include "tests/support/dtype_sets.h"
#include "tests/support/reference.h"

namespace wick::test {
namespace {

// Row-major coordinates of linear index i in shape s, and back.
Shape unravel(int64_t i, const Shape& s) {
  Shape c(s.size());
  for (size_t d = s.size(); d-- > 0;) {
    c[d] = i % s[d];
    i /= s[d];
  }
  return c;
}
int64_t ravel(const Shape& c, const Shape& s) {
  int64_t i = 0;
  for (size_t d = 0; d < s.size(); ++d) i = i * s[d] + c[d];
  return i;
}

std::vector<int64_t> ints(const Tensor& t) {
  std::vector<int64_t> r;
  for (double v : values(t)) r.push_back(static_cast<int64_t>(v));
  return r;
}

// Indices in [0, n) with the given shape, as int64.
Tensor random_index(const Shape& shape, int64_t n, uint64_t seed) { return random(shape, DType::Int64, seed, 0, n - 1); }

// --- index_select -------------------------------------------------------------------------

std::vector<double> ref_index_select(const Tensor& x, int64_t dim, const std::vector<int64_t>& idx) {
  auto xv = values(x);
  Shape os = x.shape();
  os[dim] = static_cast<int64_t>(idx.size());
  std::vector<double> out(static_cast<size_t>(numel_of(os)));
  for (int64_t i = 0; i < numel_of(os); ++i) {
    Shape c = unravel(i, os);
    c[dim] = idx[c[dim]];
    out[i] = xv[ravel(c, x.shape())];
  }
  return out;
}

TEST(IndexSelect, EveryDimLayoutAndDtype) {
  for (DType t : kAllDTypes) {
    Tensor x = random({3, 4, 5}, t, 1, -5, 5);
    for (int64_t dim = 0; dim < 3; ++dim) {
      std::vector<int64_t> idx = {x.size(dim) - 1, 0, 1, 0};  // repeats, out of order
      Tensor index = tensor<int64_t>(idx);
      Shape os = x.shape();
      os[dim] = 4;
      auto expect = ref_index_select(x, dim, idx);
      for (Layout l : kAllLayouts) {
        EXPECT_TRUE(matches(index_select(with_layout(x, l), dim, index), os, t, expect))
            << dtype_name(t) << " dim " << dim << " " << layout_name(l);
        EXPECT_TRUE(matches(index_select(x, dim - 3, with_layout(index.to(DType::Int32), l)), os, t, expect))
            << "int32 index, negative dim";
      }
    }
  }
}

TEST(IndexSelect, EmptyZeroDimAndLargeInputs) {
  Tensor x = random({4, 3}, DType::Float32, 2);
  EXPECT_TRUE(matches(index_select(x, 0, tensor<int64_t>(std::vector<int64_t>{})), {0, 3}, DType::Float32, {}));
  EXPECT_TRUE(matches(index_select(zeros({0, 3}), 1, tensor<int64_t>({2, 0})), {0, 2}, DType::Float32, {}));
  EXPECT_TRUE(matches(index_select(x, 1, scalar_tensor(2, DType::Int64)), {4, 1}, DType::Float32,
                      ref_index_select(x, 1, {2})));
  EXPECT_TRUE(matches(index_select(scalar_tensor(7.5), 0, tensor<int64_t>({0})), {}, DType::Float32, {7.5}));
  // Large enough to be split over threads, one index per element (dim 1 of a row-major x).
  Tensor big = random({64, 1000}, DType::Float64, 3);
  Tensor bi = random_index({3000}, 1000, 4);
  EXPECT_TRUE(matches(index_select(big, 1, bi), {64, 3000}, DType::Float64, ref_index_select(big, 1, ints(bi))));
  EXPECT_TRUE(matches(index_select(big.t(), 0, bi), {3000, 64}, DType::Float64,
                      ref_index_select(big.t().contiguous(), 0, ints(bi))));
}

TEST(IndexSelect, Errors) {
  Tensor x = zeros({3, 4});
  expect_error([&] { index_select(x, 1, tensor<int64_t>({0, 4})); }, {"index_select", "index 4", "dim 1", "size 4"});
  expect_error([&] { index_select(x, 0, tensor<int64_t>({-1})); }, {"index_select", "index -1", "size 3"});
  expect_error([&] { index_select(x, 0, tensor<float>({0})); }, {"index_select", "int64", "float32"});
  expect_error([&] { index_select(x, 0, zeros({1, 1}, DType::Int64)); }, {"index_select", "1-d", "[1, 1]"});
  expect_error([&] { index_select(x, 2, tensor<int64_t>({0})); }, {"index_select", "2"});
}

// --- gather / scatter ---------------------------------------------------------------------

std::vector<double> ref_gather(const Tensor& x, int64_t dim, const Tensor& index) {
  auto xv = values(x);
  auto iv = ints(index);
  std::vector<double> out(iv.size());
  for (int64_t i = 0; i < index.numel(); ++i) {
    Shape c = unravel(i, index.shape());
    c[dim] = iv[i];
    out[i] = xv[ravel(c, x.shape())];
  }
  return out;
}

// self with src's elements (over index's shape) written to (or added at) the indexed places,
// in index order.
std::vector<double> ref_scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, bool add) {
  auto out = values(self);
  auto iv = ints(index);
  auto sv = values(src);
  for (int64_t i = 0; i < index.numel(); ++i) {
    Shape c = unravel(i, index.shape());
    double v = sv[ravel(c, src.shape())];
    c[dim] = iv[i];
    double& o = out[ravel(c, self.shape())];
    o = add ? o + v : v;
  }
  return out;
}

TEST(Gather, SmallerIndexAndEveryLayout) {
  for (DType t : {DType::Float32, DType::Int64, DType::Bool, DType::BFloat16}) {
    Tensor x = random({4, 5, 6}, t, 10, -9, 9);
    for (int64_t dim = 0; dim < 3; ++dim) {
      Shape is = {3, 4, 5};  // smaller than x off dim, and along dim
      is[dim] = 7;           // larger than x along dim is allowed
      Tensor index = random_index(is, x.size(dim), 11 + dim);
      auto expect = ref_gather(x, dim, index);
      for (Layout l : kAllLayouts)
        EXPECT_TRUE(matches(gather(with_layout(x, l), dim, with_layout(index, l)), is, t, expect))
            << dtype_name(t) << " dim " << dim << " " << layout_name(l);
    }
  }
  // An expanded index (stride 0) and a 0-d input.
  Tensor x = random({3, 4}, DType::Float64, 12);
  Tensor index = tensor<int64_t>({3, 1, 0}, {3, 1}).expand({3, 5});
  EXPECT_TRUE(matches(gather(x, 1, index), {3, 5}, DType::Float64, ref_gather(x, 1, index.contiguous())));
  EXPECT_TRUE(matches(gather(scalar_tensor(2.5), 0, scalar_tensor(0, DType::Int64)), {}, DType::Float32, {2.5}));
  EXPECT_TRUE(matches(gather(x, 0, zeros({0, 4}, DType::Int64)), {0, 4}, DType::Float64, {}));
}

TEST(Gather, Errors) {
  Tensor x = zeros({3, 4});
  expect_error([&] { gather(x, 1, tensor<int64_t>({0, 5}, {1, 2})); }, {"gather", "index 5", "dim 1", "size 4"});
  expect_error([&] { gather(x, 0, tensor<int64_t>({-2}, {1, 1})); }, {"gather", "index -2"});
  expect_error([&] { gather(x, 1, zeros({4, 1}, DType::Int64)); }, {"gather", "[4, 1]", "[3, 4]", "dim 0"});
  expect_error([&] { gather(x, 1, zeros({3}, DType::Int64)); }, {"gather", "[3]", "[3, 4]"});
  expect_error([&] { gather(x, 1, zeros({3, 1}, DType::Float64)); }, {"gather", "float64"});
}

TEST(Scatter, AssignAndAddOnEveryDim) {
  for (DType t : {DType::Float32, DType::Float64, DType::Int32, DType::Float16}) {
    // Small integers, so sums are exact in every dtype.
    Tensor self = random({4, 5, 6}, DType::Int64, 20, -9, 9).to(t);
    for (int64_t dim = 0; dim < 3; ++dim) {
      Shape is = {3, 4, 5};
      is[dim] = 6;  // more entries than the dim: repeated destinations
      Tensor index = random_index(is, self.size(dim), 21 + dim);
      Shape ss = {is[0] + 1, is[1] + 2, is[2] + 1};  // larger than index: only index's part is read
      Tensor src = random(ss, DType::Int64, 24 + dim, -9, 9).to(t);
      for (Layout l : kAllLayouts) {
        Tensor s = with_layout(src, l), i = with_layout(index, l);
        EXPECT_TRUE(matches(scatter(self, dim, i, s), self.shape(), t, ref_scatter(self, dim, index, src, false)))
            << dtype_name(t) << " dim " << dim << " " << layout_name(l);
        EXPECT_TRUE(matches(scatter_add(with_layout(self, l), dim, i, s), self.shape(), t,
                            ref_scatter(self, dim, index, src, true)))
            << dtype_name(t) << " dim " << dim << " " << layout_name(l);
      }
    }
  }
}

TEST(Scatter, ScalarSourceInPlaceViewsAndZeroDim) {
  Tensor self = zeros({3, 4}, DType::Float64);
  Tensor index = tensor<int64_t>({1, 3, 0, 0}, {2, 2});
  EXPECT_TRUE(matches(scatter(self, 1, index, 2.5), {3, 4}, DType::Float64,
                      {0, 2.5, 0, 2.5, 2.5, 0, 0, 0, 0, 0, 0, 0}));
  // In place on a transposed view writes through to the base tensor.
  Tensor base = zeros({4, 3}, DType::Float64);
  Tensor view = base.t();
  Tensor src = tensor<double>({1, 2, 3, 4}, {2, 2});
  scatter_add_(view, 1, index, src);
  scatter_add_(view, 1, index, src);
  EXPECT_TRUE(matches(base, {4, 3}, DType::Float64, {0, 14, 0, 2, 0, 0, 0, 0, 0, 4, 0, 0}));
  scatter_(view, 0, tensor<int64_t>({2}, {1, 1}), tensor<double>({9}, {1, 1}));
  EXPECT_TRUE(matches(base, {4, 3}, DType::Float64, {0, 14, 9, 2, 0, 0, 0, 0, 0, 4, 0, 0}));
  // src aliasing self is read before it is overwritten.
  Tensor a = tensor<double>({1, 2, 3}, {3});
  scatter_(a, 0, tensor<int64_t>({2, 1, 0}), a);
  EXPECT_TRUE(matches(a, {3}, DType::Float64, {3, 2, 1}));
  Tensor z = scalar_tensor(1.0, DType::Float64);
  EXPECT_TRUE(matches(scatter_add(z, 0, scalar_tensor(0, DType::Int64), scalar_tensor(2.0, DType::Float64)), {},
                      DType::Float64, {3}));
  EXPECT_TRUE(matches(scatter(self, 0, zeros({0, 4}, DType::Int64), 1.0), {3, 4}, DType::Float64,
                      std::vector<double>(12, 0.0)));
}

TEST(Scatter, LargeAddWithManyRepeatsIsExactAndDeterministic) {
  // Split over threads by position off `dim`; every repeat of a destination is summed.
  Tensor self = zeros({100, 64}, DType::Float64);
  Tensor index = random_index({5000, 64}, 100, 30);
  Tensor src = random({5000, 64}, DType::Float64, 31);
  auto expect = ref_scatter(self, 0, index, src, true);
  Tensor r = scatter_add(self, 0, index, src);
  EXPECT_TRUE(matches(r, {100, 64}, DType::Float64, expect));
  Tensor self32 = self.to(DType::Float32), src32 = src.to(DType::Float32);
  EXPECT_EQ(values(scatter_add(self32, 0, index, src32)), values(scatter_add(self32, 0, index, src32)));
}

TEST(Scatter, Errors) {
  Tensor self = zeros({3, 4});
  expect_error([&] { scatter(self, 1, tensor<int64_t>({4}, {1, 1}), 1.0); }, {"scatter", "index 4", "dim 1", "size 4"});
  expect_error([&] { scatter_add(self, 0, tensor<int64_t>({3}, {1, 1}), zeros({1, 1})); },
               {"scatter_add", "index 3", "size 3"});
  expect_error([&] { scatter(self, 1, zeros({4, 1}, DType::Int64), zeros({4, 1})); },
               {"scatter", "[4, 1]", "[3, 4]", "dim 0"});
  expect_error([&] { scatter(self, 1, zeros({3, 2}, DType::Int64), zeros({3, 1})); }, {"scatter", "[3, 2]", "[3, 1]"});
  expect_error([&] { scatter(self, 1, zeros({3}, DType::Int64), zeros({3})); }, {"scatter", "same number of dims"});
  expect_error([&] { scatter(self, 1, zeros({3, 1}, DType::Int64), zeros({3, 1}, DType::Float64)); },
               {"scatter", "float32", "float64"});
}

// --- index_add ----------------------------------------------------------------------------

TEST(IndexAdd, RepeatedIndicesAccumulate) {
  for (DType t : {DType::Float32, DType::Float64, DType::Int64, DType::BFloat16}) {
    Tensor self = random({4, 5, 3}, DType::Int64, 40, -9, 9).to(t);  // exact sums in every dtype
    for (int64_t dim = 0; dim < 3; ++dim) {
      std::vector<int64_t> idx = {0, self.size(dim) - 1, 0, 1, 0};
      Shape ss = self.shape();
      ss[dim] = 5;
      Tensor src = random(ss, DType::Int64, 41 + dim, -9, 9).to(t);
      // Reference: index_add is scatter_add with the 1-d index spread over src's shape.
      Shape st(3, 0);
      st[dim] = 1;
      Tensor spread = tensor<int64_t>(idx).as_strided(ss, st, 0);
      auto expect = ref_scatter(self, dim, spread.contiguous(), src, true);
      for (Layout l : kAllLayouts)
        EXPECT_TRUE(matches(index_add(with_layout(self, l), dim, tensor<int64_t>(idx).to(DType::Int32),
                                      with_layout(src, l)),
                            self.shape(), t, expect))
            << dtype_name(t) << " dim " << dim << " " << layout_name(l);
    }
  }
  // In place on a view; empty index.
  Tensor base = zeros({3, 4}, DType::Float64);
  Tensor col = base.slice(1, 1, 4, 2);  // columns 1 and 3
  index_add_(col, 1, tensor<int64_t>({1, 1}), tensor<double>({1, 2, 3, 4, 5, 6}, {3, 2}));
  EXPECT_TRUE(matches(base, {3, 4}, DType::Float64, {0, 0, 0, 3, 0, 0, 0, 7, 0, 0, 0, 11}));
  EXPECT_TRUE(matches(index_add(base, 0, zeros({0}, DType::Int64), zeros({0, 4}, DType::Float64)), {3, 4},
                      DType::Float64, values(base)));
}

TEST(IndexAdd, AlphaScalesSource) {
  Tensor self = ones({3, 2}, DType::Float64);
  Tensor src = tensor<double>({1, 2, 3, 4}, {2, 2});
  EXPECT_TRUE(matches(index_add(self, 0, tensor<int64_t>({2, 2}), src, 0.5), {3, 2}, DType::Float64,
                      {1, 1, 1, 1, 3, 4}));
}

TEST(IndexAdd, Errors) {
  Tensor self = zeros({3, 4});
  expect_error([&] { index_add(self, 0, tensor<int64_t>({3}), zeros({1, 4})); }, {"index_add", "index 3", "size 3"});
  expect_error([&] { index_add(self, 0, tensor<int64_t>({0, 1}), zeros({1, 4})); },
               {"index_add", "[1, 4]", "[3, 4]", "2 indices"});
  expect_error([&] { index_add(self, 0, tensor<int64_t>({0}), zeros({1, 3})); }, {"index_add", "[1, 3]"});
  expect_error([&] { index_add(self, 0, tensor<int64_t>({0}), zeros({1, 4}, DType::Float64)); },
               {"index_add", "float64"});
  expect_error([&] { index_add(self, 0, tensor<double>({0}), zeros({1, 4})); }, {"index_add", "float64"});
}

// --- masks, nonzero -----------------------------------------------------------------------

TEST(MaskedFill, BroadcastMaskAndCastValue) {
  for (DType t : {DType::Float32, DType::Int32, DType::Float16, DType::Bool}) {
    Tensor x = random({3, 4}, t, 50, -5, 5);
    for (const Shape& ms : std::vector<Shape>{{3, 4}, {4}, {3, 1}, {}}) {
      Tensor mask = random(ms, DType::Bool, 51);
      auto m = ref_broadcast(values(mask), ms, {3, 4});
      auto xv = values(x);
      std::vector<double> expect(12);
      double v = t == DType::Bool ? 1 : t == DType::Int32 ? 2 : 2.5;  // 2.5 cast to the dtype
      for (int i = 0; i < 12; ++i) expect[i] = m[i] != 0 ? v : xv[i];
      for (Layout l : kAllLayouts) {
        EXPECT_TRUE(matches(masked_fill(with_layout(x, l), with_layout(mask, l), 2.5), {3, 4}, t, expect))
            << dtype_name(t) << " " << shape_str(ms) << " " << layout_name(l);
        Tensor y = with_layout(x, l);
        y.masked_fill_(mask, 2.5);
        EXPECT_TRUE(matches(y, {3, 4}, t, expect)) << "in place";
      }
    }
  }
  EXPECT_TRUE(matches(masked_fill(zeros({0, 2}), zeros({2}, DType::Bool), 1), {0, 2}, DType::Float32, {}));
  expect_error([] { masked_fill(zeros({3}), zeros({3}), 1); }, {"masked_fill", "bool", "float32"});
  expect_error([] { masked_fill(zeros({3}), zeros({2, 3}, DType::Bool), 1); }, {"masked_fill", "[2, 3]", "[3]"});
}

TEST(Nonzero, CoordinatesInRowMajorOrder) {
  for (DType t : kAllDTypes) {
    Tensor x = random({3, 4, 2}, t, 60, -1, 1);
    for (Layout l : kAllLayouts) {
      std::vector<double> expect;
      auto xv = values(x);
      for (int64_t i = 0; i < x.numel(); ++i)
        if (xv[i] != 0)
          for (int64_t c : unravel(i, x.shape())) expect.push_back(static_cast<double>(c));
      int64_t n = static_cast<int64_t>(expect.size()) / 3;
      EXPECT_TRUE(matches(nonzero(with_layout(x, l)), {n, 3}, DType::Int64, expect)) << dtype_name(t);
    }
  }
  EXPECT_TRUE(matches(nonzero(tensor<float>({0, NAN, -0.0f, 3})), {2, 1}, DType::Int64, {1, 3}));
  EXPECT_TRUE(matches(nonzero(scalar_tensor(3)), {1, 0}, DType::Int64, {}));
  EXPECT_TRUE(matches(nonzero(scalar_tensor(0)), {0, 0}, DType::Int64, {}));
  EXPECT_TRUE(matches(nonzero(zeros({2, 0})), {0, 2}, DType::Int64, {}));
  // Several chunks counted and written in parallel.
  Tensor big = random({300, 1000}, DType::Bool, 61);
  auto bv = values(big);
  std::vector<double> expect;
  for (int64_t i = 0; i < big.numel(); ++i)
    if (bv[i] != 0) {
      expect.push_back(static_cast<double>(i / 1000));
      expect.push_back(static_cast<double>(i % 1000));
    }
  EXPECT_TRUE(matches(nonzero(big), {static_cast<int64_t>(expect.size()) / 2, 2}, DType::Int64, expect));
}

TEST(MaskedSelect, BroadcastsBothAndFlattens) {
  Tensor x = random({3, 1}, DType::Float64, 70);
  Tensor mask = random({2, 3, 4}, DType::Bool, 71);
  auto xv = ref_broadcast(values(x), {3, 1}, {2, 3, 4});
  auto mv = values(mask);
  std::vector<double> expect;
  for (size_t i = 0; i < mv.size(); ++i)
    if (mv[i] != 0) expect.push_back(xv[i]);
  EXPECT_TRUE(matches(masked_select(x, with_layout(mask, Layout::Transposed)),
                      {static_cast<int64_t>(expect.size())}, DType::Float64, expect));
  EXPECT_TRUE(matches(masked_select(scalar_tensor(4, DType::Int32), scalar_tensor(true, DType::Bool)), {1}, DType::Int32, {4}));
  EXPECT_TRUE(matches(masked_select(zeros({2, 2}), zeros({2, 2}, DType::Bool)), {0}, DType::Float32, {}));
  expect_error([] { masked_select(zeros({3}), zeros({3}, DType::Int64)); }, {"masked_select", "bool", "int64"});
  expect_error([] { masked_select(zeros({3}), zeros({2}, DType::Bool)); }, {"masked_select", "[3]", "[2]"});
}

// --- one_hot, embedding -------------------------------------------------------------------

TEST(OneHot, InfersOrTakesTheClassCount) {
  Tensor idx = tensor<int64_t>({2, 0, 3, 0, 1, 2}, {2, 3});
  std::vector<double> expect;
  for (int64_t v : ints(idx))
    for (int64_t c = 0; c < 4; ++c) expect.push_back(c == v);
  EXPECT_TRUE(matches(one_hot(idx), {2, 3, 4}, DType::Int64, expect));
  EXPECT_TRUE(matches(one_hot(with_layout(idx, Layout::Transposed), 4), {2, 3, 4}, DType::Int64, expect));
  EXPECT_TRUE(matches(one_hot(tensor<int64_t>({1}), 3), {1, 3}, DType::Int64, {0, 1, 0}));
  EXPECT_TRUE(matches(one_hot(scalar_tensor(2, DType::Int64)), {3}, DType::Int64, {0, 0, 1}));
  EXPECT_TRUE(matches(one_hot(zeros({0}, DType::Int64), 3), {0, 3}, DType::Int64, {}));
  expect_error([] { one_hot(tensor<int64_t>({1, -1})); }, {"one_hot", "index -1", "negative"});
  expect_error([] { one_hot(tensor<int64_t>({1, 3}), 3); }, {"one_hot", "index 3", "3 classes"});
  expect_error([] { one_hot(zeros({0}, DType::Int64)); }, {"one_hot", "empty"});
  expect_error([] { one_hot(zeros({2})); }, {"one_hot", "float32"});
  // PyTorch takes int64 indices only ("only applicable to index tensor of type LongTensor").
  expect_error([] { one_hot(tensor<int32_t>({1, 0})); }, {"one_hot", "int64", "int32", "[2]"});
  expect_error([] { one_hot(tensor<uint8_t>({1}), 3); }, {"one_hot", "uint8"});
}

TEST(Embedding, RowsForIndicesOfAnyShape) {
  Tensor w = random({10, 3}, DType::Float32, 80);
  Tensor idx = random_index({2, 4}, 10, 81);
  auto rows = ref_index_select(w, 0, ints(idx));
  for (Layout l : kAllLayouts)
    EXPECT_TRUE(matches(embedding(with_layout(w, l), with_layout(idx, l)), {2, 4, 3}, DType::Float32, rows))
        << layout_name(l);
  EXPECT_TRUE(matches(embedding(w, scalar_tensor(4, DType::Int32)), {3}, DType::Float32,
                      ref_index_select(w, 0, {4})));
  EXPECT_TRUE(matches(embedding(w, zeros({2, 0}, DType::Int64)), {2, 0, 3}, DType::Float32, {}));
  expect_error([&] { embedding(w, tensor<int64_t>({10})); }, {"embedding", "index 10", "size 10"});
  expect_error([&] { embedding(zeros({10}), tensor<int64_t>({1})); }, {"embedding", "2-d", "[10]"});
}

}  // namespace
}  // namespace wick::test
