// Built instead of image_png.cpp when libpng was not found (wick/data/CMakeLists.txt).
#include <wick/data/image_folder.h>

namespace wick {

Tensor read_png(const std::string& path, int64_t) {
  detail::throw_error("read_png: '", path, "': this wick was built without libpng (Debian: libpng-dev)");
}

void write_png(const std::string& path, const Tensor&) {
  detail::throw_error("write_png: '", path, "': this wick was built without libpng (Debian: libpng-dev)");
}

}  // namespace wick
