"""Writes a toy causal LM whose next-token distribution is known: logits at
each position are row `id` of a table (Gather), so they depend on that
position's token only (causal by construction).

    make_successor_lm.py OUT.onnx VOCAB SEQ greedy|pair

greedy: the largest logit of token i is i+1 (mod VOCAB), so greedy decoding
counts up. pair: tokens i+1 and i+2 (mod VOCAB) share the largest logit and
i+3 is next, so top-k 2 sampling draws i+1 or i+2, each about half the time,
and never another.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out, vocab, seq, kind = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
table = np.full((vocab, vocab), -4.0, dtype=np.float32)
for i in range(vocab):
    if kind == "greedy":
        table[i, (i + 1) % vocab] = 6.0
    else:
        table[i, (i + 1) % vocab] = 6.0
        table[i, (i + 2) % vocab] = 6.0
        table[i, (i + 3) % vocab] = 5.0
graph = helper.make_graph(
    [helper.make_node("Gather", ["table", "ids"], ["logits"], axis=0)],
    "successor",
    [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, seq])],
    [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, seq, vocab])],
    [numpy_helper.from_array(table, "table")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
onnx.checker.check_model(model)
onnx.save(model, out)
