// The dtype a factory gives when none is named (issue 49, item 6): as PyTorch, an integer
// fill is int64 and a bool fill bool (full({4}, int64_t{5}) was float32, and cross_entropy
// refused it as a target); a braced list of integers is int64.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include <wick/tensor/factories.h>
#include <wick/tensor/loss.h>

#include "tests/support/reference.h"

namespace wick {
namespace {

TEST(FactoryDtype, FullInfersTheDtypeFromTheValueWhenNoneIsGiven) {
  EXPECT_TRUE(test::matches(full({4}, int64_t{5}), {4}, DType::Int64, {5, 5, 5, 5}));
  EXPECT_TRUE(test::matches(full({2}, 7), {2}, DType::Int64, {7, 7}));  // a plain int too
  EXPECT_TRUE(test::matches(full({2}, int32_t{-3}), {2}, DType::Int64, {-3, -3}));
  EXPECT_TRUE(test::matches(full({3}, true), {3}, DType::Bool, {1, 1, 1}));
  EXPECT_TRUE(test::matches(full({}, false), {}, DType::Bool, {0}));
  EXPECT_TRUE(test::matches(full({2}, 2.5), {2}, DType::Float32, {2.5, 2.5}));
  EXPECT_TRUE(test::matches(full({2}, 0.5f), {2}, DType::Float32, {0.5, 0.5}));
  EXPECT_EQ(full({}, Scalar(int64_t{1} << 62)).item<int64_t>(), int64_t{1} << 62);  // exact, not via float
  EXPECT_EQ(inferred_dtype(Scalar(3)), DType::Int64);
  EXPECT_EQ(inferred_dtype(Scalar(true)), DType::Bool);
  EXPECT_EQ(inferred_dtype(Scalar(3.0)), DType::Float32);
  // A device alone still infers; an Options or a DType names the dtype.
  EXPECT_EQ(full({2}, 5, Device::cpu()).dtype(), DType::Int64);
  EXPECT_EQ(full({2}, true, Device::cpu()).dtype(), DType::Bool);
  EXPECT_EQ(full({2}, 5, Options(Device::cpu())).dtype(), DType::Float32);
  EXPECT_EQ(full({2}, 5, DType::Int32).dtype(), DType::Int32);
  EXPECT_EQ(full({2}, 5.0, DType::Int64).dtype(), DType::Int64);
  EXPECT_EQ(full({2}, int64_t{5}, DType::Float64).dtype(), DType::Float64);
  // zeros and ones stay float32, as torch.zeros and torch.ones.
  EXPECT_EQ(zeros({2}).dtype(), DType::Float32);
  EXPECT_EQ(ones({2}).dtype(), DType::Float32);
}

// The finding itself: an integer-filled target is a class-index target.
TEST(FactoryDtype, AnIntegerFullIsAClassIndexTarget) {
  Tensor logits = zeros({4, 6});
  Tensor target = full({4}, int64_t{5});
  const double loss = cross_entropy(logits, target).item<double>();
  EXPECT_NEAR(loss, std::log(6.0), 1e-6);
}

TEST(FactoryDtype, FullLikeKeepsTheTensorsDtypeAsTorchDoes) {
  const Tensor f = zeros({2, 3}), i = zeros({2}, DType::Int32), b = zeros({1}, DType::Bool);
  EXPECT_TRUE(test::matches(full_like(f, 5), {2, 3}, DType::Float32, {5, 5, 5, 5, 5, 5}));
  EXPECT_TRUE(test::matches(full_like(f, true), {2, 3}, DType::Float32, {1, 1, 1, 1, 1, 1}));
  EXPECT_TRUE(test::matches(full_like(i, 7), {2}, DType::Int32, {7, 7}));
  EXPECT_TRUE(test::matches(full_like(b, true), {1}, DType::Bool, {1}));
  // torch.full_like(t, v, dtype=...): another dtype, t's shape and device.
  EXPECT_TRUE(test::matches(full_like(f, int64_t{9}, DType::Int64), {2, 3}, DType::Int64, {9, 9, 9, 9, 9, 9}));
  EXPECT_TRUE(test::matches(full_like(i, false, DType::Bool), {2}, DType::Bool, {0, 0}));
}

TEST(FactoryDtype, BracedIntegersAreInt64AndATypeNamedKeepsIts) {
  EXPECT_TRUE(test::matches(tensor({1, 2, 3}), {3}, DType::Int64, {1, 2, 3}));
  EXPECT_TRUE(test::matches(tensor({1, -2, 3, 4}, {2, 2}), {2, 2}, DType::Int64, {1, -2, 3, 4}));
  EXPECT_TRUE(test::matches(tensor({true, false}), {2}, DType::Bool, {1, 0}));
  EXPECT_TRUE(test::matches(tensor({int64_t{1} << 40}), {1}, DType::Int64, {std::ldexp(1.0, 40)}));
  EXPECT_EQ(tensor({}).dtype(), DType::Int64);
  // A named element type is the dtype.
  EXPECT_EQ(tensor<int32_t>({1, 2}).dtype(), DType::Int32);
  EXPECT_EQ(tensor<float>({1, 2}).dtype(), DType::Float32);
  EXPECT_EQ(tensor<uint8_t>({1, 2}).dtype(), DType::UInt8);
  EXPECT_EQ(tensor(std::vector<int32_t>{1, 2}).dtype(), DType::Int32);
  EXPECT_EQ(tensor<int64_t>({1, 2}, {2, 1}).dtype(), DType::Int64);
  // scalar_tensor keeps torch.scalar_tensor's float32 default.
  EXPECT_EQ(scalar_tensor(3).dtype(), DType::Float32);
}

}  // namespace
}  // namespace wick
