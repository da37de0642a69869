#!/usr/bin/env bash
# One-call check of wick on a GPU machine with no network: prints the GPU and NCCL version,
# configures with CUDA (sm_90) and the dependencies carried in .deps/ (made by
# tools/gpu-deps.sh on a machine that has them), builds everything, runs every test (CUDA
# ones included), runs wick_bench_cuda against PyTorch (bench/torch_compare.py), and ends
# with one summary: the state of each step, tests passed/failed/skipped per binary, and the
# benchmark table. A failing step is reported and the later steps still run.
#
#   bash tools/gpu-check.sh [BUILD_DIR]        (from the repository root; default build-gpu)
#
# Logs go to $OUT when it is set (else BUILD_DIR/gpu-check): configure.log, build.log,
# ctest.log, wick_bench_cuda.json, torch_compare.log, summary.txt. Step time limits (seconds)
# can be changed with GPU_CHECK_{CONFIGURE,BUILD,TEST,BENCH,DISTRIBUTED}_TIMEOUT; the defaults keep the
# whole run under ~8 minutes on 16 cores. The exit status is 0 only when every step passed
# (the benchmark step passes when every case ran, whether or not its targets were met).
set -u

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
root=$PWD
build=${1:-build-gpu}
case $build in /*) ;; *) build=$root/$build ;; esac
deps=$root/.deps
logs=${OUT:-$build/gpu-check}
mkdir -p "$build" "$logs"
jobs=$(nproc)
t_configure=${GPU_CHECK_CONFIGURE_TIMEOUT:-90}
t_build=${GPU_CHECK_BUILD_TIMEOUT:-270}
t_test=${GPU_CHECK_TEST_TIMEOUT:-120}
t_bench=${GPU_CHECK_BENCH_TIMEOUT:-240}
t_distributed=${GPU_CHECK_DISTRIBUTED_TIMEOUT:-240}  # each of its three runs
start=$SECONDS

steps=()  # "name|status|seconds" in order
record() {  # record NAME STATUS_CODE STEP_START
  local status=ok
  if [[ $2 == 124 || $2 == 137 ]]; then status="TIMED OUT"; elif [[ $2 != 0 ]]; then status="FAILED ($2)"; fi
  steps+=("$1|$status|$((SECONDS - $3))")
  echo "--- $1: $status after $((SECONDS - $3)) s"
}
banner() { echo; echo "=== $* ($((SECONDS - start)) s elapsed)"; }

# --- environment ------------------------------------------------------------------------
banner "environment"
nvidia-smi -L 2>&1 || echo "nvidia-smi failed"
nccl_version() {
  local h lib dir headers=(/usr/local/cuda/include/nccl.h /usr/include/nccl.h /usr/local/include/nccl.h)
  for dir in $(tr ':' ' ' <<<"${CPATH:-}"); do headers+=("$dir/nccl.h"); done
  for h in "${headers[@]}"; do
    if [[ -f $h ]]; then
      awk '/^#define NCCL_(MAJOR|MINOR|PATCH) / {v[$2] = $3}
           END {printf "%s.%s.%s", v["NCCL_MAJOR"], v["NCCL_MINOR"], v["NCCL_PATCH"]}' "$h"
      echo " (from $h)"
      return
    fi
  done
  lib=$(ls /usr/local/cuda/lib64/libnccl.so.* /usr/lib/x86_64-linux-gnu/libnccl.so.* 2>/dev/null | sort -V | tail -1)
  if [[ -n $lib ]]; then echo "${lib##*libnccl.so.} (from $lib)"; return; fi
  python3 -c 'import torch; print(".".join(map(str, torch.cuda.nccl.version())), "(from torch)")' 2>/dev/null ||
    echo "not found"
}
echo "NCCL: $(nccl_version)"
echo "nvcc: $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' || echo 'not found')"
echo "cmake: $(cmake --version 2>/dev/null | head -1)"
echo "compiler: $(c++ --version 2>/dev/null | head -1)"
echo "torch: $(python3 -c 'import torch; print(torch.__version__)' 2>/dev/null || echo 'not importable')"
echo "cores: $jobs; logs: $logs"
if [[ ! -d $deps/googletest || ! -d $deps/prefix ]]; then
  echo "WARNING: $deps is missing or incomplete: run 'bash tools/gpu-deps.sh' where the packages are" \
       "installed and carry .deps with the tree"
fi

# The carried shared libraries (benchmark, Gloo and what Gloo loads).
export LD_LIBRARY_PATH=$deps/prefix/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

# cuDNN and NCCL: the toolkit's or the system's own when they are there, else the ones
# PyTorch's wheels hold (nvidia-cudnn-*, nvidia-nccl-*). The wheels ship only versioned
# libraries (libcudnn.so.9), so a folder of links gives CMake the plain names it looks for.
nvidia_flags=()
nvidia_shim=$build/nvidia-libs
use_wheel_library() {  # use_wheel_library NAME HEADER
  local cuda_lib=/usr/local/cuda/lib64 site lib header
  [[ -e $cuda_lib/lib$1.so || -e /usr/lib/x86_64-linux-gnu/lib$1.so ]] &&
    [[ -e /usr/local/cuda/include/$2 || -e /usr/include/$2 ]] && return 0
  site=$(python3 -c 'import nvidia; print(" ".join(nvidia.__path__))' 2>/dev/null) || site=
  lib=$( (find $site -name "lib$1.so*" 2>/dev/null || true) | sort | head -1)
  header=$( (find $site -name "$2" 2>/dev/null || true) | head -1)
  if [[ -z $lib || -z $header ]]; then
    echo "WARNING: lib$1 or $2 is in neither /usr/local/cuda nor PyTorch's nvidia wheels"
    return 0
  fi
  mkdir -p "$nvidia_shim"
  ln -sf "$lib" "$nvidia_shim/lib$1.so"
  export LD_LIBRARY_PATH=$(dirname "$lib"):$LD_LIBRARY_PATH
  export CPATH=$(dirname "$header")${CPATH:+:$CPATH}
  nvidia_flags=(-DCMAKE_LIBRARY_PATH="$nvidia_shim")
  echo "$1: $lib, $header (PyTorch's wheel)"
}
use_wheel_library cudnn cudnn.h
use_wheel_library nccl nccl.h
# NCCL 2.30+ can put two ranks on one GPU; the distributed NCCL tests use it when allowed.
nccl_at_least_2_30() {
  local v
  v=$(nccl_version | cut -d' ' -f1)
  [[ $v =~ ^([0-9]+)\.([0-9]+) ]] || return 1
  ((BASH_REMATCH[1] > 2 || (BASH_REMATCH[1] == 2 && BASH_REMATCH[2] >= 30)))
}
if nccl_at_least_2_30; then export NCCL_MULTI_RANK_GPU_ENABLE=1; fi
echo "NCCL_MULTI_RANK_GPU_ENABLE=${NCCL_MULTI_RANK_GPU_ENABLE:-unset}"

# --- configure --------------------------------------------------------------------------
banner "configure"
s=$SECONDS
timeout "$t_configure" cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DWICK_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DWICK_GTEST_SOURCE_DIR="$deps/googletest" -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON \
  -Dbenchmark_DIR="$deps/prefix/lib/x86_64-linux-gnu/cmake/benchmark" \
  -DEigen3_DIR="$deps/prefix/share/eigen3/cmake" -DGloo_DIR="$deps/prefix/share/cmake/Gloo" -DZLIB_ROOT="$deps/zlib" \
  "${nvidia_flags[@]}" \
  >"$logs/configure.log" 2>&1
rc=$?
[[ $rc == 0 ]] || tail -30 "$logs/configure.log"
record configure $rc $s

# --- build ------------------------------------------------------------------------------
banner "build (ninja -j$jobs, keeps going past failures)"
s=$SECONDS
timeout "$t_build" ninja -C "$build" -j"$jobs" -k 0 >"$logs/build.log" 2>&1
rc=$?
grep -E '^FAILED|error' "$logs/build.log" | head -40
tail -1 "$logs/build.log"
record build $rc $s

# --- tests ------------------------------------------------------------------------------
banner "tests (ctest)"
s=$SECONDS
gtest_json=$build/gtest-json
rm -rf "$gtest_json"
mkdir -p "$gtest_json"
# GoogleTest writes one JSON report per binary into the folder GTEST_OUTPUT names.
(cd "$build" && GTEST_OUTPUT="json:$gtest_json/" timeout "$t_test" ctest --output-on-failure --no-tests=error -j4 --timeout "$t_test") \
  >"$logs/ctest.log" 2>&1
rc=$?
grep -vE '^\s*$' "$logs/ctest.log" | tail -40
record tests $rc $s

# --- benchmarks -------------------------------------------------------------------------
banner "benchmarks (wick_bench_cuda vs PyTorch)"
s=$SECONDS
bench_table=$build/bench-table.txt
rm -f "$bench_table"
if [[ -x $build/bench/wick_bench_cuda ]]; then
  PYTHONUNBUFFERED=1 timeout "$t_bench" python3 "$root/bench/torch_compare.py" --bench "$build/bench/wick_bench_cuda" \
    --min-time 0.1 --json-out "$logs/wick_bench_cuda.json" --table-out "$bench_table" >"$logs/torch_compare.log" 2>&1
  rc=$?
  tail -5 "$logs/torch_compare.log"
else
  echo "$build/bench/wick_bench_cuda was not built"
  rc=1
fi
record benchmarks $rc $s

# --- distributed and training ------------------------------------------------------------
banner "all-reduce (NCCL and Gloo vs the libraries called directly), training vs PyTorch, main job"
s=$SECONDS
rc=0
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
if [[ -x $build/bench/wick_bench_allreduce ]]; then
  timeout "$t_distributed" "$build/bench/wick_bench_allreduce" --ranks "$(( gpus > 1 ? gpus : 2 ))" --max-bytes 268435456 \
    >"$logs/allreduce.log" 2>&1 || rc=1
  tail -25 "$logs/allreduce.log"
fi
if [[ -x $build/examples/mnist ]]; then
  PYTHONUNBUFFERED=1 timeout "$t_distributed" python3 "$root/bench/train_compare.py" --wick-bin "$build/examples/mnist" \
    --data "$deps/fashion-mnist" --device cuda --epochs 1 >"$logs/train_compare.log" 2>&1 || rc=1
  tail -12 "$logs/train_compare.log"
  # The main job's training, shortened: the CNN on two NCCL ranks for two epochs (one rank
  # when there is one GPU and NCCL cannot put two ranks on it).
  ranks=2
  [[ $gpus -lt 2 && ${NCCL_MULTI_RANK_GPU_ENABLE:-0} != 1 ]] && ranks=1
  timeout "$t_distributed" "$build/tools/wickrun/wickrun" --nproc $ranks "$build/examples/mnist" --model cnn --epochs 2 \
    --data "$deps/fashion-mnist" --device auto --quiet --out "$logs/mnist-out" >"$logs/mnist.log" 2>&1 || rc=1
  grep -E "test accuracy|cuda memory|Error|error" "$logs/mnist.log" | head -5
fi
record distributed $rc $s

# --- summary ----------------------------------------------------------------------------
summarize_tests() {
  python3 - "$gtest_json" "$logs/ctest.log" <<'EOF'
import glob, json, os, re, sys
json_dir, ctest_log = sys.argv[1], sys.argv[2]
# A suite runs as several ctest tests (shards: wick_kernels_tests.0 ...), each writing its
# own report (wick_kernels_tests.shard0.json ..., tests/support/main.cpp): one row per binary.
binary_of = lambda name: re.sub(r"\.(shard)?\d+$", "", name)
ctest = {}  # binary -> ctest's verdicts, the first that is not Passed
if os.path.exists(ctest_log):
    for line in open(ctest_log, errors="replace"):
        m = re.search(r"Test\s+#\d+: (\S+) \.*\s*(?:\*+)?([A-Za-z][A-Za-z: ]*?)\s+[\d.]+ sec", line)
        if m:
            name, verdict = binary_of(m.group(1)), m.group(2).strip()
            if ctest.get(name, "Passed") == "Passed":
                ctest[name] = verdict
counts = {}  # binary -> [passed, failed, skipped], or None for an unreadable report
for path in sorted(glob.glob(os.path.join(json_dir, "*.json"))):
    name = binary_of(os.path.splitext(os.path.basename(path))[0])
    c = counts.setdefault(name, [0, 0, 0])
    try:
        doc = json.load(open(path))
    except ValueError:
        counts[name] = None
        continue
    if c is None:
        continue
    for suite in doc.get("testsuites", []):
        for t in suite.get("testsuite", []):
            if t.get("failures"):
                c[1] += 1
            elif t.get("result") == "SKIPPED":
                c[2] += 1
            elif t.get("status", "RUN") == "RUN":
                c[0] += 1
rows = []
for name, c in counts.items():
    if c is None:
        rows.append([name, "?", "?", "?", ctest.get(name, "?") + " (unreadable report)"])
    else:
        rows.append([name] + [str(x) for x in c] + [ctest.get(name, "-")])
for name, verdict in ctest.items():  # tests with no GoogleTest report (or that crashed first)
    if name not in counts:
        rows.append([name, "-", "-", "-", verdict])
if not rows:
    rows.append(["(no tests ran)", "-", "-", "-", "-"])
header = ["test binary", "passed", "failed", "skipped", "ctest"]
w = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
for r in [header, ["-" * x for x in w]] + rows:
    print("  ".join(c.ljust(x) for c, x in zip(r, w)).rstrip())
EOF
}

{
  banner "summary"
  gpu=$(nvidia-smi -L 2>/dev/null | head -1)
  echo "GPU: ${gpu:-none found}; NCCL $(nccl_version)"
  for st in "${steps[@]}"; do
    IFS='|' read -r name status secs <<<"$st"
    printf '%-11s %-12s %4s s\n' "$name" "$status" "$secs"
  done
  echo
  summarize_tests
  echo
  if [[ -s $bench_table ]]; then cat "$bench_table"; else echo "(no benchmark table: see $logs/torch_compare.log)"; fi
  echo
  echo "total: $((SECONDS - start)) s; logs in $logs"
} 2>&1 | tee "$logs/summary.txt"

for st in "${steps[@]}"; do [[ $st == *"|ok|"* ]] || exit 1; done
exit 0
