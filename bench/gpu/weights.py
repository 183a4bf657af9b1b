#!/usr/bin/env python3
"""Weights that can be written anew anywhere, byte for byte: how a model of
hundreds of megabytes reaches a machine that only takes a small upload.

  weights.py detach IN.onnx OUT_DIR   OUT_DIR/model.onnx keeps IN's graph
      and its non-float initializers; every float initializer becomes a
      reference into OUT_DIR/weights.bin (ONNX external data), and
      weights.bin is written (as `write` does).
  weights.py write DIR                writes DIR/weights.bin for
      DIR/model.onnx: each element a function of its tensor's position and
      its own index (splitmix64), scaled like GPT-2's initialisation
      (uniform with std 0.02 for matrices and embeddings, 0.02-scale values
      for biases, 1 + 0.1-scale values for LayerNorm scales; nothing is
      exactly 0 or 1, so a dropped bias shows).

The values depend on nothing but the graph (no library's random stream),
so `write` here and on another machine give the same file; dist-train and
PyTorch (which loads the initializers through onnx.load) then train the
same model. Needs numpy and onnx.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto

FLOAT_TYPES = {TensorProto.FLOAT: np.float32, TensorProto.FLOAT16: np.float16,
               TensorProto.DOUBLE: np.float64}
WEIGHTS = "weights.bin"


def uniform(tensor_index, n):
    """n values in [-1, 1): splitmix64 of (tensor_index << 40) + i."""
    with np.errstate(over="ignore"):
        z = (np.uint64(tensor_index) << np.uint64(40)) + np.arange(n, dtype=np.uint64)
        z = z + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) / float(1 << 53) * 2.0 - 1.0


def values(tensor_index, name, shape):
    n = int(np.prod(shape)) if shape else 1
    u = uniform(tensor_index, n)
    if len(shape) >= 2:
        v = u * (0.02 * np.sqrt(3.0))  # std 0.02
    elif "ln" in name or "norm" in name:
        v = 1.0 + 0.1 * u if name.endswith("weight") else 0.02 * u
    else:
        v = 0.02 * u
    return v.reshape(shape)


def external(t):
    return t.data_location == TensorProto.EXTERNAL


def write(d):
    model = onnx.load(os.path.join(d, "model.onnx"), load_external_data=False)
    with open(os.path.join(d, WEIGHTS), "wb") as f:
        for i, t in enumerate(model.graph.initializer):
            if not external(t):
                continue
            info = {e.key: e.value for e in t.external_data}
            assert f.tell() == int(info["offset"]), t.name
            v = values(i, t.name, list(t.dims)).astype(FLOAT_TYPES[t.data_type])
            f.write(v.tobytes())


def detach(src, d):
    model = onnx.load(src)
    os.makedirs(d, exist_ok=True)
    offset = 0
    for t in model.graph.initializer:
        if t.data_type not in FLOAT_TYPES:
            continue
        n = int(np.prod(t.dims)) if t.dims else 1
        nbytes = n * np.dtype(FLOAT_TYPES[t.data_type]).itemsize
        for field in ("float_data", "double_data", "int32_data"):
            t.ClearField(field)
        t.ClearField("raw_data")
        del t.external_data[:]
        for k, v in (("location", WEIGHTS), ("offset", str(offset)), ("length", str(nbytes))):
            e = t.external_data.add()
            e.key, e.value = k, v
        t.data_location = TensorProto.EXTERNAL
        offset += nbytes
    onnx.save(model, os.path.join(d, "model.onnx"))
    write(d)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "detach":
        detach(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 3 and sys.argv[1] == "write":
        write(sys.argv[2])
    else:
        sys.exit(__doc__)
