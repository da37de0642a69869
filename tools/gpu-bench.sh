#!/usr/bin/env bash
# The GPU bundle (issues 20 and 45): benchmark programs built HERE, with nvcc (no GPU
# needed), carried to a GPU machine and run THERE, so that a short lease measures instead of
# configuring and compiling.
#
#   tools/gpu-bench.sh build [BUILD_DIR]   here: builds wick_bench_cuda, wick_gpu_checks and
#                                          wick_bench_gpt_step with nvcc (sm_80 and sm_90) in
#                                          BUILD_DIR (default build, the folder of
#                                          tools/test.sh's nvcc build, whose configuration
#                                          and objects it reuses) and bundles them with the
#                                          shared libraries they load that a GPU machine may
#                                          lack, into .gpubench/ (ignored by git: carry it)
#   tools/gpu-bench.sh run [--smoke] [--pass core|extra|all] [BUNDLE]
#                                          there: runs the bundle (default .gpubench/; or a
#                                          build's bench/ folder holding the programs) and
#                                          writes one report, gpu-bench.md, to $OUT (else
#                                          BUNDLE/out)
#
# `run` has two passes. Every step has its own time limit, and every row goes into the
# report as soon as its case has run, so a step (or the whole command) stopped by a limit
# keeps what ran.
#   core (the default; at most 4 minutes):
#     1. the GPU, driver, clocks and libraries;
#     2. a GPT-2-small training step (bench/gpt_compare.py --gpt2: 12 layers, 12 heads,
#        width 768, context 1024, vocabulary 50257, batch 8, bf16 autocast): wick eager and
#        wick replaying a CUDA graph of the step against PyTorch eager AMP (SDPA, fused
#        AdamW), two rounds alternating process by process, and torch.compile once at the
#        end; tokens/s and the ratios;
#     3. every default case of wick_bench_cuda (elementwise, bias add, reductions, column
#        sums, softmax, layer norm, cross-entropy, the AdamW step, matrix products, SDPA,
#        the host cost of a small op) against PyTorch, one op at a time, wick then PyTorch
#        (bench/torch_compare.py; the SDPA cases also against PyTorch's cuDNN backend);
#   extra (--pass extra or all):
#     4. wick_gpu_checks: the device's cvt conversions against wick's software ones for all
#        2^32 float patterns (wick/tensor/half.h);
#     5. the variants of bench/cuda_variants.cu, each against its default (from the core
#        pass's JSON when it ran in the same command, else run again here);
#     6. the cuBLAS kernels each matrix-product variant ran (cuBLASLt's log);
#     7. with Nsight Compute (ncu --clock-control none, so the GPU keeps the clocks the
#        benchmarks ran at): DRAM throughput, achieved occupancy and issue-slot use of
#        wick's kernels, one launch each; its failure is reported and does not fail the run.
# --smoke runs every step at tiny sizes (WICK_BENCH_SMOKE=1, a GPT of one layer, a large
# stride in step 4): CI runs `--smoke --pass all` against the simulator build's bench/ folder
# (ctest gpu_bench_smoke) to prove the script and the programs work. The exit status is 0
# when every counted step ran.
# Limits (seconds): GPU_BENCH_STEP_SECONDS (default 100) and GPU_BENCH_KERNEL_SECONDS (125).
#
# On the device tool: build here, then
#   run(command="bash tools/gpu-bench.sh run", carry=[".gpubench"], timeout_s=300)
#   run(command="bash tools/gpu-bench.sh run --pass all", carry=[".gpubench"], timeout_s=600)
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
    # The GPT step's model is the example's (examples/gpt), so the examples are configured.
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DWICK_CUDA=ON \
      -DWICK_BUILD_TESTS=OFF -DWICK_BUILD_EXAMPLES=ON -DWICK_BUILD_BENCH=ON "${launcher[@]}"
  fi
  programs=(wick_bench_cuda wick_gpu_checks)
  # The GPT step needs the examples and the distributed package (bench/CMakeLists.txt).
  if grep -qx 'WICK_BUILD_EXAMPLES:BOOL=ON' "$build/CMakeCache.txt" &&
     ! grep -qx 'WICK_DISTRIBUTED:BOOL=OFF' "$build/CMakeCache.txt"; then
    programs+=(wick_bench_gpt_step)
  else
    echo "gpu-bench: $build builds no examples or no distributed package: the bundle has no GPT step" >&2
  fi
  cmake --build "$build" -j "${WICK_JOBS:-$(nproc)}" --target "${programs[@]}"
  rm -rf "$bundle"
  mkdir -p "$bundle/bin" "$bundle/lib"
  # Each program holds every kernel for every dtype, twice (sm_80 and sm_90): about 70 MB,
  # more than the device tool carries (64 MiB in all) for two of them. They travel
  # compressed and `run` unpacks them: xz makes 14 MB of each where gzip made 26 (52.9 MB
  # for the two, too close to the limit for kernels still to come).
  for prog in "${programs[@]}"; do
    if [[ $prog == wick_gpu_checks ]]; then cp "$build/bench/$prog" "$bundle/bin/"; else
      xz -T"${WICK_JOBS:-$(nproc)}" -6 -c "$build/bench/$prog" >"$bundle/bin/$prog.xz"; fi
  done
  cp "$root"/bench/{torch_compare,torch_twins,machine_load,gpt_compare}.py "$root/tests/support/torch_gpt.py" "$bundle/bin/"
  # Every shared library the programs load except the C library's own and NVIDIA's (those
  # come from the GPU machine: its driver, and CUDA's libraries from its toolkit or
  # PyTorch's wheels, which keep the same sonames).
  for prog in "${programs[@]}"; do
    ldd "$build/bench/$prog" | awk '/=> \// {print $1, $3}' | while read -r name path; do
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
  sed -n '2,49p' "$0"
  exit 2
fi

# --- run (there) --------------------------------------------------------------------------
smoke=0
pass=core
while (($#)); do
  case $1 in
    --smoke) smoke=1; shift ;;
    --pass) pass=${2:-}; shift 2 || shift ;;
    *) break ;;
  esac
done
case $pass in core | extra | all) ;; *) echo "gpu-bench: --pass takes core, extra or all" >&2; exit 2 ;; esac
bundle=${1:-$root/.gpubench}
bin=$bundle/bin
if [[ -f $bin/wick_bench_cuda.xz && ! -x $bin/wick_bench_cuda ]]; then
  # Unpacked into a scratch folder (not $OUT: what is there is copied back); by Python's
  # lzma where the machine has no xz.
  unpacked=$(mktemp -d "${TMPDIR:-/tmp}/wick-gpubench.XXXXXX")
  trap 'rm -rf "$unpacked"' EXIT
  for packed in "$bin"/*.xz; do
    prog=$(basename "$packed" .xz)
    xz -dc "$packed" >"$unpacked/$prog" 2>/dev/null ||
      python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)' \
        "$packed" >"$unpacked/$prog"
    chmod +x "$unpacked/$prog"
  done
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
step_seconds=${GPU_BENCH_STEP_SECONDS:-100}
kernel_seconds=${GPU_BENCH_KERNEL_SECONDS:-125}

section() { printf '\n## %s (%d s elapsed)\n\n```\n' "$1" $((SECONDS - start)) >>"$report"; }
end_section() { printf '```\n' >>"$report"; }
status() {  # status NAME RC
  local s=ok
  if [[ $2 == 124 || $2 == 137 ]]; then s="TIMED OUT"; elif [[ $2 != 0 ]]; then s="FAILED ($2)"; fi
  echo "$1: $s" >>"$report"
}

{
  echo "# tools/gpu-bench.sh on $(hostname), $(date -u +%FT%TZ), pass $pass$( ((smoke)) && echo ' (smoke run)')"
} >"$report"

section "environment"
{
  timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem,clocks.max.sm --format=csv 2>&1 ||
    echo "nvidia-smi: not available"
  echo "torch: $(timeout 30 python3 -c 'import torch; print(torch.__version__, torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU")' 2>/dev/null || echo 'not importable')"
  echo "ncu: $(command -v ncu || echo 'not found')"
  echo "libraries the programs resolve:"
  ldd "$bin/wick_bench_cuda" | grep -E 'cublas|cudart|cudnn|nccl|not found' || true
} >>"$report" 2>&1
end_section

if [[ $pass != extra ]]; then
  section "GPT-2-small training step: wick against PyTorch eager AMP and torch.compile (bench/gpt_compare.py)"
  if [[ -x $bin/wick_bench_gpt_step ]]; then
    sizes=()
    ((smoke)) && sizes=(--layers 1 --heads 2 --embd 64 --block 32 --vocab 300 --batch 2 --steps 1 --warmup 1)
    # The budget leaves the script time to write its summary inside the step's limit.
    timeout $((step_seconds + 10)) python3 "$scripts/gpt_compare.py" --gpt2 --wick-bin "$bin/wick_bench_gpt_step" \
      --rounds 2 --budget "$step_seconds" "${sizes[@]}" --wick-config "graphs=--cuda-graphs 1" \
      --json-out "$out/gpt_step.jsonl" >>"$report" 2>"$out/gpt_compare.log"
    status "gpt step" $? >>"$report"
  else
    echo "skipped: the bundle has no wick_bench_gpt_step" >>"$report"
  fi
  end_section

  section "kernels against PyTorch, default variants, one op at a time (wick_bench_cuda, bench/torch_compare.py)"
  min_time=0.05
  ((smoke)) && min_time=0
  # Each case's row goes into the report as soon as PyTorch has run it; the aligned table
  # goes to table.txt, and the lines after it (SDPA against cuDNN, targets met) here.
  timeout "$kernel_seconds" python3 "$scripts/torch_compare.py" --bench "$bin/wick_bench_cuda" --min-time $min_time \
    --filter=-variant --rows-out "$report" --json-out "$out/wick_bench_cuda.json" --table-out "$out/table.txt" \
    >"$out/torch_compare.out" 2>"$out/torch_compare.log"
  rc=$?
  awk '/^scaled dot-product attention/ {f = 1} f || /^targets met/' "$out/torch_compare.out" >>"$report"
  status "torch_compare" $rc >>"$report"
  end_section
fi

if [[ $pass != core ]]; then
  section "conversions: cvt against the software path (wick_gpu_checks)"
  stride=1
  ((smoke)) && stride=65537
  timeout 60 "$bin/wick_gpu_checks" --stride $stride >>"$report" 2>&1
  status "wick_gpu_checks" $? >>"$report"
  end_section

  section "variants against their defaults (bench/cuda_variants.cu, bench/torch_compare.py --no-torch)"
  min_time=0.05
  ((smoke)) && min_time=0
  if [[ -f $out/wick_bench_cuda.json ]]; then
    filter=(--filter=variant --baseline-json "$out/wick_bench_cuda.json")
  else
    filter=("--filter=variant|^cuda/(copy|add|mul|gelu|sum_rows|sum_cols|sum_all|softmax|matmul|matmul_tf32)/")
  fi
  timeout 150 python3 "$scripts/torch_compare.py" --bench "$bin/wick_bench_cuda" --min-time $min_time --no-torch \
    "${filter[@]}" --rows-out "$report" --json-out "$out/wick_bench_cuda_variants.json" \
    --table-out "$out/variants_table.txt" >"$out/variants.out" 2>"$out/variants.log"
  rc=$?
  grep '^targets met' "$out/variants.out" >>"$report"
  status "variants" $rc >>"$report"
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
    timeout 100 ncu --clock-control none --csv --metrics "$metrics" --kernel-name-base function \
      -k 'regex:contiguous_kernel|one_pack_kernel|strided_kernel|reduce_|softmax_|norm|cross_entropy|fused_kernel|flash|gemm|sm90' \
      --launch-skip 1 --launch-count 60 "$bin/wick_bench_cuda" --benchmark_min_time=0 >"$out/ncu.csv" 2>"$out/ncu.log"
    rc=$?
    python3 - "$out/ncu.csv" >>"$report" 2>&1 <<'EOF'
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
    # A profiler that cannot attach (permissions, a driver it does not know) says nothing
    # about wick: shown, not counted.
    if ((rc == 0)); then echo "ncu: ok" >>"$report"; else echo "ncu: did not finish (status $rc; see ncu.log), not counted" >>"$report"; fi
  else
    echo "skipped: $( ((smoke)) && echo 'smoke run' || echo 'ncu not found')" >>"$report"
  fi
  end_section
fi

echo >>"$report"
echo "total: $((SECONDS - start)) s" >>"$report"
cat "$report"
! grep -qE ': (FAILED|TIMED OUT)' "$report"
