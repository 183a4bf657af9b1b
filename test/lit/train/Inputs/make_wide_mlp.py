"""Writes OUT_DIR/model.onnx: an MLP of LAYERS square MatMul layers of
width WIDTH (x[4, WIDTH] -> Relu between layers -> y[4, WIDTH]), weights
zero, stored in OUT_DIR/weights.bin (external data). Parameters:
LAYERS * WIDTH^2, far more than its activations (4 * WIDTH per layer)."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out, layers, width = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(out, exist_ok=True)
nodes, inits, prev = [], [], "x"
for i in range(layers):
    w = numpy_helper.from_array(np.zeros((width, width), np.float32), f"w{i}")
    inits.append(w)
    nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [f"h{i}"]))
    prev = f"h{i}"
    if i + 1 < layers:
        nodes.append(helper.make_node("Relu", [prev], [f"r{i}"]))
        prev = f"r{i}"
nodes.append(helper.make_node("Identity", [prev], ["y"]))
graph = helper.make_graph(
    nodes, "wide_mlp",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, width])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, width])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
onnx.save_model(model, os.path.join(out, "model.onnx"),
                save_as_external_data=True, all_tensors_to_one_file=True,
                location="weights.bin", size_threshold=0)
