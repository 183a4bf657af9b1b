"""Compares two TensorProto files (any float dtype, read as f32): prints the
largest absolute difference and whether it is within the tolerance; exits 1
when it is not."""
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def load(path):
    t = onnx.load_tensor(path)
    if t.data_type == onnx.TensorProto.BFLOAT16:
        bits = np.frombuffer(t.raw_data, dtype=np.uint16).astype(np.uint32) << 16
        return bits.view(np.float32).reshape(tuple(t.dims))
    return numpy_helper.to_array(t).astype(np.float32)


a, b, tol = load(sys.argv[1]), load(sys.argv[2]), float(sys.argv[3])
if a.shape != b.shape:
    sys.exit(f"shapes differ: {a.shape} and {b.shape}")
diff = float(np.abs(a - b).max())
print(f"max abs diff {diff:.4g}: " + ("within" if diff <= tol else "NOT within") + f" {tol:g}")
sys.exit(0 if diff <= tol else 1)
