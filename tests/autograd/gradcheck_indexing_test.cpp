// Gradient checks of the indexing ops (repeated indices included where the op allows).
#include "tests/autograd/cases.h"

WICK_GRADCHECK_CASES(indexing) {
  using namespace wick;
  Tensor rows = tensor<int64_t>({2, 0, 2});
  Tensor gather_idx = tensor<int64_t>({0, 2, 2, 1, 0, 0}, {2, 3});
  Tensor unique_idx = tensor<int64_t>({2, 0, 0, 1}, {2, 2});  // unique per row: a plain scatter
  Tensor mask = tensor<bool>({true, false, true, false, false, true}, {2, 3});
  Tensor row_mask = tensor<bool>({false, true, true});
  Tensor ids = tensor<int64_t>({3, 1, 3, 0}, {2, 2});
  return {
      {"index_select repeated", [rows](auto& v) { return index_select(v[0], 0, rows); }, {{3, 2}}},
      {"gather", [gather_idx](auto& v) { return gather(v[0], 1, gather_idx); }, {{2, 3}}},
      {"scatter src", [unique_idx](auto& v) { return scatter(v[0], 1, unique_idx, v[1]); }, {{2, 3}, {2, 2}}},
      {"scatter value", [unique_idx](auto& v) { return scatter(v[0], 1, unique_idx, Scalar(1.5)); }, {{2, 3}}},
      {"scatter_add repeated", [gather_idx](auto& v) { return scatter_add(v[0], 1, gather_idx, v[1]); },
       {{2, 3}, {2, 3}}},
      {"index_add repeated alpha", [rows](auto& v) { return index_add(v[0], 0, rows, v[1], 2.0); }, {{3, 2}, {3, 2}}},
      {"masked_fill broadcast", [row_mask](auto& v) { return masked_fill(v[0], row_mask, Scalar(7.0)); }, {{2, 3}}},
      {"masked_select", [mask](auto& v) { return masked_select(v[0], mask); }, {{2, 3}}},
      {"masked_select broadcast", [mask](auto& v) { return masked_select(v[0], mask); }, {{3}}},
      {"embedding", [ids](auto& v) { return embedding(v[0], ids); }, {{4, 3}}},
  };
}

namespace wick::test {
namespace {

TEST(IndexingGrad, ScatterMasksOverwrittenElements) {
  Variable x(tensor<double>({1, 2, 3}), true), src(tensor<double>({10, 20}), true);
  Variable out = scatter(x, 0, tensor<int64_t>({2, 0}), src);
  out.backward(tensor<double>({1, 2, 3}));
  EXPECT_TRUE(matches(x.grad().data(), {3}, DType::Float64, {0, 2, 0}));
  EXPECT_TRUE(matches(src.grad().data(), {2}, DType::Float64, {3, 1}));
}

TEST(IndexingGrad, EmbeddingAccumulatesRepeatedRows) {
  Variable w(zeros({3, 2}, DType::Float64), true);
  sum(embedding(w, tensor<int64_t>({1, 1, 2}))).backward();
  EXPECT_TRUE(matches(w.grad().data(), {3, 2}, DType::Float64, {0, 0, 2, 2, 1, 1}));
  expect_error([&] { embedding(w, tensor<int64_t>({3})); }, {"3"});
}

// Accepted as in PyTorch (issue 13, item 9): scatter/scatter_add with an index smaller than
// src (empty, too) give src a gradient of src's shape; cat skips legacy [0] inputs; chunk of
// an empty dim gives `chunks` pieces.
TEST(IndexingGrad, AcceptedLikePyTorch) {
  Variable x(zeros({2, 3}, DType::Float64), true), src(random({2, 3}, DType::Float64, 4), true);
  Tensor small = tensor<int64_t>({2, 0}, {1, 2});
  sum(scatter_add(x, 1, small, src)).backward();
  EXPECT_EQ(src.grad().data().to_vector<double>(), (std::vector<double>{1, 1, 0, 0, 0, 0}));
  Variable src2(random({2, 3}, DType::Float64, 5), true);
  sum(scatter(x, 1, zeros({0, 0}, DType::Int64), src2)).backward();
  EXPECT_EQ(src2.grad().data().shape(), Shape({2, 3}));
  EXPECT_EQ(src2.grad().data().to_vector<double>(), std::vector<double>(6, 0.0));

  Variable a(random({2, 2}, DType::Float64, 6), true), legacy(zeros({0}, DType::Float64), true);
  Variable c = cat({a, legacy, a}, 1);
  EXPECT_EQ(c.shape(), Shape({2, 4}));
  sum(c).backward();
  EXPECT_EQ(legacy.grad().data().shape(), Shape({0}));
  EXPECT_EQ(a.grad().data().to_vector<double>(), std::vector<double>(4, 2.0));

  EXPECT_EQ(zeros({0, 3}).chunk(4, 0).size(), 4u);
  EXPECT_EQ(chunk(Variable(zeros({2, 0})), 3, 1).size(), 3u);
}

}  // namespace
}  // namespace wick::test
