#!/usr/bin/env bash
# Copies into .deps/ what a bare GPU machine with no network needs to build and test wick,
# taken from this machine's Debian packages (googletest, libbenchmark-dev, libeigen3-dev):
#
#   .deps/googletest/                        GoogleTest sources (built by tests/CMakeLists.txt)
#   .deps/prefix/include/{benchmark,eigen3}/ headers
#   .deps/prefix/lib/x86_64-linux-gnu/       libbenchmark (shared: Debian ships no static
#                                            one) and libbenchmark_main.a, with their CMake
#                                            config in cmake/benchmark/
#   .deps/prefix/share/eigen3/cmake/         Eigen's CMake config
#   .deps/prefix/include/gloo/, lib/.../libgloo.so.0 and the libraries it loads (hiredis,
#                                            ibverbs, netlink), share/cmake/Gloo/ (a small
#                                            relocatable config written here: Debian's names
#                                            /usr/lib directly)
#   .deps/zlib/{include,lib}/                zlib's headers and static library (zlib1g-dev)
#   .deps/fashion-mnist/                     the Fashion-MNIST files (dataset-fashion-mnist)
#
# Both CMake configs locate their files relative to their own folder, so the prefix works
# wherever the tree lands. tools/gpu-check.sh passes these paths to CMake. Run from anywhere:
#   bash tools/gpu-deps.sh
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
deps=$root/.deps
prefix=$deps/prefix
arch_lib=/usr/lib/x86_64-linux-gnu

need() {
  [[ -e $1 ]] || { echo "gpu-deps: $1 is missing; install $2 (apt-get install $2)" >&2; exit 1; }
}
need /usr/src/googletest/CMakeLists.txt googletest
need /usr/include/benchmark/benchmark.h libbenchmark-dev
need $arch_lib/cmake/benchmark/benchmarkConfig.cmake libbenchmark-dev
need /usr/include/eigen3/Eigen/Core libeigen3-dev
need /usr/share/eigen3/cmake/Eigen3Config.cmake libeigen3-dev
need /usr/include/gloo/config.h libgloo-dev
need /usr/lib/libgloo.so.0 libgloo-dev
need $arch_lib/libz.a zlib1g-dev
need /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz dataset-fashion-mnist

rm -rf "$deps"
mkdir -p "$prefix/include" "$prefix/lib/x86_64-linux-gnu/cmake" "$prefix/share/eigen3"

cp -r /usr/src/googletest "$deps/googletest"

cp -r /usr/include/benchmark "$prefix/include/"
cp -r $arch_lib/cmake/benchmark "$prefix/lib/x86_64-linux-gnu/cmake/"
# The config imports libbenchmark.so.<version>; programs load it by its soname. Plain
# copies (no symbolic links) so nothing depends on how the tree is carried.
lib=$(readlink -f $arch_lib/libbenchmark.so)
soname=$(objdump -p "$lib" | awk '/SONAME/ {print $2}')
cp "$lib" "$prefix/lib/x86_64-linux-gnu/"
cp "$lib" "$prefix/lib/x86_64-linux-gnu/$soname"
cp $arch_lib/libbenchmark_main.a "$prefix/lib/x86_64-linux-gnu/"

cp -r /usr/include/eigen3 "$prefix/include/"
cp -r /usr/share/eigen3/cmake "$prefix/share/eigen3/"

# Gloo: headers, the library and what it loads, and a config that finds them relative to
# itself.
cp -r /usr/include/gloo "$prefix/include/"
cp "$(readlink -f /usr/lib/libgloo.so.0)" "$prefix/lib/x86_64-linux-gnu/libgloo.so.0"
for dep in $(ldd /usr/lib/libgloo.so.0 | awk '/=> \// {print $3}' | grep -E 'hiredis|ibverbs|libnl'); do
  cp "$(readlink -f "$dep")" "$prefix/lib/x86_64-linux-gnu/$(basename "$dep")"
done
mkdir -p "$prefix/share/cmake/Gloo"
cat >"$prefix/share/cmake/Gloo/GlooConfig.cmake" <<'EOF'
# Gloo carried by tools/gpu-deps.sh: the imported target `gloo`, as Debian's config names it.
get_filename_component(_gloo_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
if(NOT TARGET gloo)
  add_library(gloo SHARED IMPORTED)
  set_target_properties(gloo PROPERTIES
    IMPORTED_LOCATION "${_gloo_prefix}/lib/x86_64-linux-gnu/libgloo.so.0"
    INTERFACE_INCLUDE_DIRECTORIES "${_gloo_prefix}/include")
endif()
set(Gloo_FOUND TRUE)
EOF
mkdir -p "$deps/zlib/include" "$deps/zlib/lib"
cp /usr/include/zlib.h /usr/include/zconf.h "$deps/zlib/include/"
cp $arch_lib/libz.a "$deps/zlib/lib/"
mkdir -p "$deps/fashion-mnist"
cp /usr/share/datasets/fashion-mnist/*.gz "$deps/fashion-mnist/"

# What the carried library needs from the GPU machine's C++ runtime.
glibcxx=$(objdump -T "$lib" | grep -o 'GLIBCXX_[0-9.]*' | sort -uV | tail -1)
cat >"$deps/README" <<EOF
Made by tools/gpu-deps.sh on $(date -u +%Y-%m-%d) from: googletest $(dpkg-query -W -f '${Version}' googletest),
libbenchmark-dev $(dpkg-query -W -f '${Version}' libbenchmark-dev), libeigen3-dev $(dpkg-query -W -f '${Version}' libeigen3-dev).
$(basename "$lib") needs libstdc++ with $glibcxx (GCC 12 or newer).
EOF

echo "gpu-deps: wrote $deps ($(du -sh "$deps" | cut -f1)); $(basename "$lib") needs $glibcxx"
