"""examples/gpt's model built from torch.nn, with the same state-dict names: token and
learned position embeddings (wte, wpe), pre-norm TransformerEncoderLayers with causal
self-attention and a GELU(tanh) MLP (h.i), a final LayerNorm (ln_f) and an output layer
tied to wte (lm_head). Used by tests/examples/gpt_reference.py and bench/gpt_compare.py."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def gelu_tanh(x):
    return F.gelu(x, approximate="tanh")


class GPT(nn.Module):
    def __init__(self, vocab, block, n_layer, n_head, n_embd, dtype=torch.float32):
        super().__init__()
        self.wte = nn.Embedding(vocab, n_embd, dtype=dtype)
        self.wpe = nn.Embedding(block, n_embd, dtype=dtype)
        self.h = nn.ModuleList(
            nn.TransformerEncoderLayer(n_embd, n_head, 4 * n_embd, dropout=0.0, activation=gelu_tanh, batch_first=True,
                                       norm_first=True, dtype=dtype) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(n_embd, dtype=dtype)
        self.lm_head = nn.Linear(n_embd, vocab, bias=False, dtype=dtype)
        self.lm_head.weight = self.wte.weight

    def forward(self, idx):
        t = idx.shape[1]
        x = self.wte(idx) + self.wpe(torch.arange(t, device=idx.device))
        mask = nn.Transformer.generate_square_subsequent_mask(t, device=idx.device, dtype=x.dtype)
        for block in self.h:
            x = block(x, src_mask=mask, is_causal=True)
        return self.lm_head(self.ln_f(x))

    def loss(self, idx, targets):
        logits = self(idx)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
