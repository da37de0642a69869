#!/usr/bin/env python3
"""Attention forward + backward on the CPU: memory and time of wick's fused and math backends
next to PyTorch's default (its CPU flash kernel) and math backends, over sequence lengths.

Each run is its own process, so its peak resident set (ru_maxrss) is its alone; the table
shows the peak minus the process's resident set just before the attention (inputs included
in both), and the seconds of one causal forward + backward, with the ratio wick/torch of the
fused kernels. Runs alternate wick and torch per length; threads: torch uses as many as
OMP_NUM_THREADS (wick reads the same variable).

  python3 bench/attention_compare.py --wick-bin build/bench/wick_bench_attention_memory \\
      --seqs 1024 2048 4096 --heads 4 --dim 64
"""
import argparse
import json
import os
import resource
import sys
import time

from machine_load import MachineLoad, cpu_model, run_json


def torch_worker(backend, seq, heads, dim, batch):
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", os.cpu_count())))
    shape = (batch, heads, seq, dim)
    q, k, v = (torch.randn(shape, requires_grad=True) for _ in range(3))
    grad = torch.randn(shape)
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    start = time.perf_counter()
    kernels = [SDPBackend.MATH] if backend == "math" else [SDPBackend.FLASH_ATTENTION, SDPBackend.MATH]
    with sdpa_kernel(kernels):
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    out.backward(grad)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"backend": backend, "seq": seq, "seconds": seconds, "peak_rss_bytes": peak,
                      "baseline_rss_bytes": baseline}))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wick-bin", default="build/bench/wick_bench_attention_memory")
    ap.add_argument("--seqs", type=int, nargs="+", default=[1024, 2048, 4096])
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--worker", nargs=2, metavar=("BACKEND", "SEQ"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        torch_worker(a.worker[0], int(a.worker[1]), a.heads, a.dim, a.batch)
        return
    load = MachineLoad()
    shape = ["--heads", str(a.heads), "--dim", str(a.dim), "--batch", str(a.batch)]
    print(f"# {cpu_model()}, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}, "
          f"[{a.batch}, {a.heads}, L, {a.dim}] float32, causal, forward + backward")
    print("| L | wick fused MiB | wick math MiB | torch flash MiB | torch math MiB | wick fused s | torch flash s | "
          "fused time wick/torch |")
    print("|---|---|---|---|---|---|---|---|")
    for seq in a.seqs:
        rows = {}
        for backend in ("fused", "math"):
            rows["wick " + backend] = run_json([a.wick_bin, "--backend", backend, "--seq", str(seq)] + shape)
            if not a.no_torch:
                tb = "flash" if backend == "fused" else "math"
                rows["torch " + tb] = run_json([sys.executable, __file__, "--worker", tb, str(seq)] + shape)
        mib = lambda r: (r["peak_rss_bytes"] - r["baseline_rss_bytes"]) / 2**20 if r else float("nan")
        sec = lambda r: r["seconds"] if r else float("nan")
        tf, tm = rows.get("torch flash"), rows.get("torch math")
        ratio = sec(rows["wick fused"]) / sec(tf) if tf else float("nan")
        print(f"| {seq} | {mib(rows['wick fused']):.1f} | {mib(rows['wick math']):.1f} | {mib(tf):.1f} | "
              f"{mib(tm):.1f} | {sec(rows['wick fused']):.3f} | {sec(tf):.3f} | {ratio:.2f} |")
    start_load, others = load.finish()
    print(f"# load average at the start {start_load:.2f}; other processes used {others:.2f} CPUs during the runs")


if __name__ == "__main__":
    main()
