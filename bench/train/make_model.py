#!/usr/bin/env python3
"""Write what bench/train/run.sh trains into OUT_DIR:

  model.onnx   the decoder of gpt.py (random weights, seed 0), exported with
               torch.onnx.export, opset 17, do_constant_folding=False (the
               initializers keep torch's parameter names), input_ids
               int64 [batch, seq] -> logits [batch, seq, vocab], the batch
               axis symbolic (`batch`; dist-train binds it with --dim)
  train.json   the training config: cross-entropy over next tokens, AdamW
               (lr 1e-4, betas 0.9/0.999, eps 1e-8, weight decay 0.01 on
               every parameter, as torch.optim.AdamW's defaults do)
  tokens.bin   random uint16 tokens (seed 1), read by dist-train --tokens and
               by torch_train.py the same way

Usage: make_model.py OUT_DIR [--shape layers,d,heads,vocab,pos,seq]
(default: GPT-2 small, 12,768,12,50257,1024,128). Not committed: run.sh
calls this when OUT_DIR/model.onnx is missing.
Needs Debian's python3-torch and python3-onnx (run with /usr/bin/python3).
"""
import argparse
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt import GPT, shape_from_args  # noqa: E402

CONFIG = {
    "output": "logits",
    "loss": {"kind": "cross_entropy", "ignore_index": -100},
    "optimizer": {"kind": "adamw", "lr": 1e-4, "betas": [0.9, 0.999],
                  "eps": 1e-8, "weight_decay": 0.01},
    "no_decay": [],
    "frozen": [],
    "steps": 1,
}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--shape", default="")
    a = p.parse_args()
    shape = shape_from_args(a.shape)
    os.makedirs(a.out, exist_ok=True)
    torch.manual_seed(0)
    model = GPT(**shape).eval()
    ids = torch.randint(0, shape["vocab"], (1, shape["seq"]))
    path = os.path.join(a.out, "model.onnx")
    torch.onnx.export(model, (ids,), path, input_names=["input_ids"],
                      output_names=["logits"], opset_version=17,
                      do_constant_folding=False,
                      dynamic_axes={"input_ids": {0: "batch"},
                                    "logits": {0: "batch"}})
    # Every parameter must be its own initializer (see gpt.py).
    import onnx
    names = {t.name for t in onnx.load(path, load_external_data=False)
             .graph.initializer}
    missing = sorted(set(dict(model.named_parameters())) - names)
    if missing:
        sys.exit("parameters without their own initializer: %s" % missing)
    with open(os.path.join(a.out, "train.json"), "w") as f:
        json.dump(CONFIG, f, indent=2)
        f.write("\n")
    rng = np.random.default_rng(1)
    # enough for 64 steps of 4 rows before the reader wraps around
    rng.integers(0, shape["vocab"], 64 * 4 * shape["seq"] + 1,
                 dtype=np.uint16).tofile(os.path.join(a.out, "tokens.bin"))
    with open(os.path.join(a.out, "shape.json"), "w") as f:
        json.dump(shape, f)
        f.write("\n")
    print(path)


if __name__ == "__main__":
    main()
