#!/usr/bin/env python3
"""Training throughput of the mnist example from 1 to N ranks (wickrun, one machine).

Runs `wickrun --nproc n mnist ...` for n = 1..N on the same data and global batch size and
prints examples/s (training, all ranks together, from the learning curve CSV), the speed-up
over one rank and the scaling efficiency (speed-up / n). On CPU every rank gets cores/n
OpenMP threads (wickrun's default), so the total number of cores stays the same; on GPUs
(--device auto) each rank gets its own GPU.

  python3 bench/rank_scaling.py --build build --ranks 2 --model cnn --train-limit 20000
"""
import argparse
import csv
import os
import subprocess
import sys
import tempfile


def run(args, n):
    out = tempfile.mkdtemp(prefix=f"wick-scaling-{n}-")
    cmd = [os.path.join(args.build, "tools/wickrun/wickrun"), "--nproc", str(n),
           os.path.join(args.build, "examples/mnist"), "--model", args.model, "--epochs", str(args.epochs),
           "--batch-size", str(args.batch_size), "--train-limit", str(args.train_limit), "--test-limit", "1000",
           "--device", args.device, "--quiet", "--out", out]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    with open(os.path.join(out, "learning_curve.csv")) as f:
        rows = list(csv.DictReader(f))
    # The first epoch pays for start-up; with several epochs report the best one.
    return max(float(r["examples_per_second"]) for r in rows)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default="build")
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--model", default="cnn")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--train-limit", type=int, default=20000)
    p.add_argument("--device", default="cpu")
    args = p.parse_args()
    if args.batch_size % args.ranks:
        sys.exit("--batch-size must be a multiple of every rank count up to --ranks")
    print(f"mnist {args.model}, global batch {args.batch_size}, {args.train_limit} images, device {args.device}, "
          f"{os.cpu_count()} cores")
    print(f"{'ranks':>5} {'examples/s':>12} {'speed-up':>9} {'efficiency':>10}")
    base = None
    for n in range(1, args.ranks + 1):
        rate = run(args, n)
        base = base or rate
        print(f"{n:>5} {rate:>12.0f} {rate / base:>9.2f} {rate / base / n:>10.0%}")


if __name__ == "__main__":
    main()
