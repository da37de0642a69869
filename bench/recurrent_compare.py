#!/usr/bin/env python3
"""Forward + backward of one recurrent layer (RNN, LSTM or GRU, one layer, float32) on the CPU:
wick's layer (fused element-wise step, bench/recurrent_step.cpp), the same step composed of
autograd ops (--composed 1: what wick did before the fused kernel) and torch.nn's layer, same
sizes and threads. Each measurement is its own process; rounds alternate the three; the table
gives the medians and the ratios to torch (below 1: faster than torch).
Threads: all use OMP_NUM_THREADS.

  OMP_NUM_THREADS=2 python3 bench/recurrent_compare.py --wick-bin build/bench/wick_bench_recurrent_step --cell lstm
"""
import argparse
import json
import os
import statistics
import sys
import time

from machine_load import MachineLoad, cpu_model, run_json

SIZES = ("seq", "batch", "input", "hidden", "steps", "warmup")


def torch_worker(a):
    import torch

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", os.cpu_count())))
    torch.manual_seed(1)
    layer = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU, "rnn": torch.nn.RNN}[a.cell](a.input, a.hidden)
    x = torch.randn(a.seq, a.batch, a.input)
    times = []
    for s in range(a.warmup + a.steps):
        start = time.perf_counter()
        layer.zero_grad()
        out = layer(x)[0]
        (out * out).mean().backward()
        if s >= a.warmup:
            times.append(time.perf_counter() - start)
    print(json.dumps({"seconds": sorted(times)[len(times) // 2]}))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wick-bin", default="build/bench/wick_bench_recurrent_step")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cell", choices=("lstm", "gru", "rnn"), default="lstm")
    for name, default in zip(SIZES, (64, 32, 64, 256, 10, 2)):
        ap.add_argument("--" + name, type=int, default=default)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        torch_worker(a)
        return
    sizes = ["--cell", a.cell] + [x for n in SIZES for x in ("--" + n, str(getattr(a, n)))]
    load = MachineLoad()
    print(f"# {cpu_model()}, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}; {a.cell.upper()} "
          f"{a.input} -> {a.hidden}, sequence {a.seq}, batch {a.batch}, float32, forward + backward; median of "
          f"{a.steps} steps after {a.warmup}")
    print("| round | wick fused s | wick composed s | torch s | fused/torch | composed/torch |")
    print("|---|---|---|---|---|---|")
    fused_all, composed_all, torch_all = [], [], []
    for r in range(a.rounds):
        f = run_json([a.wick_bin] + sizes + ["--composed", "0"])["seconds"]
        c = run_json([a.wick_bin] + sizes + ["--composed", "1"])["seconds"]
        t = run_json([sys.executable, __file__, "--worker"] + sizes)["seconds"]
        fused_all.append(f)
        composed_all.append(c)
        torch_all.append(t)
        print(f"| {r + 1} | {f:.4f} | {c:.4f} | {t:.4f} | {f / t:.2f} | {c / t:.2f} |")
    f, c, t = statistics.median(fused_all), statistics.median(composed_all), statistics.median(torch_all)
    print(f"| median | {f:.4f} | {c:.4f} | {t:.4f} | **{f / t:.2f}** | {c / t:.2f} |")
    start_load, others = load.finish()
    print(f"# load average at the start {start_load:.2f}; other processes used {others:.2f} CPUs during the runs")


if __name__ == "__main__":
    main()
