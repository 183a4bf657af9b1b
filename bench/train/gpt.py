#!/usr/bin/env python3
"""The decoder the training bench trains, its ONNX export and its batches.

The architecture is bench/models/make_gpt2_small.py's (pre-LN GPT-2 blocks,
fused QKV Linear, causal mask from arange, GELU (erf), tied LM head), with
the shape as arguments. Shared by make_model.py (the export distopt
trains) and torch_train.py (the PyTorch peer, which loads the exported
initializers by name, so both start from the same weights).

Needs Debian's python3-torch and python3-onnx (run with /usr/bin/python3).
"""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

GPT2_SMALL = dict(layers=12, d=768, heads=12, vocab=50257, pos=1024, seq=128)


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.d, self.heads = d, heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x):
        B, T, D = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(D, dim=2)
        hd = D // self.heads
        q = q.view(B, T, self.heads, hd).transpose(1, 2)
        k = k.view(B, T, self.heads, hd).transpose(1, 2)
        v = v.view(B, T, self.heads, hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        pos = torch.arange(T, device=x.device)
        att = att.masked_fill(~(pos.unsqueeze(1) >= pos.unsqueeze(0)),
                              float("-inf"))
        y = (F.softmax(att, dim=-1) @ v).transpose(1, 2).reshape(B, T, D)
        x = x + self.proj(y)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, layers, d, heads, vocab, pos, seq=None):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(pos, d)
        self.blocks = nn.ModuleList([Block(d, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)
        # GPT-2's initialisation (weights N(0, 0.02)), so that the loss
        # starts near ln(vocab); biases and LayerNorm parameters get small
        # random values instead of 0 and 1: torch.onnx.export merges
        # identical initializers into one (Identity nodes carry the other
        # names), which a trainer would then train as one tied parameter.
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, 0.0, 0.02)
            if isinstance(m, nn.Linear):
                nn.init.normal_(m.bias, 0.0, 0.02)
            if isinstance(m, nn.LayerNorm):
                nn.init.normal_(m.weight, 1.0, 0.02)
                nn.init.normal_(m.bias, 0.0, 0.02)

    def forward(self, ids):
        x = self.wte(ids) + self.wpe(torch.arange(ids.shape[1], device=ids.device))
        for b in self.blocks:
            x = b(x)
        return self.ln_f(x) @ self.wte.weight.t()


def shape_from_args(args):
    """layers,d,heads,vocab,pos,seq from a comma-separated string or the
    GPT-2-small default."""
    if not args:
        return dict(GPT2_SMALL)
    keys = ["layers", "d", "heads", "vocab", "pos", "seq"]
    vals = [int(v) for v in args.split(",")]
    if len(vals) != len(keys):
        raise SystemExit("shape: layers,d,heads,vocab,pos,seq")
    return dict(zip(keys, vals))


def token_batch(tokens, step, batch, seq):
    """input_ids and labels of `step`, as dist-train --tokens reads them:
    row b starts at token (step*batch + b)*seq (wrapping modulo
    len(tokens) - seq), labels one token later."""
    n = len(tokens)

    def row(first):
        start = first % (n - seq)
        return tokens[start:start + seq].astype(np.int64)

    ids = np.stack([row((step * batch + b) * seq) for b in range(batch)])
    labels = np.stack([row((step * batch + b) * seq + 1) for b in range(batch)])
    return torch.from_numpy(ids), torch.from_numpy(labels)
