#!/usr/bin/env python3
"""Small ONNX files for the importer's tests (test/data/onnx/).

Run with a Python that has the `onnx` package (Debian: /usr/bin/python3 with
python3-onnx). The files are committed; rerunning gives identical bytes.
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "data", "onnx")


def save(model, name):
    onnx.checker.check_model(model)
    onnx.save_model(model, os.path.join(OUT, name))


def model(nodes, inputs, outputs, initializers=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             producer_name="distopt-tests")


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(0)

    # An op the importer does not know.
    save(model([helper.make_node("Hardmax", ["x"], ["y"], name="the_hardmax")],
               [f32("x", [2, 3])], [f32("y", [2, 3])]), "unknown_op.onnx")

    # A symbolic dimension to bind with --dim.
    save(model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
               [f32("x", ["batch", 4])], [f32("y", ["batch", 4])]), "symbolic_dim.onnx")

    # A weight whose external data points outside the model's directory.
    w = numpy_helper.from_array(rng.standard_normal((4, 4)).astype(np.float32), "w")
    w.ClearField("raw_data")
    w.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "../escape.bin"), ("offset", "0"), ("length", "64")):
        entry = w.external_data.add()
        entry.key, entry.value = k, v
    m = model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
              [f32("x", [2, 4])], [f32("y", [2, 4])], [w])
    onnx.save_model(m, os.path.join(OUT, "external_escape.onnx"))

    # A weight whose external data file is missing.
    w2 = onnx.TensorProto()
    w2.CopyFrom(w)
    w2.external_data[0].value = "missing.bin"
    m = model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
              [f32("x", [2, 4])], [f32("y", [2, 4])], [w2])
    onnx.save_model(m, os.path.join(OUT, "external_missing.onnx"))

    # Shape arithmetic that folds: y = reshape(x, concat(shape(x)[0], -1)).
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        helper.make_node("Gather", ["s", "zero"], ["b"], name="gather", axis=0),
        helper.make_node("Unsqueeze", ["b", "axes"], ["b1"], name="unsq"),
        helper.make_node("Concat", ["b1", "minus_one"], ["target"], name="concat", axis=0),
        helper.make_node("Reshape", ["x", "target"], ["y"], name="reshape"),
    ]
    inits = [numpy_helper.from_array(np.array(0, dtype=np.int64), "zero"),
             numpy_helper.from_array(np.array([0], dtype=np.int64), "axes"),
             numpy_helper.from_array(np.array([-1], dtype=np.int64), "minus_one")]
    save(model(nodes, [f32("x", [2, 3, 4])], [f32("y", [2, 12])], inits), "shape_folding.onnx")

    # A node reading a value nobody produces.
    graph = helper.make_graph([helper.make_node("Relu", ["nowhere"], ["y"], name="orphan")],
                              "g", [f32("x", [2])], [f32("y", [2])])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save_model(m, os.path.join(OUT, "undefined_input.onnx"))

    # A weight used as a reference: Gemm with transB, bias, alpha/beta.
    w = numpy_helper.from_array(rng.standard_normal((3, 4)).astype(np.float32), "fc.weight")
    b = numpy_helper.from_array(rng.standard_normal((3,)).astype(np.float32), "fc.bias")
    save(model([helper.make_node("Gemm", ["x", "fc.weight", "fc.bias"], ["y"], name="/fc/Gemm",
                                 transB=1, alpha=0.5, beta=2.0)],
               [f32("x", [2, 4])], [f32("y", [2, 3])], [w, b], opset=13), "gemm.onnx")

    # Opset 11 Softmax flattens to 2-D at its axis.
    save(model([helper.make_node("Softmax", ["x"], ["y"], name="sm", axis=1)],
               [f32("x", [2, 3, 4])], [f32("y", [2, 3, 4])], opset=11), "softmax_opset11.onnx")


if __name__ == "__main__":
    main()
