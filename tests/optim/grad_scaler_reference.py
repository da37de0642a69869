#!/usr/bin/env python3
"""Writes grad_scaler_reference.txt: torch.amp.GradScaler's trajectory on a fixed gradient
sequence, for tests/optim/grad_scaler_test.cpp to replay.

Four float32 parameters, SGD(lr=0.1, momentum=0.9). At step k the gradient set before
scaler.step is scale * g_k (what backward of scale * loss would give), where
g_k[i] = sin(k + i) / (1 + k), except at the steps in INF and NAN where element k % 4 is
inf or NaN. init_scale 1024, growth_interval 3 (so the scale both grows and backs off). Each line: step stepped scale growth_tracker p0 p1 p2 p3 (after update()),
the floats as Python's repr of float32 values.
Run: python3 tests/optim/grad_scaler_reference.py > tests/optim/grad_scaler_reference.txt
"""
import math

import torch

STEPS = 24
INF = {2, 9, 10}
NAN = {5}


def main():
    p = torch.nn.Parameter(torch.tensor([0.5, -0.25, 1.0, 2.0], dtype=torch.float32))
    opt = torch.optim.SGD([p], lr=0.1, momentum=0.9)
    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0, growth_interval=3)
    for k in range(STEPS):
        g = torch.tensor([math.sin(k + i) / (1 + k) for i in range(4)], dtype=torch.float32)
        if k in INF:
            g[k % 4] = math.inf
        if k in NAN:
            g[k % 4] = math.nan
        scaler.scale(torch.ones(()))  # torch creates its scale on first use
        p.grad = g * scaler.get_scale()
        before = p.detach().clone()
        scaler.step(opt)
        stepped = not torch.equal(before, p.detach())
        scaler.update()
        print(k, int(stepped), repr(scaler.get_scale()), scaler._get_growth_tracker(),
              " ".join(repr(float(v)) for v in p.detach()))


if __name__ == "__main__":
    main()
