#!/usr/bin/env python3
"""Training speed, peak memory and accuracy of wick's MNIST examples next to PyTorch.

Trains the MLP and the CNN of examples/mnist with the same hyper-parameters (AdamW lr 1e-3,
weight decay 1e-4, batch 128, cosine factor per epoch, test batch 512) on the same
Fashion-MNIST files, once with the wick `mnist` binary and once with PyTorch, in the same
run, on the same machine, with the same number of threads, and prints one table:

    python3 bench/train_compare.py --wick-bin build/examples/mnist --epochs 1 --repeat 3

Each training runs in its own process (wick: the mnist binary with --quiet; PyTorch: this
script with --worker), so the peak resident set size (ru_maxrss from wait4) is that run's
alone. Epoch time counts training only (no evaluation): for wick it is the training
examples divided by the examples/s of its learning-curve CSV, for PyTorch the same span
timed around the batch loop. PyTorch runs twice: with its default AdamW (on the CPU a
loop over the parameters, "torch") and with `fused=True` (one kernel for all parameters,
"torch-fused"), which is the fair comparison with wick's fused AdamW. With --repeat R the
runs alternate (wick, torch, torch-fused, wick, ...) and the table shows the median with
the spread (min-max) in brackets. Every run records the load average at its start and the
CPU time other processes used while it ran.

PyTorch must import with `import torch`; on machines where it needs CUDA's libraries on
the path, run with LD_LIBRARY_PATH=/usr/local/cuda/lib64 (the workers inherit it).
"""
import argparse
import csv
import gzip
import json
import math
import os
import re
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time

from machine_load import MachineLoad, cpu_model

MEAN, STD = 0.2860, 0.3530  # Fashion-MNIST pixel statistics, as in examples/mnist
LR, WEIGHT_DECAY, BATCH, TEST_BATCH = 1e-3, 1e-4, 128, 512
DEFAULT_DATA = "/usr/share/datasets/fashion-mnist"


# ---------------------------------------------------------------------------- data

def read_idx(path):
    """An IDX file (gzip or raw) as (shape, bytes)."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    zero, dtype_code, dims = struct.unpack(">HBB", raw[:4])
    if zero != 0 or dtype_code != 0x08:
        raise ValueError(f"{path}: not an unsigned-byte IDX file (magic {raw[:4].hex()})")
    shape = struct.unpack(">" + "I" * dims, raw[4:4 + 4 * dims])
    body = raw[4 + 4 * dims:]
    if len(body) != math.prod(shape):
        raise ValueError(f"{path}: header says {shape}, file holds {len(body)} bytes")
    return shape, body


def find_idx(data_dir, stem):
    for name in (stem + ".gz", stem):
        path = os.path.join(data_dir, name)
        if os.path.exists(path):
            return path
    raise FileNotFoundError(f"{data_dir}: no {stem}[.gz]")


def load_split(data_dir, train, limit):
    import numpy as np
    prefix = "train" if train else "t10k"
    shape, images = read_idx(find_idx(data_dir, f"{prefix}-images-idx3-ubyte"))
    _, labels = read_idx(find_idx(data_dir, f"{prefix}-labels-idx1-ubyte"))
    x = np.frombuffer(images, dtype=np.uint8).reshape(shape[0], 1, shape[1], shape[2])
    y = np.frombuffer(labels, dtype=np.uint8).astype(np.int64)
    if limit > 0:
        x, y = x[:limit], y[:limit]
    return x, y


# ---------------------------------------------------------------------------- PyTorch worker

def torch_model(kind):
    """The networks of examples/mnist/main.cpp (make_cnn, make_mlp), layer for layer."""
    from torch import nn
    if kind == "cnn":
        return nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Dropout(0.25),
            nn.Linear(128, 10))
    return nn.Sequential(
        nn.Flatten(),
        nn.Linear(784, 256), nn.ReLU(),
        nn.Linear(256, 128), nn.ReLU(),
        nn.Linear(128, 10))


def peak_rss_bytes_self():
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def torch_worker(args):
    """One training run in PyTorch; prints a RESULT line with JSON."""
    import torch
    import torch.nn.functional as F
    rss_after_import = peak_rss_bytes_self()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    cuda = device.type == "cuda"

    x_train, y_train = load_split(args.data, True, args.train_limit)
    # wick's example holds out the last images of the training set for validation; PyTorch
    # trains on the same ones.
    kept = x_train.shape[0] - args.validation_size
    x_train, y_train = x_train[:kept], y_train[:kept]
    x_test, y_test = load_split(args.data, False, args.test_limit)
    x_train, y_train = torch.from_numpy(x_train.copy()), torch.from_numpy(y_train)
    x_test, y_test = torch.from_numpy(x_test.copy()), torch.from_numpy(y_test)
    if cuda:
        x_train, y_train = x_train.pin_memory(), y_train.pin_memory()
        x_test, y_test = x_test.pin_memory(), y_test.pin_memory()

    def batch_to_device(x_u8, y):
        # The same transform as the example: uint8 -> (x / 255 - mean) / std in float32.
        x = x_u8.to(device, non_blocking=True).float().div_(255.0).sub_(MEAN).div_(STD)
        return x, y.to(device, non_blocking=True)

    model = torch_model(args.model).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY,
                                  fused=True if args.fused else None)
    epochs = args.epochs
    n_train = x_train.shape[0]
    generator = torch.Generator().manual_seed(args.seed)
    if cuda:
        torch.cuda.reset_peak_memory_stats(device)

    epoch_seconds, accuracy = [], None
    for epoch in range(epochs):
        for group in optimizer.param_groups:  # the example's cosine factor, stepped per epoch
            group["lr"] = LR * 0.5 * (1 + math.cos(math.pi * epoch / epochs))
        if cuda:
            torch.cuda.synchronize(device)
        start = time.perf_counter()
        model.train()
        order = torch.randperm(n_train, generator=generator)
        loss_sum = torch.zeros((), dtype=torch.float64, device=device)
        for begin in range(0, n_train, BATCH):  # the last, smaller batch is kept, as in wick
            idx = order[begin:begin + BATCH]
            x, y = batch_to_device(x_train[idx], y_train[idx])
            output = model(x)
            loss = F.cross_entropy(output, y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            loss_sum += loss.detach().double() * y.shape[0]
        train_loss = loss_sum.item() / n_train  # waits for the device
        epoch_seconds.append(time.perf_counter() - start)

        model.eval()
        correct = 0
        with torch.no_grad():
            for begin in range(0, x_test.shape[0], TEST_BATCH):
                x, y = batch_to_device(x_test[begin:begin + TEST_BATCH], y_test[begin:begin + TEST_BATCH])
                correct += (model(x).argmax(1) == y).sum().item()
        accuracy = correct / x_test.shape[0]
        print(f"torch {args.model} epoch {epoch + 1}: train loss {train_loss:.4f}, "
              f"test accuracy {accuracy:.4f}, {epoch_seconds[-1]:.2f} s", file=sys.stderr)

    result = {
        "epoch_seconds": epoch_seconds,
        "examples": n_train,
        "accuracy": accuracy,
        "rss_after_import": rss_after_import,
        "device_peak": torch.cuda.max_memory_allocated(device) if cuda else None,
    }
    print("RESULT " + json.dumps(result), flush=True)


# ---------------------------------------------------------------------------- runners

def run_child(cmd, env):
    """Runs cmd; returns (exit status, stdout+stderr, peak RSS in bytes of that process)."""
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode(errors="replace")
    return proc.returncode, text, usage.ru_maxrss * 1024  # Linux reports kilobytes


def child_env(threads):
    env = dict(os.environ)
    env["OMP_NUM_THREADS"] = str(threads)
    return env


def run_wick(args, model):
    out_dir = tempfile.mkdtemp(prefix=f"wick-{model}-")
    try:
        cmd = [args.wick_bin, "--model", model, "--epochs", str(args.epochs), "--quiet",
               "--device", args.device, "--data", args.data, "--out", out_dir,
               "--validation-size", str(args.validation_size),
               "--train-limit", str(args.train_limit), "--test-limit", str(args.test_limit)]
        rc, text, rss = run_child(cmd, child_env(args.threads))
        if rc != 0:
            raise RuntimeError(f"wick {model} failed ({rc}):\n{text[-3000:]}")
        m = re.search(r"(\d+) training, (\d+) validation and (\d+) test images", text)
        acc = re.search(r"test accuracy ([\d.]+)%", text)
        if not m or not acc:
            raise RuntimeError(f"wick {model}: no image counts or test accuracy in its output:\n{text[-3000:]}")
        examples = int(m.group(1))
        with open(os.path.join(out_dir, "learning_curve.csv")) as f:
            rows = list(csv.DictReader(f))
        epoch_seconds = [examples / float(r["examples_per_second"]) for r in rows]
        # The example prints this line on a GPU (peak of its CUDA allocator), if it does.
        dm = re.search(r"peak allocated (\d+) bytes", text)
        return {"epoch_seconds": epoch_seconds, "examples": examples,
                "accuracy": float(acc.group(1)) / 100, "peak_rss": rss,
                "device_peak": int(dm.group(1)) if dm else None}
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)


def run_torch(args, model, fused=False):
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--model", model,
           "--epochs", str(args.epochs), "--device", args.device, "--data", args.data,
           "--train-limit", str(args.train_limit), "--test-limit", str(args.test_limit),
           "--threads", str(args.threads), "--seed", str(args.seed),
           "--validation-size", str(args.validation_size)] + (["--fused"] if fused else [])
    rc, text, rss = run_child(cmd, child_env(args.threads))
    m = re.search(r"^RESULT (.*)$", text, re.M)
    if rc != 0 or not m:
        raise RuntimeError(f"torch {model} failed ({rc}):\n{text[-3000:]}")
    result = json.loads(m.group(1))
    result["peak_rss"] = rss
    return result


# ---------------------------------------------------------------------------- table

def mib(b):
    return b / 2**20


def summary(values, fmt):
    """Median, and the spread (min-max) when there is more than one value."""
    med = statistics.median(values)
    if len(values) == 1:
        return fmt.format(med)
    return f"{fmt.format(med)} ({fmt.format(min(values))}-{fmt.format(max(values))})"


FRAMEWORKS = ("wick", "torch", "torch-fused")


def machine_line(args):
    load = os.getloadavg()
    return (f"{os.uname().nodename}: {cpu_model()}, {os.cpu_count()} CPUs, {args.threads} thread(s) per run, "
            f"device {args.device}, load average {load[0]:.2f} at "
            f"{time.strftime('%Y-%m-%dT%H:%M:%S%z')}")


def print_table(args, results):
    cuda = args.device.startswith("cuda")
    headers = ["model", "framework", "epoch time s", "examples/s", "peak RSS MiB"]
    if cuda:
        headers.append("peak GPU MiB")
    headers += ["test acc %", "load", "others' CPUs", "time wick/this", "RSS wick/this"]
    rows = []
    for model in args.models:
        per = results[model]
        med_time = {}
        med_rss = {}
        for fw in FRAMEWORKS:
            runs = per[fw]
            times = [statistics.mean(r["epoch_seconds"]) for r in runs]
            rates = [r["examples"] / t for r, t in zip(runs, times)]
            rss = [mib(r["peak_rss"]) for r in runs]
            med_time[fw], med_rss[fw] = statistics.median(times), statistics.median(rss)
            row = [model, fw, summary(times, "{:.2f}"), summary(rates, "{:.0f}"), summary(rss, "{:.0f}")]
            if cuda:
                dev = [mib(r["device_peak"]) for r in runs if r.get("device_peak") is not None]
                row.append(summary(dev, "{:.0f}") if dev else "-")
            row.append(summary([100 * r["accuracy"] for r in runs], "{:.2f}"))
            row.append(summary([r["load"] for r in runs], "{:.2f}"))
            row.append(summary([r["others_cpus"] for r in runs], "{:.2f}"))
            if fw == "wick":
                row += ["", ""]
            else:
                row += [f"{med_time['wick'] / med_time[fw]:.2f}", f"{med_rss['wick'] / med_rss[fw]:.2f}"]
            rows.append(row)
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()
    print(line(headers))
    print(line(["-" * w for w in widths]))
    for r in rows:
        print(line(r))
    import_rss = [mib(r["rss_after_import"]) for m in args.models for r in results[m]["torch"]]
    print(f"(PyTorch's process holds {statistics.median(import_rss):.0f} MiB right after `import torch`, "
          "before any data; both peaks include loading the data set.)")


# ---------------------------------------------------------------------------- main

def default_threads():
    if os.environ.get("OMP_NUM_THREADS", "").isdigit():
        return int(os.environ["OMP_NUM_THREADS"])
    return len(os.sched_getaffinity(0))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--models", default="mlp,cnn", help="comma-separated: mlp, cnn")
    p.add_argument("--train-limit", type=int, default=0, help="use only the first N training images (0: all)")
    p.add_argument("--test-limit", type=int, default=0, help="use only the first N test images (0: all)")
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("--wick-bin", default="build/examples/mnist", help="path to wick's mnist example")
    p.add_argument("--data", default=DEFAULT_DATA)
    p.add_argument("--threads", type=int, default=default_threads(),
                   help="OpenMP threads for wick and torch.set_num_threads (default: OMP_NUM_THREADS or all CPUs)")
    p.add_argument("--repeat", type=int, default=1, help="runs of each (model, framework); median and spread")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--validation-size", type=int, default=5000,
                   help="the last N training images are held out (wick's example validates on them); "
                        "neither side trains on them")
    p.add_argument("--json-out", help="also write every run's numbers to this file")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--fused", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--model", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.device not in ("cpu", "cuda") and not args.device.startswith("cuda:"):
        p.error("--device must be cpu or cuda")
    if args.worker:
        torch_worker(args)
        return
    args.models = [m.strip() for m in args.models.split(",") if m.strip()]
    for m in args.models:
        if m not in ("mlp", "cnn"):
            p.error(f"unknown model {m!r} (mlp or cnn)")
    if not os.access(args.wick_bin, os.X_OK):
        p.error(f"--wick-bin {args.wick_bin} is not an executable (build the `mnist` target)")

    print(machine_line(args))
    results = {m: {fw: [] for fw in FRAMEWORKS} for m in args.models}
    runners = {"wick": run_wick, "torch": run_torch, "torch-fused": lambda a, m: run_torch(a, m, fused=True)}
    for rep in range(args.repeat):
        for model in args.models:
            for fw in FRAMEWORKS:
                span = MachineLoad()
                r = runners[fw](args, model)
                r["load"], r["others_cpus"] = span.finish()
                results[model][fw].append(r)
                print(f"  run {rep + 1}/{args.repeat} {model} {fw}: "
                      f"{statistics.mean(r['epoch_seconds']):.2f} s/epoch, acc {100 * r['accuracy']:.2f}%, "
                      f"peak RSS {mib(r['peak_rss']):.0f} MiB, load {r['load']:.2f} at start, "
                      f"others used {r['others_cpus']:.2f} CPUs", flush=True)
    print()
    print(f"{args.epochs} epoch(s), batch {BATCH}, "
          f"{results[args.models[0]]['wick'][0]['examples']} training images; median (min-max) of {args.repeat} run(s)")
    print_table(args, results)
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"machine": machine_line(args), "args": vars(args), "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
