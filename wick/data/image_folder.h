#pragma once
// PNG and JPEG images, and a folder of them with a class per subfolder (torchvision's
// ImageFolder):
//   root/cat/001.png, root/cat/002.jpg, root/dog/001.jpeg, ...
// Classes are the subfolder names sorted (labels 0, 1, ...), files are sorted within a
// class, and example i is the i-th (class, file) pair in that order. Files ending in .png,
// .jpg or .jpeg (any case) count; a class folder without one is an error, as in
// torchvision. Each file is decoded by what its first bytes say it is.
// Decoders: libpng (wick/data/image_png.cpp) and libjpeg (wick/data/image_jpeg.cpp), Debian's
// libpng-dev and libjpeg62-turbo-dev. Each is optional at build time: without it the
// functions of its format throw, saying which package the build lacked.
#include <cstdint>
#include <string>
#include <vector>

#include <wick/data/map_dataset.h>

namespace wick {

// Default bound on the pixels of one image: a small file may declare a huge image, and
// decoding it would allocate width * height * channels bytes.
inline constexpr int64_t kMaxImagePixels = int64_t{1} << 27;

// A PNG file as uint8 [C, H, W]: C = 1 (gray), 2 (gray + alpha), 3 (RGB) or 4 (RGBA),
// following the file (palette images become RGB or RGBA; 16-bit channels are reduced to 8
// bits). Throws naming the path for unreadable or corrupt files and for images of more
// than max_pixels pixels (checked from the header, before decoding).
Tensor read_png(const std::string& path, int64_t max_pixels = kMaxImagePixels);
// Writes uint8 [C, H, W] (C in 1..4) as an 8-bit PNG (for tests and small tools), to a
// temporary name renamed when complete.
void write_png(const std::string& path, const Tensor& image);

// A baseline or progressive JPEG file as uint8 [C, H, W]: C = 1 for grayscale files, else 3
// (RGB, converted from YCbCr by libjpeg). CMYK files are refused. Corrupt or truncated data
// is an error naming the path (libjpeg's warnings count as errors: it would otherwise fill
// the missing part with grey). max_pixels as for read_png.
Tensor read_jpeg(const std::string& path, int64_t max_pixels = kMaxImagePixels);
// Writes uint8 [C, H, W] (C 1 or 3) as a JPEG of the given quality (1..100), to a temporary
// name renamed when complete. Lossy: reading it back gives close, not equal, pixels.
void write_jpeg(const std::string& path, const Tensor& image, int quality = 95);

// read_png or read_jpeg, chosen by the file's first bytes.
Tensor read_image(const std::string& path, int64_t max_pixels = kMaxImagePixels);

class ImageFolder : public MapDataset {
 public:
  // Lists the folder (the images are read by get()). Throws for a missing root, no class
  // folders, or a class folder without image files.
  explicit ImageFolder(const std::string& root, int64_t max_pixels = kMaxImagePixels);
  using MapDataset::get;
  int64_t size() const override { return static_cast<int64_t>(files_.size()); }
  // "image": uint8 [C, H, W]; "label": int64 0-d.
  Example get(int64_t i) const override;
  const std::vector<std::string>& classes() const { return classes_; }
  const std::string& path(int64_t i) const;
  int64_t label(int64_t i) const;

 private:
  std::vector<std::string> classes_;
  std::vector<std::string> files_;
  std::vector<int64_t> labels_;
  int64_t max_pixels_;
};

}  // namespace wick
