#!/usr/bin/env python3
"""Runs wick's benchmarks and prints one table that judges them against their targets.

GPU (default): runs wick_bench_cuda --benchmark_format=json one op at a time (every case of
the op in one process), times the same ops, sizes and dtypes in PyTorch on the same GPU
right after (bench/torch_twins.py: torch.cuda.Event around batches of calls after a
warm-up, median over batches), appends each case's row to --rows-out, and at the end prints:
op, size, dtype, wick time, torch time, wick/torch, wick GB/s or TFLOP/s, % of wick's
device-to-device copy bandwidth, target, met.

CPU (--cpu): runs wick_bench_cpu and judges it against the baselines measured in the same
run (multi-threaded memcpy, Eigen's GEMM called directly) and against PyTorch on the CPU:
the same ops, sizes and layouts with torch.set_num_threads equal to wick's thread count,
timed by wall clock (median over batches of calls after a warm-up). With --repetitions N
the wick program and the PyTorch pass alternate N times (wick, torch, wick, ...) and each
side's median is shown; every pass records the load average and the CPU time that other
processes used while it ran, so a noisy comparison shows as one. Without PyTorch the torch
columns stay empty.

Each wick benchmark labels itself "op=... dtype=... shape=AxB..." (bench/bench_support.h),
so the cases are defined once, in C++, and rebuilt here from the labels.

  python3 bench/torch_compare.py --bench build/bench/wick_bench_cuda
  python3 bench/torch_compare.py --cpu --bench build/bench/wick_bench_cpu --min-time 0.2
  python3 bench/torch_compare.py --json saved.json       # judge a saved wick run
  python3 bench/torch_compare.py --filter=-variant --rows-out rows.md   # the default variants only

GPU cases may carry a variant= label field (bench/cuda_variants.cu): those rows show their
time over the default variant's and are not judged against the targets.

Exit status: 0 when every case ran (met targets or not), 2 when some case failed to run.
"""
import argparse
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import time

from machine_load import MachineLoad, cpu_model
from torch_twins import torch_cases, torch_gpu_seconds, torch_host_seconds

# Targets (bench/README.md explains where they come from; issue 20 set the GPU ones).
GPU_ELEMENTWISE_OPS = ("add", "mul", "gelu")
GPU_ELEMENTWISE_TARGET = 0.95   # of D2D copy bandwidth, and never slower than torch
GPU_REDUCTION_OPS = ("sum_rows", "sum_cols", "sum_all")
GPU_REDUCTION_TARGET = 0.85     # of D2D copy bandwidth, and never slower than torch
GPU_SOFTMAX_TARGET = 0.80       # of copy bandwidth, every case
GPU_LAYER_NORM_TARGET = 0.80    # forward + backward, of copy bandwidth, and never slower than torch (issue 45)
GPU_CROSS_ENTROPY_TARGET = 0.80  # forward + backward, of copy bandwidth, and never slower than torch (issue 45)
GPU_BIAS_ADD_TARGET = 0.90      # of the same-shape contiguous add's bandwidth, and never slower than torch (issue 45)
GPU_MATMUL_SLACK = 1.02         # wick time <= 1.02 x torch time
GPU_HOST_TARGET = 0.60          # wick host time per small op <= 60% of torch eager's
# Attention (issue 44): forward + backward, causal bfloat16 at T >= 1024, no slower than
# PyTorch's flash backend; the forward at >= 50% of the dense bfloat16 tensor-core peak
# (H100/H200 SXM: 989 TFLOP/s).
GPU_SDPA_SLACK = 1.0
GPU_DENSE_BF16_PEAK = 989e12
GPU_SDPA_PEAK_SHARE = 0.50
SDPA_OPS = ("sdpa_fwd", "sdpa_fwd_causal", "sdpa_fwdbwd", "sdpa_fwdbwd_causal")
CPU_ELEMENTWISE_TARGET = 0.60   # of the best memcpy bandwidth
CPU_MATMUL_TARGET = 1.00        # of Eigen's FLOP/s at n = 1024
CPU_TRANSPOSED_LIMIT = 3.0      # transposed time <= 3 x contiguous time


# ---------------------------------------------------------------------------------------
# wick's JSON


def find_bench(name):
    """./NAME, else the newest build*/bench/NAME under the repository root."""
    if os.path.exists(name):
        return "./" + name
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    found = glob.glob(os.path.join(root, "build*", "bench", name))
    return max(found, key=os.path.getmtime) if found else None


def run_wick(path, min_time, repetitions, bench_filter):
    """wick's JSON. When the program dies (a crashing kernel), each case is run on its own so
    one crash costs one row, not the table."""
    base = [path, "--benchmark_format=json", "--benchmark_min_time=%g" % min_time]
    if repetitions > 1:
        base += ["--benchmark_repetitions=%d" % repetitions, "--benchmark_report_aggregates_only=true"]

    def run(name_filter):
        cmd = base + (["--benchmark_filter=" + name_filter] if name_filter else [])
        print("running: " + " ".join(cmd), file=sys.stderr, flush=True)
        return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    proc = run(bench_filter)
    if proc.returncode == 0 and proc.stdout.strip():
        return json.loads(proc.stdout)
    sys.stderr.write(proc.stderr[-4000:])
    print("%s exited with status %d; running each case alone" % (path, proc.returncode), file=sys.stderr)
    listed = subprocess.run([path, "--benchmark_list_tests"] + (["--benchmark_filter=" + bench_filter]
                            if bench_filter else []), stdout=subprocess.PIPE, text=True)
    doc = {"context": {}, "benchmarks": []}
    for name in listed.stdout.split():
        proc = run("^%s$" % posix_escape(name))
        if proc.returncode == 0 and proc.stdout.strip():
            one = json.loads(proc.stdout)
            doc["context"] = one.get("context", {})
            doc["benchmarks"] += one.get("benchmarks", [])
        else:
            last = (proc.stderr.strip().splitlines() or ["no message"])[-1]
            doc["benchmarks"].append({"name": name, "run_type": "iteration", "error_occurred": True,
                                      "error_message": "crashed (status %d): %s" % (proc.returncode, last)})
    return doc


UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


class Case:
    """One wick benchmark result, with the fields of its label."""

    def __init__(self, entry):
        self.name = entry["name"]
        fields = dict(kv.split("=", 1) for kv in entry.get("label", "").split() if "=" in kv)
        # Without a label (a case that crashed), the name says "device/op/dtype/size/...".
        parts = self.name.split("/") + ["?"] * 4
        self.op = fields.get("op", parts[1])
        self.dtype = fields.get("dtype", parts[2])
        self.size = fields.get("shape", parts[3])
        try:  # a crashed case's size comes from its name, which may be "8192x768+768"
            self.shape = [int(d) for d in self.size.split("x")]
        except ValueError:
            self.shape = []
        self.fields = fields
        # A kernel variant (bench/cuda_variants.cu) measured against the default one of the
        # same op, dtype and shape; "" for the default.
        self.variant = fields.get("variant", "")
        self.key = (self.op, self.dtype, self.size, fields.get("tf32", "0"))
        self.error = entry.get("error_message") if entry.get("error_occurred") else None
        self.seconds = entry.get("real_time", 0.0) * UNIT_SECONDS[entry.get("time_unit", "ns")]
        self.bytes_per_second = entry.get("bytes_per_second")
        self.flops = entry.get("FLOP/s")
        self.batch = int(entry.get("batch", 1))
        self.iterations = int(entry.get("iterations", 0))
        self.threads = int(entry.get("omp_threads", 0))


def load_cases(doc):
    """One Case per benchmark: the median over repetitions when the run has them."""
    entries = doc.get("benchmarks", [])
    medians = {e.get("run_name"): e for e in entries if e.get("aggregate_name") == "median"}
    cases, seen = [], set()
    for e in entries:
        key = e.get("run_name", e["name"])
        if key in seen or (e.get("run_type") == "aggregate" and e.get("aggregate_name") != "median"):
            continue
        seen.add(key)
        chosen = dict(medians.get(key, e))
        chosen["name"] = key
        cases.append(Case(chosen))
    return cases


# ---------------------------------------------------------------------------------------
# formatting


def fmt_time(seconds):
    if seconds is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return "%.3g %s" % (seconds / scale, unit)
    return "%.0f ns" % (seconds * 1e9)


def fmt_rate(case):
    if case.error:
        return "-"
    if case.flops:
        return "%.1f TFLOP/s" % (case.flops / 1e12) if case.flops >= 1e12 else "%.1f GFLOP/s" % (case.flops / 1e9)
    if case.bytes_per_second:
        return "%.1f GB/s" % (case.bytes_per_second / 1e9)
    return "-"


def fmt_pct(x):
    return "-" if x is None else "%.0f%%" % (100 * x)


def fmt_ratio(x):
    return "-" if x is None else "%.2f" % x


def print_table(header, rows, out):
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    line = lambda r: "  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip()
    out.write(line(header) + "\n" + line(["-" * w for w in widths]) + "\n")
    for r in rows:
        out.write(line(r) + "\n")


def met(ok):
    return "-" if ok is None else ("yes" if ok else "NO")


# ---------------------------------------------------------------------------------------
# GPU mode


def time_torch(cases, result=None):
    """{case key: torch seconds}, or a reason string when PyTorch cannot run. Keys already in
    `result` (a dict filled by earlier calls) are not timed again."""
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "torch sees no CUDA device"
    makers = torch_cases("cuda")
    result = {} if result is None else result
    for case in cases:
        if case.key in result:  # variants share their default case's PyTorch time
            continue
        try:
            if case.op == "host_add":
                result[case.key] = torch_host_seconds(torch)
                continue
            if case.op in SDPA_OPS:
                result[case.key] = torch_gpu_seconds(torch, makers["sdpa_flash"](case, torch), max(case.batch, 1),
                                                     samples=case.iterations)
                continue
            if case.op not in makers:
                continue
            torch.backends.cuda.matmul.allow_tf32 = case.fields.get("tf32") == "1"
            result[case.key] = torch_gpu_seconds(torch, makers[case.op](case, torch), max(case.batch, 1),
                                                  samples=case.iterations)
        except Exception as e:  # one failing case must not hide the others
            print("torch: %s failed: %s" % (case.name, e), file=sys.stderr)
        finally:
            torch.cuda.empty_cache()
    torch.backends.cuda.matmul.allow_tf32 = False
    return result


def time_torch_sdpa_cudnn(cases):
    """{case key: seconds} of PyTorch's SDPA with its cuDNN backend for the attention cases
    (empty where torch or the backend is missing: a case it refuses is left out)."""
    try:
        import torch
        if not torch.cuda.is_available():
            return {}
    except ImportError:
        return {}
    makers = torch_cases("cuda")
    result = {}
    for case in cases:
        if case.op not in SDPA_OPS or case.error or case.key in result:
            continue
        try:
            result[case.key] = torch_gpu_seconds(torch, makers["sdpa_cudnn"](case, torch), max(case.batch, 1),
                                                 samples=case.iterations)
        except Exception as e:
            print("torch cuDNN SDPA: %s: %s" % (case.name, e), file=sys.stderr)
        finally:
            torch.cuda.empty_cache()
    return result


def op_groups(names):
    """Case names in groups of one op ("cuda/<op>/..." or "cuda/variant/<op>/..."), the copy
    baseline's group first and the others in the program's order."""
    groups = {}
    for name in names:
        parts = name.split("/")
        op = "/".join(parts[1:3]) if parts[1:2] == ["variant"] else "/".join(parts[1:2]) or name
        groups.setdefault(op, []).append(name)
    return [groups[op] for op in sorted(groups, key=lambda op: op != "copy")]


def posix_escape(name):
    """A case name as a literal in Google Benchmark's filter (a POSIX extended regex, which
    refuses the escapes re.escape adds before '-' and the like)."""
    return re.sub(r"([.^$*+?()\[\]{}|\\])", r"\\\1", name)


def markdown_row(cells):
    return "| " + " | ".join(str(c) for c in cells) + " |\n"


def interleaved_gpu(path, min_time, repetitions, bench_filter, with_torch, reference, rows_out, json_out):
    """wick and PyTorch in alternation, one op at a time: every case of an op in one wick
    process (a process per case would spend more on starting CUDA than on some cases), then
    PyTorch on the same cases one by one, so both sides of a case run seconds apart (clocks
    and temperature alike). Each case's row is appended to rows_out as soon as PyTorch has
    timed it, and the JSON so far to json_out after each op: a run stopped by a time limit
    keeps what ran. Returns (wick's JSON of every case, PyTorch's times or why none, cuDNN
    SDPA times)."""
    listed = subprocess.run([path, "--benchmark_list_tests"] + (["--benchmark_filter=" + bench_filter]
                            if bench_filter else []), stdout=subprocess.PIPE, text=True)
    doc = {"context": {}, "benchmarks": []}
    torch_times = {} if with_torch else "not run (--no-torch)"
    cudnn = {}
    rows_file = open(rows_out, "a", buffering=1) if rows_out else None
    header_written = False
    done = []  # the cases PyTorch has had its turn on, in order
    for group in op_groups(listed.stdout.split()):
        part = run_wick(path, min_time, repetitions, "^(%s)$" % "|".join(posix_escape(n) for n in group))
        doc["context"] = doc["context"] or part.get("context", {})
        doc["benchmarks"] += part.get("benchmarks", [])
        if json_out:
            with open(json_out, "w") as f:
                json.dump(doc, f, indent=1)
        for case in load_cases(part):
            done.append(case)
            if isinstance(torch_times, dict):
                reason = time_torch([case], torch_times)
                if isinstance(reason, str):
                    torch_times = reason
                else:
                    cudnn.update(time_torch_sdpa_cudnn([case]))
            if rows_file:
                header, rows = gpu_table(done, torch_times, reference)
                if not header_written:
                    rows_file.write(markdown_row(header) + markdown_row(["---"] * len(header)))
                    header_written = True
                rows_file.write(markdown_row(rows[-1]))
    if rows_file:
        rows_file.close()
    return doc, torch_times, cudnn


def sdpa_table(cases, flash_times, cudnn_times):
    """The attention cases against both of PyTorch's fused backends, with TFLOP/s."""
    rows = []
    for c in cases:
        if c.op not in SDPA_OPS or c.variant:
            continue
        flash = flash_times.get(c.key) if isinstance(flash_times, dict) else None
        cudnn = cudnn_times.get(c.key)
        rows.append([c.op, c.size, c.dtype, "ERROR" if c.error else fmt_time(c.seconds), fmt_time(flash),
                     fmt_ratio(c.seconds / flash if flash and not c.error else None), fmt_time(cudnn),
                     fmt_ratio(c.seconds / cudnn if cudnn and not c.error else None),
                     "-" if c.error or not c.flops else "%.0f" % (c.flops / 1e12)])
    header = ["op", "B x H x T x d", "dtype", "wick", "torch flash", "wick/flash", "torch cuDNN", "wick/cuDNN",
              "wick TFLOP/s"]
    return header, rows


def gpu_table(cases, torch_times, reference=()):
    """Targets are judged on the default variants; a variant's row shows its time over the
    default's (vs default) so that one run says what each change is worth. `reference`: cases
    of an earlier run of the same lease (--baseline-json) that stand in for the copy baseline,
    the same-shape add and the defaults where `cases` lack them; they get no rows."""
    pool = list(reference) + list(cases)
    copy = next((c for c in reversed(pool) if c.op == "copy" and not c.error and c.bytes_per_second), None)
    copy_bw = copy.bytes_per_second if copy else None
    defaults = {c.key: c for c in pool if not c.variant and not c.error}
    rows = []
    for c in cases:
        t = torch_times.get(c.key) if isinstance(torch_times, dict) else None
        ratio = c.seconds / t if (t and not c.error) else None
        frac = c.bytes_per_second / copy_bw if (copy_bw and c.bytes_per_second and not c.error) else None
        base = defaults.get(c.key) if c.variant else None
        vs_default = c.seconds / base.seconds if (base and base.seconds and not c.error) else None
        target, ok = "-", None
        if c.variant:
            target = "info: variant"
        elif c.op == "copy":
            target = "baseline"
        elif c.op in GPU_ELEMENTWISE_OPS or c.op in GPU_REDUCTION_OPS:
            goal = GPU_ELEMENTWISE_TARGET if c.op in GPU_ELEMENTWISE_OPS else GPU_REDUCTION_TARGET
            target = ">= %d%% copy, <= torch" % (100 * goal)
            if frac is not None and ratio is not None:
                ok = frac >= goal and ratio <= 1.0
        elif c.op == "bias_add":
            # The broadcast over rows against the same-shape add of the same run.
            same = next((d for d in reversed(pool) if d.op == "add" and d.dtype == c.dtype and d.size == c.size
                         and not d.variant and not d.error and d.bytes_per_second), None)
            target = ">= %d%% of the same-shape add, <= torch" % (100 * GPU_BIAS_ADD_TARGET)
            if same and c.bytes_per_second and ratio is not None:
                ok = c.bytes_per_second >= GPU_BIAS_ADD_TARGET * same.bytes_per_second and ratio <= 1.0
        elif c.op in ("layer_norm_fwdbwd", "layer_norm_fwd", "layer_norm_bwd"):
            target = ">= %d%% copy, <= torch" % (100 * GPU_LAYER_NORM_TARGET)
            if frac is not None and ratio is not None:
                ok = frac >= GPU_LAYER_NORM_TARGET and ratio <= 1.0
        elif c.op == "cross_entropy_fwdbwd":
            target = ">= %d%% copy, <= torch" % (100 * GPU_CROSS_ENTROPY_TARGET)
            if frac is not None and ratio is not None:
                ok = frac >= GPU_CROSS_ENTROPY_TARGET and ratio <= 1.0
        elif c.op == "softmax":
            target = ">= %d%% copy" % (100 * GPU_SOFTMAX_TARGET)
            if frac is not None:
                ok = frac >= GPU_SOFTMAX_TARGET
        elif c.op == "matmul":
            target = "<= %.2f x torch" % GPU_MATMUL_SLACK
            if ratio is not None:
                ok = ratio <= GPU_MATMUL_SLACK
        elif c.op == "sdpa_fwdbwd_causal" and c.dtype == "bfloat16" and len(c.shape) > 2 and c.shape[2] >= 1024:
            target = "<= %.2f x torch flash" % GPU_SDPA_SLACK
            if ratio is not None:
                ok = ratio <= GPU_SDPA_SLACK
        elif c.op in ("sdpa_fwd", "sdpa_fwd_causal") and c.dtype == "bfloat16":
            target = ">= %d%% of bf16 peak" % (100 * GPU_SDPA_PEAK_SHARE)
            if c.flops:
                ok = c.flops >= GPU_SDPA_PEAK_SHARE * GPU_DENSE_BF16_PEAK
        elif c.op == "host_add":
            target = "<= %.2f x torch" % GPU_HOST_TARGET
            if ratio is not None:
                ok = ratio <= GPU_HOST_TARGET
        dtype = c.dtype + (" tf32" if c.fields.get("tf32") == "1" else "")
        variant = c.variant or "default"
        if c.error:
            rows.append([c.op, c.size, dtype, variant, "ERROR", fmt_time(t), "-", "-", "-", "-", target,
                         "ERROR: " + c.error[:60]])
        else:
            rows.append([c.op, c.size, dtype, variant, fmt_time(c.seconds), fmt_time(t), fmt_ratio(ratio),
                         fmt_ratio(vs_default), fmt_rate(c), fmt_pct(frac), target, met(ok)])
    header = ["op", "size", "dtype", "variant", "wick", "torch", "wick/torch", "vs default", "wick rate",
              "% copy bw", "target", "met"]
    return header, rows


# ---------------------------------------------------------------------------------------
# CPU mode


# wick ops without a PyTorch counterpart to time: baselines, and the allocator experiment.
CPU_TORCH_SKIP = ("memcpy", "matmul_eigen")


def torch_cpu_seconds(fn, min_time, batch_seconds=0.05):
    """Median wall time per call over batches of about batch_seconds, after a warm-up;
    min_time seconds of batches in all (at least 5)."""
    for _ in range(3):
        fn()
    t0 = time.perf_counter()
    fn()
    once = max(time.perf_counter() - t0, 1e-7)
    calls = max(1, int(batch_seconds / once))
    times = []
    start = time.perf_counter()
    while len(times) < 5 or time.perf_counter() - start < min_time:
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - t0) / calls)
    return statistics.median(times)


def time_torch_cpu(cases, min_time):
    """{case name: torch seconds} on the CPU with wick's thread count, or a reason string."""
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    makers = torch_cases("cpu")
    result = {}
    for case in cases:
        if case.op in CPU_TORCH_SKIP or "alloc" in case.fields or case.op not in makers or case.error:
            continue
        try:
            torch.set_num_threads(case.threads or os.cpu_count())
            result[case.name] = torch_cpu_seconds(makers[case.op](case, torch), min_time)
        except Exception as e:  # one failing case must not hide the others
            print("torch: %s failed: %s" % (case.name, e), file=sys.stderr)
    return result


def median_doc(docs):
    """One wick JSON from several runs: per case, the run with the median time (so the
    rates beside it stay consistent)."""
    by_name = {}
    for doc in docs:
        for e in doc.get("benchmarks", []):
            by_name.setdefault(e["name"], []).append(e)
    entries = []
    for name, runs in by_name.items():
        ok = sorted((e for e in runs if not e.get("error_occurred")), key=lambda e: e.get("real_time", 0.0))
        entries.append(ok[(len(ok) - 1) // 2] if ok else runs[0])
    return {"context": docs[-1].get("context", {}), "benchmarks": entries}


def interleaved_cpu(path, min_time, passes, bench_filter, with_torch):
    """wick and PyTorch in alternation: (median wick doc, median torch times or a reason,
    one (pass, side, load, others) record per side and pass)."""
    docs, torch_runs, loads = [], [], []
    for i in range(1, max(passes, 1) + 1):
        span = MachineLoad()
        docs.append(run_wick(path, min_time, 1, bench_filter))
        loads.append((i, "wick") + span.finish())
        if not with_torch:
            continue
        span = MachineLoad()
        times = time_torch_cpu(load_cases(docs[-1]), min_time)
        loads.append((i, "torch") + span.finish())
        if isinstance(times, str):
            return median_doc(docs), times, loads
        torch_runs.append(times)
    if not with_torch:
        return median_doc(docs), "not run (--no-torch)", loads
    names = set().union(*torch_runs) if torch_runs else set()
    torch_times = {n: statistics.median([r[n] for r in torch_runs if n in r]) for n in names}
    return median_doc(docs), torch_times, loads


def cpu_table(cases, torch_times):
    copies = [c for c in cases if c.op == "memcpy" and not c.error and c.bytes_per_second]
    best_copy = max(copies, key=lambda c: c.bytes_per_second) if copies else None
    copy_bw = best_copy.bytes_per_second if best_copy else None

    def find(op, size, layout):
        return next((c for c in cases if c.op == op and c.size == size and c.fields.get("layout") == layout
                     and "alloc" not in c.fields and not c.error), None)

    rows = []
    for c in cases:
        if c.op == "matmul_eigen":
            continue  # shown as the baseline of its wick row
        base, ratio, frac, target, ok = None, None, None, "-", None
        t = torch_times.get(c.name) if isinstance(torch_times, dict) else None
        vs_torch = c.seconds / t if (t and not c.error) else None
        if c.bytes_per_second and copy_bw and not c.error:
            frac = c.bytes_per_second / copy_bw
        layout = c.fields.get("layout")
        if c.op == "memcpy":
            target = "baseline (%d thread%s)" % (c.threads, "" if c.threads == 1 else "s")
        elif c.op in ("add", "mul", "gelu") and layout == "contiguous" and "alloc" not in c.fields:
            target = ">= %d%% memcpy" % (100 * CPU_ELEMENTWISE_TARGET)
            ok = None if frac is None else frac >= CPU_ELEMENTWISE_TARGET
        elif layout in ("transposed", "mixed"):
            base = find(c.op, str(c.shape[0] * c.shape[1]) if len(c.shape) == 2 else c.size, "contiguous")
            target = "<= %.0f x contiguous" % CPU_TRANSPOSED_LIMIT
            if base and not c.error:
                ratio = c.seconds / base.seconds
                ok = ratio <= CPU_TRANSPOSED_LIMIT
        elif "alloc" in c.fields:
            base = find(c.op, c.size, layout)
            target = "info: fresh pages"
            if base and not c.error:
                ratio = c.seconds / base.seconds
        elif c.op == "matmul":
            base = next((e for e in cases if e.op == "matmul_eigen" and e.size == c.size and not e.error), None)
            if base and not c.error and c.flops and base.flops:
                ratio = c.seconds / base.seconds
                frac = c.flops / base.flops
            if c.shape and c.shape[0] == 1024:
                target = ">= %d%% Eigen" % (100 * CPU_MATMUL_TARGET)
                ok = None if frac is None else frac >= CPU_MATMUL_TARGET
            else:
                target = "info: % of Eigen"
        elif c.op == "sum_rows":
            target = "<= torch"
            ok = None if vs_torch is None else vs_torch <= 1.0
        name = c.op + ("_" + layout if layout in ("transposed", "mixed") else "") + ("_fresh_pages" if "alloc" in c.fields else "")
        if c.error:
            rows.append([name, c.size, c.dtype, "ERROR", "-", "-", "-", "-", "-", "-", target, "ERROR: " + c.error[:60]])
        else:
            rows.append([name, c.size, c.dtype, fmt_time(c.seconds), fmt_time(t), fmt_ratio(vs_torch),
                         fmt_time(base.seconds if base else None), fmt_ratio(ratio), fmt_rate(c), fmt_pct(frac),
                         target, met(ok)])
    header = ["op", "size", "dtype", "wick", "torch", "wick/torch", "baseline", "wick/base", "wick rate",
              "% memcpy|Eigen", "target", "met"]
    return header, rows


# ---------------------------------------------------------------------------------------


def torch_cpu_build():
    """PyTorch's version, threads and the BLAS and CPU capability it was built with (MKL on
    an AMD CPU takes a generic code path, which matters for matmul)."""
    import torch
    config = torch.__config__.show()
    blas = re.search(r"BLAS_INFO=(\w+)", config)
    cap = re.search(r"CPU capability usage: (\w+)", config)
    return "%s, BLAS %s, CPU capability %s, %d threads" % (
        torch.__version__, blas.group(1) if blas else "?", cap.group(1) if cap else "?", torch.get_num_threads())


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cpu", action="store_true", help="judge wick_bench_cpu against memcpy/Eigen")
    p.add_argument("--bench", help="the wick benchmark program (default: ./wick_bench_{cuda,cpu}, "
                   "else the newest build*/bench/ one)")
    p.add_argument("--json", help="read a saved wick JSON run instead of running the program")
    p.add_argument("--json-out", help="save wick's JSON here")
    p.add_argument("--table-out", help="also write the table here")
    p.add_argument("--min-time", type=float, default=0.2, help="--benchmark_min_time for wick (seconds)")
    p.add_argument("--repetitions", type=int, default=1,
                   help="repeat each case and use the median (CPU: alternating wick and PyTorch passes)")
    p.add_argument("--no-torch", action="store_true", help="do not time PyTorch")
    p.add_argument("--filter", help="--benchmark_filter for wick (a regex; a leading '-' excludes what it matches)")
    p.add_argument("--rows-out", help="GPU: append each case's row here (a Markdown table) as soon as both sides have run it")
    p.add_argument("--baseline-json", help="GPU: a saved wick JSON of the same lease whose copy baseline and "
                   "default cases stand in where this run lacks them (a variants-only run's 'vs default')")
    args = p.parse_args()

    loads, cpu_torch, gpu_torch, cudnn_times = [], None, None, None
    reference = []
    if args.baseline_json:
        with open(args.baseline_json) as f:
            reference = load_cases(json.load(f))
    if args.json:
        with open(args.json) as f:
            doc = json.load(f)
        if args.cpu:
            cpu_torch = "not run (--no-torch)" if args.no_torch else time_torch_cpu(load_cases(doc), args.min_time)
    else:
        path = args.bench or find_bench("wick_bench_cpu" if args.cpu else "wick_bench_cuda")
        if not path or not os.path.exists(path):
            raise SystemExit("no wick benchmark program found; build it or pass --bench")
        if args.cpu:
            doc, cpu_torch, loads = interleaved_cpu(path, args.min_time, args.repetitions, args.filter,
                                                    not args.no_torch)
        else:
            doc, gpu_torch, cudnn_times = interleaved_gpu(path, args.min_time, args.repetitions, args.filter,
                                                          not args.no_torch, reference, args.rows_out, args.json_out)
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(doc, f, indent=1)
    cases = load_cases(doc)
    ctx = doc.get("context", {})

    lines = []
    if args.cpu:
        header, rows = cpu_table(cases, cpu_torch)
        lines.append("wick CPU benchmarks on %s: %s (%s CPUs at %s MHz), %s" % (
            ctx.get("host_name", "?"), cpu_model(), ctx.get("num_cpus", "?"), ctx.get("mhz_per_cpu", "?"),
            ctx.get("date", "?")))
        lines.append("PyTorch: " + (cpu_torch if isinstance(cpu_torch, str) else torch_cpu_build()))
        for record in loads:
            lines.append("pass %d %-5s: load average %.2f at start, other processes used %.2f CPUs meanwhile"
                         % record)
    else:
        if gpu_torch is None:  # a saved run (--json): PyTorch now
            gpu_torch = "not run (--no-torch)" if args.no_torch else time_torch(cases)
        torch_times = gpu_torch
        header, rows = gpu_table(cases, torch_times, reference)
        device = "?"
        try:
            import torch
            if torch.cuda.is_available():
                device = "%s, torch %s" % (torch.cuda.get_device_name(), torch.__version__)
        except ImportError:
            pass
        lines.append("wick CUDA benchmarks vs PyTorch on %s, %s" % (device, ctx.get("date", "?")))
        if isinstance(torch_times, str):
            lines.append("PyTorch columns empty: " + torch_times)

    class Tee:
        def __init__(self, files):
            self.files = files

        def write(self, s):
            for f in self.files:
                f.write(s)

    files = [sys.stdout]
    table_file = open(args.table_out, "w") if args.table_out else None
    if table_file:
        files.append(table_file)
    out = Tee(files)
    for line in lines:
        out.write(line + "\n")
    print_table(header, rows, out)
    if not args.cpu and any(c.op in SDPA_OPS for c in cases):
        # Attention against both of PyTorch's fused backends (the flash column repeats the
        # table's torch column; cuDNN is timed after it).
        out.write("\nscaled dot-product attention: wick against PyTorch's flash and cuDNN backends\n")
        if cudnn_times is None:
            cudnn_times = {} if args.no_torch else time_torch_sdpa_cudnn(cases)
        sdpa_header, sdpa_rows = sdpa_table(cases, torch_times, cudnn_times)
        print_table(sdpa_header, sdpa_rows, out)
    judged = [r[-1] for r in rows if r[-1] in ("yes", "NO")]
    errors = sum(1 for r in rows if r[-1].startswith("ERROR"))
    out.write("targets met: %d of %d judged; %d case(s) failed to run\n"
              % (judged.count("yes"), len(judged), errors))
    if table_file:
        table_file.close()
    return 2 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
