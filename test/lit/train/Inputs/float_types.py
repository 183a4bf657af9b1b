"""Prints, per ONNX model, the dtypes of its float initializers and of its
graph inputs and outputs that are floats (a saved model's dtype)."""
import collections
import os
import sys

import onnx

NAMES = {onnx.TensorProto.FLOAT: "f32", onnx.TensorProto.BFLOAT16: "bf16",
         onnx.TensorProto.FLOAT16: "f16", onnx.TensorProto.DOUBLE: "f64"}

for path in sys.argv[1:]:
    m = onnx.load(path)
    onnx.checker.check_model(m, full_check=True)
    inits = collections.Counter(NAMES[t.data_type] for t in m.graph.initializer
                                if t.data_type in NAMES)
    graph = collections.Counter(NAMES[v.type.tensor_type.elem_type]
                                for v in list(m.graph.input) + list(m.graph.output)
                                if v.type.tensor_type.elem_type in NAMES)
    print(f"{os.path.basename(path)}: initializers {dict(inits)} graph types {dict(graph)}")
