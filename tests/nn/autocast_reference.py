#!/usr/bin/env python3
"""Writes autocast_reference.txt: torch.autocast's output dtype, on CUDA, for every row of
wick's autocast policy (wick/autograd/autocast_policy.h) and a few ops the policy leaves alone.

No GPU is needed: the tensors are FakeTensorMode's CUDA tensors, and autocast is switched on
directly (torch.autocast("cuda") refuses without a device). Each line:
    op autocast_dtype inputs output_dtype
where inputs is "float32" (every floating input float32), "low" (every floating input in the
autocast dtype) or "mixed" (the first in the autocast dtype, the others float32), and
output_dtype is "refused" where torch.autocast raises for the op (its banned list).
Run: python3 tests/nn/autocast_reference.py > tests/nn/autocast_reference.txt
"""
import torch
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensorMode


def cases(dev):
    r = lambda *s, dt=torch.float32: torch.empty(*s, device=dev, dtype=dt)
    idx = lambda *s: torch.zeros(*s, device=dev, dtype=torch.int64)
    # Each op takes its floating inputs in order (the dtypes are set by the caller).
    return {
        "matmul": ([(3, 4), (4, 5)], lambda a, b: torch.matmul(a, b)),
        "mm": ([(3, 4), (4, 5)], lambda a, b: torch.mm(a, b)),
        "bmm": ([(2, 3, 4), (2, 4, 5)], lambda a, b: torch.bmm(a, b)),
        "addmm": ([(3, 5), (3, 4), (4, 5)], lambda x, a, b: torch.addmm(x, a, b)),
        "baddbmm": ([(2, 3, 5), (2, 3, 4), (2, 4, 5)], lambda x, a, b: torch.baddbmm(x, a, b)),
        "mv": ([(3, 4), (4,)], lambda m, v: torch.mv(m, v)),
        "addmv": ([(3,), (3, 4), (4,)], lambda x, m, v: torch.addmv(x, m, v)),
        "linear": ([(2, 4), (3, 4), (3,)], lambda x, w, b: F.linear(x, w, b)),
        "scaled_dot_product_attention": ([(1, 2, 3, 4), (1, 2, 5, 4), (1, 2, 5, 4)],
                                         lambda q, k, v: F.scaled_dot_product_attention(q, k, v)),
        "conv1d": ([(1, 2, 6), (3, 2, 3), (3,)], lambda x, w, b: F.conv1d(x, w, b)),
        "conv2d": ([(1, 2, 5, 5), (3, 2, 3, 3), (3,)], lambda x, w, b: F.conv2d(x, w, b)),
        "conv3d": ([(1, 2, 4, 4, 4), (3, 2, 2, 2, 2), (3,)], lambda x, w, b: F.conv3d(x, w, b)),
        "conv_transpose1d": ([(1, 2, 5), (2, 3, 3), (3,)], lambda x, w, b: F.conv_transpose1d(x, w, b)),
        "conv_transpose2d": ([(1, 2, 4, 4), (2, 3, 3, 3), (3,)], lambda x, w, b: F.conv_transpose2d(x, w, b)),
        "conv_transpose3d": ([(1, 2, 3, 3, 3), (2, 3, 2, 2, 2), (3,)], lambda x, w, b: F.conv_transpose3d(x, w, b)),
        "prelu": ([(2, 3), (3,)], lambda x, w: F.prelu(x, w)),
        "pow": ([(4,), (4,)], lambda a, b: torch.pow(a, b)),
        "exp": ([(4,)], torch.exp),
        "expm1": ([(4,)], torch.expm1),
        "log": ([(4,)], torch.log),
        "log2": ([(4,)], torch.log2),
        "log10": ([(4,)], torch.log10),
        "log1p": ([(4,)], torch.log1p),
        "reciprocal": ([(4,)], torch.reciprocal),
        "rsqrt": ([(4,)], torch.rsqrt),
        "tan": ([(4,)], torch.tan),
        "asin": ([(4,)], torch.asin),
        "acos": ([(4,)], torch.acos),
        "sinh": ([(4,)], torch.sinh),
        "cosh": ([(4,)], torch.cosh),
        "softplus": ([(4,)], F.softplus),
        "softmax": ([(2, 4)], lambda x: torch.softmax(x, 1)),
        "log_softmax": ([(2, 4)], lambda x: torch.log_softmax(x, 1)),
        "sum": ([(2, 4)], torch.sum),
        "prod": ([(2, 4)], torch.prod),
        "cumsum": ([(2, 4)], lambda x: torch.cumsum(x, 1)),
        "cumprod": ([(2, 4)], lambda x: torch.cumprod(x, 1)),
        "norm": ([(2, 4)], torch.norm),
        "normalize": ([(2, 4)], F.normalize),
        "cosine_similarity": ([(2, 4), (2, 4)], F.cosine_similarity),
        "cdist": ([(3, 4), (2, 4)], torch.cdist),
        "batch_norm": ([(2, 3, 4), (3,), (3,)],
                       lambda x, w, b: F.batch_norm(x, torch.zeros(3, device=dev), torch.ones(3, device=dev), w, b,
                                                    training=True)),
        "layer_norm": ([(2, 4), (4,), (4,)], lambda x, w, b: F.layer_norm(x, (4,), w, b)),
        "group_norm": ([(2, 4, 3), (4,), (4,)], lambda x, w, b: F.group_norm(x, 2, w, b)),
        "rms_norm": ([(2, 4), (4,)], lambda x, w: F.rms_norm(x, (4,), w)),
        "cross_entropy": ([(2, 4)], lambda x: F.cross_entropy(x, idx(2))),
        "nll_loss": ([(2, 4)], lambda x: F.nll_loss(x, idx(2))),
        "mse_loss": ([(2, 4), (2, 4)], F.mse_loss),
        "l1_loss": ([(2, 4), (2, 4)], F.l1_loss),
        "smooth_l1_loss": ([(2, 4), (2, 4)], F.smooth_l1_loss),
        "huber_loss": ([(2, 4), (2, 4)], F.huber_loss),
        "kl_div": ([(2, 4), (2, 4)], lambda a, b: F.kl_div(a, b, reduction="batchmean")),
        "bce_with_logits": ([(2, 4), (2, 4)], F.binary_cross_entropy_with_logits),
        "margin_ranking_loss": ([(4,), (4,), (4,)], F.margin_ranking_loss),
        "cosine_embedding_loss": ([(2, 4), (2, 4)], lambda a, b: F.cosine_embedding_loss(a, b, idx(2) + 1)),
        "triplet_margin_loss": ([(2, 4), (2, 4), (2, 4)], F.triplet_margin_loss),
        "poisson_nll_loss": ([(2, 4), (2, 4)], F.poisson_nll_loss),
        "addcmul": ([(4,), (4,), (4,)], torch.addcmul),
        "addcdiv": ([(4,), (4,), (4,)], torch.addcdiv),
        "atan2": ([(4,), (4,)], torch.atan2),
        "dot": ([(4,), (4,)], torch.dot),
        "tensordot": ([(2, 3), (3, 4)], lambda a, b: torch.tensordot(a, b, 1)),
        "scatter_add": ([(2, 4), (2, 4)], lambda x, s: torch.scatter_add(x, 1, idx(2, 4), s)),
        "index_put": ([(4,), (2,)], lambda x, v: torch.index_put(x, (idx(2),), v)),
        "logsumexp": ([(2, 4)], lambda x: torch.logsumexp(x, 1)),
        "interpolate": ([(1, 2, 4)], lambda x: F.interpolate(x, size=6)),
        "interpolate_linear": ([(1, 2, 4)], lambda x: F.interpolate(x, size=6, mode="linear")),
        # Banned: torch.autocast raises for it (the line says "refused").
        "binary_cross_entropy": ([(2, 4), (2, 4)], F.binary_cross_entropy),
        # Not in the policy: these keep their inputs' dtype.
        "add": ([(4,), (4,)], torch.add),
        "mul": ([(4,), (4,)], torch.mul),
        "relu": ([(4,)], torch.relu),
        "tanh": ([(4,)], torch.tanh),
        "sigmoid": ([(4,)], torch.sigmoid),
        "gelu": ([(4,)], F.gelu),
        "mean": ([(2, 4)], torch.mean),
        "var": ([(2, 4)], torch.var),
        "max_pool2d": ([(1, 2, 4, 4)], lambda x: F.max_pool2d(x, 2)),
    }


def main():
    with FakeTensorMode():
        dev = "cuda"
        torch.set_autocast_enabled("cuda", True)
        for low_name, low in (("bfloat16", torch.bfloat16), ("float16", torch.float16)):
            torch.set_autocast_dtype("cuda", low)
            for op, (shapes, fn) in cases(dev).items():
                configs = ["float32", "low"] + (["mixed"] if len(shapes) > 1 else [])
                for config in configs:
                    dts = [torch.float32 if config == "float32" or (config == "mixed" and i > 0) else low
                           for i in range(len(shapes))]
                    args = [torch.empty(*s, device=dev, dtype=d) for s, d in zip(shapes, dts)]
                    try:
                        output = str(fn(*args).dtype).replace("torch.", "")
                    except RuntimeError as e:
                        if "unsafe to autocast" not in str(e):
                            raise
                        output = "refused"
                    print(op, low_name, config, output)


if __name__ == "__main__":
    main()
