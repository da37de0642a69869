#!/usr/bin/env bash
# The main job: installs missing Debian packages (when root), builds wick, wickrun and the
# mnist example, and trains the Fashion-MNIST CNN data-parallel on two ranks through
# wickrun, on GPUs when there are any (one rank per GPU, NCCL), else on the CPU (Gloo).
# It prints the learning curve, the test accuracy and where the plot is.
#   WICK_BUILD_DIR  build folder (default: build-main)
#   WICK_OUT        output folder (default: mnist-out)
#   extra arguments go to the example (e.g. --epochs 3, --model mlp)
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/deps.sh
ensure_packages
find_cuda
build=${WICK_BUILD_DIR:-build-main}
launcher=()
command -v ccache >/dev/null 2>&1 && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DWICK_BUILD_TESTS=OFF -DWICK_BUILD_BENCH=OFF \
  -DWICK_BUILD_EXAMPLES=ON "${launcher[@]}"
cmake --build "$build" -j "${WICK_JOBS:-$(nproc)}" --target mnist wickrun

# Two ranks need two GPUs, or one GPU with NCCL 2.30+ (two ranks on one GPU); else the CPU.
gpus=0
command -v nvidia-smi >/dev/null 2>&1 && gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
device=cpu
if [ "$gpus" -ge 2 ]; then
  device=auto
elif [ "$gpus" -eq 1 ]; then
  nccl_h=$(ls /usr/local/cuda/include/nccl.h 2>/dev/null || true)
  major=$(awk '/#define NCCL_MAJOR/ {print $3}' "$nccl_h" 2>/dev/null || echo 0)
  minor=$(awk '/#define NCCL_MINOR/ {print $3}' "$nccl_h" 2>/dev/null || echo 0)
  if [ "${major:-0}" -gt 2 ] || { [ "${major:-0}" -eq 2 ] && [ "${minor:-0}" -ge 30 ]; }; then
    export NCCL_MULTI_RANK_GPU_ENABLE=1
    device=cuda:0
  else
    echo "main job: one GPU and NCCL ${major}.${minor} (two ranks on one GPU need 2.30+): training on the CPU"
  fi
fi
echo "main job: Fashion-MNIST CNN, 2 ranks, device $device"
"$build/tools/wickrun/wickrun" --nproc 2 "$build/examples/mnist" --model cnn --device "$device" \
  --out "${WICK_OUT:-mnist-out}" "$@"
