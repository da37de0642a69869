// JPEG files through libjpeg (Debian's libjpeg62-turbo). libjpeg reports errors by calling
// error_exit, which must not return; the usual answer is a longjmp back to the caller. A
// longjmp must not cross a C++ frame with destructors, so every libjpeg call happens inside
// one of the small functions marked "setjmp frame" below, whose locals are plain data; the
// objects that own memory (the file, the codec state, the tensor) live in their callers.
#include <wick/data/image_folder.h>
#include <wick/tensor/out_of_memory.h>

#include <cerrno>
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string_view>

#include <jpeglib.h>

#include <wick/tensor/atomic_file.h>

namespace wick {

namespace {

// libjpeg's error manager extended with the jump target and the message of the first error.
struct ErrorManager {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

[[noreturn]] void on_error(j_common_ptr codec) {
  auto* err = reinterpret_cast<ErrorManager*>(codec->err);
  (*codec->err->format_message)(codec, err->message);
  std::longjmp(err->jump, 1);
}

// Warnings (corrupt or truncated data, which libjpeg would otherwise fill with grey) are
// errors here: a training set should not silently hold half-decoded images.
void on_message(j_common_ptr codec, int level) {
  if (level < 0) on_error(codec);
}

void init_errors(ErrorManager& err) {
  jpeg_std_error(&err.mgr);
  err.mgr.error_exit = on_error;
  err.mgr.emit_message = on_message;
  err.message[0] = '\0';
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

struct Decoder {
  ErrorManager err;
  jpeg_decompress_struct codec;
  bool created = false;
  ~Decoder() {
    if (created) jpeg_destroy_decompress(&codec);
  }
};

struct Encoder {
  ErrorManager err;
  jpeg_compress_struct codec;
  bool created = false;
  unsigned char* bytes = nullptr;  // the encoded file, malloc'ed by libjpeg
  unsigned long size = 0;
  ~Encoder() {
    if (created) jpeg_destroy_compress(&codec);
    std::free(bytes);
  }
};

// setjmp frame: reads the header and chooses the output colour space. False on error.
bool read_header(Decoder& d, std::FILE* file) {
  if (setjmp(d.err.jump)) return false;
  jpeg_create_decompress(&d.codec);
  d.created = true;
  jpeg_stdio_src(&d.codec, file);
  jpeg_read_header(&d.codec, TRUE);
  if (d.codec.jpeg_color_space == JCS_CMYK || d.codec.jpeg_color_space == JCS_YCCK) {
    std::snprintf(d.err.message, sizeof d.err.message, "CMYK JPEG images are not supported");
    return false;
  }
  d.codec.out_color_space = d.codec.num_components == 1 ? JCS_GRAYSCALE : JCS_RGB;
  return true;
}

// setjmp frame: decodes the pixels into `out` (height rows of width * channels bytes).
bool read_pixels(Decoder& d, unsigned char* out) {
  if (setjmp(d.err.jump)) return false;
  jpeg_start_decompress(&d.codec);
  const size_t row_bytes = static_cast<size_t>(d.codec.output_width) * d.codec.output_components;
  while (d.codec.output_scanline < d.codec.output_height) {
    JSAMPROW row = out + static_cast<size_t>(d.codec.output_scanline) * row_bytes;
    jpeg_read_scanlines(&d.codec, &row, 1);
  }
  jpeg_finish_decompress(&d.codec);
  return true;
}

// setjmp frame: encodes `pixels` (height rows of width * channels bytes) into e.bytes.
bool encode(Encoder& e, const unsigned char* pixels, int width, int height, int channels, int quality) {
  if (setjmp(e.err.jump)) return false;
  jpeg_create_compress(&e.codec);
  e.created = true;
  jpeg_mem_dest(&e.codec, &e.bytes, &e.size);
  e.codec.image_width = static_cast<JDIMENSION>(width);
  e.codec.image_height = static_cast<JDIMENSION>(height);
  e.codec.input_components = channels;
  e.codec.in_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&e.codec);
  jpeg_set_quality(&e.codec, quality, TRUE);
  jpeg_start_compress(&e.codec, TRUE);
  const size_t row_bytes = static_cast<size_t>(width) * channels;
  while (e.codec.next_scanline < e.codec.image_height) {
    JSAMPROW row = const_cast<unsigned char*>(pixels) + static_cast<size_t>(e.codec.next_scanline) * row_bytes;
    jpeg_write_scanlines(&e.codec, &row, 1);
  }
  jpeg_finish_compress(&e.codec);
  return true;
}

}  // namespace

Tensor read_jpeg(const std::string& path, int64_t max_pixels) {
  File file(std::fopen(path.c_str(), "rb"));
  WICK_CHECK(file != nullptr, "read_jpeg: cannot open '", path, "': ", std::strerror(errno));
  Decoder d;
  init_errors(d.err);
  d.codec.err = &d.err.mgr;
  WICK_CHECK(read_header(d, file.get()), "read_jpeg: '", path, "': ", d.err.message);
  const int64_t width = d.codec.image_width, height = d.codec.image_height;
  WICK_CHECK(width * height <= max_pixels, "read_jpeg: '", path, "' declares ", width, " x ", height,
             " pixels, more than the limit of ", max_pixels);
  const int64_t channels = d.codec.out_color_space == JCS_GRAYSCALE ? 1 : 3;
  const uint64_t bytes = static_cast<uint64_t>(height * width * channels);
  const std::string quoted = "'" + path + "'";
  Tensor hwc = reader_allocate("read_jpeg", quoted, bytes,
                               "the pixels ([" + std::to_string(height) + ", " + std::to_string(width) + ", " +
                                   std::to_string(channels) + "] uint8)",
                               [&] { return empty({height, width, channels}, DType::UInt8); });
  WICK_CHECK(read_pixels(d, hwc.data<uint8_t>()), "read_jpeg: '", path, "': ", d.err.message);
  return reader_allocate("read_jpeg", quoted, bytes, "the pixels in [C, H, W] order",
                         [&] { return hwc.permute({2, 0, 1}).contiguous(); });
}

void write_jpeg(const std::string& path, const Tensor& image, int quality) {
  WICK_CHECK(image.defined() && image.dim() == 3 && image.dtype() == DType::UInt8 &&
                 (image.size(0) == 1 || image.size(0) == 3) && image.size(1) >= 1 && image.size(2) >= 1 &&
                 image.size(1) <= 65500 && image.size(2) <= 65500,
             "write_jpeg: expects uint8 [C, H, W] with C 1 or 3 and H, W in 1..65500, got ",
             image.defined() ? shape_str(image.shape()) + " " + dtype_name(image.dtype()) : std::string("none"));
  WICK_CHECK(quality >= 1 && quality <= 100, "write_jpeg: quality must be in 1..100, got ", quality);
  Tensor hwc = image.cpu().permute({1, 2, 0}).contiguous();
  Encoder e;
  init_errors(e.err);
  e.codec.err = &e.err.mgr;
  WICK_CHECK(encode(e, hwc.data<uint8_t>(), static_cast<int>(image.size(2)), static_cast<int>(image.size(1)),
                    static_cast<int>(image.size(0)), quality),
             "write_jpeg: '", path, "': ", e.err.message);
  write_file_atomically(path, std::string_view(reinterpret_cast<const char*>(e.bytes), e.size), "write_jpeg");
}

}  // namespace wick
