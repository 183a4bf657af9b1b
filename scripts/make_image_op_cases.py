#!/usr/bin/env python3
"""Writes test/data/image-ops: cases of Resize, GridSample and ConvTranspose
with a batch of 2 (and one with 2 channels), in the ONNX backend-test
layout, for runs that split the batch or the channels over devices; and
test/data/image-ops-errors: models the importer refuses.

Each case is an ONNX backend node case (Debian's libonnx-testdata) widened
along one dimension: copy k of the input is the original times k + 1. The
ops are linear in that input, so copy k of the expected output is the
backend case's expected output times k + 1: the expected values are ONNX's,
not computed here.

Needs /usr/bin/python3 (Debian's python3-onnx and python3-numpy).
"""
import os
import shutil

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NODE = "/usr/share/libonnx-testdata/data/node"
OUT = os.path.join(ROOT, "test", "data", "image-ops")
ERRORS = os.path.join(ROOT, "test", "data", "image-ops-errors")

# (backend case, widened inputs, dimension, value inputs to patch)
# `sizes` inputs name every output extent: the widened one grows too.
CASES = [
    ("test_resize_upsample_scales_cubic", [0], 0),
    ("test_resize_downsample_sizes_linear_pytorch_half_pixel", [0], 0),
    ("test_resize_upsample_sizes_nearest", [0], 1),
    ("test_gridsample_bicubic", [0, 1], 0),
    ("test_gridsample", [0], 1),
    ("test_convtranspose_pads", [0], 0),
]


def widen(array, dim, scaled):
    copies = [array * (k + 1) if scaled else array for k in range(2)]
    return np.concatenate(copies, axis=dim)


def widen_case(name, inputs, dim):
    src = os.path.join(NODE, name)
    model = onnx.load(os.path.join(src, "model.onnx"))
    graph = model.graph
    node = graph.node[-1]
    data_inputs = [i for i in graph.input]
    dst = os.path.join(OUT, name[len("test_"):] + ("_batch2" if dim == 0 else "_channels2"))
    shutil.rmtree(dst, ignore_errors=True)
    os.makedirs(os.path.join(dst, "test_data_set_0"))
    for i, vi in enumerate(data_inputs):
        t = onnx.load_tensor(os.path.join(src, "test_data_set_0", "input_%d.pb" % i))
        a = numpy_helper.to_array(t)
        if i in inputs:
            # The grid is not scaled: it is shared by both batch copies.
            a = widen(a, dim, scaled=(i == 0))
            vi.type.tensor_type.shape.dim[dim].dim_value = a.shape[dim]
        elif vi.name == "sizes":
            a = a.copy()
            a[dim] *= 2
        onnx.save_tensor(numpy_helper.from_array(a, t.name),
                         os.path.join(dst, "test_data_set_0", "input_%d.pb" % i))
    t = onnx.load_tensor(os.path.join(src, "test_data_set_0", "output_0.pb"))
    y = widen(numpy_helper.to_array(t), dim, scaled=True)
    out = graph.output[0]
    out.type.tensor_type.shape.dim[dim].dim_value = y.shape[dim]
    onnx.save_tensor(numpy_helper.from_array(y, t.name),
                     os.path.join(dst, "test_data_set_0", "output_0.pb"))
    onnx.save_model(model, os.path.join(dst, "model.onnx"))


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def error_model(name, op, inputs, input_infos, y_shape, inits=(), opset=13, **attrs):
    nodes = [helper.make_node(op, inputs, ["y"], name="/" + name, **attrs)]
    graph = helper.make_graph(nodes, "g", input_infos, [f32("y", y_shape)], list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="distopt-tests")
    onnx.save_model(model, os.path.join(ERRORS, name + ".onnx"))


def floats(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.float32), name)


def ints(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def error_models():
    shutil.rmtree(ERRORS, ignore_errors=True)
    os.makedirs(ERRORS)
    x = [f32("x", [1, 1, 4, 4])]
    scales = floats("scales", [1, 1, 2, 2])
    roi = floats("roi", [])
    resize = lambda name, extra_inputs=("roi", "scales"), inits=(roi, scales), **a: \
        error_model(name, "Resize", ["x", *extra_inputs], x, [1, 1, 8, 8], inits, **a)
    resize("resize_mode", mode="area")
    resize("resize_coordinates", coordinate_transformation_mode="centre")
    resize("resize_nearest_mode", nearest_mode="nearest")
    resize("resize_both", ("roi", "scales", "sizes"),
           (roi, scales, ints("sizes", [1, 1, 8, 8])))
    resize("resize_scales_count", inits=(roi, floats("scales", [2, 2])))
    resize("resize_scales_negative", inits=(roi, floats("scales", [1, 1, -2, 2])))
    resize("resize_empty", inits=(roi, floats("scales", [1, 1, 0.1, 1])))
    resize("resize_sizes_count", ("roi", "", "sizes"), (roi, ints("sizes", [8, 8])))
    resize("resize_crop_roi", coordinate_transformation_mode="tf_crop_and_resize")
    resize("resize_crop_roi_count", inits=(floats("roi", [0, 1]), scales),
           coordinate_transformation_mode="tf_crop_and_resize")
    error_model("resize_runtime_scales", "Resize", ["x", "roi", "s"],
                x + [f32("s", [4])], [1, 1, 8, 8], [roi])
    resize("resize_antialias", opset=18, antialias=1, mode="linear")
    resize("resize_half_pixel_symmetric", opset=19,
           coordinate_transformation_mode="half_pixel_symmetric")
    resize("resize_axes_repeated", inits=(roi, floats("scales", [2, 2])), opset=18,
           axes=[2, 2])
    resize("resize_aspect_policy", ("roi", "", "sizes"), (roi, ints("sizes", [8, 8, 8, 8])),
           opset=18, keep_aspect_ratio_policy="stretchy")
    error_model("resize_int_linear", "Resize", ["x", "roi", "scales"],
                [helper.make_tensor_value_info("x", TensorProto.INT32, [1, 1, 4, 4])],
                [1, 1, 8, 8], [roi, scales], mode="linear")
    # ConvTranspose.
    w = floats("w", np.ones((1, 2, 3, 3)))
    ct = lambda name, inits=(w,), inputs=("x", "w"), **a: \
        error_model(name, "ConvTranspose", list(inputs), x, [1, 2, 6, 6], inits, **a)
    ct("convtranspose_channels", (floats("w", np.ones((2, 2, 3, 3))),))
    ct("convtranspose_strides_count", strides=[2])
    ct("convtranspose_auto_pad", auto_pad="SAME")
    ct("convtranspose_kernel_shape", kernel_shape=[2, 2])
    ct("convtranspose_output_shape_count", output_shape=[6])
    ct("convtranspose_negative_pads", pads=[-1, 0, 0, 0])
    ct("convtranspose_empty", pads=[3, 3, 3, 3])
    ct("convtranspose_bias", (w, floats("b", [1, 2, 3])), ("x", "w", "b"))
    # Output padding beyond the stride (allowed below the dilation) with end
    # padding: the covered extent would need cropping and padding at once.
    error_model("convtranspose_tail", "ConvTranspose", ["x", "w"], x, [1, 2, 8, 8], [w],
                dilations=[2, 2], output_padding=[1, 1], pads=[0, 0, 1, 1])
    # The others.
    error_model("lrn_size", "LRN", ["x"], x, [1, 1, 4, 4], size=0)
    error_model("mvn_axes", "MeanVarianceNormalization", ["x"], x, [1, 1, 4, 4], axes=[2, -2])
    error_model("gridsample_rank", "GridSample", ["x", "g"],
                [f32("x", [1, 1, 4, 4, 4]), f32("g", [1, 2, 2, 2, 3])], [1, 1, 2, 2, 2],
                opset=16)
    error_model("gridsample_mode", "GridSample", ["x", "g"],
                x + [f32("g", [1, 2, 2, 2])], [1, 1, 2, 2], opset=16, mode="area")
    error_model("gridsample_padding", "GridSample", ["x", "g"],
                x + [f32("g", [1, 2, 2, 2])], [1, 1, 2, 2], opset=16, padding_mode="wrap")
    error_model("maxunpool_output_shape", "MaxUnpool", ["x", "i", "shape"],
                x + [helper.make_tensor_value_info("i", TensorProto.INT64, [1, 1, 4, 4])],
                [1, 1, 8, 8], [ints("shape", [1, 2, 8, 8])], opset=11,
                kernel_shape=[2, 2], strides=[2, 2])
    error_model("maxunpool_indices", "MaxUnpool", ["x", "i"],
                x + [f32("i", [1, 1, 4, 4])], [1, 1, 8, 8], opset=11,
                kernel_shape=[2, 2], strides=[2, 2])
    # Recurrent ops: X [seq 2, batch 1, input 3], hidden 4.
    xs = [f32("x", [2, 1, 3])]
    rnn_w, rnn_r = floats("w", np.ones((1, 4, 3))), floats("r", np.ones((1, 4, 4)))
    rnn = lambda name, op="RNN", inputs=("x", "w", "r"), inits=(rnn_w, rnn_r), **a: \
        error_model(name, op, list(inputs), xs, [2, 1, 1, 4], inits, opset=14,
                    **{"hidden_size": 4, **a})
    rnn("rnn_direction", direction="sideways")
    rnn("rnn_layout", layout=2)
    rnn("rnn_hidden_size", hidden_size=0)
    rnn("rnn_weight_shape", inits=(floats("w", np.ones((1, 4, 2))), rnn_r))
    rnn("rnn_activation_alpha", activation_alpha=[0.5])
    rnn("rnn_activation_count", activations=["Tanh", "Tanh"])
    rnn("rnn_activation_unknown", activations=["Softsign"])
    rnn("lstm_input_forget", "LSTM",
        inits=(floats("w", np.ones((1, 16, 3))), floats("r", np.ones((1, 16, 4)))),
        input_forget=1)
    rnn("rnn_sequence_lens", inputs=("x", "w", "r", "", "lens"),
        inits=(rnn_w, rnn_r, numpy_helper.from_array(np.array([1], dtype=np.int32), "lens")))
    graph = helper.make_graph(
        [helper.make_node("MaxPool", ["x"], ["y", "i"], name="/maxpool_storage_order",
                          kernel_shape=[2, 2], storage_order=2)],
        "g", x, [f32("y", [1, 1, 3, 3]),
                 helper.make_tensor_value_info("i", TensorProto.INT64, [1, 1, 3, 3])])
    onnx.save_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)],
                                      producer_name="distopt-tests"),
                    os.path.join(ERRORS, "maxpool_storage_order.onnx"))


def main():
    for name, inputs, dim in CASES:
        widen_case(name, inputs, dim)
    error_models()


if __name__ == "__main__":
    main()
