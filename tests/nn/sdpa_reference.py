#!/usr/bin/env python3
"""Writes sdpa_reference.safetensors: torch.nn.functional.scaled_dot_product_attention on
fixed float64 inputs, for tests/nn/sdpa_test.cpp to reproduce with both of wick's backends.

For each case C (the metadata entry C holds its options as "key=value" words: causal, gqa,
scale): C.q, C.k, C.v, C.mask (when the case has one; bool or float64), C.w (the weights of
the loss sum(out * w)), C.out, and C.grad_q, C.grad_k, C.grad_v.
Run: python3 tests/nn/sdpa_reference.py   (writes next to itself; no GPU needed)
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from safetensors_writer import save  # noqa: E402

torch.manual_seed(11)
DT = torch.float64


def bool_mask(*shape, dead_row=None):
    m = torch.rand(*shape) > 0.3
    if dead_row is not None:
        m[..., dead_row, :] = False  # a query that may attend to nothing
    return m


def float_mask(*shape):
    m = torch.randn(*shape, dtype=DT)
    m[torch.rand(*shape) < 0.25] = -float("inf")
    return m


CASES = {
    "plain": dict(q=(2, 3, 5, 4), k=(2, 3, 7, 4), v=(2, 3, 7, 6)),
    "causal_short_queries": dict(q=(1, 2, 4, 8), k=(1, 2, 6, 8), v=(1, 2, 6, 8), causal=1),
    "causal_long_queries": dict(q=(1, 1, 6, 4), k=(1, 1, 3, 4), v=(1, 1, 3, 5), causal=1),
    "bool_mask_broadcast": dict(q=(2, 3, 5, 4), k=(2, 3, 7, 4), v=(2, 3, 7, 4), mask=lambda: bool_mask(5, 7, dead_row=2)),
    "float_mask_per_batch": dict(q=(2, 3, 5, 4), k=(2, 3, 7, 4), v=(2, 3, 7, 4), mask=lambda: float_mask(2, 1, 5, 7)),
    "gqa_scaled": dict(q=(2, 6, 5, 4), k=(2, 2, 7, 4), v=(2, 2, 7, 3), gqa=1, scale=0.3),
    "gqa_causal": dict(q=(1, 4, 6, 4), k=(1, 1, 6, 4), v=(1, 1, 6, 4), gqa=1, causal=1),
    "three_dims_bool_mask": dict(q=(3, 5, 4), k=(3, 7, 4), v=(3, 7, 4), mask=lambda: bool_mask(3, 5, 7)),
    "broadcast_batch": dict(q=(2, 3, 5, 4), k=(1, 3, 7, 4), v=(1, 3, 7, 4)),
    "two_dims": dict(q=(5, 4), k=(7, 4), v=(7, 2)),
}


def main():
    out, metadata = {}, {}
    for name, c in CASES.items():
        q = torch.randn(*c["q"], dtype=DT, requires_grad=True)
        k = torch.randn(*c["k"], dtype=DT, requires_grad=True)
        v = torch.randn(*c["v"], dtype=DT, requires_grad=True)
        mask = c["mask"]() if "mask" in c else None
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=bool(c.get("causal", 0)),
                                           scale=c.get("scale"), enable_gqa=bool(c.get("gqa", 0)))
        w = torch.randn(o.shape, dtype=DT)
        (o * w).sum().backward()
        out.update({f"{name}.q": q.detach(), f"{name}.k": k.detach(), f"{name}.v": v.detach(), f"{name}.w": w,
                    f"{name}.out": o.detach(), f"{name}.grad_q": q.grad, f"{name}.grad_k": k.grad,
                    f"{name}.grad_v": v.grad})
        if mask is not None:
            out[f"{name}.mask"] = mask
        metadata[name] = " ".join(f"{key}={c[key]}" for key in ("causal", "gqa", "scale") if key in c)
    save(os.path.join(os.path.dirname(os.path.abspath(__file__)), "sdpa_reference.safetensors"), out, metadata)


if __name__ == "__main__":
    main()
