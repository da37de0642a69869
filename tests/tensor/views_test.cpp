// View ops (wick/tensor/views.cpp) and joins (wick/tensor/join.cpp): shapes, values, storage sharing
// and error messages.
#include "tests/support/reference.h"

namespace wick::test {
namespace {

// 0, 1, 2, ... as float32 with `shape`.
Tensor iota(const Shape& shape) {
  std::vector<float> v(static_cast<size_t>(numel_of(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  return tensor<float>(v, shape);
}

// x[idx] for row-major values of shape s, via a permutation of dims: out[c] = x[c permuted].
std::vector<double> ref_permute(const std::vector<double>& v, const Shape& s, const std::vector<int64_t>& dims) {
  Shape os(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) os[i] = s[dims[i]];
  Shape st = contiguous_strides(s);
  std::vector<double> out(v.size());
  Shape c(dims.size(), 0);
  for (size_t n = 0; n < v.size(); ++n) {
    int64_t off = 0;
    for (size_t i = 0; i < dims.size(); ++i) off += c[i] * st[dims[i]];
    out[n] = v[off];
    for (size_t d = dims.size(); d-- > 0;) {
      if (++c[d] < os[d]) break;
      c[d] = 0;
    }
  }
  return out;
}

TEST(View, SharesStorageAndInfersOneSize) {
  Tensor x = iota({2, 3, 4});
  auto xv = values(x);
  Tensor v = x.view({4, -1});
  EXPECT_TRUE(matches(v, {4, 6}, DType::Float32, xv));
  EXPECT_EQ(v.data_ptr(), x.data_ptr());
  EXPECT_TRUE(matches(x.view({-1}), {24}, DType::Float32, xv));
  EXPECT_TRUE(matches(x.view({2, -1, 2}), {2, 6, 2}, DType::Float32, xv));
  EXPECT_TRUE(matches(scalar_tensor(5.0).view({1, 1}), {1, 1}, DType::Float32, {5}));
  EXPECT_TRUE(matches(tensor<float>({5}).view({}), {}, DType::Float32, {5}));
  EXPECT_TRUE(matches(zeros({0, 3}).view({-1}), {0}, DType::Float32, {}));
  // Views of non-contiguous tensors where the strides allow it.
  Tensor tr = x.transpose(1, 2);  // [2, 4, 3]
  EXPECT_TRUE(matches(tr.view({2, 4, 3, 1}), {2, 4, 3, 1}, DType::Float32, values(tr)));
  EXPECT_TRUE(matches(tr.view({2, 2, 2, 3}), {2, 2, 2, 3}, DType::Float32, values(tr)));
  Tensor ex = iota({3, 1}).expand({3, 4});
  EXPECT_TRUE(matches(ex.view({3, 2, 2}), {3, 2, 2}, DType::Float32, values(ex)));
  x.view({24}).select(0, 5).fill_(100);
  EXPECT_EQ(values(x)[5], 100);
}

TEST(View, ErrorsWhenAViewIsImpossible) {
  Tensor x = iota({2, 3, 4});
  expect_error([&] { x.transpose(0, 2).view({-1}); }, {"view", "[4, 3, 2]", "[24]", "without a copy"});
  expect_error([&] { x.transpose(1, 2).view({2, 12}); }, {"view", "[2, 4, 3]", "[2, 12]"});
  expect_error([&] { iota({3, 1}).expand({3, 4}).view({12}); }, {"view", "[3, 4]", "[12]"});
  expect_error([&] { x.view({5, -1}); }, {"view", "[5, -1]", "[2, 3, 4]", "24 elements"});
  expect_error([&] { x.view({-1, -1}); }, {"view", "only one dim can be -1"});
  expect_error([&] { x.view({7}); }, {"view", "[7]", "invalid"});
  expect_error([&] { x.view({-2, 12}); }, {"view", "invalid size -2"});
  expect_error([&] { zeros({0, 3}).view({0, -1}); }, {"view", "[0, -1]"});
}

TEST(Reshape, ViewsWhenPossibleElseCopies) {
  Tensor x = iota({2, 3, 4});
  Tensor r = x.reshape({6, -1});
  EXPECT_EQ(r.data_ptr(), x.data_ptr());
  EXPECT_TRUE(matches(r, {6, 4}, DType::Float32, values(x)));
  Tensor t = x.transpose(0, 2);
  Tensor c = t.reshape({-1});
  EXPECT_FALSE(c.shares_storage(x));
  EXPECT_TRUE(matches(c, {24}, DType::Float32, values(t)));
  x.fill_(0);
  EXPECT_NE(values(c)[1], 0);  // the copy is independent
  expect_error([&] { x.reshape({5, 5}); }, {"reshape", "[5, 5]", "[2, 3, 4]"});
}

TEST(Flatten, CollapsesARangeOfDims) {
  Tensor x = iota({2, 3, 4});
  auto xv = values(x);
  EXPECT_TRUE(matches(x.flatten(), {24}, DType::Float32, xv));
  EXPECT_TRUE(matches(x.flatten(1), {2, 12}, DType::Float32, xv));
  EXPECT_TRUE(matches(x.flatten(0, -2), {6, 4}, DType::Float32, xv));
  EXPECT_TRUE(matches(x.flatten(1, 1), {2, 3, 4}, DType::Float32, xv));
  EXPECT_TRUE(matches(x.transpose(0, 1).flatten(), {24}, DType::Float32, values(x.transpose(0, 1))));
  EXPECT_TRUE(matches(scalar_tensor(3.0).flatten(), {1}, DType::Float32, {3}));
  expect_error([&] { x.flatten(2, 1); }, {"flatten", "start_dim 2", "end_dim 1"});
  expect_error([&] { x.flatten(0, 3); }, {"flatten", "3"});
}

TEST(Permute, TransposeAndT) {
  Tensor x = iota({2, 3, 4});
  auto xv = values(x);
  EXPECT_TRUE(matches(x.permute({2, 0, 1}), {4, 2, 3}, DType::Float32, ref_permute(xv, {2, 3, 4}, {2, 0, 1})));
  EXPECT_TRUE(matches(x.permute({-1, 1, 0}), {4, 3, 2}, DType::Float32, ref_permute(xv, {2, 3, 4}, {2, 1, 0})));
  EXPECT_TRUE(matches(x.transpose(0, -1), {4, 3, 2}, DType::Float32, ref_permute(xv, {2, 3, 4}, {2, 1, 0})));
  EXPECT_TRUE(matches(x.transpose(1, 1), {2, 3, 4}, DType::Float32, xv));
  Tensor m = iota({2, 3});
  EXPECT_TRUE(matches(m.t(), {3, 2}, DType::Float32, {0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(m.t().data_ptr(), m.data_ptr());
  EXPECT_TRUE(matches(iota({3}).t(), {3}, DType::Float32, {0, 1, 2}));
  expect_error([&] { x.permute({0, 1}); }, {"permute", "2 dims", "[2, 3, 4]"});
  expect_error([&] { x.permute({0, 0, 1}); }, {"permute", "repeats"});
  expect_error([&] { x.permute({0, 1, 3}); }, {"permute", "3"});
  expect_error([&] { x.transpose(0, 3); }, {"transpose", "3"});
  expect_error([&] { x.t(); }, {"t:", "at most 2 dims", "[2, 3, 4]"});
}

TEST(Squeeze, RemovesAndAddsSizeOneDims) {
  Tensor x = iota({1, 3, 1, 2});
  auto xv = values(x);
  EXPECT_TRUE(matches(x.squeeze(), {3, 2}, DType::Float32, xv));
  EXPECT_TRUE(matches(x.squeeze(0), {3, 1, 2}, DType::Float32, xv));
  EXPECT_TRUE(matches(x.squeeze(1), {1, 3, 1, 2}, DType::Float32, xv));
  EXPECT_TRUE(matches(x.squeeze(-2), {1, 3, 2}, DType::Float32, xv));
  EXPECT_TRUE(matches(scalar_tensor(2.0).squeeze(0), {}, DType::Float32, {2}));
  Tensor m = iota({3, 2});
  EXPECT_TRUE(matches(m.unsqueeze(0), {1, 3, 2}, DType::Float32, values(m)));
  EXPECT_TRUE(matches(m.unsqueeze(1), {3, 1, 2}, DType::Float32, values(m)));
  EXPECT_TRUE(matches(m.unsqueeze(-1), {3, 2, 1}, DType::Float32, values(m)));
  EXPECT_TRUE(matches(m.t().unsqueeze(1), {2, 1, 3}, DType::Float32, values(m.t())));
  EXPECT_TRUE(matches(scalar_tensor(2.0).unsqueeze(0), {1}, DType::Float32, {2}));
  // The new dim's stride keeps the view contiguous where the input is.
  EXPECT_TRUE(m.unsqueeze(2).is_contiguous());
  EXPECT_TRUE(m.unsqueeze(0).view({6}).shares_storage(m));
  expect_error([&] { x.squeeze(4); }, {"squeeze", "4"});
  expect_error([&] { m.unsqueeze(3); }, {"unsqueeze", "3"});
}

TEST(Expand, BroadcastsWithStrideZero) {
  Tensor c = iota({3, 1});
  Tensor e = c.expand({2, 3, 4});
  EXPECT_EQ(e.strides(), (Shape{0, 1, 0}));
  EXPECT_TRUE(matches(e, {2, 3, 4}, DType::Float32, ref_broadcast(values(c), {3, 1}, {2, 3, 4})));
  EXPECT_TRUE(matches(c.expand({-1, 5}), {3, 5}, DType::Float32, ref_broadcast(values(c), {3, 1}, {3, 5})));
  EXPECT_TRUE(matches(scalar_tensor(7.0).broadcast_to({2, 2}), {2, 2}, DType::Float32, {7, 7, 7, 7}));
  EXPECT_TRUE(matches(c.broadcast_to({3, 0}), {3, 0}, DType::Float32, {}));
  expect_error([&] { iota({3, 2}).expand({3, 4}); }, {"expand", "[3, 2]", "[3, 4]", "2 vs 4"});
  expect_error([&] { c.expand({3}); }, {"expand", "[3, 1]", "[3]", "fewer dims"});
  expect_error([&] { c.expand({-1, 3, 1}); }, {"expand", "-1", "leading"});
  expect_error([&] { c.broadcast_to({2, 4}); }, {"expand", "[3, 1]", "[2, 4]"});
}

TEST(Slice, StepsAndClampedNegativeBounds) {
  Tensor a = iota({10});
  EXPECT_TRUE(matches(a.slice(0, 2, 8, 3), {2}, DType::Float32, {2, 5}));
  EXPECT_TRUE(matches(a.slice(0, -3, 10), {3}, DType::Float32, {7, 8, 9}));
  EXPECT_TRUE(matches(a.slice(0, 1, -7), {2}, DType::Float32, {1, 2}));
  EXPECT_TRUE(matches(a.slice(0, -100, 3), {3}, DType::Float32, {0, 1, 2}));
  EXPECT_TRUE(matches(a.slice(0, 8, 100), {2}, DType::Float32, {8, 9}));
  EXPECT_TRUE(matches(a.slice(0, 5, 2), {0}, DType::Float32, {}));
  EXPECT_TRUE(matches(a.slice(0, 0, 10, 4), {3}, DType::Float32, {0, 4, 8}));
  Tensor m = iota({3, 4});
  Tensor s = m.slice(1, 1, 4, 2);
  EXPECT_TRUE(matches(s, {3, 2}, DType::Float32, {1, 3, 5, 7, 9, 11}));
  EXPECT_TRUE(matches(s.slice(0, 1, 3, 1), {2, 2}, DType::Float32, {5, 7, 9, 11}));  // slice of a slice
  s.fill_(-1);
  EXPECT_TRUE(matches(m, {3, 4}, DType::Float32, {0, -1, 2, -1, 4, -1, 6, -1, 8, -1, 10, -1}));
  expect_error([&] { a.slice(0, 0, 5, 0); }, {"slice", "step", "0"});
  expect_error([&] { scalar_tensor(1.0).slice(0, 0, 1); }, {"slice", "0-d"});
  expect_error([&] { m.slice(2, 0, 1); }, {"slice", "2"});
}

TEST(Narrow, SelectChunkSplit) {
  Tensor m = iota({3, 4});
  EXPECT_TRUE(matches(m.narrow(1, 1, 2), {3, 2}, DType::Float32, {1, 2, 5, 6, 9, 10}));
  EXPECT_TRUE(matches(m.narrow(0, -2, 2), {2, 4}, DType::Float32, {4, 5, 6, 7, 8, 9, 10, 11}));
  EXPECT_TRUE(matches(m.narrow(0, 3, 0), {0, 4}, DType::Float32, {}));
  EXPECT_TRUE(matches(m.select(1, -1), {3}, DType::Float32, {3, 7, 11}));
  EXPECT_TRUE(matches(m[2], {4}, DType::Float32, {8, 9, 10, 11}));
  EXPECT_TRUE(matches(iota({3})[1], {}, DType::Float32, {1}));
  expect_error([&] { m.narrow(1, 3, 2); }, {"narrow", "start 3", "length 2", "size 4"});
  expect_error([&] { m.narrow(0, 0, -1); }, {"narrow", "length -1"});
  expect_error([&] { m.select(0, 3); }, {"select", "index 3", "out of range", "size 3"});
  expect_error([&] { m.select(0, -4); }, {"select", "index -4"});
  expect_error([&] { scalar_tensor(1.0).select(0, 0); }, {"select", "0-d"});

  Tensor a = iota({10});
  auto sizes = [](const std::vector<Tensor>& parts) {
    Shape s;
    for (const Tensor& p : parts) s.push_back(p.size(0));
    return s;
  };
  EXPECT_EQ(sizes(a.chunk(3)), (Shape{4, 4, 2}));
  EXPECT_EQ(sizes(a.chunk(4)), (Shape{3, 3, 3, 1}));
  EXPECT_EQ(sizes(iota({2}).chunk(5)), (Shape{1, 1}));
  auto ch = m.chunk(2, 1);
  ASSERT_EQ(ch.size(), 2u);
  EXPECT_TRUE(matches(ch[1], {3, 2}, DType::Float32, {2, 3, 6, 7, 10, 11}));
  EXPECT_TRUE(ch[1].shares_storage(m));
  EXPECT_EQ(sizes(a.split(4)), (Shape{4, 4, 2}));
  auto sp = a.split(std::vector<int64_t>{3, 0, 7});
  EXPECT_EQ(sizes(sp), (Shape{3, 0, 7}));
  EXPECT_TRUE(matches(sp[2], {7}, DType::Float32, {3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(zeros({0, 2}).split(3).size(), 1u);
  expect_error([&] { a.chunk(0); }, {"chunk", "positive", "0"});
  expect_error([&] { a.split(0); }, {"split", "positive", "0"});
  expect_error([&] { a.split(std::vector<int64_t>{3, 3}); }, {"split", "[3, 3]", "sum to 6", "size 10"});
}

TEST(Cat, ConcatenatesAndPromotes) {
  Tensor a = iota({2, 3}), b = tensor<float>({10, 11, 12}, {1, 3}), c = tensor<float>({20, 21}, {2, 1});
  EXPECT_TRUE(matches(cat({a, b}), {3, 3}, DType::Float32, {0, 1, 2, 3, 4, 5, 10, 11, 12}));
  EXPECT_TRUE(matches(cat({a, c}, -1), {2, 4}, DType::Float32, {0, 1, 2, 20, 3, 4, 5, 21}));
  EXPECT_TRUE(matches(cat({a.t(), iota({3, 1})}, 1), {3, 3}, DType::Float32, {0, 3, 0, 1, 4, 1, 2, 5, 2}));
  Tensor i = tensor<int32_t>({1, 2});
  EXPECT_TRUE(matches(cat({i, tensor<float>({0.5f})}), {3}, DType::Float32, {1, 2, 0.5}));
  EXPECT_TRUE(matches(cat({tensor<bool>({true}), tensor<int64_t>({7})}), {2}, DType::Int64, {1, 7}));
  EXPECT_TRUE(matches(cat({a}), {2, 3}, DType::Float32, values(a)));
  EXPECT_FALSE(cat({a}).shares_storage(a));
  // Legacy: 1-d empty tensors are skipped whatever their shape, but count for the dtype.
  EXPECT_TRUE(matches(cat({zeros({0}), a, zeros({0})}), {2, 3}, DType::Float32, values(a)));
  EXPECT_TRUE(matches(cat({zeros({0}, DType::Float64), a}), {2, 3}, DType::Float64, values(a)));
  EXPECT_TRUE(matches(cat({zeros({0}), zeros({0})}), {0}, DType::Float32, {}));
  EXPECT_TRUE(matches(cat({zeros({2, 0}), a}, 1), {2, 3}, DType::Float32, values(a)));
  expect_error([] { cat(std::vector<Tensor>{}); }, {"cat", "at least one"});
  expect_error([&] { cat({a, iota({3})}); }, {"cat", "tensor 1", "[3]", "[2, 3]", "number of dims"});
  expect_error([&] { cat({a, iota({2, 2})}); }, {"cat", "tensor 1", "[2, 2]", "[2, 3]", "except in dim 0"});
  expect_error([&] { cat({a, a}, 2); }, {"cat", "2"});
  expect_error([] { cat({scalar_tensor(1.0), scalar_tensor(2.0)}); }, {"cat", "zero-dimensional"});
}

TEST(Stack, AddsANewDim) {
  Tensor a = iota({2, 3}), b = tensor<float>({10, 11, 12, 13, 14, 15}, {2, 3});
  EXPECT_TRUE(matches(stack({a, b}), {2, 2, 3}, DType::Float32, {0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15}));
  std::vector<double> last = {0, 10, 1, 11, 2, 12, 3, 13, 4, 14, 5, 15};
  EXPECT_TRUE(matches(stack({a, b}, 2), {2, 3, 2}, DType::Float32, last));
  EXPECT_TRUE(matches(stack({a, b}, -1), {2, 3, 2}, DType::Float32, last));
  EXPECT_TRUE(matches(stack({scalar_tensor(1.0), scalar_tensor(2.0)}), {2}, DType::Float32, {1, 2}));
  EXPECT_TRUE(matches(stack({zeros({0}), zeros({0})}), {2, 0}, DType::Float32, {}));
  expect_error([] { stack(std::vector<Tensor>{}); }, {"stack", "at least one"});
  expect_error([&] { stack({a, iota({3, 2})}); }, {"stack", "tensor 1", "[3, 2]", "[2, 3]"});
  expect_error([&] { stack({a, b}, 3); }, {"stack", "3"});
}

TEST(AsStrided, ChecksTheStorageBounds) {
  Tensor a = iota({6});
  EXPECT_TRUE(matches(a.as_strided({2, 2}, {1, 2}, 1), {2, 2}, DType::Float32, {1, 3, 2, 4}));
  EXPECT_TRUE(matches(a.as_strided({2, 3}, {0, 1}, 3), {2, 3}, DType::Float32, {3, 4, 5, 3, 4, 5}));
  EXPECT_TRUE(matches(a.slice(0, 2, 6).as_strided({3}, {1}, 0), {3}, DType::Float32, {0, 1, 2}));  // storage offset
  EXPECT_TRUE(matches(a.as_strided({0, 5}, {100, 1}, 0), {0, 5}, DType::Float32, {}));
  expect_error([&] { a.as_strided({2, 3}, {3, 1}, 1); }, {"as_strided", "[2, 3]", "[3, 1]", "offset 1", "6 elements"});
  expect_error([&] { a.as_strided({2}, {1}, -1); }, {"as_strided", "offset -1"});
  expect_error([&] { a.as_strided({2}, {-1}, 3); }, {"as_strided", "negative stride"});
  expect_error([&] { a.as_strided({2, 2}, {1}, 0); }, {"as_strided", "[2, 2]", "[1]", "length"});
}

}  // namespace
}  // namespace wick::test
