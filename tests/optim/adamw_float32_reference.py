#!/usr/bin/env python3
"""PyTorch's side of tests/optim/adamw_float32_test.cpp (issue 48, item 0): how far torch's
float32 AdamW run of the MNIST MLP ends from its float64 run, from wick's initial weights and
on the very batches wick trains on.

The C++ test, run with WICK_ADAMW_DUMP=<file>, writes its float32 initial weights (the
Sequential's names: 0.weight, 0.bias, 2.weight, ...) and its float64 and float32 losses to
<file> (safetensors). This script trains the same 784-256-128-10 ReLU MLP with
torch.optim.AdamW(lr=1e-3, weight_decay=1e-4) for as many steps, once in float32 and once in
float64 (the weights widened from the same float32 values, the images computed in float32 as
u8 / 255 and widened), on Fashion-MNIST's first 128-image batches, and prints the relative
loss distances (final and worst) for torch and for wick, with 1 and 2 threads. The losses of
torch's float64 run are also compared with wick's float64 run, which must agree closely (the
same computation in float64).

Run (torch from PyPI; no numpy needed):
  WICK_ADAMW_DUMP=/tmp/adamw.safetensors build/tests/optim/wick_optim_tests \\
      --gtest_filter='AdamFloat32.Hundred*'
  python3 tests/optim/adamw_float32_reference.py /tmp/adamw.safetensors
"""
import gzip
import json
import struct
import sys

import torch

DATA = "/usr/share/datasets/fashion-mnist"
DTYPES = {"F32": torch.float32, "F64": torch.float64}


def read_safetensors(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, en = e["data_offsets"]
        raw = bytearray(blob[8 + n + b:8 + n + en])
        out[name] = torch.frombuffer(raw, dtype=DTYPES[e["dtype"]]).reshape(e["shape"]).clone()
    return out


def read_idx_gz(path):
    with gzip.open(path, "rb") as f:
        blob = f.read()
    ndim = blob[3]
    shape = struct.unpack(">" + "I" * ndim, blob[4:4 + 4 * ndim])
    return torch.frombuffer(bytearray(blob[4 + 4 * ndim:]), dtype=torch.uint8).reshape(shape)


def train(init, xs, ys, dtype):
    net = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 128), torch.nn.ReLU(),
                              torch.nn.Linear(128, 10))
    with torch.no_grad():
        for name, p in net.named_parameters():
            p.copy_(init[name])
    net.to(dtype)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3, weight_decay=1e-4, foreach=False)
    losses = []
    for x, y in zip(xs, ys):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(net(x.to(dtype)), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def distance(a, want):
    rel = [abs(x - w) / abs(w) for x, w in zip(a, want)]
    worst = max(range(len(rel)), key=lambda i: rel[i])
    return rel[-1], rel[worst], worst + 1


def main():
    dump = read_safetensors(sys.argv[1])
    wick64, wick32 = dump["losses.float64"].tolist(), dump["losses.float32"].tolist()
    steps = len(wick64)
    images = read_idx_gz(DATA + "/train-images-idx3-ubyte.gz")[:128 * steps].reshape(steps, 128, 784)
    labels = read_idx_gz(DATA + "/train-labels-idx1-ubyte.gz")[:128 * steps].reshape(steps, 128).long()
    xs = [images[s].to(torch.float32) / 255.0 for s in range(steps)]
    ys = [labels[s] for s in range(steps)]
    print(f"torch {torch.__version__}, {steps} AdamW steps (lr 1e-3, weight_decay 1e-4)")
    for threads in (1, 2):
        torch.set_num_threads(threads)
        t64 = train(dump, xs, ys, torch.float64)
        t32 = train(dump, xs, ys, torch.float32)
        final, worst, at = distance(t32, t64)
        print(f"{threads} thread(s): torch float32 vs float64: final {final:.3g}, worst {worst:.3g} (step {at})")
        final, worst, at = distance(t64, wick64)
        print(f"{threads} thread(s): torch float64 vs wick float64: final {final:.3g}, worst {worst:.3g} (step {at})")
    final, worst, at = distance(wick32, wick64)
    print(f"wick float32 vs float64: final {final:.3g}, worst {worst:.3g} (step {at})")


if __name__ == "__main__":
    main()
