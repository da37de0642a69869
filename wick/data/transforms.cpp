#include <wick/data/transforms.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include <wick/autograd/composites.h>
#include <wick/tensor/elementwise.h>
#include <wick/tensor/factories.h>
#include <wick/tensor/philox.h>

namespace wick {

namespace {

// Separate Philox keys per transform, so one seed used for both a crop and a flip does not
// tie the flip decision to the crop offset.
constexpr uint64_t kCropKey = 0x6372'6f70'0000'0001ull;
constexpr uint64_t kFlipKey = 0x666c'6970'0000'0002ull;
constexpr uint64_t kResizedCropKey = 0x7263'726f'7000'0003ull;

// The batch as a contiguous CPU tensor, after checking it is [N, C, H, W].
Tensor batch_of_images(const char* op, const Tensor& images) {
  WICK_CHECK(images.defined() && images.dim() == 4, op, ": expected a batch of images [N, C, H, W], got ",
             shape_str(images.shape()));
  WICK_CHECK(images.device().is_cpu(), op, ": runs on CPU batches, the images are on ", images.device());
  return images.contiguous();
}

// A bounded integer in [0, n) from 32 random bits (bias < n / 2^32, irrelevant here).
int64_t below(uint32_t bits, int64_t n) { return static_cast<int64_t>((static_cast<uint64_t>(bits) * n) >> 32); }

// An image [C, H, W] or a batch [N, C, H, W] on the CPU; of uint8 or a floating dtype when
// it is to be resampled.
void check_image(const char* op, const Tensor& image, bool resampled = true) {
  WICK_CHECK(image.defined() && (image.dim() == 3 || image.dim() == 4), op,
             ": expected an image [C, H, W] or a batch [N, C, H, W], got ",
             image.defined() ? shape_str(image.shape()) : std::string("an undefined tensor"));
  WICK_CHECK(!resampled || image.dtype() == DType::UInt8 || is_floating(image.dtype()), op,
             ": expected uint8 or floating images, got ", dtype_name(image.dtype()));
  WICK_CHECK(image.device().is_cpu(), op, ": runs on CPU images, this one is on ", image.device());
}

}  // namespace

Tensor resize(const Tensor& image, int64_t height, int64_t width) {
  check_image("resize", image);
  WICK_CHECK(height > 0 && width > 0, "resize: the size must be positive, got ", height, " x ", width);
  const int64_t h = image.size(-2), w = image.size(-1);
  WICK_CHECK(h > 0 && w > 0, "resize: cannot resize an empty image ", shape_str(image.shape()));
  if (h == height && w == width) return image.clone();
  const bool batch = image.dim() == 4;
  const bool bytes = image.dtype() == DType::UInt8;
  Tensor x = bytes ? image.to(DType::Float32) : image;
  if (!batch) x = x.unsqueeze(0);
  Tensor out = interpolate(x, Shape{height, width}, InterpolateMode::Linear, false);
  if (!batch) out = out.squeeze(0);
  // uint8: rounded to nearest and kept in [0, 255] (bilinear weights cannot leave it, but
  // float rounding at 255 could).
  return bytes ? clamp(wick::round(out), 0.0, 255.0).to(DType::UInt8) : out;
}

Tensor resize(const Tensor& image, int64_t size) {
  check_image("resize", image);
  WICK_CHECK(size > 0, "resize: the size must be positive, got ", size);
  const int64_t h = image.size(-2), w = image.size(-1);
  WICK_CHECK(h > 0 && w > 0, "resize: cannot resize an empty image ", shape_str(image.shape()));
  if (h <= w) return resize(image, size, size * w / h);
  return resize(image, size * h / w, size);
}

Tensor center_crop(const Tensor& image, int64_t height, int64_t width) {
  check_image("center_crop", image, false);
  const int64_t h = image.size(-2), w = image.size(-1);
  WICK_CHECK(height > 0 && width > 0 && height <= h && width <= w, "center_crop: cannot cut ", height, " x ", width,
             " from an image ", shape_str(image.shape()));
  // Python's round(): halves to even.
  const auto top = static_cast<int64_t>(std::nearbyint(static_cast<double>(h - height) / 2.0));
  const auto left = static_cast<int64_t>(std::nearbyint(static_cast<double>(w - width) / 2.0));
  return image.narrow(-2, top, height).narrow(-1, left, width).contiguous();
}

Tensor random_resized_crop(const Tensor& image, int64_t size, uint64_t seed, std::pair<double, double> scale,
                           std::pair<double, double> ratio) {
  check_image("random_resized_crop", image);
  WICK_CHECK(size > 0, "random_resized_crop: the size must be positive, got ", size);
  WICK_CHECK(scale.first > 0 && scale.first <= scale.second && scale.second <= 1, "random_resized_crop: scale (",
             scale.first, ", ", scale.second, ") must satisfy 0 < low <= high <= 1");
  WICK_CHECK(ratio.first > 0 && ratio.first <= ratio.second, "random_resized_crop: ratio (", ratio.first, ", ",
             ratio.second, ") must satisfy 0 < low <= high");
  const int64_t h = image.size(-2), w = image.size(-1);
  WICK_CHECK(h > 0 && w > 0, "random_resized_crop: cannot crop an empty image ", shape_str(image.shape()));
  const double area = static_cast<double>(h * w);
  const double log_lo = std::log(ratio.first), log_hi = std::log(ratio.second);
  for (uint64_t attempt = 0; attempt < 10; ++attempt) {
    const philox::Words r = philox::generate(seed ^ kResizedCropKey, attempt);
    const double share = scale.first + (scale.second - scale.first) * philox::uniform_double(r.w[0], r.w[1]);
    const double aspect = std::exp(log_lo + (log_hi - log_lo) * philox::uniform_double(r.w[2], r.w[3]));
    const auto cw = static_cast<int64_t>(std::nearbyint(std::sqrt(area * share * aspect)));
    const auto ch = static_cast<int64_t>(std::nearbyint(std::sqrt(area * share / aspect)));
    if (cw <= 0 || ch <= 0 || cw > w || ch > h) continue;
    const philox::Words at = philox::generate(seed ^ kResizedCropKey, attempt + (uint64_t{1} << 32));
    const int64_t top = below(at.w[0], h - ch + 1), left = below(at.w[1], w - cw + 1);
    return resize(image.narrow(-2, top, ch).narrow(-1, left, cw), size, size);
  }
  // Fallback: the whole image's central crop, its ratio clamped into `ratio`.
  const double in_ratio = static_cast<double>(w) / static_cast<double>(h);
  int64_t cw = w, ch = h;
  if (in_ratio < ratio.first) ch = static_cast<int64_t>(std::nearbyint(static_cast<double>(w) / ratio.first));
  else if (in_ratio > ratio.second) cw = static_cast<int64_t>(std::nearbyint(static_cast<double>(h) * ratio.second));
  return resize(center_crop(image, std::max<int64_t>(1, ch), std::max<int64_t>(1, cw)), size, size);
}

Tensor to_float_normalized(const Tensor& images_u8, std::vector<double> mean, std::vector<double> std) {
  WICK_CHECK(images_u8.defined() && images_u8.dtype() == DType::UInt8 && images_u8.dim() >= 3,
             "to_float_normalized: expected uint8 images [..., C, H, W], got ",
             images_u8.defined() ? dtype_name(images_u8.dtype()) : "undefined", " ", shape_str(images_u8.shape()));
  WICK_CHECK(images_u8.device().is_cpu(), "to_float_normalized: runs on CPU images, these are on ", images_u8.device());
  const int64_t channels = images_u8.size(-3);
  const int64_t plane = images_u8.size(-2) * images_u8.size(-1);
  WICK_CHECK(mean.size() == std.size() && (static_cast<int64_t>(mean.size()) == channels || mean.size() == 1),
             "to_float_normalized: images have ", channels, " channels but mean has ", mean.size(), " and std ",
             std.size(), " entries (need ", channels, " or 1 each)");
  if (mean.size() == 1) {
    mean.assign(static_cast<size_t>(channels), mean[0]);
    std.assign(static_cast<size_t>(channels), std[0]);
  }
  // Only 256 inputs per channel: a table computed in double, rounded once to float.
  std::vector<float> table(static_cast<size_t>(channels) * 256);
  for (int64_t c = 0; c < channels; ++c) {
    WICK_CHECK(std[c] != 0, "to_float_normalized: std[", c, "] is 0");
    for (int v = 0; v < 256; ++v) table[c * 256 + v] = static_cast<float>((v / 255.0 - mean[c]) / std[c]);
  }
  Tensor in = images_u8.contiguous();
  Tensor out = empty(in.shape(), DType::Float32);
  const uint8_t* src = static_cast<const uint8_t*>(in.data_ptr());
  float* dst = out.data<float>();
  const int64_t planes = plane == 0 ? 0 : in.numel() / plane;
  for (int64_t p = 0; p < planes; ++p) {
    const float* lut = table.data() + (p % channels) * 256;
    for (int64_t i = 0; i < plane; ++i) dst[p * plane + i] = lut[src[p * plane + i]];
  }
  return out;
}

Tensor random_crop(const Tensor& images, int64_t size, int64_t padding, uint64_t seed) {
  Tensor in = batch_of_images("random_crop", images);
  const int64_t n = in.size(0), c = in.size(1), h = in.size(2), w = in.size(3);
  WICK_CHECK(size > 0 && padding >= 0 && size <= h + 2 * padding && size <= w + 2 * padding, "random_crop: cannot cut ",
             size, " x ", size, " from images ", shape_str(in.shape()), " padded by ", padding);
  Tensor out = zeros({n, c, size, size}, in.dtype());
  const size_t es = in.element_size();
  const char* src = static_cast<const char*>(in.data_ptr());
  char* dst = static_cast<char*>(out.data_ptr());
  for (int64_t i = 0; i < n; ++i) {
    philox::Words r = philox::generate(seed ^ kCropKey, static_cast<uint64_t>(i));
    // The window's top-left corner in padded coordinates, then in the image's own.
    const int64_t top = below(r.w[0], h + 2 * padding - size + 1) - padding;
    const int64_t left = below(r.w[1], w + 2 * padding - size + 1) - padding;
    // Output columns [j0, j1) see image columns; the rest stay zero.
    const int64_t j0 = std::max<int64_t>(0, -left), j1 = std::min<int64_t>(size, w - left);
    if (j1 <= j0) continue;
    for (int64_t ch = 0; ch < c; ++ch) {
      for (int64_t y = 0; y < size; ++y) {
        const int64_t sy = top + y;
        if (sy < 0 || sy >= h) continue;
        const char* row = src + (((i * c + ch) * h + sy) * w + left + j0) * es;
        char* out_row = dst + (((i * c + ch) * size + y) * size + j0) * es;
        std::memcpy(out_row, row, static_cast<size_t>(j1 - j0) * es);
      }
    }
  }
  return out;
}

Tensor random_hflip(const Tensor& images, double p, uint64_t seed) {
  Tensor in = batch_of_images("random_hflip", images);
  WICK_CHECK(p >= 0 && p <= 1, "random_hflip: probability ", p, " is not in [0, 1]");
  Tensor out = in.clone();
  const int64_t n = in.size(0), c = in.size(1), h = in.size(2), w = in.size(3);
  const size_t es = in.element_size();
  const char* src = static_cast<const char*>(in.data_ptr());
  char* dst = static_cast<char*>(out.data_ptr());
  for (int64_t i = 0; i < n; ++i) {
    philox::Words r = philox::generate(seed ^ kFlipKey, static_cast<uint64_t>(i));
    if (philox::uniform_double(r.w[0], r.w[1]) >= p) continue;
    for (int64_t row = 0; row < c * h; ++row) {
      const char* s = src + ((i * c * h + row) * w) * es;
      char* d = dst + ((i * c * h + row) * w) * es;
      for (int64_t j = 0; j < w; ++j) std::memcpy(d + j * es, s + (w - 1 - j) * es, es);
    }
  }
  return out;
}

}  // namespace wick
