#!/usr/bin/env python3
"""Exports the tutorial's model (docs/tutorial.md): a byte-level GPT (a
vocabulary of 256, 2 layers, width 64, 4 heads, 64 positions) with GPT-2's
initialisation, the way docs/training.md says to export from PyTorch
(do_constant_folding=False, a dynamic batch dimension), and its training
config. Needs torch; the outputs are committed in examples/tutorial/.

    python3 scripts/make_tutorial_model.py examples/tutorial
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_training_cases import GPT, fresh_init  # noqa: E402


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    model = GPT(vocab=256, d=64, heads=4, layers=2, block_size=64)
    fresh_init(model, seed=0)
    model.eval()
    example = torch.zeros(8, 64, dtype=torch.long)
    torch.onnx.export(
        model, (example,), os.path.join(out, "gpt_bytes.onnx"),
        input_names=["input_ids"], output_names=["logits"],
        dynamic_axes={"input_ids": {0: "batch"}, "logits": {0: "batch"}},
        opset_version=17, do_constant_folding=False)
    config = {
        "output": "logits",
        "loss": {"kind": "cross_entropy"},
        "optimizer": {"kind": "adamw", "lr": 0.003, "betas": [0.9, 0.95],
                      "eps": 1e-8, "weight_decay": 0.1},
        "lr_schedule": {"kind": "cosine", "warmup_steps": 20,
                        "total_steps": 300, "min_lr": 0.0003},
        "no_decay": ["*.bias", "*ln_*", "wpe.weight"],
        "frozen": ["h.*.attn.bias"],
        "clip_grad_norm": 1.0,
        "steps": 300,
    }
    with open(os.path.join(out, "train.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    print("wrote", out)


if __name__ == "__main__":
    main()
