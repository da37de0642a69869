#!/usr/bin/env python3
"""Writes recurrent_reference.safetensors: torch.nn's RNN, LSTM, GRU and their cells on fixed
weights and inputs, in float64, for tests/nn/recurrent_test.cpp to reproduce.

For each case C (the metadata entry C holds its configuration as "key=value" words):
  C.param.<name>   the layer's state dict (torch's names)
  C.input, C.h0, C.c0, C.lengths (when the case has them)
  C.w_output, C.w_h, C.w_c   fixed weights of the loss
                   sum(output * w_output) + sum(h_n * w_h) + sum(c_n * w_c)
  C.output, C.h_n, C.c_n     torch's results (lengths: pack_padded_sequence with
                   enforce_sorted=False, padded back to the input's length)
  C.grad.<name>, C.grad.input, C.grad.h0, C.grad.c0   the loss's gradients
And "train.*": an LSTM(4, 6, num_layers=2) + Linear(6, 3) classifier on the last step,
cross entropy, ten AdamW(lr=0.01, weight_decay=0.01) steps on one batch: the initial weights
(train.param.*), the batch (train.input, train.target) and the ten losses (train.losses).
Run: python3 tests/nn/recurrent_reference.py   (writes next to itself; no GPU needed)
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from safetensors_writer import save  # noqa: E402

torch.manual_seed(7)
DT = torch.float64

CASES = {
    "rnn_tanh": dict(kind="rnn", input=3, hidden=4, L=5, N=2, h0=1),
    "rnn_relu_deep": dict(kind="rnn", input=3, hidden=4, L=4, N=3, layers=2, relu=1, bidirectional=1, batch_first=1),
    "rnn_unbatched": dict(kind="rnn", input=3, hidden=4, L=5, N=0, unbatched=1, h0=1),
    "lstm": dict(kind="lstm", input=3, hidden=4, L=5, N=2, h0=1),
    "lstm_proj_deep": dict(kind="lstm", input=3, hidden=5, L=4, N=2, layers=2, proj=2, bidirectional=1, h0=1),
    "lstm_lengths": dict(kind="lstm", input=3, hidden=4, L=6, N=3, layers=2, bidirectional=1, batch_first=1,
                         lengths=[6, 2, 4], h0=1),
    "lstm_unbatched_proj": dict(kind="lstm", input=2, hidden=3, L=3, N=0, unbatched=1, proj=1),
    "gru": dict(kind="gru", input=3, hidden=4, L=5, N=2, h0=1),
    "gru_nobias_deep": dict(kind="gru", input=3, hidden=4, L=4, N=2, layers=3, bias=0),
    "gru_lengths": dict(kind="gru", input=3, hidden=4, L=5, N=3, bidirectional=1, lengths=[3, 5, 1], h0=1),
    "rnn_cell": dict(kind="rnn_cell", input=3, hidden=4, N=3, h0=1),
    "rnn_cell_relu": dict(kind="rnn_cell", input=3, hidden=4, N=2, relu=1, bias=0),
    "lstm_cell": dict(kind="lstm_cell", input=3, hidden=4, N=3, h0=1),
    "gru_cell": dict(kind="gru_cell", input=3, hidden=4, N=3, h0=1),
    "gru_cell_unbatched": dict(kind="gru_cell", input=3, hidden=4, N=0, unbatched=1, h0=1),
}


def build(c):
    kind, layers = c["kind"], c.get("layers", 1)
    common = dict(bias=bool(c.get("bias", 1)), dtype=DT)
    if kind.endswith("_cell"):
        if kind == "rnn_cell":
            return torch.nn.RNNCell(c["input"], c["hidden"], nonlinearity="relu" if c.get("relu") else "tanh", **common)
        return (torch.nn.LSTMCell if kind == "lstm_cell" else torch.nn.GRUCell)(c["input"], c["hidden"], **common)
    common.update(num_layers=layers, batch_first=bool(c.get("batch_first", 0)),
                  bidirectional=bool(c.get("bidirectional", 0)))
    if kind == "rnn":
        return torch.nn.RNN(c["input"], c["hidden"], nonlinearity="relu" if c.get("relu") else "tanh", **common)
    if kind == "lstm":
        return torch.nn.LSTM(c["input"], c["hidden"], proj_size=c.get("proj", 0), **common)
    return torch.nn.GRU(c["input"], c["hidden"], **common)


def run_case(name, c, out):
    m = build(c)
    cell = c["kind"].endswith("_cell")
    lstm = c["kind"].startswith("lstm")
    unbatched = bool(c.get("unbatched", 0))
    d = 2 if c.get("bidirectional") else 1
    count = d * c.get("layers", 1)
    h_out = c.get("proj", 0) or c["hidden"]
    if cell:
        x = torch.randn(*(() if unbatched else (c["N"],)), c["input"], dtype=DT)
        state_shape = (c["hidden"],) if unbatched else (c["N"], c["hidden"])
        h0 = torch.randn(*state_shape, dtype=DT) if c.get("h0") else None
        c0 = torch.randn(*state_shape, dtype=DT) if c.get("h0") and lstm else None
    else:
        shape = (c["L"], c["input"]) if unbatched else (
            (c["N"], c["L"], c["input"]) if c.get("batch_first") else (c["L"], c["N"], c["input"]))
        x = torch.randn(*shape, dtype=DT)
        lead = (count,) if unbatched else (count, c["N"])
        h0 = torch.randn(*lead, h_out, dtype=DT) if c.get("h0") else None
        c0 = torch.randn(*lead, c["hidden"], dtype=DT) if c.get("h0") and lstm else None
    inputs = {"input": x, "h0": h0, "c0": c0}
    for t in inputs.values():
        if t is not None:
            t.requires_grad_(True)
    if cell:
        state = None if h0 is None else ((h0, c0) if lstm else h0)
        r = m(x, state)
        output, h_n, c_n = (r[0], None, r[1]) if lstm else (r, None, None)
    else:
        state = None if h0 is None else ((h0, c0) if lstm else h0)
        if "lengths" in c:
            lengths = torch.tensor(c["lengths"], dtype=torch.int64)
            packed = torch.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=bool(c.get("batch_first")),
                                                             enforce_sorted=False)
            po, hs = m(packed, state)
            output, _ = torch.nn.utils.rnn.pad_packed_sequence(po, batch_first=bool(c.get("batch_first")),
                                                               total_length=c["L"])
            out[f"{name}.lengths"] = lengths
        else:
            output, hs = m(x, state)
        h_n, c_n = hs if lstm else (hs, None)
    results = {"output": output, "h_n": h_n, "c_n": c_n}
    loss = 0
    for key, t in results.items():
        if t is None:
            continue
        w = torch.randn(t.shape, dtype=DT)
        out[f"{name}.w_{key.split('_')[0] if key != 'output' else 'output'}"] = w
        loss = loss + (t * w).sum()
        out[f"{name}.{key}"] = t.detach()
    loss.backward()
    for pname, p in m.named_parameters():
        out[f"{name}.param.{pname}"] = p.detach()
        out[f"{name}.grad.{pname}"] = p.grad
    for key, t in inputs.items():
        if t is not None:
            out[f"{name}.{key}"] = t.detach()
            out[f"{name}.grad.{key}"] = t.grad


def train_case(out):
    lstm = torch.nn.LSTM(4, 6, num_layers=2, dtype=DT)
    head = torch.nn.Linear(6, 3, dtype=DT)
    for n, p in list(lstm.named_parameters()) + [("head." + n, p) for n, p in head.named_parameters()]:
        out[f"train.param.{n if n.startswith('head.') else 'lstm.' + n}"] = p.detach().clone()
    x = torch.randn(7, 4, 4, dtype=DT)  # [L, N, features]
    target = torch.tensor([0, 2, 1, 2], dtype=torch.int64)
    opt = torch.optim.AdamW(list(lstm.parameters()) + list(head.parameters()), lr=0.01, weight_decay=0.01)
    losses = []
    for _ in range(10):
        opt.zero_grad()
        y, _ = lstm(x)
        loss = torch.nn.functional.cross_entropy(head(y[-1]), target)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    out["train.input"] = x
    out["train.target"] = target
    out["train.losses"] = torch.tensor(losses, dtype=DT)


def main():
    out, metadata = {}, {}
    for name, c in CASES.items():
        run_case(name, c, out)
        metadata[name] = " ".join(f"{k}={v if not isinstance(v, list) else ','.join(map(str, v))}"
                                  for k, v in c.items())
    train_case(out)
    save(os.path.join(os.path.dirname(os.path.abspath(__file__)), "recurrent_reference.safetensors"), out, metadata)


if __name__ == "__main__":
    main()
