#!/usr/bin/env bash
# The five-minute GPU bundle (issue 20): benchmark programs built HERE, with nvcc for sm_90
# (no GPU needed), carried to a GPU machine and run THERE, so that a short lease measures
# instead of configuring and compiling.
#
#   tools/gpu-bench.sh build [BUILD_DIR]   here: builds wick_bench_cuda and wick_gpu_checks
#                                          with nvcc (sm_80 and sm_90 machine code) in
#                                          BUILD_DIR (default build, the folder of
#                                          tools/test.sh's nvcc build, whose configuration
#                                          and objects it reuses) and bundles them with the shared
#                                          libraries they load that a GPU machine may lack,
#                                          into .gpubench/ (ignored by git: carry it)
#   tools/gpu-bench.sh run [--smoke] [BUNDLE]
#                                          there: runs the bundle (default .gpubench/; or a
#                                          build's bench/ folder holding the two programs)
#                                          and writes one report, gpu-bench.md, to $OUT
#                                          (else BUNDLE/out)
#
# What `run` does, each step under its own time limit so the whole stays under 5 minutes:
#   1. the GPU, driver, clocks and libraries;
#   2. wick_gpu_checks: the device's cvt conversions against wick's software ones for all
#      2^32 float patterns (wick/tensor/half.h);
#   3. wick_bench_cuda, every case: the kernel table at its default variants, the old and
#      new variants of each change side by side (bench/cuda_variants.cu: elementwise loads,
#      unrolling and rounding; the reductions' unit-stride paths; softmax in registers; every
#      cuBLAS entry point with reduced-precision reductions allowed or not), timed against
#      PyTorch on the same cases when PyTorch is there (bench/torch_compare.py: one table in
#      bench/README.md's format, with each variant's time over its default's); with the
#      attention cases (bench/cuda_attention.cpp: SDPA forward and forward + backward,
#      bfloat16/float16, causal or not) also against PyTorch's flash and cuDNN backends;
#   4. the cuBLAS kernels each matrix-product variant ran (cuBLASLt's log);
#   5. with Nsight Compute (ncu): DRAM throughput, achieved occupancy and issue-slot use of
#      wick's kernels, one launch each.
# --smoke runs every step at tiny sizes (WICK_BENCH_SMOKE=1) with a large stride in step 2:
# CI runs it against the simulator build's bench/ folder (ctest gpu_bench_smoke) to prove
# the script and the programs work. The exit status is 0 when every step ran.
#
# On the device tool: build here, then
#   run(command="bash tools/gpu-bench.sh run", carry=[".gpubench"], timeout_s=420)
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
root=$PWD
mode=${1:-}
shift || true

# --- build (here) -------------------------------------------------------------------------
if [[ $mode == build ]]; then
  set -e
  build=${1:-build}
  bundle=$root/.gpubench
  launcher=()
  if command -v ccache >/dev/null 2>&1; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)  # not for nvcc: see tools/test.sh
  fi
  if grep -qx 'WICK_CUDA:STRING=ON' "$build/CMakeCache.txt" 2>/dev/null; then
    # An nvcc build folder already (tools/test.sh's, where CI makes the bundle): its own
    # configuration is kept, so nothing it built compiles again.
    cmake -S "$root" -B "$build" -DWICK_BUILD_BENCH=ON >/dev/null
  else
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DWICK_CUDA=ON \
      -DWICK_BUILD_TESTS=OFF -DWICK_BUILD_EXAMPLES=OFF -DWICK_BUILD_BENCH=ON "${launcher[@]}"
  fi
  cmake --build "$build" -j "${WICK_JOBS:-$(nproc)}" --target wick_bench_cuda wick_gpu_checks
  rm -rf "$bundle"
  mkdir -p "$bundle/bin" "$bundle/lib"
  # The benchmark program is about 80 MB (machine code for every kernel and dtype, twice:
  # sm_80 and sm_90), more than the device tool carries (64 MiB in all): it travels
  # compressed (about 20 MB) and `run` unpacks it.
  gzip -c "$build/bench/wick_bench_cuda" >"$bundle/bin/wick_bench_cuda.gz"
  cp "$build/bench/wick_gpu_checks" "$bundle/bin/"
  cp "$root/bench/torch_compare.py" "$root/bench/machine_load.py" "$bundle/bin/"
  # Every shared library the programs load except the C library's own and NVIDIA's (those
  # come from the GPU machine: its driver, and CUDA's libraries from its toolkit or
  # PyTorch's wheels, which keep the same sonames).
  for prog in "$build/bench/wick_bench_cuda" "$bundle/bin/wick_gpu_checks"; do
    ldd "$prog" | awk '/=> \// {print $1, $3}' | while read -r name path; do
      case $name in
        libc.so* | libm.so* | libpthread.so* | libdl.so* | librt.so* | ld-linux*) ;;
        libcuda.so* | libcudart.so* | libcublas*.so* | libcudnn*.so* | libnccl.so* | libnvrtc*.so* | libnvJitLink*.so*) ;;
        *) cp -L "$path" "$bundle/lib/$name" ;;
      esac
    done
  done
  du -sh "$bundle"
  # The device tool carries 64 MiB in all: a bundle over it would not reach the GPU.
  bytes=$(du -sb "$bundle" | cut -f1)
  if ((bytes > 64 * 1024 * 1024)); then
    echo "gpu-bench: the bundle is $bytes bytes, over the device tool's 64 MiB carry limit" >&2
    exit 1
  fi
  echo "bundle ready: carry .gpubench and run 'bash tools/gpu-bench.sh run' on the GPU machine"
  exit 0
fi

if [[ $mode != run ]]; then
  sed -n '2,30p' "$0"
  exit 2
fi

# --- run (there) --------------------------------------------------------------------------
smoke=0
if [[ ${1:-} == --smoke ]]; then smoke=1; shift; fi
bundle=${1:-$root/.gpubench}
bin=$bundle/bin
if [[ -f $bin/wick_bench_cuda.gz && ! -x $bin/wick_bench_cuda ]]; then
  # Unpacked into a scratch folder (not $OUT: what is there is copied back).
  unpacked=$(mktemp -d "${TMPDIR:-/tmp}/wick-gpubench.XXXXXX")
  trap 'rm -rf "$unpacked"' EXIT
  gzip -dc "$bin/wick_bench_cuda.gz" >"$unpacked/wick_bench_cuda" && chmod +x "$unpacked/wick_bench_cuda"
  cp "$bin/wick_gpu_checks" "$bin"/*.py "$unpacked/"
  bin=$unpacked
fi
[[ -x $bin/wick_bench_cuda ]] || bin=$bundle  # a build's bench/ folder
scripts=$bin
[[ -f $scripts/torch_compare.py ]] || scripts=$root/bench
out=${OUT:-$bundle/out}
mkdir -p "$out"
report=$out/gpu-bench.md
start=$SECONDS
export LD_LIBRARY_PATH=$bundle/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# CUDA's libraries from PyTorch's wheels where the machine has no toolkit copy of them.
site=$(python3 -c 'import nvidia, os; print(" ".join(nvidia.__path__))' 2>/dev/null) || site=
for d in $site; do
  for lib in "$d"/*/lib; do [[ -d $lib ]] && LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$lib; done
done
export LD_LIBRARY_PATH
if ((smoke)); then export WICK_BENCH_SMOKE=1; fi

section() { printf '\n## %s (%d s elapsed)\n\n```\n' "$1" $((SECONDS - start)) >>"$report"; }
end_section() { printf '```\n' >>"$report"; }
status() {  # status NAME RC
  local s=ok
  if [[ $2 == 124 || $2 == 137 ]]; then s="TIMED OUT"; elif [[ $2 != 0 ]]; then s="FAILED ($2)"; fi
  echo "$1: $s" >>"$report"
}

{
  echo "# tools/gpu-bench.sh on $(hostname), $(date -u +%FT%TZ)$( ((smoke)) && echo ' (smoke run)')"
} >"$report"

section "environment"
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem,clocks.max.sm --format=csv 2>&1 ||
    echo "nvidia-smi: not available"
  echo "torch: $(python3 -c 'import torch; print(torch.__version__, torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU")' 2>/dev/null || echo 'not importable')"
  echo "ncu: $(command -v ncu || echo 'not found')"
  echo "libraries the programs resolve:"
  ldd "$bin/wick_bench_cuda" | grep -E 'cublas|cudart|cudnn|nccl|not found' || true
} >>"$report" 2>&1
end_section

section "conversions: cvt against the software path (wick_gpu_checks)"
stride=1
((smoke)) && stride=65537
timeout 60 "$bin/wick_gpu_checks" --stride $stride >>"$report" 2>&1
rc=$?
status "wick_gpu_checks" $rc >>"$report"
end_section

section "kernels against PyTorch, every variant (wick_bench_cuda, bench/torch_compare.py)"
min_time=0.05
((smoke)) && min_time=0
timeout 240 python3 "$scripts/torch_compare.py" --bench "$bin/wick_bench_cuda" --min-time $min_time \
  --json-out "$out/wick_bench_cuda.json" --table-out "$out/table.txt" >>"$report" 2>"$out/torch_compare.log"
rc=$?
status "torch_compare" $rc >>"$report"
end_section

section "cuBLAS kernels chosen by the matrix-product variants (cuBLASLt log)"
CUBLASLT_LOG_LEVEL=2 CUBLASLT_LOG_FILE=$out/cublaslt.log timeout 60 "$bin/wick_bench_cuda" \
  --benchmark_filter='variant/matmul' --benchmark_min_time=0 >/dev/null 2>&1
rc=$?
if [[ -f $out/cublaslt.log ]]; then
  grep -oE '(algo|kernel|Kernel|tile|Tile)[^,;]*' "$out/cublaslt.log" | sort | uniq -c | sort -rn | head -40 >>"$report"
fi
status "cublaslt log" $rc >>"$report"
end_section

section "Nsight Compute: one launch of each of wick's kernels"
if command -v ncu >/dev/null 2>&1 && ((!smoke)); then
  metrics=dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,sm__inst_issued.avg.pct_of_peak_sustained_active,gpu__time_duration.sum
  timeout 100 ncu --csv --metrics "$metrics" --kernel-name-base function \
    -k 'regex:contiguous_kernel|one_pack_kernel|reduce_|softmax_|gemm|sm90' --launch-skip 1 --launch-count 60 \
    "$bin/wick_bench_cuda" --benchmark_min_time=0 >"$out/ncu.csv" 2>"$out/ncu.log"
  rc=$?
  python3 - "$out/ncu.csv" >>"$report" <<'EOF'
import csv, sys
rows = {}
lines = [l for l in open(sys.argv[1]) if l.startswith('"')]
for r in csv.DictReader(lines):
    name = r.get("Kernel Name", "?")[:90]
    rows.setdefault(name, {})[r.get("Metric Name")] = r.get("Metric Value")
print("%-90s %10s %10s %10s %12s" % ("kernel", "dram %", "occup %", "issue %", "time"))
for name, m in rows.items():
    print("%-90s %10s %10s %10s %12s" % (name, m.get("dram__throughput.avg.pct_of_peak_sustained_elapsed", "-"),
          m.get("sm__warps_active.avg.pct_of_peak_sustained_active", "-"),
          m.get("sm__inst_issued.avg.pct_of_peak_sustained_active", "-"), m.get("gpu__time_duration.sum", "-")))
EOF
  status "ncu" $rc >>"$report"
else
  echo "skipped: $( ((smoke)) && echo 'smoke run' || echo 'ncu not found')" >>"$report"
fi
end_section

echo >>"$report"
echo "total: $((SECONDS - start)) s" >>"$report"
cat "$report"
! grep -qE ': (FAILED|TIMED OUT)' "$report"
