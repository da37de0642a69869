#!/usr/bin/env bash
# The test command: installs missing Debian packages (when root), configures, builds and
# runs every test. With the CUDA toolkit present (its headers are the simulator's API):
#   1. -DWICK_CUDA=SIM: the CUDA sources built by the host compiler against wick's CUDA
#      simulator (cudasim/), and the whole suite run, CUDA tests included (none skips for
#      want of a GPU);
#   2. -DWICK_CUDA=ON: the library compiled by nvcc (compile only: without a GPU nothing
#      can run, and its CPU tests are the same as the other configurations');
#   3. -DWICK_CUDA=OFF: the build and suite without CUDA.
# Without the toolkit only the last one.
#   WICK_BUILD_DIR  build folder prefix (default: build)
#   WICK_JOBS       parallel build jobs (default: nproc)
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/deps.sh
ensure_packages
find_cuda

build=${WICK_BUILD_DIR:-build}
jobs=${WICK_JOBS:-$(nproc)}
launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  # Paths relative to the checkout, so clones in other folders share the cache.
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
fi

run_suite() {  # run_suite BUILD_DIR CMAKE_ARGS...
  local dir=$1; shift
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DWICK_BUILD_BENCH=ON -DWICK_BUILD_EXAMPLES=ON \
    "${launcher[@]}" "$@"
  cmake --build "$dir" -j "$jobs"
  ctest --test-dir "$dir" --output-on-failure --timeout 900
}

if command -v nvcc >/dev/null 2>&1; then
  echo "== wick: CUDA toolkit found ($(nvcc --version | tail -1))"
  echo "== wick: the whole suite on the CUDA simulator (-DWICK_CUDA=SIM)"
  run_suite "$build-sim" -DWICK_CUDA=SIM
  echo "== wick: the library compiled by nvcc (-DWICK_CUDA=ON, compile only)"
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DWICK_CUDA=ON -DWICK_BUILD_TESTS=OFF \
    -DWICK_BUILD_BENCH=OFF -DWICK_BUILD_EXAMPLES=OFF "${launcher[@]}"
  cmake --build "$build" -j "$jobs" --target wick
  echo "== wick: the suite without CUDA (-DWICK_CUDA=OFF)"
  run_suite "$build-nocuda" -DWICK_CUDA=OFF -DWICK_BUILD_BENCH=OFF
else
  echo "== wick: no CUDA toolkit: CPU-only build"
  run_suite "$build" -DWICK_CUDA=OFF
fi
