#pragma once
// Fused log-softmax + cross-entropy (torch.nn.functional.cross_entropy), forward and the
// fused backward. Autograd wraps these in wick/autograd/nn_ops.h.
#include <cstdint>

#include <wick/tensor/tensor.h>

namespace wick {

enum class Reduction : uint8_t { None, Mean, Sum };

struct CrossEntropyOptions {
  Tensor weight;               // [C] class weights in the logits' dtype, or undefined
  int64_t ignore_index = -100;  // index targets equal to it add nothing (not even to the mean's divisor)
  double label_smoothing = 0;  // in [0, 1]
  Reduction reduction = Reduction::Mean;
};

// The loss and what backward needs.
struct CrossEntropyResult {
  Tensor loss;          // 0-d, or target's shape (indices) / logits' shape without dim 1 (None)
  Tensor lse;           // [N, S]: log-sum-exp of each position's logits
  Tensor total_weight;  // 0-d: the divisor of Mean (sum of weight[target] over kept positions)
  Tensor dlogits;       // with `gradient`: d loss / d logits (logits' shape) for a loss gradient of 1
};

// logits: [C], [N, C] or [N, C, d...] (classes on dim 1; [C] is one example). target:
// int64 class indices of the logits' shape without the class dim, or class probabilities
// with the logits' shape and dtype. Mean divides by the summed weights of the kept targets
// (indices) or by the number of positions (probabilities), like PyTorch. 16-bit logits are
// reduced in float32. With `gradient`, the same kernel that reads the logits also writes
// result.dlogits (one more tensor of the logits' size, held until backward), so that the
// backward is a scale (cross_entropy_backward_from_forward) instead of a second read.
// A target out of range (and not ignore_index) throws wick::Error naming it: at once on
// the CPU, and on CUDA at the host's next wait for the device (cuda::synchronize, a copy to
// the host such as Tensor::item, a stream or event synchronize), since the kernel finds it
// and the host does not wait for the kernel (PyTorch's device-side assert is asynchronous
// too). That position counts as ignored until then.
CrossEntropyResult cross_entropy_forward(const Tensor& logits, const Tensor& target,
                                         const CrossEntropyOptions& o = {}, bool gradient = false);
Tensor cross_entropy(const Tensor& logits, const Tensor& target, const CrossEntropyOptions& o = {});
// d loss / d logits for the incoming gradient `grad` (the loss's shape), in one fused pass.
Tensor cross_entropy_backward(const Tensor& grad, const Tensor& logits, const Tensor& target,
                              const CrossEntropyResult& saved, const CrossEntropyOptions& o = {});
// The same from a forward made with `gradient`: saved.dlogits times `grad` (positions whose
// gradient is exactly 1, such as a Mean or Sum loss's own backward, cost nothing). With
// `in_place` the product is written over saved.dlogits, which the result then is.
Tensor cross_entropy_backward_from_forward(const Tensor& grad, const CrossEntropyResult& saved,
                                           const CrossEntropyOptions& o = {}, bool in_place = false);

}  // namespace wick
