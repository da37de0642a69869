#include <wick/train/png_encoder.h>

#include <zlib.h>

#include <wick/tensor/error.h>

namespace wick {
namespace {

void put_u32(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((v >> shift) & 0xff);
}

// length, type, data, then the CRC-32 of type and data (PNG spec, section 5.3).
void put_chunk(std::string& out, const char type[4], const std::string& data) {
  put_u32(out, static_cast<uint32_t>(data.size()));
  std::string body(type, 4);
  body += data;
  out += body;
  uLong crc = crc32(0L, Z_NULL, 0);
  crc = crc32(crc, reinterpret_cast<const Bytef*>(body.data()), static_cast<uInt>(body.size()));
  put_u32(out, static_cast<uint32_t>(crc));
}

}  // namespace

std::string encode_png_rgb(int width, int height, const std::vector<uint8_t>& rgb) {
  WICK_CHECK(width > 0 && height > 0, "encode_png_rgb: image size ", width, "x", height, " must be positive");
  const size_t row_bytes = 3 * static_cast<size_t>(width);
  WICK_CHECK(rgb.size() == row_bytes * static_cast<size_t>(height), "encode_png_rgb: ", rgb.size(),
             " bytes of pixels for a ", width, "x", height, " RGB image, expected ", row_bytes * height);

  // Each scanline starts with its filter type byte.
  std::string raw;
  raw.reserve((row_bytes + 1) * static_cast<size_t>(height));
  for (int y = 0; y < height; ++y) {
    raw += '\0';
    raw.append(reinterpret_cast<const char*>(rgb.data()) + y * row_bytes, row_bytes);
  }
  uLongf deflated_size = compressBound(static_cast<uLong>(raw.size()));
  std::string deflated(deflated_size, '\0');
  int rc = compress2(reinterpret_cast<Bytef*>(deflated.data()), &deflated_size,
                     reinterpret_cast<const Bytef*>(raw.data()), static_cast<uLong>(raw.size()), Z_DEFAULT_COMPRESSION);
  WICK_CHECK(rc == Z_OK, "encode_png_rgb: zlib compress2 failed with code ", rc);
  deflated.resize(deflated_size);

  std::string header;
  put_u32(header, static_cast<uint32_t>(width));
  put_u32(header, static_cast<uint32_t>(height));
  header += static_cast<char>(8);  // bits per sample
  header += static_cast<char>(2);  // colour type: RGB
  header += std::string(3, '\0');  // compression deflate, filter method 0, no interlace

  std::string out = "\x89PNG\r\n\x1a\n";
  put_chunk(out, "IHDR", header);
  put_chunk(out, "IDAT", deflated);
  put_chunk(out, "IEND", "");
  return out;
}

}  // namespace wick
