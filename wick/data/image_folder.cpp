#include <wick/data/image_folder.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace wick {

namespace {

namespace fs = std::filesystem;

bool is_image_name(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".png" || ext == ".jpg" || ext == ".jpeg";
}

}  // namespace

Tensor read_image(const std::string& path, int64_t max_pixels) {
  unsigned char magic[8] = {};
  {
    std::ifstream in(path, std::ios::binary);
    WICK_CHECK(in.good(), "read_image: cannot open '", path, "'");
    in.read(reinterpret_cast<char*>(magic), sizeof magic);
  }
  static const unsigned char png_magic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (std::memcmp(magic, png_magic, sizeof png_magic) == 0) return read_png(path, max_pixels);
  if (magic[0] == 0xff && magic[1] == 0xd8 && magic[2] == 0xff) return read_jpeg(path, max_pixels);
  detail::throw_error("read_image: '", path, "' is neither a PNG nor a JPEG file (by its first bytes)");
}

ImageFolder::ImageFolder(const std::string& root, int64_t max_pixels) : max_pixels_(max_pixels) {
  std::error_code ec;
  WICK_CHECK(fs::is_directory(root, ec), "ImageFolder: '", root, "' is not a folder");
  for (const auto& entry : fs::directory_iterator(root)) {
    if (entry.is_directory()) classes_.push_back(entry.path().filename().string());
  }
  std::sort(classes_.begin(), classes_.end());
  WICK_CHECK(!classes_.empty(), "ImageFolder: '", root, "' has no class folders");
  for (size_t c = 0; c < classes_.size(); ++c) {
    const fs::path dir = fs::path(root) / classes_[c];
    std::vector<std::string> found;
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (entry.is_regular_file() && is_image_name(entry.path())) found.push_back(entry.path().string());
    }
    WICK_CHECK(!found.empty(), "ImageFolder: class folder '", dir.string(), "' has no image files (.png, .jpg, .jpeg)");
    std::sort(found.begin(), found.end());
    for (std::string& f : found) {
      files_.push_back(std::move(f));
      labels_.push_back(static_cast<int64_t>(c));
    }
  }
}

const std::string& ImageFolder::path(int64_t i) const {
  check_index("ImageFolder::path", i, size());
  return files_[static_cast<size_t>(i)];
}

int64_t ImageFolder::label(int64_t i) const {
  check_index("ImageFolder::label", i, size());
  return labels_[static_cast<size_t>(i)];
}

Example ImageFolder::get(int64_t i) const {
  check_index("ImageFolder::get", i, size());
  Example e;
  e.set("image", read_image(files_[static_cast<size_t>(i)], max_pixels_));
  e.set("label", labels_[static_cast<size_t>(i)]);
  return e;
}

}  // namespace wick
