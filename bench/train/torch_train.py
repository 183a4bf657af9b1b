#!/usr/bin/env python3
"""The PyTorch peer of dist-train --bench: the same model (gpt.py, weights
loaded from DIR/model.onnx by initializer name), the same batches
(DIR/tokens.bin, read as dist-train --tokens reads it), cross-entropy over
next tokens and torch.optim.AdamW with DIR/train.json's hyper-parameters.

A step is optimizer.zero_grad(set_to_none=True), forward, loss, backward,
optimizer.step(), timed with time.perf_counter like dist-train times its
step (eager mode, no autograd profiler). WARMUP steps run first (their
losses are printed, as dist-train prints its --steps), then N timed steps; prints median_ms and the median of
each phase (forward + loss, backward, optimizer; zero_grad is in the
optimizer phase).

  torch_train.py DIR --batch B --threads T --warmup W --bench N
  torch_train.py DIR ... --device cuda   # on the GPU (f32, TF32 off, as
      dist-train's default; --tf32 allows it, as DISTRT_CUDA_TF32=1 does);
      each timer reads after torch.cuda.synchronize
  torch_train.py DIR ... --bf16    # forward and loss under autocast(bfloat16)
  torch_train.py DIR ... --ddp     # one process of torch DDP over gloo:
      RANK, WORLD_SIZE and INIT_FILE in the environment (file:// rendezvous);
      --batch is the global batch, each rank takes its rows, DDP averages the
      gradients. Prints rank 0's times and the global loss of step 0.

Needs Debian's python3-torch and python3-onnx (run with /usr/bin/python3).
"""
import argparse
import ctypes
import json
import os
import statistics
import sys
import time

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt import GPT, token_batch  # noqa: E402


def openblas():
    """The OpenBLAS torch's process loaded (Debian's torch calls BLAS through
    libblas.so.3, OpenBLAS here): its core type and thread count."""
    try:
        lib = ctypes.CDLL("libopenblas.so.0")
        lib.openblas_get_corename.restype = ctypes.c_char_p
        return lib
    except OSError:
        return None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dir")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--bench", type=int, default=5)
    p.add_argument("--ddp", action="store_true")
    p.add_argument("--foreach", action="store_true",
                   help="AdamW's multi-tensor code (default: torch 1.13's "
                        "single-tensor default)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--tf32", action="store_true",
                   help="on cuda, f32 matmuls on TF32 tensor cores")
    p.add_argument("--bf16", action="store_true",
                   help="forward and loss under torch.autocast(bfloat16): "
                   "f32 parameters and optimizer, bf16 matmuls")
    a = p.parse_args()
    dev = torch.device(a.device)
    if dev.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = a.tf32
        torch.backends.cudnn.allow_tf32 = a.tf32

    def now():
        if dev.type == "cuda":
            torch.cuda.synchronize()
        return time.perf_counter()

    torch.set_num_threads(a.threads)
    blas = openblas()
    if blas is not None:
        blas.openblas_set_num_threads(a.threads)
    with open(os.path.join(a.dir, "shape.json")) as f:
        shape = json.load(f)
    with open(os.path.join(a.dir, "train.json")) as f:
        config = json.load(f)
    opt = config["optimizer"]
    assert opt["kind"] == "adamw" and not config.get("no_decay") \
        and not config.get("frozen") and "clip_grad_norm" not in config

    rank, world = 0, 1
    if a.ddp:
        import torch.distributed as dist
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        dist.init_process_group("gloo", init_method="file://" +
                                os.environ["INIT_FILE"],
                                rank=rank, world_size=world)
    assert a.batch % world == 0
    rows = slice(rank * a.batch // world, (rank + 1) * a.batch // world)

    model = GPT(**shape)
    # The same weights as the ONNX file distopt trains, matched by name.
    m = onnx.load(os.path.join(a.dir, "model.onnx"))
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    del m
    params = dict(model.named_parameters())
    if set(inits) != set(params):
        sys.exit("initializers and parameters differ: %s" %
                 sorted(set(inits) ^ set(params)))
    with torch.no_grad():
        for name, t in params.items():
            t.copy_(torch.from_numpy(np.array(inits[name])))
    del inits
    model.to(dev)
    train_model = model
    if a.ddp:
        train_model = torch.nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=opt["lr"], betas=tuple(opt["betas"]),
        eps=opt["eps"], weight_decay=opt["weight_decay"],
        foreach=True if a.foreach else None)
    tokens = np.fromfile(os.path.join(a.dir, "tokens.bin"), dtype=np.uint16)
    vocab = shape["vocab"]

    times, phases = [], []
    losses = []  # the warm-up steps' losses
    for k in range(a.warmup + a.bench):
        ids, labels = token_batch(tokens, k, a.batch, shape["seq"])
        ids, labels = ids[rows].to(dev), labels[rows].to(dev)
        t0 = now()
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(dev.type, dtype=torch.bfloat16,
                            enabled=a.bf16):
            loss = F.cross_entropy(train_model(ids).view(-1, vocab),
                                   labels.reshape(-1))
        t1 = now()
        loss.backward()
        t2 = now()
        optimizer.step()
        t3 = now()
        if k < a.warmup:
            losses.append(loss.detach().clone())
        else:
            times.append((t3 - t0) * 1e3)
            phases.append(((t1 - t0) * 1e3, (t2 - t1) * 1e3, (t3 - t2) * 1e3))
    if a.ddp:
        # the global loss: the mean of the ranks' means (equal row counts)
        for loss in losses:
            dist.all_reduce(loss)
            loss /= world
        dist.destroy_process_group()
    if rank != 0:
        return
    print("torch: %s on %s, %d thread(s)%s%s, AdamW %s" % (
        torch.__version__,
        torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu",
        torch.get_num_threads(),
        ", DDP gloo %d processes" % world if a.ddp else "",
        ", autocast bf16" if a.bf16 else "",
        "foreach" if a.foreach else "single-tensor"))
    if blas is not None:
        print("torch BLAS: OpenBLAS %s, %d thread(s)" % (
            blas.openblas_get_corename().decode(),
            blas.openblas_get_num_threads()))
    for k, loss in enumerate(losses):
        print("step %d/%d: loss %.7g" % (k + 1, len(losses), loss.item()))
    med = [statistics.median(p[i] for p in phases) for i in range(3)]
    print("phases_ms: forward+loss %.1f backward %.1f optimizer %.1f" %
          tuple(med))
    print("median_ms: %.3f" % statistics.median(times))


if __name__ == "__main__":
    main()
