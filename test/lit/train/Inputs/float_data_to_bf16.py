"""Copies a training case's step_K folders into a new folder, writing each
f32 input (input_<i>.pb) as bf16 (round to nearest even, computed here on
the bits) and every other tensor as it is: the inputs a bf16 model takes."""
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def to_bf16(t):
    x = numpy_helper.to_array(t).astype(np.float32)
    u = x.view(np.uint32).astype(np.uint64)
    bits = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    out = onnx.TensorProto()
    out.name = t.name
    out.data_type = onnx.TensorProto.BFLOAT16
    out.dims.extend(t.dims)
    out.raw_data = bits.tobytes()
    return out


src, dst = sys.argv[1], sys.argv[2]
for step in sorted(d for d in os.listdir(src) if d.startswith("step_")):
    os.makedirs(os.path.join(dst, step))
    for name in os.listdir(os.path.join(src, step)):
        path = os.path.join(src, step, name)
        t = onnx.load_tensor(path)
        if name.startswith("input_") and t.data_type == onnx.TensorProto.FLOAT:
            onnx.save_tensor(to_bf16(t), os.path.join(dst, step, name))
        else:
            shutil.copy(path, os.path.join(dst, step, name))
