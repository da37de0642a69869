// Built instead of image_jpeg.cpp when libjpeg was not found (wick/data/CMakeLists.txt).
#include <wick/data/image_folder.h>

namespace wick {

Tensor read_jpeg(const std::string& path, int64_t) {
  detail::throw_error("read_jpeg: '", path, "': this wick was built without libjpeg (Debian: libjpeg62-turbo-dev)");
}

void write_jpeg(const std::string& path, const Tensor&, int) {
  detail::throw_error("write_jpeg: '", path, "': this wick was built without libjpeg (Debian: libjpeg62-turbo-dev)");
}

}  // namespace wick
