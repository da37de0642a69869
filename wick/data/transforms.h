#pragma once
// Image transforms on CPU batches [N, C, H, W], for a batch stream's transform (they run on
// its loader thread). Random ones are deterministic for a seed: image n of the batch draws
// from Philox keyed by the seed at counter n, whatever the thread or machine.
#include <cstdint>
#include <utility>
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

// Per-image transforms for datasets whose images differ in size (ImageFolder: uint8
// [C, H, W]), to apply in a `transformed` dataset before images are batched, as
// torchvision.transforms does:
//   auto train = transformed(folder, [](Example e, uint64_t seed) {
//     e.set("image", random_resized_crop(e.at("image"), 224, seed));
//     return e;
//   });
// Each takes an image [C, H, W] (or a batch [N, C, H, W]) of uint8 or a floating dtype and
// gives the same dtype; uint8 is resampled in float32 and rounded to nearest (as
// torchvision's tensor path). Resampling is bilinear with align_corners false and without
// antialiasing (torchvision's antialias=False): shrink by more than 2x in steps, or accept
// aliasing.

// The shorter side to `size`, the longer one int(size * long / short) (torchvision's
// Resize(size) with an int).
Tensor resize(const Tensor& image, int64_t size);
// To height x width exactly.
Tensor resize(const Tensor& image, int64_t height, int64_t width);
// The central height x width window (any dtype); the top/left offset is
// round((H - height) / 2) with ties to even, as torchvision's CenterCrop. Needs
// height <= H and width <= W.
Tensor center_crop(const Tensor& image, int64_t height, int64_t width);
// torchvision's RandomResizedCrop: a window whose area is a share of the image's drawn
// uniformly from `scale` and whose aspect ratio w/h is log-uniform in `ratio`, at a uniform
// place (up to 10 draws; then the central crop of the ratio nearest the image's), resized
// to size x size. Deterministic for a seed (Philox keyed by it; the draws differ from
// torchvision's generator).
Tensor random_resized_crop(const Tensor& image, int64_t size, uint64_t seed, std::pair<double, double> scale = {0.08, 1.0},
                           std::pair<double, double> ratio = {3.0 / 4.0, 4.0 / 3.0});

}  // namespace wick
