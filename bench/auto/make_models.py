#!/usr/bin/env python3
"""The two models bench/auto/measure.py measures by default: a GPT-2-style
decoder and a Llama-style one of a few million parameters each, large enough
that one training step on a thread rank lasts tens to hundreds of
milliseconds (the training cases under test/data/train are a few hundred
KiB; their steps last 2-7 ms, where the scheduler's noise is as large as the
differences between plans).

    /usr/bin/python3 bench/auto/make_models.py OUT_DIR

writes OUT_DIR/gpt_bench/{model.onnx,train.json} and
OUT_DIR/llama_bench/{model.onnx,train.json}: random weights (fixed seeds,
nothing exactly 0 or 1), exported as the training cases are (static shapes,
no constant folding). The batches are the trainer's synthetic ones. Not
committed: measure.py calls this when the files are missing.

Needs Debian's python3-torch and python3-onnx.
"""
import importlib.util
import json
import os
import sys

import torch

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
spec = importlib.util.spec_from_file_location(
    "cases", os.path.join(REPO, "scripts", "make_training_cases.py"))
cases = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cases)

# Shapes: 4 layers each (a 2-stage pipeline gets 2), heads and hidden sizes
# divisible by 2 and 4 (tp), vocabulary large enough that the LM head is a
# real share of the step.
MODELS = {
    "gpt_bench": dict(
        ctor=lambda: cases.GPT(vocab=2048, d=256, heads=8, layers=4, block_size=128),
        batch=8, seq=128,
        config=dict(no_decay=cases.GPT_NO_DECAY, frozen=cases.GPT_FROZEN,
                    clip_grad_norm=1.0)),
    "llama_bench": dict(
        ctor=lambda: cases.LlamaLongContext(vocab=2048, d=256, heads=8, layers=4,
                                            hidden=704, max_pos=128),
        batch=8, seq=128,
        config=dict(no_decay=["*norm.weight"], frozen=["rotary_emb.*"],
                    clip_grad_norm=1.0)),
}


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    for seed, (name, m) in enumerate(sorted(MODELS.items())):
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        torch.manual_seed(seed)
        model = cases.randomise(m["ctor"](), 500 + seed).eval()
        ids = torch.randint(0, 2048, (m["batch"], m["seq"]))
        path = os.path.join(d, "model.onnx")
        torch.onnx.export(model, (ids,), path, input_names=["input_ids"],
                          output_names=["logits"], opset_version=cases.OPSET,
                          do_constant_folding=False)
        params = sum(p.numel() for p in model.parameters())
        config = {"output": "logits",
                  "loss": {"kind": "cross_entropy"},
                  "optimizer": {"kind": "adamw", "lr": 1e-3, "betas": [0.9, 0.95],
                                "eps": 1e-8, "weight_decay": 0.1}}
        config.update(m["config"])
        config["steps"] = 1
        with open(os.path.join(d, "train.json"), "w") as f:
            json.dump(config, f, indent=2)
            f.write("\n")
        print("%s: %.2fM parameters, batch %d x %d tokens" % (
            path, params / 1e6, m["batch"], m["seq"]))


if __name__ == "__main__":
    main()
