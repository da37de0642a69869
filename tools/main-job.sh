#!/usr/bin/env bash
# The main job: installs missing Debian packages (when root), builds wick, wickrun and the
# mnist example, and trains the Fashion-MNIST CNN data-parallel on two ranks through
# wickrun: on GPUs when there are any, else on the CPU (Gloo). It prints the learning curve,
# the test accuracy and where the plot is.
#   WICK_BUILD_DIR  build folder (default: build-main)
#   WICK_OUT        output folder (default: mnist-out)
#   extra arguments go to the example (e.g. --epochs 3, --model mlp)
#   tools/main-job.sh --plan GPUS NCCL_VERSION   prints the device plan for that machine
#                                                (e.g. "--plan 1 2.28") and exits
set -euo pipefail
cd "$(dirname "$0")/.."

# Where the two ranks run, from the GPU count and NCCL's version (major.minor, 0.0 unknown).
# Prints "DEVICE TRANSPORT": the example's --device, and how the ranks exchange gradients.
#   2+ GPUs                one rank per GPU, NCCL
#   1 GPU, NCCL 2.30+      both ranks on it, NCCL (NCCL_MULTI_RANK_GPU_ENABLE=1)
#   1 GPU, older NCCL      both ranks on it, gradients through host memory over Gloo
#                          (WICK_CUDA_COMMUNICATOR=gloo): NCCL before 2.30 refuses two ranks
#                          on one GPU, and the GPU still does the training's arithmetic
#   no GPU                 the CPU, Gloo
plan() {
  local gpus=$1 major=${2%%.*} minor=${2#*.}
  [[ $major =~ ^[0-9]+$ ]] || major=0
  [[ $minor =~ ^[0-9]+$ ]] || minor=0
  if [ "$gpus" -ge 2 ]; then
    echo "auto nccl"
  elif [ "$gpus" -eq 1 ]; then
    if [ "$major" -gt 2 ] || { [ "$major" -eq 2 ] && [ "$minor" -ge 30 ]; }; then
      echo "cuda:0 nccl-shared"
    else
      echo "cuda:0 gloo"
    fi
  else
    echo "cpu gloo"
  fi
}

if [ "${1:-}" = "--plan" ]; then
  if [ $# -ne 3 ] || ! [[ $2 =~ ^[0-9]+$ ]]; then
    echo "usage: tools/main-job.sh --plan GPUS NCCL_VERSION (e.g. --plan 1 2.28)" >&2
    exit 2
  fi
  plan "$2" "$3"
  exit 0
fi

source tools/deps.sh
ensure_packages
find_cuda
build=${WICK_BUILD_DIR:-build-main}
launcher=()
command -v ccache >/dev/null 2>&1 && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
# Built and run on this machine: its own instruction set for every CPU kernel (WICK_NATIVE),
# rather than the portable default an installed library needs.
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DWICK_BUILD_TESTS=OFF -DWICK_BUILD_BENCH=OFF \
  -DWICK_BUILD_EXAMPLES=ON -DWICK_NATIVE=ON "${launcher[@]}"
cmake --build "$build" -j "${WICK_JOBS:-$(nproc)}" --target mnist wickrun

gpus=0
command -v nvidia-smi >/dev/null 2>&1 && gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
nccl=0.0
if [ "$gpus" -ge 1 ]; then
  # The NCCL the ranks will load (the toolkit's, or a PyTorch wheel's on LD_LIBRARY_PATH),
  # as wickrun reports it: "... built with CUDA, NCCL 2.28.3".
  version=$("$build/tools/wickrun/wickrun" --version)
  [[ $version =~ NCCL\ ([0-9]+\.[0-9]+) ]] && nccl=${BASH_REMATCH[1]}
fi
read -r device transport < <(plan "$gpus" "$nccl")
case $transport in
  nccl-shared)
    export NCCL_MULTI_RANK_GPU_ENABLE=1
    echo "main job: one GPU, NCCL $nccl: both ranks on it with NCCL" ;;
  gloo)
    if [ "$device" != cpu ]; then
      export WICK_CUDA_COMMUNICATOR=gloo
      echo "main job: one GPU, NCCL $nccl (two NCCL ranks on one GPU need 2.30+): both ranks on it, gradients through host memory over Gloo"
    fi ;;
esac
echo "main job: Fashion-MNIST CNN, 2 ranks, device $device"
"$build/tools/wickrun/wickrun" --nproc 2 "$build/examples/mnist" --model cnn --device "$device" \
  --out "${WICK_OUT:-mnist-out}" "$@"
