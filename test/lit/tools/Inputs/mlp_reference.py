"""Reads a dist-run --save-outputs folder with onnx.numpy_helper and checks
its output against the MLP computed here in numpy from the model's own
initializers (Gemm, exact GELU, Gemm): prints the max abs difference.

    mlp_reference.py MODEL.onnx DIR
"""
import math
import sys

import numpy as np
import onnx
from onnx import numpy_helper

model = onnx.load(sys.argv[1])
w = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}


def tensor(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t.name, numpy_helper.to_array(t)


xname, x = tensor(sys.argv[2] + "/input_0.pb")
yname, y = tensor(sys.argv[2] + "/output_0.pb")
gemms = [n for n in model.graph.node if n.op_type == "Gemm"]
trans_b = [next((a.i for a in n.attribute if a.name == "transB"), 0)
           for n in gemms]


def gemm(a, k, b_name, bias_name):
    b = w[b_name].T if trans_b[k] else w[b_name]
    return a.astype(np.float64) @ b.astype(np.float64) + w[bias_name]


h = gemm(x, 0, gemms[0].input[1], gemms[0].input[2])
erf = np.vectorize(math.erf)
h = h * 0.5 * (1.0 + erf(h / math.sqrt(2.0)))
ref = gemm(h, 1, gemms[1].input[1], gemms[1].input[2])
print("input", xname, list(x.shape), x.dtype, "output", yname,
      list(y.shape), y.dtype)
print("max abs diff %.2e" % np.abs(y - ref).max(),
      "ok" if y.shape == ref.shape and np.abs(y - ref).max() < 1e-4 else "BAD")
