#!/usr/bin/env bash
# The test command: installs missing Debian packages (when root), configures, builds and
# runs every test. With a CUDA toolkit present it builds the CUDA backend too (its GPU
# tests skip without a GPU) and then also checks the -DWICK_CUDA=OFF configuration.
#   WICK_BUILD_DIR  build folder (default: build)
#   WICK_JOBS       parallel build jobs (default: nproc)
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/deps.sh
ensure_packages
find_cuda

build=${WICK_BUILD_DIR:-build}
jobs=${WICK_JOBS:-$(nproc)}
launcher=()
command -v ccache >/dev/null 2>&1 && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)

run_suite() {  # run_suite BUILD_DIR CMAKE_ARGS...
  local dir=$1; shift
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DWICK_BUILD_BENCH=ON -DWICK_BUILD_EXAMPLES=ON \
    "${launcher[@]}" "$@"
  cmake --build "$dir" -j "$jobs"
  ctest --test-dir "$dir" --output-on-failure --timeout 900
}

if command -v nvcc >/dev/null 2>&1; then
  echo "== wick: CUDA toolkit found ($(nvcc --version | tail -1)): building with the CUDA backend"
  run_suite "$build"
  echo "== wick: the same suite without CUDA (-DWICK_CUDA=OFF)"
  run_suite "$build-nocuda" -DWICK_CUDA=OFF -DWICK_BUILD_BENCH=OFF
else
  echo "== wick: no CUDA toolkit: CPU-only build"
  run_suite "$build" -DWICK_CUDA=OFF
fi
