#pragma once
// PNG images and a folder of them with a class per subfolder (torchvision's ImageFolder):
//   root/cat/001.png, root/cat/002.png, root/dog/001.png, ...
// Classes are the subfolder names sorted (labels 0, 1, ...), files are sorted within a
// class, and example i is the i-th (class, file) pair in that order. Only files ending in
// .png (any case) count; a class folder without one is an error, as in torchvision.
// Decoding uses libpng's simplified API (no setjmp/longjmp across C++ frames).
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
// Writes uint8 [C, H, W] (C in 1..4) as an 8-bit PNG (for tests and small tools).
void write_png(const std::string& path, const Tensor& image);

class ImageFolder : public MapDataset {
 public:
  // Lists the folder (the images are read by get()). Throws for a missing root, no class
  // folders, or a class folder without PNG files.
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
