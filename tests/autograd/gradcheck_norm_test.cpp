// Gradient checks of the normalisation, cross-entropy and fused attention nodes (run by
// gradcheck_test.cpp).
#include <wick/autograd/nn_ops.h>

#include "tests/autograd/cases.h"

WICK_GRADCHECK_CASES(norm) {
  using wick::Variable;
  using namespace wick;
  return {
      {"batch_norm training affine",
       [](auto& v) { return batch_norm(v[0], v[1], v[2], Tensor(), Tensor(), true); }, {{4, 3, 2}, {3}, {3}}},
      {"batch_norm eval weight only",
       [](auto& v) {
         return batch_norm(v[0], v[1], Variable(), full({3}, 0.25, DType::Float64), full({3}, 1.5, DType::Float64),
                           false);
       },
       {{2, 3}, {3}}},
      {"layer_norm affine", [](auto& v) { return layer_norm(v[0], {2, 3}, v[1], v[2]); }, {{4, 2, 3}, {2, 3}, {2, 3}}},
      {"layer_norm bias only", [](auto& v) { return layer_norm(v[0], {5}, Variable(), v[1]); }, {{3, 5}, {5}}},
      {"rms_norm weight", [](auto& v) { return rms_norm(v[0], {2, 3}, v[1]); }, {{4, 2, 3}, {2, 3}}},
      {"rms_norm plain eps", [](auto& v) { return rms_norm(v[0], {5}, Variable(), 0.1); }, {{3, 5}}},
      {"group_norm", [](auto& v) { return group_norm(v[0], 2, v[1], v[2]); }, {{2, 4, 3}, {4}, {4}}},
      {"group_norm plain", [](auto& v) { return group_norm(v[0], 3, Variable(), Variable()); }, {{2, 6}}},
      {"cross_entropy weighted smoothed ignore",
       [](auto& v) {
         CrossEntropyOptions o;
         o.weight = tensor<double>({0.5, 2, 1, 1.5});
         o.ignore_index = 3;
         o.label_smoothing = 0.1;
         return cross_entropy(v[0], tensor<int64_t>({0, 3, 2, 1, 1, 2}, {3, 2}), o);
       },
       {{3, 4, 2}}},
      {"cross_entropy none",
       [](auto& v) {
         CrossEntropyOptions o;
         o.reduction = Reduction::None;
         return cross_entropy(v[0], tensor<int64_t>({2, 0, 1}), o);
       },
       {{3, 3}}},
      {"cross_entropy probabilities",
       [](auto& v) {
         CrossEntropyOptions o;
         o.reduction = Reduction::Sum;
         return cross_entropy(v[0], tensor<double>({0.2, 0.3, 0.5, 1, 0, 0}, {2, 3}), o);
       },
       {{2, 3}}},
      {"scaled_dot_product_attention fused gqa bool mask",
       [](auto& v) {
         const Tensor mask = tensor<bool>({true, false, true, true, false, false, true, true, true}, {3, 3});
         return scaled_dot_product_attention(v[0], v[1], v[2], mask, 0.0, false, std::nullopt, true, nullptr,
                                             AttentionBackend::Fused);
       },
       {{2, 3, 4}, {1, 3, 4}, {1, 3, 2}}},
      {"scaled_dot_product_attention fused causal", [](auto& v) { return scaled_dot_product_attention(v[0], v[1], v[2], Tensor(), 0.0, true); },
       {{2, 4, 3}, {2, 5, 3}, {2, 5, 3}}},
  };
}
