"""Writes a model whose embedding table (2200 x 256 f32, 2.15 MiB) spans
many checkpoint checksum blocks: input_ids [4, 8] -> Gather -> MatMul
[256, 8] -> logits [4, 8, 8]; and its training config.

    make_wide_embedding.py OUT_DIR
"""
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(7)
table = rng.normal(0, 0.5, (2200, 256)).astype(np.float32)
proj = rng.normal(0, 0.2, (256, 8)).astype(np.float32)
graph = helper.make_graph(
    [helper.make_node("Gather", ["wte.weight", "input_ids"], ["h"], name="/wte/Gather"),
     helper.make_node("MatMul", ["h", "head.weight"], ["logits"], name="/head/MatMul")],
    "wide_embedding",
    [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [4, 8])],
    [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [4, 8, 8])],
    [numpy_helper.from_array(table, "wte.weight"), numpy_helper.from_array(proj, "head.weight")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
onnx.save(model, os.path.join(out, "model.onnx"))
with open(os.path.join(out, "train.json"), "w") as f:
    json.dump({"output": "logits", "loss": {"kind": "cross_entropy"},
               "optimizer": {"kind": "adamw", "lr": 0.01, "weight_decay": 0.1},
               "steps": 4}, f)
