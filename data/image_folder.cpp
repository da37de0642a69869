#include <wick/data/image_folder.h>

#include <png.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>

namespace wick {

namespace {

namespace fs = std::filesystem;

// Frees the decoder's state on every path out (png_image_free is safe to call twice).
struct ImageGuard {
  png_image image;
  ImageGuard() {
    std::memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
  }
  ~ImageGuard() { png_image_free(&image); }
};

bool is_png_name(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".png";
}

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
  Tensor hwc = empty({height, width, channels}, DType::UInt8);
  WICK_CHECK(png_image_finish_read(&image, nullptr, hwc.data_ptr(), 0, nullptr) != 0, "read_png: '", path,
             "': ", image.message);
  return hwc.permute({2, 0, 1}).contiguous();
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
  WICK_CHECK(png_image_write_to_file(&g.image, path.c_str(), 0, hwc.data_ptr(), 0, nullptr) != 0, "write_png: '",
             path, "': ", g.image.message);
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
      if (entry.is_regular_file() && is_png_name(entry.path())) found.push_back(entry.path().string());
    }
    WICK_CHECK(!found.empty(), "ImageFolder: class folder '", dir.string(), "' has no .png files");
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
  e.set("image", read_png(files_[static_cast<size_t>(i)], max_pixels_));
  e.set("label", labels_[static_cast<size_t>(i)]);
  return e;
}

}  // namespace wick
