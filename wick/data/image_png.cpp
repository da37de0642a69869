// PNG files through libpng's simplified API (no setjmp/longjmp across C++ frames).
#include <wick/data/image_folder.h>
#include <wick/tensor/out_of_memory.h>

#include <png.h>

#include <cstring>
#include <string>

#include <wick/tensor/atomic_file.h>

namespace wick {

namespace {

// Frees the decoder's state on every path out (png_image_free is safe to call twice).
struct ImageGuard {
  png_image image;
  ImageGuard() {
    std::memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
  }
  ~ImageGuard() { png_image_free(&image); }
};

}  // namespace

Tensor read_png(const std::string& path, int64_t max_pixels) {
  ImageGuard g;
  png_image& image = g.image;
  WICK_CHECK(png_image_begin_read_from_file(&image, path.c_str()) != 0, "read_png: '", path, "': ", image.message);
  const int64_t width = image.width, height = image.height;
  WICK_CHECK(width * height <= max_pixels, "read_png: '", path, "' declares ", width, " x ", height,
             " pixels, more than the limit of ", max_pixels);
  const bool color = (image.format & PNG_FORMAT_FLAG_COLOR) != 0;
  const bool alpha = (image.format & PNG_FORMAT_FLAG_ALPHA) != 0;
  image.format = color ? (alpha ? PNG_FORMAT_RGBA : PNG_FORMAT_RGB) : (alpha ? PNG_FORMAT_GA : PNG_FORMAT_GRAY);
  const int64_t channels = PNG_IMAGE_PIXEL_CHANNELS(image.format);
  const uint64_t bytes = static_cast<uint64_t>(height * width * channels);
  const std::string quoted = "'" + path + "'";
  Tensor hwc = reader_allocate("read_png", quoted, bytes,
                               "the pixels ([" + std::to_string(height) + ", " + std::to_string(width) + ", " +
                                   std::to_string(channels) + "] uint8)",
                               [&] { return empty({height, width, channels}, DType::UInt8); });
  WICK_CHECK(png_image_finish_read(&image, nullptr, hwc.data_ptr(), 0, nullptr) != 0, "read_png: '", path,
             "': ", image.message);
  return reader_allocate("read_png", quoted, bytes, "the pixels in [C, H, W] order",
                         [&] { return hwc.permute({2, 0, 1}).contiguous(); });
}

void write_png(const std::string& path, const Tensor& image) {
  WICK_CHECK(image.defined() && image.dim() == 3 && image.dtype() == DType::UInt8 && image.size(0) >= 1 &&
                 image.size(0) <= 4,
             "write_png: expects uint8 [C, H, W] with C in 1..4, got ",
             image.defined() ? shape_str(image.shape()) + " " + dtype_name(image.dtype()) : std::string("none"));
  const int64_t c = image.size(0);
  Tensor hwc = image.cpu().permute({1, 2, 0}).contiguous();
  ImageGuard g;
  g.image.width = static_cast<png_uint_32>(image.size(2));
  g.image.height = static_cast<png_uint_32>(image.size(1));
  g.image.format = c == 1 ? PNG_FORMAT_GRAY : c == 2 ? PNG_FORMAT_GA : c == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_RGBA;
  // Encoded in memory, then written to a temporary name and renamed (no half file is left).
  png_alloc_size_t size = 0;
  WICK_CHECK(png_image_write_get_memory_size(g.image, size, 0, hwc.data_ptr(), 0, nullptr) != 0, "write_png: '",
             path, "': ", g.image.message);
  std::string bytes(size, '\0');
  WICK_CHECK(png_image_write_to_memory(&g.image, bytes.data(), &size, 0, hwc.data_ptr(), 0, nullptr) != 0,
             "write_png: '", path, "': ", g.image.message);
  bytes.resize(size);
  write_file_atomically(path, bytes, "write_png");
}

}  // namespace wick
