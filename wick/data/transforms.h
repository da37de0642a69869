#pragma once
// Image transforms on CPU batches [N, C, H, W], for a batch stream's transform (they run on
// its loader thread). Random ones are deterministic for a seed: image n of the batch draws
// from Philox keyed by the seed at counter n, whatever the thread or machine.
#include <cstdint>
#include <vector>

#include <wick/tensor/tensor.h>

namespace wick {

// float32 (x / 255 - mean[c]) / std[c] for uint8 images [..., C, H, W]; `mean` and `std`
// have C entries (or one, used for every channel). Throws for other dtypes, a wrong number
// of entries, or a zero std.
Tensor to_float_normalized(const Tensor& images_u8, std::vector<double> mean, std::vector<double> std);

// Pads each image of [N, C, H, W] (any dtype) with `padding` zeros on every side and cuts a
// `size` x `size` window at a random offset per image: the usual CIFAR augmentation
// (size 32, padding 4). Returns [N, C, size, size]. Needs size <= H + 2 padding and
// W + 2 padding.
Tensor random_crop(const Tensor& images, int64_t size, int64_t padding, uint64_t seed);

// Reverses each row (the W dim) of each image of [N, C, H, W] (any dtype) with
// probability p, the decision drawn per image.
Tensor random_hflip(const Tensor& images, double p, uint64_t seed);

}  // namespace wick
