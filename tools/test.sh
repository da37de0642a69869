#!/usr/bin/env bash
# The test command: installs missing Debian packages (when root), configures, builds and
# runs every test. With the CUDA toolkit present (its headers are the simulator's API):
#   1. -DWICK_CUDA=SIM: the CUDA sources built by the host compiler against wick's CUDA
#      simulator (cudasim/), and the whole suite run, CUDA tests included (none skips for
#      want of a GPU);
#   2. -DWICK_CUDA=ON: libwick, wickrun, the examples and the benchmarks compiled by nvcc
#      and linked against NVIDIA's libraries (C++ files equal to step 1's come from
#      ccache); the compiler gates (tools/kernel_gates.py: every kernel's loads, spills
#      and occupancy for sm_90 against kernels/cuda/kernel_gates.txt); then
#      tools/check_cuda_link.sh: the programs name and load NCCL, cuDNN, cuBLAS and the
#      runtime, the CNN example trains a little on the CPU (no GPU here), and the GPU
#      bundle (tools/gpu-bench.sh build) is made from this folder and fits the device
#      tool's carry limit;
#   3. -DWICK_CUDA=OFF: step 4's build is the OFF configuration (library, host
#      suites); with WICK_FUZZ_SECONDS=0 the plain OFF build and suite run here instead.
# Without the toolkit: the OFF build and its whole suite. Then, in both cases
# (docs/testing.md):
#   4. clang-14 with -DWICK_CUDA=OFF -DWICK_SANITIZE=address,undefined -DWICK_FUZZ=ON: first
#      without the distributed package (-DWICK_DISTRIBUTED=OFF: no Gloo), the tensor,
#      autograd, data, nn, optim and train suites; then with it and a shared libwick
#      (-DWICK_SHARED=ON), the distributed suite, the installed consumer built against
#      libwick.so; all under AddressSanitizer and UBSan (any report fails the test), and each
#      libFuzzer target run from its seed corpus for WICK_FUZZ_SECONDS. (The examples are
#      built and run by step 1.)
#   WICK_BUILD_DIR      build folder prefix (default: build)
#   WICK_JOBS           parallel build jobs (default: nproc)
#   WICK_FUZZ_SECONDS   seconds per fuzz target in step 4 (default: 6; 0 skips step 4)
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/deps.sh
ensure_packages clang-14 clang-format-14 libclang-rt-14-dev libomp-14-dev python3 ccache
ensure_optional_packages libpng-dev libjpeg62-turbo-dev qemu-user fortunes openmpi-bin
find_cuda

# Each step's line says how long the run has taken so far (CI's budget is 40 minutes).
say() { echo "== wick [$((SECONDS / 60))m$((SECONDS % 60))s]: $*"; }

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
  say "$dir built; its tests"
  # Two at a time: tests that start ranks ask for both cores (PROCESSORS 2) and run alone.
  ctest --test-dir "$dir" --output-on-failure --timeout 900 -j "$jobs"
}

if command -v nvcc >/dev/null 2>&1; then
  say "CUDA toolkit found ($(nvcc --version | tail -1))"
  say "the whole suite on the CUDA simulator (-DWICK_CUDA=SIM)"
  run_suite "$build-sim" -DWICK_CUDA=SIM
  say "the library, wickrun, the examples and the GPU bundle built and linked by nvcc (-DWICK_CUDA=ON)"
  # ptxas's report and the PTX of every kernel are kept for the compiler gates, so each file
  # is compiled once; nvcc's output goes to a log (printed when the build fails). No
  # launcher for nvcc: a cached compile would report nothing. The C++ files that do not
  # differ from the simulator build's come from ccache (the same command lines).
  case $build in /*) gates_keep=$build/kernel_gates ;; *) gates_keep=$PWD/$build/kernel_gates ;; esac
  mkdir -p "$gates_keep"
  # sm_80 (A100) as PTX only: cicc still compiles every kernel for it, but only sm_90, whose
  # ptxas report the gates read, goes through ptxas (200 s for the step instead of 290-330).
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DWICK_CUDA=ON -DWICK_BUILD_TESTS=OFF \
    "-DCMAKE_CUDA_ARCHITECTURES=80-virtual;90" \
    -DWICK_BUILD_BENCH=ON -DWICK_BUILD_EXAMPLES=ON "-DCMAKE_CUDA_FLAGS=-Xptxas=-v --keep --keep-dir=$gates_keep" \
    -DCMAKE_CUDA_COMPILER_LAUNCHER= ${launcher[0]:+-DCMAKE_CXX_COMPILER_LAUNCHER=ccache}
  # Everything a user builds is linked here, not only compiled: libwick, wickrun, the
  # examples and the benchmarks (the GPU bundle's programs among them). A library missing
  # from the link line fails this step, not a user's first build (issue 43).
  if ! cmake --build "$build" -j "$jobs" >"$build/nvcc-build.log" 2>&1; then
    cat "$build/nvcc-build.log"
    exit 1
  fi
  say "compiler gates for the CUDA kernels (sm_90: widths of loads, spills, occupancy)"
  python3 tools/kernel_gates.py --from-build "$build/nvcc-build.log" "$gates_keep" --report "$build/kernel_gates.tsv"
  say "the nvcc build's programs load and run without a GPU; the GPU bundle"
  tools/check_cuda_link.sh "$build"
  if [ "${WICK_FUZZ_SECONDS:-6}" -eq 0 ]; then
    say "the suite without CUDA (-DWICK_CUDA=OFF)"
    run_suite "$build-nocuda" -DWICK_CUDA=OFF -DWICK_BUILD_BENCH=OFF
  fi
else
  say "no CUDA toolkit: CPU-only build"
  run_suite "$build" -DWICK_CUDA=OFF
fi

# 4. Sanitizers and fuzzing. -O1: the sanitized build compiles much faster than at -O3
# and the suites it runs still take seconds, not minutes. It is the OFF configuration: the
# library, the host suites and the fuzzers. Step 1's ctest also runs the default build's portability checks:
# tools/check_portable.sh, and the installed consumer under qemu on CPUs without AVX-512.
fuzz_seconds=${WICK_FUZZ_SECONDS:-6}
if [ "$fuzz_seconds" -gt 0 ]; then
  san="$build-asan"
  san_args=(-DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -DNDEBUG" -DCMAKE_CXX_COMPILER=clang++-14
    -DWICK_CUDA=OFF -DWICK_SANITIZE=address,undefined -DWICK_FUZZ=ON -DWICK_BUILD_BENCH=OFF -DWICK_BUILD_EXAMPLES=ON
    "${launcher[@]}")
  # One build folder, two configurations: first without the distributed package (no Gloo
  # looked for, no distributed code in libwick), where the lower layers' suites must pass;
  # then with it, which compiles only the distributed layer and what links it.
  say "without the distributed package (-DWICK_DISTRIBUTED=OFF), the host suites under ASan+UBSan (clang-14)"
  cmake -S . -B "$san" -G Ninja "${san_args[@]}" -DWICK_DISTRIBUTED=OFF
  cmake --build "$san" -j "$jobs" --target wick wick_tensor_tests wick_autograd_tests wick_data_tests wick_nn_tests \
    wick_optim_tests wick_train_tests tensor_tour
  ctest --test-dir "$san" --output-on-failure --timeout 900 -j "$jobs" -R '^wick_(tensor|autograd|data|nn|optim|train)_tests$'
  # The same objects (the switch is written in the build's wick/version.h, not on the command
  # lines, so only what includes that header recompiles) linked into a shared libwick:
  # the distributed suite and the fuzzers run against libwick.so, and the installed consumer
  # is built against it by find_package and by pkg-config (step 1's is the static library).
  say "with the distributed package and a shared libwick: its suite under ASan+UBSan, the installed consumer and the fuzzers"
  cmake -S . -B "$san" -G Ninja "${san_args[@]}" -DWICK_DISTRIBUTED=ON -DWICK_SHARED=ON
  cmake --build "$san" -j "$jobs" --target wick wickrun wick_distributed_tests wick_fuzzers tensor_tour
  ctest --test-dir "$san" --output-on-failure --timeout 900 -j "$jobs" -R '^(wick_distributed_tests|install_and_consume)$'
  for target in safetensors idx idx_gzip cifar control_frame stage_command; do
    # New inputs go to a scratch folder, so the seed corpus stays as the build wrote it.
    scratch=$(mktemp -d)
    say "fuzz_$target for ${fuzz_seconds} s"
    "$san/fuzz/fuzz_$target" -max_total_time="$fuzz_seconds" -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$san/fuzz/" "$scratch" "$san/fuzz/corpus/$target"
    rm -rf "$scratch"
  done
fi
say "done"
