#!/usr/bin/env python3
"""Export a GPT-2-small-shaped decoder (12 layers, d=768, 12 heads, vocab
50257, 1 x 128 tokens) to ONNX for the benchmarks. Random weights; about
500 MB. Not committed: bench scripts call this when the file is missing.

Needs Debian's python3-torch and python3-onnx (run with /usr/bin/python3).
Usage: make_gpt2_small.py OUT_DIR [--external-data] [--dynamic-batch]
(--dynamic-batch: the batch axis of input_ids and logits is the symbol
`batch`, for pipeline microbatching.)
"""
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

D, HEADS, LAYERS, VOCAB, POS, SEQ = 768, 12, 12, 50257, 1024, 128


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(D)
        self.qkv = nn.Linear(D, 3 * D)
        self.proj = nn.Linear(D, D)
        self.ln2 = nn.LayerNorm(D)
        self.fc1 = nn.Linear(D, 4 * D)
        self.fc2 = nn.Linear(4 * D, D)

    def forward(self, x):
        B, T, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(D, dim=2)
        hd = D // HEADS
        q = q.view(B, T, HEADS, hd).transpose(1, 2)
        k = k.view(B, T, HEADS, hd).transpose(1, 2)
        v = v.view(B, T, HEADS, hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        pos = torch.arange(T)
        att = att.masked_fill(~(pos.unsqueeze(1) >= pos.unsqueeze(0)), float("-inf"))
        y = (F.softmax(att, dim=-1) @ v).transpose(1, 2).reshape(B, T, D)
        x = x + self.proj(y)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class GPT2Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, D)
        self.wpe = nn.Embedding(POS, D)
        self.blocks = nn.ModuleList([Block() for _ in range(LAYERS)])
        self.ln_f = nn.LayerNorm(D)

    def forward(self, ids):
        x = self.wte(ids) + self.wpe(torch.arange(ids.shape[1]))
        for b in self.blocks:
            x = b(x)
        return self.ln_f(x) @ self.wte.weight.t()


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    model = GPT2Small().eval()
    ids = torch.randint(0, VOCAB, (1, SEQ))
    path = os.path.join(out, "model.onnx")
    torch.onnx.export(model, (ids,), path, input_names=["input_ids"],
                      output_names=["logits"], opset_version=17,
                      do_constant_folding=True,
                      dynamic_axes=({"input_ids": {0: "batch"},
                                     "logits": {0: "batch"}}
                                    if "--dynamic-batch" in sys.argv else None))
    if "--external-data" in sys.argv:
        import onnx
        m = onnx.load(path)
        onnx.save_model(m, path, save_as_external_data=True,
                        all_tensors_to_one_file=True, location="weights.bin")
    print(path)


if __name__ == "__main__":
    main()
