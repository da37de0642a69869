#pragma once
// A minimal PNG encoder: 8-bit RGB, no interlace, every row with filter type 0 (None), the
// image data deflated by zlib into one IDAT chunk. Enough for plots, which compress well.
#include <cstdint>
#include <string>
#include <vector>

namespace wick {

// The bytes of a PNG file for a width x height image; `rgb` holds 3 * width * height bytes,
// rows top to bottom. Throws wick::Error on a size mismatch.
std::string encode_png_rgb(int width, int height, const std::vector<uint8_t>& rgb);

}  // namespace wick
