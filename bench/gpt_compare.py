#!/usr/bin/env python3
"""One training step (forward, backward, AdamW) of examples/gpt's model on the CPU: wick
(bench/gpt_step.cpp) against PyTorch eager on the same model (tests/support/torch_gpt.py:
torch.nn's TransformerEncoderLayer, tied output layer), the same sizes and threads. Each
measurement is its own process; rounds alternate wick and torch; the table gives each
round's median step and the ratio wick/torch of their medians (below 1: wick faster).
Threads: both use OMP_NUM_THREADS.

  OMP_NUM_THREADS=2 python3 bench/gpt_compare.py --wick-bin build/bench/wick_bench_gpt_step --rounds 3
"""
import argparse
import json
import os
import statistics
import sys
import time

from machine_load import MachineLoad, cpu_model, run_json

SIZES = ("batch", "block", "layers", "heads", "embd", "steps", "warmup")


def torch_worker(a):
    import torch

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "support"))
    from torch_gpt import GPT

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", os.cpu_count())))
    torch.manual_seed(1)
    model = GPT(256, a.block, a.layers, a.heads, a.embd)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    idx = torch.randint(0, 256, (a.batch, a.block))
    targets = torch.randint(0, 256, (a.batch, a.block))
    times = []
    for s in range(a.warmup + a.steps):
        start = time.perf_counter()
        opt.zero_grad()
        model.loss(idx, targets).backward()
        opt.step()
        if s >= a.warmup:
            times.append(time.perf_counter() - start)
    median = sorted(times)[len(times) // 2]
    print(json.dumps({"seconds": median, "tokens_per_second": a.batch * a.block / median}))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wick-bin", default="build/bench/wick_bench_gpt_step")
    ap.add_argument("--rounds", type=int, default=3)
    for name, default in zip(SIZES, (32, 128, 4, 4, 128, 10, 2)):
        ap.add_argument("--" + name, type=int, default=default)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        torch_worker(a)
        return
    sizes = [x for n in SIZES for x in ("--" + n, str(getattr(a, n)))]
    load = MachineLoad()
    print(f"# {cpu_model()}, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}; GPT {a.layers} layers, "
          f"{a.heads} heads, width {a.embd}, batch {a.batch} x {a.block} tokens, float32; median of {a.steps} steps "
          f"after {a.warmup}")
    print("| round | wick s/step | torch s/step | wick/torch |")
    print("|---|---|---|---|")
    wick_all, torch_all = [], []
    for r in range(a.rounds):
        w = run_json([a.wick_bin] + sizes)["seconds"]
        t = run_json([sys.executable, __file__, "--worker"] + sizes)["seconds"]
        wick_all.append(w)
        torch_all.append(t)
        print(f"| {r + 1} | {w:.4f} | {t:.4f} | {w / t:.2f} |")
    w, t = statistics.median(wick_all), statistics.median(torch_all)
    print(f"| median | {w:.4f} | {t:.4f} | **{w / t:.2f}** |")
    print(f"# tokens/s: wick {a.batch * a.block / w:.0f}, torch {a.batch * a.block / t:.0f}")
    start_load, others = load.finish()
    print(f"# load average at the start {start_load:.2f}; other processes used {others:.2f} CPUs during the runs")


if __name__ == "__main__":
    main()
