#!/usr/bin/env python3
"""Writes transformer_reference.safetensors: torch.nn's Transformer layers and stacks
(batch_first=True, dropout 0) on fixed float64 weights and inputs, for
tests/nn/transformer_test.cpp to reproduce.

For each case C (metadata C: "key=value" words: kind, d_model, nhead, ff, layers, norm_first,
activation, bias): C.param.<name> (torch's state dict), C.src / C.tgt / C.memory (as the case
takes them), the masks C.tgt_mask (float, -inf above the diagonal) and
C.memory_key_padding_mask (bool) where used, C.w (loss weights: sum(out * w)), C.out and
C.grad.<name> for every parameter and input.
Run: python3 tests/nn/transformer_reference.py   (writes next to itself)
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from safetensors_writer import save  # noqa: E402

torch.manual_seed(3)
DT = torch.float64
N, S, T = 2, 5, 4

ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu, "gelu_tanh": lambda x: F.gelu(x, approximate="tanh")}

CASES = {
    "decoder_layer_post_norm": dict(kind="decoder_layer", d_model=8, nhead=2, ff=16, norm_first=0, activation="relu",
                                    bias=1),
    "decoder_layer_pre_norm_gelu_tanh_no_bias": dict(kind="decoder_layer", d_model=8, nhead=4, ff=12, norm_first=1,
                                                     activation="gelu_tanh", bias=0),
    "encoder_two_layers_gelu": dict(kind="encoder", d_model=8, nhead=2, ff=16, layers=2, norm_first=0,
                                    activation="gelu", bias=1),
    "decoder_two_layers": dict(kind="decoder", d_model=8, nhead=2, ff=16, layers=2, norm_first=1, activation="relu",
                               bias=1),
    "transformer": dict(kind="transformer", d_model=8, nhead=2, ff=16, layers=1, norm_first=0, activation="relu",
                        bias=1),
}


def layer_kwargs(c):
    return dict(dim_feedforward=c["ff"], dropout=0.0, activation=ACTIVATIONS[c["activation"]], batch_first=True,
                norm_first=bool(c["norm_first"]), bias=bool(c["bias"]), dtype=DT)


def main():
    out, metadata = {}, {}
    for name, c in CASES.items():
        kind, d = c["kind"], c["d_model"]
        tgt_mask = torch.nn.Transformer.generate_square_subsequent_mask(T, dtype=DT)
        pad = torch.tensor([[False] * S, [False] * (S - 2) + [True] * 2])
        inputs = {}
        if kind == "encoder":
            layer = torch.nn.TransformerEncoderLayer(d, c["nhead"], **layer_kwargs(c))
            m = torch.nn.TransformerEncoder(layer, c["layers"], norm=torch.nn.LayerNorm(d, dtype=DT),
                                            enable_nested_tensor=False)
            for i, l in enumerate(m.layers):  # torch's copies start equal: make them differ
                for p in l.parameters():
                    p.data.uniform_(-0.5, 0.5)
            inputs["src"] = torch.randn(N, S, d, dtype=DT)
            run = lambda: m(inputs["src"], src_key_padding_mask=pad)
            out[f"{name}.src_key_padding_mask"] = pad
        elif kind == "transformer":
            m = torch.nn.Transformer(d, c["nhead"], c["layers"], c["layers"], **layer_kwargs(c))
            inputs["src"] = torch.randn(N, S, d, dtype=DT)
            inputs["tgt"] = torch.randn(N, T, d, dtype=DT)
            run = lambda: m(inputs["src"], inputs["tgt"], tgt_mask=tgt_mask, memory_key_padding_mask=pad)
            out[f"{name}.tgt_mask"] = tgt_mask
            out[f"{name}.memory_key_padding_mask"] = pad
        else:
            layer = torch.nn.TransformerDecoderLayer(d, c["nhead"], **layer_kwargs(c))
            if kind == "decoder":
                m = torch.nn.TransformerDecoder(layer, c["layers"], norm=torch.nn.LayerNorm(d, dtype=DT))
                for l in m.layers:
                    for p in l.parameters():
                        p.data.uniform_(-0.5, 0.5)
            else:
                m = layer
            inputs["tgt"] = torch.randn(N, T, d, dtype=DT)
            inputs["memory"] = torch.randn(N, S, d, dtype=DT)
            run = lambda: m(inputs["tgt"], inputs["memory"], tgt_mask=tgt_mask, memory_key_padding_mask=pad)
            out[f"{name}.tgt_mask"] = tgt_mask
            out[f"{name}.memory_key_padding_mask"] = pad
        for t in inputs.values():
            t.requires_grad_(True)
        y = run()
        w = torch.randn(y.shape, dtype=DT)
        (y * w).sum().backward()
        out[f"{name}.w"] = w
        out[f"{name}.out"] = y.detach()
        for key, t in inputs.items():
            out[f"{name}.{key}"] = t.detach()
            out[f"{name}.grad.{key}"] = t.grad
        for pname, p in m.named_parameters():
            out[f"{name}.param.{pname}"] = p.detach()
            out[f"{name}.grad.{pname}"] = p.grad
        metadata[name] = " ".join(f"{k}={v}" for k, v in c.items())
    save(os.path.join(os.path.dirname(os.path.abspath(__file__)), "transformer_reference.safetensors"), out, metadata)


if __name__ == "__main__":
    main()
