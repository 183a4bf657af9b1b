#!/usr/bin/env python3
"""Exports the Llama of test/data/train/llama_long_context at another
sequence length, with its training config, for bench/train/context_parallel.sh.

    make_long_context.py OUT_DIR SEQ [BATCH]

Writes OUT_DIR/model.onnx (batch x SEQ tokens, static shapes) and
OUT_DIR/train.json (cross-entropy, AdamW). The model class is the one
scripts/make_training_cases.py trains; its weights are randomised the same
way. Needs python3-torch and python3-onnx (/usr/bin/python3)."""
import json
import os
import sys

import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "scripts"))
import make_training_cases as cases  # noqa: E402

out, seq = sys.argv[1], int(sys.argv[2])
batch = int(sys.argv[3]) if len(sys.argv) > 3 else 2
os.makedirs(out, exist_ok=True)
torch.manual_seed(17)
model = cases.randomise(cases.LlamaLongContext(max_pos=seq), 17).eval()
ids = torch.randint(0, 64, (batch, seq))
torch.onnx.export(model, (ids,), os.path.join(out, "model.onnx"),
                  input_names=["input_ids"], output_names=["logits"],
                  opset_version=cases.OPSET, do_constant_folding=False)
with open(os.path.join(out, "train.json"), "w") as f:
    json.dump({"output": "logits",
               "loss": {"kind": "cross_entropy", "ignore_index": -100},
               "optimizer": {"kind": "adamw", "lr": 3e-3, "betas": [0.9, 0.95],
                             "eps": 1e-8, "weight_decay": 0.1},
               "no_decay": ["*norm.weight"], "frozen": ["rotary_emb.*"],
               "steps": 1}, f)
