#!/usr/bin/env python3
"""Models and backend-style cases for loss.test (this directory's loss/).

NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: models whose imported
IR loss.test checks, models that must fail with a named error, cases
(model.onnx + test_data_set_0/) that `dist-run --onnx-test` runs against
the outputs of ONNX's own reference functions, and a small classifier whose
graph ends in its loss, for `dist-opt --train` (classifier_train.json, written
by hand, trains it to a zero per-sample loss with the mse kind).

Run with a Python that has `onnx` 1.12 (Debian: /usr/bin/python3 with
python3-onnx); the reference functions are the ones its backend node tests
were made with. Rerunning gives identical bytes.
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.backend.test.case.node.negativeloglikelihoodloss import (
    compute_negative_log_likelihood_loss as reference_nll)
from onnx.backend.test.case.node.softmaxcrossentropy import (
    softmaxcrossentropy as reference_sce)

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "loss")
SCE, NLL = "SoftmaxCrossEntropyLoss", "NegativeLogLikelihoodLoss"


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def model(nodes, inputs, outputs, initializers=(), opset=13):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             producer_name="distopt-tests")


def save(m, name, check=True):
    if check:
        onnx.checker.check_model(m)
    onnx.save_model(m, os.path.join(OUT, name))


def node(op, inputs, outputs, **attrs):
    """A node named after its first output, so FileCheck can find it."""
    return helper.make_node(op, inputs, outputs, name="/" + outputs[0], **attrs)


def case(name, op, opset, x, t, w=None, log_prob=False, **attrs):
    """A backend-style case whose outputs are the reference's."""
    d = os.path.join(OUT, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    ref = dict(weight=w, reduction=attrs.get("reduction", "mean"),
               ignore_index=attrs.get("ignore_index"))
    with np.errstate(invalid="ignore"):  # 0 / 0 when every target is ignored
        if op == SCE:
            outs = reference_sce(x, t, get_log_prob=True if log_prob else None, **ref)
        else:
            outs = reference_nll(x, t, **ref)
    outs = list(outs) if log_prob else [outs]
    # The reference computes in float32; the outputs have the input's type.
    outs = [np.asarray(v).astype(x.dtype) for v in outs]
    ftype = onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[x.dtype]
    ins = [("x", x), ("t", t)] + ([("w", w)] if w is not None else [])
    names = ["loss", "log_prob"][:len(outs)]
    m = model([node(op, [n for n, _ in ins], names, **attrs)],
              [vi(n, onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[v.dtype], v.shape)
               for n, v in ins],
              [vi(n, ftype, v.shape) for n, v in zip(names, outs)], opset=opset)
    onnx.checker.check_model(m)
    onnx.save_model(m, os.path.join(d, "model.onnx"))
    for kind, named in (("input", ins), ("output", list(zip(names, outs)))):
        for i, (n, v) in enumerate(named):
            path = os.path.join(d, "test_data_set_0", f"{kind}_{i}.pb")
            with open(path, "wb") as f:
                f.write(numpy_helper.from_array(v, n).SerializeToString())


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(0)
    f32, i64, i32 = TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT32

    # --- the imported IR --------------------------------------------------
    # Opset 12: NLL with weights, an ignore_index inside [0, C), int32
    # targets, sum; SCE with log_prob and the default mean.
    save(model([node(NLL, ["x", "t", "w"], ["nll"], reduction="sum", ignore_index=1),
                node(SCE, ["x", "t"], ["sce", "log_prob"])],
               [vi("x", f32, [2, 3, 4]), vi("t", i32, [2, 4]), vi("w", f32, [3])],
               [vi("nll", f32, []), vi("sce", f32, []), vi("log_prob", f32, [2, 3, 4])],
               opset=12), "loss_opset12.onnx")
    # Opset 13: means — weighted with an ignore_index outside [0, C), counted
    # without weights, plain — and none, on [N, C] and [N, C, d1, d2].
    save(model([node(SCE, ["x", "t", "w"], ["weighted"], ignore_index=-100),
                node(NLL, ["x4", "t4"], ["counted"], ignore_index=0),
                node(NLL, ["x4", "t4"], ["plain"]),
                node(SCE, ["x", "t"], ["none"], reduction="none")],
               [vi("x", f32, [4, 5]), vi("t", i64, [4]), vi("w", f32, [5]),
                vi("x4", f32, [2, 3, 2, 2]), vi("t4", i64, [2, 2, 2])],
               [vi("weighted", f32, []), vi("counted", f32, []), vi("plain", f32, []),
                vi("none", f32, [4])]), "loss_opset13.onnx")
    # More classes than a constant holds in the IR: the ids are an nn.range.
    save(model([node(NLL, ["x", "t"], ["nll"], reduction="none")],
               [vi("x", f32, [2, 70000]), vi("t", i64, [2])], [vi("nll", f32, [2])]),
         "loss_many_classes.onnx")

    # --- errors, each naming the node --------------------------------------
    x23, t2 = vi("x", f32, [2, 3]), vi("t", i64, [2])
    save(model([node(SCE, ["x", "t"], ["y"], reduction="average")], [x23, t2],
               [vi("y", f32, [])]), "bad_reduction.onnx", check=False)
    save(model([node(NLL, ["x", "t"], ["y"])], [x23, vi("t", i64, [3])],
               [vi("y", f32, [])]), "bad_target_shape.onnx", check=False)
    save(model([node(NLL, ["x", "t"], ["y"])], [x23, vi("t", f32, [2])],
               [vi("y", f32, [])]), "float_target.onnx", check=False)
    save(model([node(SCE, ["x", "t", "w"], ["y"])], [x23, t2, vi("w", f32, [2])],
               [vi("y", f32, [])]), "bad_weights.onnx", check=False)
    save(model([node(NLL, ["x", "t"], ["y"])], [vi("x", f32, [3]), vi("t", i64, [])],
               [vi("y", f32, [])]), "rank1_input.onnx", check=False)
    save(model([node(SCE, ["x", "t"], ["y"])], [x23, t2], [vi("y", f32, [])],
               opset=11), "sce_opset11.onnx", check=False)

    # --- numerics against ONNX's reference ----------------------------------
    x = rng.standard_normal((4, 3, 5)).astype(np.float32)
    t = rng.integers(0, 3, (4, 5)).astype(np.int64)
    t[0, :2] = 1
    w = (rng.random(3) + 0.5).astype(np.float32)
    case("sce12_weight_ii_in_range_mean", SCE, 12, x, t, w, log_prob=True,
         ignore_index=1)
    case("nll12_int32_ii_none", NLL, 12, x, t.astype(np.int32), w,
         reduction="none", ignore_index=2)
    case("sce13_double_weight_ii_mean", SCE, 13, x.astype(np.float64), t,
         w.astype(np.float64), log_prob=True, ignore_index=0)
    # Every target ignored: the mean is 0 / 0 = NaN, as the reference has it.
    case("sce13_all_ignored_mean", SCE, 13, x, np.full((4, 5), 7, np.int64),
         ignore_index=7)

    # --- a classifier whose graph ends in its loss (per sample) -------------
    fc = numpy_helper.from_array((rng.standard_normal((6, 3)) / 6 ** 0.5)
                                 .astype(np.float32), "fc.weight")
    bias = numpy_helper.from_array((0.1 * rng.standard_normal(3)).astype(np.float32),
                                   "fc.bias")
    save(model([node("MatMul", ["x", "fc.weight"], ["h"]),
                node("Add", ["h", "fc.bias"], ["logits"]),
                node(SCE, ["logits", "target"], ["loss"], reduction="none",
                     ignore_index=-1)],
               [vi("x", f32, [4, 6]), vi("target", i64, [4])],
               [vi("loss", f32, [4])], [fc, bias]), "classifier_sce.onnx")


if __name__ == "__main__":
    main()
