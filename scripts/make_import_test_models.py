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


def i64(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.INT64, shape)


def boolean(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.BOOL, shape)


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def ints(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def floats(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.float32), name)


def save_unchecked(model, name):
    """For opsets newer than the installed checker knows (18+)."""
    onnx.save_model(model, os.path.join(OUT, name))


def node(op, inputs, outputs, **attrs):
    """A node named after its first output, so FileCheck can find it."""
    return helper.make_node(op, inputs, outputs, name="/" + outputs[0], **attrs)


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(0)

    # An op the importer does not know.
    save(model([helper.make_node("NonZero", ["x"], ["y"], name="the_nonzero")],
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

    more_models(rng)


def more_models(rng):
    """Op families and opset-dependent forms (lit tests in test/lit/import/)."""
    x23 = f32("x", [2, 3])

    # --- element-wise -------------------------------------------------------
    save(model([node("Add", ["a", "b"], ["add"]),
                node("Sub", ["a", "b"], ["sub"]),
                node("Mul", ["a", "b"], ["mul"]),
                node("Div", ["a", "b"], ["div"]),
                node("Pow", ["a", "e"], ["pow"]),
                node("Max", ["a", "b", "c"], ["max"]),
                node("Min", ["a", "b"], ["min"]),
                node("Sum", ["a", "b", "c"], ["sum"]),
                node("Mean", ["a", "b"], ["mean"]),
                node("Mod", ["i", "j"], ["mod"]),
                node("Mod", ["a", "b"], ["fmod"], fmod=1)],
               [f32("a", [2, 3]), f32("b", [3]), f32("c", [2, 1]), i64("e", [1]),
                i64("i", [2, 3]), i64("j", [3])],
               [f32("add", [2, 3]), f32("sub", [2, 3]), f32("mul", [2, 3]),
                f32("div", [2, 3]), f32("pow", [2, 3]), f32("max", [2, 3]),
                f32("min", [2, 3]), f32("sum", [2, 3]), f32("mean", [2, 3]),
                i64("mod", [2, 3]), f32("fmod", [2, 3])]), "binary.onnx")

    unary = ["Neg", "Abs", "Exp", "Log", "Sqrt", "Reciprocal", "Tanh", "Sigmoid",
             "Erf", "Relu", "Floor", "Ceil", "Sign", "Sin", "Cos", "Round",
             "Identity", "Softplus"]
    nodes = [node(op, ["x"], [op.lower()]) for op in unary]
    nodes += [node("LeakyRelu", ["x"], ["leaky_relu"], alpha=0.2),
              node("HardSigmoid", ["x"], ["hard_sigmoid"]),
              node("Elu", ["x"], ["elu"], alpha=0.5)]
    outs = [f32(n.output[0], [2, 3]) for n in nodes]
    save(model(nodes, [x23], outs, opset=13), "unary.onnx")

    save(model([node("Equal", ["a", "b"], ["eq"]),
                node("Less", ["a", "b"], ["lt"]),
                node("Greater", ["a", "b"], ["gt"]),
                node("LessOrEqual", ["a", "b"], ["le"]),
                node("GreaterOrEqual", ["a", "b"], ["ge"]),
                node("Not", ["eq"], ["not"]),
                node("And", ["lt", "gt"], ["and"]),
                node("Or", ["lt", "gt"], ["or"]),
                node("Xor", ["lt", "gt"], ["xor"]),
                node("Where", ["xor", "a", "b"], ["where"])],
               [f32("a", [2, 3]), f32("b", [3])],
               [boolean("not", [2, 3]), boolean("le", [2, 3]), boolean("ge", [2, 3]),
                boolean("and", [2, 3]), boolean("or", [2, 3]), f32("where", [2, 3])]),
         "compare.onnx")

    # The exact GELU written out, as exporters do before opset 20: fused into
    # one nn.gelu when the constants are GELU's and nothing else reads the
    # pieces.
    def const(name, value):
        return node("Constant", [], [name], value=helper.make_tensor(name, TensorProto.FLOAT, [], [value]))

    def erf_gelu(tag, divisor=1.4142135, scale_first=False, extra_erf_use=False):
        nodes = [const(tag + "_root2", divisor), const(tag + "_one", 1.0), const(tag + "_half", 0.5),
                 node("Div", ["x", tag + "_root2"], [tag + "_scaled"]),
                 node("Erf", [tag + "_scaled"], [tag + "_erf"]),
                 node("Add", [tag + "_erf", tag + "_one"], [tag + "_cdf2"])]
        if scale_first:  # (0.5 * x) * (1 + erf)
            nodes += [node("Mul", [tag + "_half", "x"], [tag + "_halfx"]),
                      node("Mul", [tag + "_halfx", tag + "_cdf2"], [tag])]
        else:  # (x * (1 + erf)) * 0.5
            nodes += [node("Mul", ["x", tag + "_cdf2"], [tag + "_xcdf2"]),
                      node("Mul", [tag + "_xcdf2", tag + "_half"], [tag])]
        outs = [f32(tag, [2, 3])] + ([f32(tag + "_erf", [2, 3])] if extra_erf_use else [])
        return nodes, outs

    parts = [erf_gelu("torch_form"), erf_gelu("half_first", scale_first=True),
             erf_gelu("not_gelu", divisor=1.5), erf_gelu("erf_read_too", extra_erf_use=True)]
    save(model([n for p in parts for n in p[0]], [x23], [o for p in parts for o in p[1]]),
         "gelu_erf_forms.onnx")

    # Gelu is an opset-20 op.
    save_unchecked(model([node("Gelu", ["x"], ["gelu"], approximate="tanh")],
                         [x23], [f32("gelu", [2, 3])], opset=20), "gelu_opset20.onnx")

    # Clip: attributes before 11, inputs from 11 (a known min, a run-time max).
    save(model([node("Clip", ["x"], ["clip"], min=-1.0, max=1.0)],
               [x23], [f32("clip", [2, 3])], opset=10), "clip_opset10.onnx")
    save(model([node("Clip", ["x", "lo", "hi"], ["clip"])],
               [x23, f32("hi", [])], [f32("clip", [2, 3])],
               [floats("lo", -0.5)], opset=13), "clip_opset13.onnx")

    # Cast, and Dropout (inference) with its mask.
    save(model([node("Cast", ["x"], ["half"], to=TensorProto.FLOAT16),
                node("Cast", ["x"], ["int"], to=TensorProto.INT32),
                node("Cast", ["x"], ["same"], to=TensorProto.FLOAT),
                node("Dropout", ["x"], ["drop", "mask"])],
               [x23], [vi("half", TensorProto.FLOAT16, [2, 3]),
                       vi("int", TensorProto.INT32, [2, 3]), f32("same", [2, 3]),
                       f32("drop", [2, 3]), boolean("mask", [2, 3])], opset=13),
         "cast_dropout.onnx")
    save(model([node("Dropout", ["x"], ["drop", "mask"], ratio=0.25)],
               [x23], [f32("drop", [2, 3]), f32("mask", [2, 3])], opset=7),
         "dropout_opset7.onnx")

    # Opset 6: binary ops broadcast only with `broadcast`, aligned at `axis`.
    save(model([node("Add", ["x", "b"], ["add"], broadcast=1, axis=1),
                node("Mul", ["add", "add"], ["mul"]),
                node("Sub", ["mul", "s"], ["sub"], broadcast=1)],
               [f32("x", [2, 3, 4]), f32("b", [3]), f32("s", [3, 4])],
               [f32("sub", [2, 3, 4])], opset=6), "broadcast_opset6.onnx")

    # Opset 6: InstanceNormalization; PRelu with one slope per channel.
    save(model([node("InstanceNormalization", ["x", "scale", "bias"], ["inorm"],
                     epsilon=1e-3),
                node("PRelu", ["inorm", "slope"], ["prelu"])],
               [f32("x", [2, 3, 4])], [f32("prelu", [2, 3, 4])],
               [floats("scale", [1.0, 2.0, 3.0]), floats("bias", [0.1, 0.2, 0.3]),
                floats("slope", [0.25, 0.5, 0.75])], opset=6), "norm_opset6.onnx")

    # Element-wise functions that are short chains of nn ops (opset 20 for
    # IsNaN/IsInf/Mish forms; unchecked).
    maths = ["Tan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Softsign", "Mish",
             "Selu", "Celu", "Shrink"]
    nodes = [node(op, ["x"], [op.lower()]) for op in maths]
    nodes += [node("IsNaN", ["x"], ["isnan"]),
              node("IsInf", ["x"], ["isinf"], detect_negative=0)]
    outs = [f32(op.lower(), [2, 3]) for op in maths]
    outs += [boolean("isnan", [2, 3]), boolean("isinf", [2, 3])]
    save_unchecked(model(nodes, [x23], outs, opset=20), "math_opset20.onnx")

    # HardSwish, PRelu and Trilu (opset 14); a Trilu of a known value folds.
    save(model([node("HardSwish", ["x"], ["hard_swish"]),
                node("PRelu", ["x", "slope"], ["prelu"]),
                node("Trilu", ["x", "k"], ["lower"], upper=0),
                node("ConstantOfShape", ["shape33"], ["ones"],
                     value=helper.make_tensor("v", TensorProto.INT64, [1], [1])),
                node("Trilu", ["ones"], ["triu"])],
               [x23], [f32("hard_swish", [2, 3]), f32("prelu", [2, 3]),
                       f32("lower", [2, 3]), i64("triu", [3, 3])],
               [floats("slope", [0.1, 0.2, 0.3]), ints("k", 1), ints("shape33", [3, 3])],
               opset=14), "activations_opset14.onnx")

    # --- softmax: coerced to 2-D before 13, one axis from 13 ---------------
    x234 = f32("x", [2, 3, 4])
    save(model([node("Softmax", ["x"], ["sm"], axis=1),
                node("LogSoftmax", ["x"], ["lsm"])],
               [x234], [f32("sm", [2, 3, 4]), f32("lsm", [2, 3, 4])], opset=13),
         "softmax_opset13.onnx")
    save(model([node("LogSoftmax", ["x"], ["lsm"])],
               [x234], [f32("lsm", [2, 3, 4])], opset=11), "logsoftmax_opset11.onnx")

    # --- reductions: axes attribute -> input at 13 (ReduceSum) / 18 ---------
    save(model([node("ReduceMean", ["x"], ["mean"], axes=[-1]),
                node("ReduceSum", ["x"], ["sum"], axes=[0, 2], keepdims=0),
                node("ReduceMax", ["x"], ["max"])],
               [x234], [f32("mean", [2, 3, 1]), f32("sum", [3]),
                        f32("max", [1, 1, 1])], opset=11), "reduce_opset11.onnx")
    save(model([node("ReduceSum", ["x", "axes"], ["sum"], keepdims=0),
                node("ReduceMean", ["x"], ["mean"], axes=[1]),
                node("ReduceProd", ["x"], ["prod"], keepdims=0),
                node("ReduceSum", ["x"], ["noop"], noop_with_empty_axes=1)],
               [x234], [f32("sum", [2, 4]), f32("mean", [2, 1, 4]), f32("prod", []),
                        f32("noop", [2, 3, 4])], [ints("axes", [1])], opset=13),
         "reduce_opset13.onnx")
    save_unchecked(model([node("ReduceMean", ["x", "axes"], ["mean"]),
                          node("ReduceMin", ["x", "axes"], ["min"], keepdims=0),
                          node("ReduceMax", ["x"], ["noop"], noop_with_empty_axes=1)],
                         [x234], [f32("mean", [2, 3, 1]), f32("min", [2, 3]),
                                  f32("noop", [2, 3, 4])],
                         [ints("axes", [-1])], opset=18), "reduce_opset18.onnx")

    # Reductions that decompose around reduce_sum.
    save(model([node("ReduceL1", ["x"], ["l1"], axes=[2]),
                node("ReduceL2", ["x"], ["l2"], axes=[2], keepdims=0),
                node("ReduceSumSquare", ["x"], ["sumsq"], axes=[1]),
                node("ReduceLogSum", ["x"], ["logsum"], axes=[2]),
                node("ReduceLogSumExp", ["x"], ["logsumexp"], axes=[2], keepdims=0)],
               [x234], [f32("l1", [2, 3, 1]), f32("l2", [2, 3]), f32("sumsq", [2, 1, 4]),
                        f32("logsum", [2, 3, 1]), f32("logsumexp", [2, 3])], opset=13),
         "reduce_more_opset13.onnx")

    # --- squeeze / unsqueeze: axes attribute -> input at 13 ----------------
    x1314 = f32("x", [1, 3, 1, 4])
    save(model([node("Squeeze", ["x"], ["sq"], axes=[0, -2]),
                node("Squeeze", ["x"], ["sq_all"]),
                node("Unsqueeze", ["sq"], ["unsq"], axes=[0, 3])],
               [x1314], [f32("sq", [3, 4]), f32("sq_all", [3, 4]),
                         f32("unsq", [1, 3, 4, 1])], opset=11), "squeeze_opset11.onnx")
    save(model([node("Squeeze", ["x", "axes"], ["sq"]),
                node("Unsqueeze", ["sq", "uaxes"], ["unsq"])],
               [x1314], [f32("sq", [3, 4]), f32("unsq", [1, 3, 4, 1])],
               [ints("axes", [0, -2]), ints("uaxes", [0, 3])], opset=13),
         "squeeze_opset13.onnx")

    # --- split: attribute -> input at 13, num_outputs at 18 ----------------
    x27 = f32("x", [2, 7])
    save(model([node("Split", ["x"], ["s0", "s1"], axis=1, split=[3, 4])],
               [x27], [f32("s0", [2, 3]), f32("s1", [2, 4])], opset=11),
         "split_opset11.onnx")
    save(model([node("Split", ["x", "sizes"], ["s0", "s1", "s2"], axis=-1)],
               [x27], [f32("s0", [2, 2]), f32("s1", [2, 0]), f32("s2", [2, 5])],
               [ints("sizes", [2, 0, 5])], opset=13), "split_opset13.onnx")
    save_unchecked(model([node("Split", ["x"], ["s0", "s1", "s2"], axis=1,
                               num_outputs=3)],
                         [x27], [f32("s0", [2, 3]), f32("s1", [2, 3]),
                                 f32("s2", [2, 1])], opset=18), "split_opset18.onnx")

    # --- slice: attributes before 10; clamping and negative steps ----------
    x610 = f32("x", [6, 10])
    save(model([node("Slice", ["x"], ["sl"], starts=[1, -3], ends=[1000, -1])],
               [x610], [f32("sl", [5, 2])], opset=9), "slice_opset9.onnx")
    save(model([node("Slice", ["x", "st", "en", "ax", "sp"], ["rev"]),
                node("Slice", ["x", "st2", "en2"], ["clamped"]),
                node("Slice", ["x", "st3", "en3", "ax3"], ["empty"])],
               [x610], [f32("rev", [3, 10]), f32("clamped", [6, 10]),
                        f32("empty", [0, 10])],
               [ints("st", [-1]), ints("en", [-1000]), ints("ax", [-2]),
                ints("sp", [-2]),
                ints("st2", [-100, 0]), ints("en2", [100, 2**63 - 1]),
                ints("st3", [7]), ints("en3", [9]), ints("ax3", [0])], opset=13),
         "slice_opset13.onnx")

    # --- pad: attributes before 11, inputs from 11, axes at 18 -------------
    save(model([node("Pad", ["x"], ["pad"], pads=[0, 1, 0, 2], value=1.5)],
               [x23], [f32("pad", [2, 6])], opset=10), "pad_opset10.onnx")
    save(model([node("Pad", ["x", "pads", "v"], ["constant"]),
                node("Pad", ["x", "pads"], ["reflect"], mode="reflect"),
                node("Pad", ["x", "crop"], ["edge"], mode="edge")],
               [x23], [f32("constant", [2, 6]), f32("reflect", [2, 6]),
                       f32("edge", [1, 5])],
               [ints("pads", [0, 1, 0, 2]), floats("v", 2.5),
                ints("crop", [-1, 1, 0, 1])], opset=13), "pad_opset13.onnx")
    save_unchecked(model([node("Pad", ["x", "pads", "", "axes"], ["pad"])],
                         [x23], [f32("pad", [2, 6])],
                         [ints("pads", [1, 2]), ints("axes", [-1])], opset=18),
                   "pad_opset18.onnx")

    # --- data movement -----------------------------------------------------
    save(model([node("Reshape", ["x", "shape"], ["reshape"]),
                node("Reshape", ["x", "shape2"], ["reshape0"], allowzero=1),
                node("Flatten", ["x"], ["flatten"], axis=2),
                node("Transpose", ["x"], ["transpose"]),
                node("Concat", ["x", "x"], ["concat"], axis=-1),
                node("Gather", ["x", "idx"], ["gather"], axis=-1),
                node("Expand", ["b", "eshape"], ["expand"]),
                node("Tile", ["b", "reps"], ["tile"]),
                node("Unsqueeze", ["b", "uax"], ["unsqueeze"])],
               [x234, f32("b", [3, 1])],
               [f32("reshape", [2, 12]), f32("reshape0", [4, 6]), f32("flatten", [6, 4]),
                f32("transpose", [4, 3, 2]), f32("concat", [2, 3, 8]),
                f32("gather", [2, 3, 2]), f32("expand", [2, 3, 5]),
                f32("tile", [6, 2]), f32("unsqueeze", [1, 3, 1])],
               [ints("shape", [0, -1]),
                ints("shape2", [4, 6]), ints("idx", [-1, 0]),
                ints("eshape", [2, 1, 5]), ints("reps", [2, 2]), ints("uax", [0])],
               opset=14), "data_movement.onnx")

    # --- shape arithmetic that must fold (opset 15: Shape start/end) -------
    nodes = [
        node("Shape", ["x"], ["full"]),
        node("Shape", ["x"], ["tail"], start=-2),
        node("Size", ["x"], ["size"]),
        node("ReduceProd", ["tail"], ["inner"], keepdims=1),
        node("Gather", ["full", "zero"], ["batch"], axis=0),
        node("Unsqueeze", ["batch", "axis0"], ["batch1"]),
        node("Concat", ["batch1", "inner"], ["target"], axis=0),
        node("Reshape", ["x", "target"], ["flat"]),
        node("Cast", ["batch"], ["batch_f"], to=TensorProto.FLOAT),
        node("Range", ["zero", "batch", "one"], ["positions"]),
        node("ConstantOfShape", ["target"], ["ones"],
             value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0])),
        node("Equal", ["positions", "zero"], ["is_first"]),
        node("Where", ["is_first", "size", "batch"], ["chosen"]),
        node("Div", ["size", "chosen"], ["per"]),
        node("Mul", ["flat", "ones"], ["scaled"]),
        node("Mul", ["scaled", "batch_f"], ["out"]),
    ]
    save(model(nodes, [x234], [f32("out", [2, 12]), i64("per", [2])],
               [ints("zero", 0), ints("one", 1), ints("axis0", [0])], opset=15),
         "shape_ops.onnx")

    # --- constants: every Constant form; typed initializers ----------------
    nodes = [
        helper.make_node("Constant", [], ["c_raw"], name="c_raw",
                         value=numpy_helper.from_array(
                             np.array([1.0, 2.0, 3.0], dtype=np.float32))),
        helper.make_node("Constant", [], ["c_typed"], name="c_typed",
                         value=helper.make_tensor("t", TensorProto.FLOAT, [3],
                                                  [4.0, 5.0, 6.0])),
        helper.make_node("Constant", [], ["c_float"], name="c_float", value_float=0.5),
        helper.make_node("Constant", [], ["c_floats"], name="c_floats",
                         value_floats=[7.0, 8.0, 9.0]),
        helper.make_node("Constant", [], ["c_int"], name="c_int", value_int=2),
        helper.make_node("Constant", [], ["c_ints"], name="c_ints", value_ints=[1, 3]),
        node("Add", ["x", "c_raw"], ["s1"]),
        node("Add", ["s1", "c_typed"], ["s2"]),
        node("Mul", ["s2", "c_float"], ["s3"]),
        node("Add", ["s3", "c_floats"], ["s4"]),
        node("Add", ["s4", "typed_w"], ["s5"]),
        node("Reshape", ["s5", "c_ints"], ["s6"]),
        node("Mul", ["c_int", "c_int"], ["four"]),
    ]
    typed_w = helper.make_tensor("typed_w", TensorProto.FLOAT, [3], [0.25, 0.5, 0.75])
    save(model(nodes, [f32("x", [1, 3])], [f32("s6", [1, 3]), i64("four", [])],
               [typed_w], opset=13), "constants.onnx")

    # --- element types of weights ------------------------------------------
    inits = [numpy_helper.from_array(np.arange(4, dtype=t).reshape(2, 2), n)
             for n, t in (("w_f16", np.float16), ("w_f64", np.float64),
                          ("w_i32", np.int32), ("w_i8", np.int8),
                          ("w_u8", np.uint8), ("w_i64", np.int64))]
    inits.append(numpy_helper.from_array(np.array([[True, False], [False, True]]),
                 "w_bool"))
    bf16 = helper.make_tensor("w_bf16", TensorProto.BFLOAT16, [2, 2],
                              np.array([0x3f80, 0x4000, 0x4040, 0x4080],
                                       dtype=np.uint16).tobytes(), raw=True)
    inits.append(bf16)
    elems = {"w_f16": TensorProto.FLOAT16, "w_f64": TensorProto.DOUBLE,
             "w_i32": TensorProto.INT32, "w_i8": TensorProto.INT8,
             "w_u8": TensorProto.UINT8, "w_i64": TensorProto.INT64,
             "w_bool": TensorProto.BOOL, "w_bf16": TensorProto.BFLOAT16}
    nodes = [node("Identity", [n], ["out_" + n]) for n in elems]
    outs = [vi("out_" + n, e, [2, 2]) for n, e in elems.items()]
    save(model(nodes, [], outs, inits), "dtypes.onnx")

    # --- convolution, pooling, batch norm ----------------------------------
    img = f32("img", [1, 4, 8, 8])
    save(model([node("Conv", ["img", "w", "cb"], ["conv"], pads=[1, 1, 1, 1],
                     strides=[2, 2], group=2),
                node("Conv", ["img", "w1"], ["conv_same"], auto_pad="SAME_UPPER",
                     kernel_shape=[3, 3]),
                node("MaxPool", ["img"], ["maxpool"], kernel_shape=[3, 3],
                     strides=[2, 2], ceil_mode=1),
                node("AveragePool", ["img"], ["avgpool"], kernel_shape=[2, 2],
                     pads=[1, 1, 0, 0], count_include_pad=1),
                node("GlobalAveragePool", ["img"], ["gap"]),
                node("GlobalMaxPool", ["img"], ["gmp"]),
                node("BatchNormalization", ["img", "s", "bb", "m", "v"], ["bn"],
                     epsilon=1e-3)],
               [img],
               [f32("conv", [1, 6, 4, 4]), f32("conv_same", [1, 2, 8, 8]),
                f32("maxpool", [1, 4, 4, 4]), f32("avgpool", [1, 4, 8, 8]),
                f32("gap", [1, 4, 1, 1]), f32("gmp", [1, 4, 1, 1]),
                f32("bn", [1, 4, 8, 8])],
               [floats("w", rng.standard_normal((6, 2, 3, 3))),
                floats("cb", rng.standard_normal(6)),
                floats("w1", rng.standard_normal((2, 4, 3, 3))),
                floats("s", rng.standard_normal(4)), floats("bb", rng.standard_normal(4)),
                floats("m", rng.standard_normal(4)), floats("v", rng.random(4) + 0.5)],
               opset=13), "conv_pool.onnx")

    # --- matmul and gemm forms ---------------------------------------------
    save(model([node("Gemm", ["a", "b", "c"], ["gemm"], transA=1),
                node("MatMul", ["v", "m3"], ["vecmat"]),
                node("MatMul", ["m3b", "m3"], ["batched"])],
               [f32("a", [4, 2]), f32("b", [4, 3]), f32("c", [3]), f32("v", [5]),
                f32("m3b", [2, 4, 5])],
               [f32("gemm", [2, 3]), f32("vecmat", [6]), f32("batched", [2, 4, 6])],
               [floats("m3", rng.standard_normal((5, 6)))], opset=7), "gemm_opset7.onnx")

    # LayerNormalization is an opset-17 op; the names are PyTorch's.
    save(model([helper.make_node("LayerNormalization", ["x", "ln.weight", "ln.bias"],
                                 ["y"], name="/blocks.0/ln1/LayerNormalization",
                                 axis=-1, epsilon=1e-5),
                helper.make_node("MatMul", ["y", "onnx::MatMul_7"], ["z"],
                                 name="/blocks.0/attn/qkv/MatMul")],
               [f32("x", [2, 4, 8])], [f32("z", [2, 4, 12])],
               [floats("ln.weight", rng.standard_normal(8)),
                floats("ln.bias", rng.standard_normal(8)),
                floats("onnx::MatMul_7", rng.standard_normal((8, 12)))], opset=17),
         "layernorm_opset17.onnx")

    # LayerNormalization's statistics outputs; CastLike; ThresholdedRelu.
    save(model([node("LayerNormalization", ["x", "g"], ["y", "mean", "invstd"], axis=1,
                     epsilon=1e-3),
                node("CastLike", ["mean", "like"], ["mean_f16"]),
                node("ThresholdedRelu", ["y"], ["thresholded"], alpha=0.5)],
               [f32("x", [2, 4, 8]), vi("like", TensorProto.FLOAT16, [1])],
               [f32("y", [2, 4, 8]), f32("mean", [2, 1, 1]), f32("invstd", [2, 1, 1]),
                vi("mean_f16", TensorProto.FLOAT16, [2, 1, 1]),
                f32("thresholded", [2, 4, 8])],
               [floats("g", np.ones((4, 8)))], opset=17), "layernorm_stats_opset17.onnx")

    save(model([node("ArgMax", ["x"], ["argmax"], axis=1, keepdims=0),
                node("ArgMin", ["x"], ["argmin"], axis=-1, select_last_index=1)],
               [x234], [i64("argmax", [2, 4]), i64("argmin", [2, 3, 1])], opset=13),
         "argmax.onnx")

    # --- errors ------------------------------------------------------------
    m = model([helper.make_node("LayerNormalization", ["x", "g"], ["y"], name="ln")],
              [f32("x", [2, 4])], [f32("y", [2, 4])], [floats("g", np.ones(4))],
              opset=13)
    save_unchecked(m, "op_too_new.onnx")
    m = model([helper.make_node("FusedGemm", ["x", "x"], ["y"], name="fused",
                                domain="com.microsoft")],
              [f32("x", [2, 2])], [f32("y", [2, 2])])
    m.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    save_unchecked(m, "unknown_domain.onnx")
    save_unchecked(model([node("Softmax", ["x"], ["y"], axis=1, temperature=2.0)],
                         [x23], [f32("y", [2, 3])]), "unsupported_attr.onnx")
    save_unchecked(model([node("Add", ["x"], ["y"])], [x23], [f32("y", [2, 3])]),
                   "wrong_arity.onnx")
    w = numpy_helper.from_array(np.ones((4, 4), dtype=np.float32), "w")
    w.ClearField("raw_data")
    w.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "/etc/passwd"), ("offset", "0"), ("length", "64")):
        entry = w.external_data.add()
        entry.key, entry.value = k, v
    save_unchecked(model([node("MatMul", ["x", "w"], ["y"])],
                         [f32("x", [2, 4])], [f32("y", [2, 4])], [w]),
                   "external_absolute.onnx")
    save(model([node("Reshape", ["x", "s"], ["y"])],
               [x23, i64("s", [2])], [f32("y", [3, 2])]), "runtime_shape.onnx")

    # Training-code ops, each in a model small enough to run partitioned
    # (test/lit/e2e/training-ops.test).
    # torch.gather(logits, 2, ids): per-token values, as DPO code takes them.
    save(model([node("GatherElements", ["logits", "ids"], ["picked"], axis=2),
                node("Mul", ["picked", "two"], ["out"])],
               [f32("logits", [4, 6, 10]), i64("ids", [4, 6, 1])],
               [f32("out", [4, 6, 1])], [floats("two", 2.0)], opset=13),
         "gather_elements.onnx")
    # Add (repeated indices accumulate), then replace.
    save(model([node("ScatterElements", ["data", "ids", "upd"], ["added"], axis=1,
                     reduction="add"),
                node("ScatterElements", ["added", "first", "one"], ["out"], axis=1)],
               [f32("data", [4, 8]), i64("ids", [4, 3]), f32("upd", [4, 3]),
                i64("first", [4, 1]), f32("one", [4, 1])],
               [f32("out", [4, 8])], opset=16), "scatter_elements.onnx")
    # An exclusive running sum along the rows, then a reversed one down the
    # columns.
    save(model([node("CumSum", ["x", "one"], ["rows"], exclusive=1),
                node("CumSum", ["rows", "zero"], ["out"], reverse=1)],
               [f32("x", [4, 8])], [f32("out", [4, 8])],
               [ints("one", 1), ints("zero", 0)], opset=14), "cumsum.onnx")
    save(model([node("OneHot", ["ids", "depth", "values"], ["out"], axis=-1)],
               [i64("ids", [4, 5])], [f32("out", [4, 5, 7])],
               [ints("depth", 7), floats("values", [-1.0, 3.0])], opset=11),
         "one_hot.onnx")
    # Their mistakes (test/lit/import/errors.test).
    save(model([node("CumSum", ["x", "axis"], ["y"])],
               [f32("x", [4, 8]), i64("axis", [])], [f32("y", [4, 8])], opset=14),
         "cumsum_runtime_axis.onnx")
    save(model([node("OneHot", ["ids", "depth", "values"], ["y"])],
               [i64("ids", [4]), i64("depth", [])], [f32("y", [4, 7])],
               [floats("values", [0.0, 1.0])], opset=11), "one_hot_runtime_depth.onnx")
    save(model([node("OneHot", ["ids", "depth", "values"], ["y"])],
               [i64("ids", [4])], [f32("y", [4, 7])],
               [ints("depth", 0), floats("values", [0.0, 1.0])], opset=11),
         "one_hot_zero_depth.onnx")
    save(model([node("OneHot", ["ids", "depth", "values"], ["y"])],
               [i64("ids", [10000])], [f32("y", [10000, 10**15])],
               [ints("depth", 10**15), floats("values", [0.0, 1.0])], opset=11),
         "one_hot_huge_depth.onnx")
    save(model([node("GatherElements", ["x", "ids"], ["y"], axis=0)],
               [f32("x", [4, 8]), i64("ids", [4])], [f32("y", [4])], opset=13),
         "gather_elements_rank.onnx")
    save_unchecked(model([node("ScatterElements", ["x", "ids", "upd"], ["y"], reduction="sub")],
                         [f32("x", [4]), i64("ids", [2]), f32("upd", [2])],
                         [f32("y", [4])], opset=16), "scatter_elements_reduction.onnx")

    # A mixture of experts' einsums (GShard's dispatch, expert FFN and
    # combine) and TopK (test/lit/import/moe-ops.test, test/lit/e2e/moe-ops.test).
    w_experts = numpy_helper.from_array(
        rng.standard_normal((2, 4, 5)).astype(np.float32), "w_experts")
    save(model([node("Einsum", ["mask", "x"], ["dispatched"], equation="tec,td->ecd"),
                node("Einsum", ["dispatched", "w_experts"], ["hidden"],
                     equation="ecd,edf->ecf"),
                node("Einsum", ["mask", "hidden"], ["out"], equation="tec, ecf -> tf")],
               [f32("mask", [8, 2, 3]), f32("x", [8, 4])], [f32("out", [8, 5])],
               [w_experts], opset=17), "einsum_moe.onnx")
    # The implicit form with '...' (broadcast 1 against 5) and a trace.
    save(model([node("Einsum", ["a", "b"], ["ab"], equation="...ij,...jk"),
                node("Einsum", ["sq"], ["trace"], equation="ii")],
               [f32("a", [2, 1, 3, 4]), f32("b", [5, 4, 6]), f32("sq", [3, 3])],
               [f32("ab", [2, 5, 3, 6]), f32("trace", [])], opset=17), "einsum_forms.onnx")
    save(model([node("TopK", ["gates", "k"], ["values", "indices"], axis=-1)],
               [f32("gates", [6, 4])], [f32("values", [6, 2]), i64("indices", [6, 2])],
               [ints("k", [2])], opset=11), "top_k.onnx")
    save(model([node("TopK", ["x", "k"], ["values", "indices"], largest=0)],
               [f32("x", [6, 4]), i64("k", [1])],
               [f32("values", [6, 2]), i64("indices", [6, 2])], opset=11),
         "top_k_runtime_k.onnx")
    save_unchecked(model([node("Einsum", ["x"], ["y"], equation="ij,jk->ik")],
                         [f32("x", [4, 4])], [f32("y", [4, 4])], opset=17),
                   "einsum_terms.onnx")

    conformance_ops_models()


def conformance_ops_models():
    """Unsigned integers, index tuples, quantization and the other ops added
    for the ONNX node tests (test/lit/import/extra-ops.test), and their
    mistakes (test/lit/import/errors.test)."""
    u8 = TensorProto.UINT8
    u32 = TensorProto.UINT32
    save(model([node("BitShift", ["x", "n"], ["left"], direction="LEFT"),
                node("BitShift", ["left", "n"], ["y"], direction="RIGHT")],
               [vi("x", u32, [3]), vi("n", u32, [3])], [vi("y", u32, [3])], opset=11),
         "bitshift.onnx")
    save(model([node("Acos", ["x"], ["a"]), node("Asin", ["a"], ["b"]),
                node("Atan", ["b"], ["y"])],
               [f32("x", [4])], [f32("y", [4])], opset=7), "inverse_trig.onnx")
    save(model([node("GatherND", ["data", "idx"], ["picked"], batch_dims=1),
                node("ScatterND", ["data", "idx2", "picked"], ["y"], reduction="add")],
               [f32("data", [2, 3, 4]), i64("idx", [2, 1]), i64("idx2", [2, 2])],
               [f32("y", [2, 3, 4])], opset=16), "gather_scatter_nd.onnx")
    save(model([node("Det", ["x"], ["y"])], [f32("x", [3, 2, 2])], [f32("y", [3])],
               opset=11), "det.onnx")
    save(model([node("ReverseSequence", ["x", "lens"], ["y"], batch_axis=0, time_axis=1)],
               [f32("x", [2, 3]), i64("lens", [2])], [f32("y", [2, 3])], opset=10),
         "reverse_sequence.onnx")
    save(model([node("HannWindow", ["n"], ["y"], periodic=0)], [],
               [f32("y", [4])], [ints("n", 4)], opset=17), "hann_window.onnx")
    save(model([node("QuantizeLinear", ["x", "scale", "zp"], ["q"], axis=1),
                node("DequantizeLinear", ["q", "scale", "zp"], ["y"], axis=1)],
               [f32("x", [2, 3])], [f32("y", [2, 3])],
               [floats("scale", [0.5, 1.0, 2.0]),
                numpy_helper.from_array(np.array([0, 10, 128], dtype=np.uint8), "zp")],
               opset=13), "quantize.onnx")
    save(model([node("MatMulInteger", ["a", "b", "azp"], ["y"])],
               [vi("a", u8, [2, 3]), vi("b", u8, [3, 4])], [vi("y", TensorProto.INT32, [2, 4])],
               [numpy_helper.from_array(np.array(3, dtype=np.uint8), "azp")], opset=10),
         "matmul_integer.onnx")

    # Their mistakes.
    save(model([node("BitShift", ["x", "n"], ["y"], direction="LEFT")],
               [i64("x", [3]), i64("n", [3])], [i64("y", [3])], opset=11),
         "bitshift_signed.onnx")
    save(model([node("BitShift", ["x", "n"], ["y"], direction="UP")],
               [vi("x", u32, [3]), vi("n", u32, [3])], [vi("y", u32, [3])], opset=11),
         "bitshift_direction.onnx")
    save(model([node("GatherND", ["data", "idx"], ["y"])],
               [f32("data", [2, 3]), i64("idx", [4, 3])], [f32("y", [4])], opset=13),
         "gather_nd_long_tuple.onnx")
    save(model([node("ReverseSequence", ["x", "lens"], ["y"], batch_axis=2, time_axis=0)],
               [f32("x", [2, 3, 4]), i64("lens", [4])], [f32("y", [2, 3, 4])], opset=10),
         "reverse_sequence_axes.onnx")
    save(model([node("HannWindow", ["n"], ["y"])], [i64("n", [])], [f32("y", [4])],
               opset=17), "window_runtime_size.onnx")
    save(model([node("Det", ["x"], ["y"])], [f32("x", [2, 3])], [f32("y", [])],
               opset=11), "det_not_square.onnx")
    save(model([node("QuantizeLinear", ["x", "scale"], ["y"], axis=1)],
               [f32("x", [2, 3]), f32("scale", [2])], [vi("y", u8, [2, 3])], opset=13),
         "quantize_scale_shape.onnx")
    save(model([node("DequantizeLinear", ["x", "scale", "zp"], ["y"])],
               [vi("x", u8, [3]), f32("scale", []), vi("zp", TensorProto.INT8, [])],
               [f32("y", [3])], opset=13), "dequantize_zero_point_type.onnx")
    save(model([node("MatMulInteger", ["a", "b"], ["y"])],
               [f32("a", [2, 3]), vi("b", u8, [3, 4])], [vi("y", TensorProto.INT32, [2, 4])],
               opset=10), "matmul_integer_float.onnx")


if __name__ == "__main__":
    main()
