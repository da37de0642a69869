#!/usr/bin/env python3
"""torch.optim's step on the work of wick_bench_cpu's optimizer_step cases (bench/cpu_optimizer_step.cpp):
the parameters of a 784-1024-256-10 MLP in float32 on the CPU, gradients set, buffers made
by one step before the timing. Prints the median of five timings of 200 steps per case, for
the foreach and (where torch has one on the CPU) the fused implementation.

  python3 bench/optimizer_step_torch.py [--threads 2]
"""
import argparse
import statistics
import time

import torch

SHAPES = [(1024, 784), (1024,), (256, 1024), (256,), (10, 256), (10,)]
CASES = {
    "sgd_momentum": (torch.optim.SGD, dict(lr=1e-3, momentum=0.9), True),
    "adam": (torch.optim.Adam, dict(lr=1e-3), True),
    "rmsprop": (torch.optim.RMSprop, dict(lr=1e-3), False),
    "rmsprop_centered_momentum": (torch.optim.RMSprop, dict(lr=1e-3, momentum=0.9, centered=True), False),
}


def time_steps(opt, steps=200, repeats=5):
    opt.step()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(steps):
            opt.step()
        times.append((time.perf_counter() - start) / steps * 1e6)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    for name, (cls, kwargs, has_fused) in CASES.items():
        for impl in ["foreach", "fused"] if has_fused else ["foreach"]:
            params = [torch.nn.Parameter(torch.randn(s)) for s in SHAPES]
            for p in params:
                p.grad = torch.randn(p.shape)
            opt = cls(params, **kwargs, **{impl: True})
            print(f"torch/optimizer_step/{name}/float32 {impl}: {time_steps(opt):.0f} us")


if __name__ == "__main__":
    main()
