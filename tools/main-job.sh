#!/usr/bin/env bash
# The main job: installs missing Debian packages (when root), builds wick and runs the
# example. For now that is the tensor tour (examples/tensor_tour); the Fashion-MNIST
# training example replaces it when it lands.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/deps.sh
ensure_packages
find_cuda
build=${WICK_BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DWICK_BUILD_TESTS=OFF -DWICK_BUILD_BENCH=OFF
cmake --build "$build" -j "${WICK_JOBS:-$(nproc)}" --target tensor_tour
"$build/examples/tensor_tour"
