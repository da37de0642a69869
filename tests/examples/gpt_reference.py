#!/usr/bin/env python3
"""Writes gpt_reference.safetensors: examples/gpt's model built from torch.nn
(tests/support/torch_gpt.py) in float64 on random weights and a batch, for
tests/examples/gpt_model_test.cpp to reproduce.

Keys: param.<name> (the state dict, lm_head.weight included: it is wte.weight), idx,
targets, logits, loss, grad.<name> for every parameter (named_parameters: lm_head's is
wte's), adamw_losses (ten AdamW steps from these weights on the same batch: lr 0.01,
betas (0.9, 0.95), weight decay 0.1), and sinusoidal.pe (torch's tutorial PositionalEncoding
table, d_model 8, max_len 12). Metadata "model": the sizes.
Run: python3 tests/examples/gpt_reference.py   (writes next to itself)
"""
import math
import os
import sys

import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "support"))
from safetensors_writer import save  # noqa: E402
from torch_gpt import GPT  # noqa: E402

VOCAB, BLOCK, LAYERS, HEADS, EMBD, B, T = 13, 8, 2, 2, 8, 3, 6


def sinusoidal(d_model, max_len):
    position = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float64) * (-math.log(10000.0) / d_model))
    pe = torch.zeros(max_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe


def main():
    torch.manual_seed(5)
    m = GPT(VOCAB, BLOCK, LAYERS, HEADS, EMBD, dtype=torch.float64)
    for p in m.parameters():  # away from the initialisation's zeros and ones, so every term counts
        p.data.uniform_(-0.5, 0.5)
    idx = torch.randint(0, VOCAB, (B, T))
    targets = torch.randint(0, VOCAB, (B, T))
    out = {f"param.{k}": v.clone() for k, v in m.state_dict().items()}
    logits = m(idx)
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))
    loss.backward()
    out.update(idx=idx, targets=targets, logits=logits.detach(), loss=loss.detach())
    for name, p in m.named_parameters():
        out[f"grad.{name}"] = p.grad.clone()
    opt = torch.optim.AdamW(m.parameters(), lr=0.01, betas=(0.9, 0.95), weight_decay=0.1)
    losses = []
    for _ in range(10):
        opt.zero_grad()
        step_loss = m.loss(idx, targets)
        losses.append(step_loss.item())
        step_loss.backward()
        opt.step()
    out["adamw_losses"] = torch.tensor(losses, dtype=torch.float64)
    out["sinusoidal.pe"] = sinusoidal(8, 12)
    meta = {"model": f"vocab={VOCAB} block={BLOCK} layers={LAYERS} heads={HEADS} embd={EMBD}"}
    save(os.path.join(here, "gpt_reference.safetensors"), out, meta)


if __name__ == "__main__":
    main()
