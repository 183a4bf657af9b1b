#!/usr/bin/env python3
"""One GShard top-2 mixture-of-experts layer as a training step, for
bench/moe/run.sh: exports it with its training config, or times PyTorch's
step of the same layer (the peer).

    moe_layer.py export OUT_DIR      # OUT_DIR/model.onnx, OUT_DIR/train.json
    moe_layer.py torch THREADS STEPS # median ms of torch's step

The layer is scripts/make_training_cases.py's `MoE` (softmax gate, top-2,
capacity drop, einsum dispatch / experts' FFN / combine, the load-balancing
loss) behind a Linear(D, D), randomised the same way; the graph computes
the loss mean(y^2) + 0.01 * aux from the layer's output y. Shapes from the
environment: BATCH (8: groups, one a sequence), TOKENS per group (64),
D (128), EXPERTS (8), HIDDEN (256), CAPACITY (20: 1.25 x 2 x TOKENS /
EXPERTS). SGD, lr 0.01.
Needs python3-torch and python3-onnx (/usr/bin/python3)."""
import json
import os
import statistics
import sys
import time

import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "scripts"))
import make_training_cases as cases  # noqa: E402

G = int(os.environ.get("BATCH", 8))
S = int(os.environ.get("TOKENS", 64))
D = int(os.environ.get("D", 128))
E = int(os.environ.get("EXPERTS", 8))
F = int(os.environ.get("HIDDEN", 256))
C = int(os.environ.get("CAPACITY", 20))


class MoELayerLoss(torch.nn.Module):
    """A projection, then the layer: the projection's gradient needs the
    tokens' gradient, so backward sends it back through the dispatch as a
    model with layers before its experts does."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(D, D)
        self.moe = cases.MoE(D, E, F, C)

    def forward(self, x):
        y, aux = self.moe(self.proj(x))
        return (y * y).mean() + 0.01 * aux


def make():
    torch.manual_seed(5)
    return cases.randomise(MoELayerLoss(), 5).eval()


def export(out):
    os.makedirs(out, exist_ok=True)
    model = make()
    x = torch.randn(G, S, D)
    torch.onnx.export(model, (x,), os.path.join(out, "model.onnx"),
                      input_names=["x"], output_names=["loss"],
                      opset_version=cases.OPSET, do_constant_folding=False)
    with open(os.path.join(out, "train.json"), "w") as f:
        json.dump({"output": "loss", "loss": {"kind": "model"},
                   "optimizer": {"kind": "sgd", "lr": 0.01},
                   "no_decay": [], "frozen": [], "steps": 1}, f)


def torch_step(threads, steps):
    torch.set_num_threads(threads)
    model = make()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(3)
    times = []
    for _ in range(steps + 1):  # the first is a warm-up
        x = torch.randn(G, S, D, generator=g)
        t0 = time.perf_counter()
        opt.zero_grad()
        model(x).backward()
        opt.step()
        times.append((time.perf_counter() - t0) * 1e3)
    print("%.3f" % statistics.median(times[1:]))


if __name__ == "__main__":
    if sys.argv[1] == "export":
        export(sys.argv[2])
    else:
        torch_step(int(sys.argv[2]), int(sys.argv[3]))
