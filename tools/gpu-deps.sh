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

# What the carried library needs from the GPU machine's C++ runtime.
glibcxx=$(objdump -T "$lib" | grep -o 'GLIBCXX_[0-9.]*' | sort -uV | tail -1)
cat >"$deps/README" <<EOF
Made by tools/gpu-deps.sh on $(date -u +%Y-%m-%d) from: googletest $(dpkg-query -W -f '${Version}' googletest),
libbenchmark-dev $(dpkg-query -W -f '${Version}' libbenchmark-dev), libeigen3-dev $(dpkg-query -W -f '${Version}' libeigen3-dev).
$(basename "$lib") needs libstdc++ with $glibcxx (GCC 12 or newer).
EOF

echo "gpu-deps: wrote $deps ($(du -sh "$deps" | cut -f1)); $(basename "$lib") needs $glibcxx"
