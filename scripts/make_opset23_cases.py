#!/usr/bin/env python3
"""Writes test/data/opset23: single-node cases of opset 23's transformer ops
(RMSNormalization, RotaryEmbedding, Attention) in the ONNX backend-test
layout (model.onnx, test_data_set_0/input_N.pb and output_N.pb), with the
outputs computed by ONNX Runtime 1.30 (onnxruntime-node), the reference that
runs opset 23, and test/data/opset23-errors: models the importer refuses.
Debian's onnx 1.12 only writes the graphs (it knows opsets up to 17, so no
checker runs).

    scripts/make_opset23_cases.py --ort-dir DIR   # DIR/node_modules/onnxruntime-node

Install ONNX Runtime with
    (cd DIR && ONNXRUNTIME_NODE_INSTALL=skip npm install onnxruntime-node@1.30.0)

Needs /usr/bin/python3 (Debian's python3-onnx and python3-numpy) and node.
"""
import argparse
import json
import os
import shutil
import subprocess
import tempfile

import numpy as np
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "test", "data", "opset23")
ERRORS = os.path.join(ROOT, "test", "data", "opset23-errors")

# Runs a model on the inputs listed in a JSON file and writes each output's
# raw bytes next to it, with its dims and type in the JSON it prints.
RUNNER = r"""
const ort = require(process.argv[2]);
const fs = require('fs');
const spec = JSON.parse(fs.readFileSync(process.argv[4]));
(async () => {
  const session = await ort.InferenceSession.create(process.argv[3]);
  const feeds = {};
  for (const t of spec.inputs) {
    const buf = fs.readFileSync(t.file);
    const data = t.type === 'float32' ? new Float32Array(buf.buffer, buf.byteOffset, buf.length / 4)
               : t.type === 'int64' ? new BigInt64Array(buf.buffer, buf.byteOffset, buf.length / 8)
               : new Uint8Array(buf.buffer, buf.byteOffset, buf.length);
    feeds[t.name] = new ort.Tensor(t.type, t.type === 'bool' ? Array.from(data, x => x !== 0) : data, t.dims);
  }
  const results = await session.run(feeds);
  const out = [];
  for (const name of spec.outputs) {
    const r = results[name];
    const file = spec.dir + '/' + name + '.bin';
    fs.writeFileSync(file, Buffer.from(r.data.buffer, r.data.byteOffset, r.data.byteLength));
    out.push({name, dims: r.dims, type: r.type, file});
  }
  console.log(JSON.stringify(out));
})().catch(e => { console.error(String(e)); process.exit(1); });
"""


def rng(seed):
    return np.random.default_rng(seed)


def case(name, node, inputs, outputs, ort_dir):
    """inputs: [(name, array)]; outputs: names. Writes OUT/name."""
    def info(n, a):
        et = {np.float32: TensorProto.FLOAT, np.int64: TensorProto.INT64,
              np.bool_: TensorProto.BOOL}[a.dtype.type]
        return helper.make_tensor_value_info(n, et, list(a.shape))
    graph = helper.make_graph(
        [node], name, [info(n, a) for n, a in inputs],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None)
         for o in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    d = os.path.join(OUT, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(model.SerializeToString())
    with tempfile.TemporaryDirectory() as tmp:
        spec = {"dir": tmp, "outputs": outputs, "inputs": []}
        for i, (n, a) in enumerate(inputs):
            numpy_helper_write(os.path.join(d, "test_data_set_0", "input_%d.pb" % i), n, a)
            f = os.path.join(tmp, n + ".in")
            a.tofile(f)
            spec["inputs"].append({"name": n, "dims": list(a.shape), "file": f,
                                   "type": {np.float32: "float32", np.int64: "int64",
                                            np.bool_: "bool"}[a.dtype.type]})
        with open(os.path.join(tmp, "spec.json"), "w") as f:
            json.dump(spec, f)
        runner = os.path.join(tmp, "run.js")
        with open(runner, "w") as f:
            f.write(RUNNER)
        ort = os.path.join(os.path.abspath(ort_dir), "node_modules", "onnxruntime-node")
        res = subprocess.run(["node", runner, ort, os.path.join(d, "model.onnx"),
                              os.path.join(tmp, "spec.json")],
                             capture_output=True, text=True, check=True)
        for i, o in enumerate(json.loads(res.stdout)):
            assert o["type"] == "float32", o
            a = np.fromfile(o["file"], dtype=np.float32).reshape(o["dims"])
            assert np.isfinite(a).all(), name
            numpy_helper_write(os.path.join(d, "test_data_set_0", "output_%d.pb" % i),
                               o["name"], a)
    print("wrote", d)


def error_model(name, node, inputs, outputs, opset=23):
    """A model the importer must refuse: inputs [(name, shape)], f32."""
    graph = helper.make_graph(
        [node], name,
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    os.makedirs(ERRORS, exist_ok=True)
    with open(os.path.join(ERRORS, name + ".onnx"), "wb") as f:
        f.write(model.SerializeToString())


def numpy_helper_write(path, name, a):
    t = numpy_helper.from_array(a, name)
    with open(path, "wb") as f:
        f.write(t.SerializeToString())


def f32(r, *shape):
    return r.standard_normal(shape).astype(np.float32)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ort-dir", required=True)
    a = ap.parse_args()
    r = rng(23)
    mk = helper.make_node

    case("rmsnorm_last_axis",
         mk("RMSNormalization", ["X", "scale"], ["Y"], epsilon=1e-5),
         [("X", f32(r, 2, 5, 16)), ("scale", f32(r, 16))], ["Y"], a.ort_dir)
    case("rmsnorm_axis1",
         mk("RMSNormalization", ["X", "scale"], ["Y"], axis=1, epsilon=1e-3),
         [("X", f32(r, 2, 3, 8)), ("scale", f32(r, 3, 8))], ["Y"], a.ort_dir)

    angles = lambda *shape: r.uniform(-3.2, 3.2, shape).astype(np.float32)
    theta = angles(10, 4)
    case("rotary_4d_positions",
         mk("RotaryEmbedding", ["X", "cos", "sin", "pos"], ["Y"]),
         [("X", f32(r, 2, 3, 6, 8)), ("cos", np.cos(theta)), ("sin", np.sin(theta)),
          ("pos", r.integers(0, 10, (2, 6)).astype(np.int64))], ["Y"], a.ort_dir)
    theta = angles(2, 6, 2)
    case("rotary_3d_interleaved_partial",
         mk("RotaryEmbedding", ["X", "cos", "sin"], ["Y"], interleaved=1,
            num_heads=4, rotary_embedding_dim=4),
         [("X", f32(r, 2, 6, 32)), ("cos", np.cos(theta)), ("sin", np.sin(theta))],
         ["Y"], a.ort_dir)

    case("attention_4d_causal",
         mk("Attention", ["Q", "K", "V"], ["Y"], is_causal=1),
         [("Q", f32(r, 2, 4, 6, 8)), ("K", f32(r, 2, 4, 6, 8)), ("V", f32(r, 2, 4, 6, 8))],
         ["Y"], a.ort_dir)
    mask = r.random((6, 6)) < 0.6
    mask[:, 0] = True  # every query sees a key
    case("attention_3d_gqa_bool_mask",
         mk("Attention", ["Q", "K", "V", "mask"], ["Y"], q_num_heads=4,
            kv_num_heads=2, scale=0.3),
         [("Q", f32(r, 2, 6, 32)), ("K", f32(r, 2, 6, 16)), ("V", f32(r, 2, 6, 16)),
          ("mask", mask)], ["Y"], a.ort_dir)
    case("attention_4d_float_mask_softcap",
         mk("Attention", ["Q", "K", "V", "mask"], ["Y"], softcap=2.0),
         [("Q", f32(r, 1, 2, 5, 8) * 3), ("K", f32(r, 1, 2, 7, 8)), ("V", f32(r, 1, 2, 7, 4)),
          ("mask", f32(r, 5, 7))], ["Y"], a.ort_dir)
    case("attention_4d_cache_causal_gqa",
         mk("Attention", ["Q", "K", "V", "", "past_key", "past_value"],
            ["Y", "present_key", "present_value"], is_causal=1),
         [("Q", f32(r, 1, 4, 3, 8)), ("K", f32(r, 1, 2, 3, 8)), ("V", f32(r, 1, 2, 3, 8)),
          ("past_key", f32(r, 1, 2, 4, 8)), ("past_value", f32(r, 1, 2, 4, 8))],
         ["Y", "present_key", "present_value"], a.ort_dir)

    mk = helper.make_node
    error_model("attention_qk_output",
                mk("Attention", ["Q", "K", "V"], ["Y", "", "", "qk"]),
                [("Q", [1, 2, 3, 4]), ("K", [1, 2, 3, 4]), ("V", [1, 2, 3, 4])],
                ["Y", "qk"])
    error_model("attention_3d_no_heads", mk("Attention", ["Q", "K", "V"], ["Y"]),
                [("Q", [1, 3, 8]), ("K", [1, 3, 8]), ("V", [1, 3, 8])], ["Y"])
    error_model("attention_gqa_heads",
                mk("Attention", ["Q", "K", "V"], ["Y"]),
                [("Q", [1, 3, 2, 4]), ("K", [1, 2, 2, 4]), ("V", [1, 2, 2, 4])], ["Y"])
    error_model("rotary_odd_dim",
                mk("RotaryEmbedding", ["X", "cos", "sin"], ["Y"], rotary_embedding_dim=3),
                [("X", [1, 2, 3, 8]), ("cos", [1, 3, 1]), ("sin", [1, 3, 1])], ["Y"])
    error_model("rmsnorm_stash_type",
                mk("RMSNormalization", ["X", "scale"], ["Y"], stash_type=0),
                [("X", [2, 4]), ("scale", [4])], ["Y"])
    error_model("opset24", mk("Relu", ["X"], ["Y"]), [("X", [2])], ["Y"], opset=24)


if __name__ == "__main__":
    main()
