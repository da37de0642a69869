#!/usr/bin/env bash
# Checks an nvcc build folder (-DWICK_CUDA=ON) the way a user with the toolkit meets it,
# on a machine with or without a GPU (tools/test.sh runs it in CI, which has none):
#   1. the programs are linked against NVIDIA's libraries: mnist and wickrun name libnccl,
#      libcudnn, libcublas and libcudart among their needed libraries (the GPU bundle's
#      wick_bench_cuda, which calls no collective, the last three), and the loader finds
#      every library they need;
#   2. they load and run: `wickrun --version` calls ncclGetVersion through wick's
#      communicator (no GPU needed) and must report the NCCL of the toolkit's nccl.h;
#   3. the CNN example trains a little on the CPU, 2 ranks under wickrun, as the main job
#      does on a machine without a GPU;
#   4. the GPU bundle is made from this folder (tools/gpu-bench.sh build) and fits the
#      device tool's carry limit (gpu-bench.sh checks the size).
#
#   tools/check_cuda_link.sh BUILD_DIR
# Exit status 0 when every check passed; each failure says what was missing.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: tools/check_cuda_link.sh BUILD_DIR}
grep -qx 'WICK_CUDA:STRING=ON' "$build/CMakeCache.txt" || {
  echo "check_cuda_link: $build is not an nvcc build folder (WICK_CUDA=ON)" >&2
  exit 2
}
failed=0
fail() { echo "check_cuda_link: FAILED: $*" >&2; failed=1; }

# PROGRAM: the libraries it must need. libwick is static, so a program links only what it
# calls: the benchmarks use no collective, hence no NCCL.
for spec in "examples/mnist: libnccl libcudnn libcublas libcudart" \
            "tools/wickrun/wickrun: libnccl libcudnn libcublas libcudart" \
            "bench/wick_bench_cuda: libcudnn libcublas libcudart"; do
  prog=${spec%%:*}
  path=$build/$prog
  [[ -x $path ]] || { fail "$prog was not built"; continue; }
  needed=$(readelf -d "$path" | awk '/\(NEEDED\)/ {gsub(/[][]/, "", $5); print $5}')
  for lib in ${spec#*:}; do
    grep -q "^$lib\.so" <<<"$needed" || fail "$prog does not link $lib (needed: $(echo $needed))"
  done
  missing=$(ldd "$path" | grep 'not found' || true)
  [[ -z $missing ]] || fail "$prog: the loader cannot find: $missing"
done
((failed)) || echo "check_cuda_link: mnist and wickrun need libnccl, libcudnn, libcublas and libcudart, wick_bench_cuda the last three, and all load"

# The header the build used against the library the program loaded.
header=$(sed -n 's/^WICK_NCCL_INCLUDE_DIR:PATH=//p' "$build/CMakeCache.txt")/nccl.h
want="$(awk '/#define NCCL_MAJOR/ {print $3}' "$header").$(awk '/#define NCCL_MINOR/ {print $3}' "$header")"
version=$("$build/tools/wickrun/wickrun" --version) || fail "wickrun --version exited with $?"
echo "check_cuda_link: $version"
[[ $version == *"built with CUDA, NCCL $want."* ]] || fail "wickrun --version does not report NCCL $want (from $header)"

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
if "$build/tools/wickrun/wickrun" --nproc 2 "$build/examples/mnist" --model cnn --device cpu --epochs 1 \
    --train-limit 1024 --validation-size 256 --test-limit 256 --out "$out" >"$out/log" 2>&1 &&
    grep -q 'test accuracy' "$out/log"; then
  echo "check_cuda_link: the nvcc build's CNN example trained on the CPU, 2 ranks: $(grep 'test accuracy' "$out/log")"
else
  cat "$out/log" >&2
  fail "the nvcc build's mnist did not train on the CPU under wickrun"
fi

tools/gpu-bench.sh build "$build" || fail "tools/gpu-bench.sh build"
exit $failed
