#!/usr/bin/env python3
"""Writes a Llama-2-70B-shaped forward graph as ONNX for the compile bench.

80 decoder layers, d=8192, 64 query heads and 8 key/value heads (GQA) of
128, SwiGLU MLP of 28672, RMSNorm, vocabulary 32000, one sequence of SEQ
tokens per sequence, BATCH sequences. The weights (about 69 billion float32 parameters) live in an
external-data file that is created *sparse* (truncate): the importer only
records where each tensor is, so the compile needs the file's size, not its
bytes, and the bench needs no 276 GB of disk. Nothing here can be run.

With --shape 8b: Llama-3-8B's shape instead (32 layers, d=4096, 32/8
heads, SwiGLU 14336, vocabulary 128256).

Usage: make_llama_shaped.py OUT_DIR [--shape 70b|8b] [--layers N] [--seq N]
                            [--batch N]
Needs the onnx package (/usr/bin/python3 with Debian's python3-onnx).
"""
import argparse
import os

import onnx
from onnx import TensorProto, helper

D, HEADS, KV_HEADS, HEAD_DIM, FFN, VOCAB = 8192, 64, 8, 128, 28672, 32000
SHAPES = {"70b": (8192, 64, 8, 128, 28672, 32000, 80),
          "8b": (4096, 32, 8, 128, 14336, 128256, 32)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--shape", choices=sorted(SHAPES), default="70b")
    ap.add_argument("--layers", type=int, default=None)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--batch", type=int, default=4)
    args = ap.parse_args()
    global D, HEADS, KV_HEADS, HEAD_DIM, FFN, VOCAB
    D, HEADS, KV_HEADS, HEAD_DIM, FFN, VOCAB, layers = SHAPES[args.shape]
    if args.layers is None:
        args.layers = layers
    os.makedirs(args.out, exist_ok=True)
    seq, batch = args.seq, args.batch
    nodes, inits = [], []
    offset = [0]

    def weight(name, shape):
        t = TensorProto()
        t.name = name
        t.data_type = TensorProto.FLOAT
        t.dims.extend(shape)
        t.data_location = TensorProto.EXTERNAL
        n = 4
        for d in shape:
            n *= d
        for k, v in (("location", "weights.bin"), ("offset", str(offset[0])),
                     ("length", str(n))):
            e = t.external_data.add()
            e.key, e.value = k, v
        offset[0] += n
        inits.append(t)
        return name

    def const(name, values, dtype=TensorProto.INT64):
        inits.append(helper.make_tensor(name, dtype, [len(values)], values))
        return name

    def node(op, ins, name, **attrs):
        out = name + "_out"
        nodes.append(helper.make_node(op, ins, [out], name=name, **attrs))
        return out

    def rmsnorm(x, prefix, w):
        sq = node("Mul", [x, x], prefix + "/sq")
        mean = node("ReduceMean", [sq], prefix + "/mean", axes=[-1], keepdims=1)
        eps = node("Add", [mean, "eps"], prefix + "/eps")
        rs = node("Sqrt", [eps], prefix + "/sqrt")
        normed = node("Div", [x, rs], prefix + "/div")
        return node("Mul", [normed, w], prefix + "/scale")

    inits.append(helper.make_tensor("eps", TensorProto.FLOAT, [], [1e-5]))
    inits.append(helper.make_tensor("scale", TensorProto.FLOAT, [],
                                     [HEAD_DIM ** -0.5]))
    const("q_shape", [batch, seq, HEADS, HEAD_DIM])
    const("kv_shape", [batch, seq, KV_HEADS, HEAD_DIM])
    const("kv_rep_shape", [batch, KV_HEADS, HEADS // KV_HEADS, seq, HEAD_DIM])
    const("kv_grouped", [batch, KV_HEADS, 1, seq, HEAD_DIM])
    const("kv_full", [batch, HEADS, seq, HEAD_DIM])
    const("o_shape", [batch, seq, D])
    const("unsq_axis", [2])

    x = node("Gather", [weight("embed_tokens.weight", [VOCAB, D]), "input_ids"],
             "/embed_tokens/Gather", axis=0)
    for i in range(args.layers):
        p = "/layers.%d" % i
        w = "layers.%d." % i
        h = rmsnorm(x, p + "/input_layernorm",
                    weight(w + "input_layernorm.weight", [D]))
        q = node("MatMul", [h, weight(w + "self_attn.q_proj.weight", [D, D])],
                 p + "/self_attn/q_proj/MatMul")
        k = node("MatMul", [h, weight(w + "self_attn.k_proj.weight",
                                      [D, KV_HEADS * HEAD_DIM])],
                 p + "/self_attn/k_proj/MatMul")
        v = node("MatMul", [h, weight(w + "self_attn.v_proj.weight",
                                      [D, KV_HEADS * HEAD_DIM])],
                 p + "/self_attn/v_proj/MatMul")
        q = node("Transpose", [node("Reshape", [q, "q_shape"], p + "/q_view")],
                 p + "/q_heads", perm=[0, 2, 1, 3])
        kv = []
        for name, t in (("k", k), ("v", v)):
            t = node("Transpose", [node("Reshape", [t, "kv_shape"], p + "/%s_view" % name)],
                     p + "/%s_heads" % name, perm=[0, 2, 1, 3])
            # GQA: each key/value head serves HEADS / KV_HEADS query heads.
            t = node("Unsqueeze", [t, "unsq_axis"], p + "/%s_unsqueeze" % name)
            t = node("Expand", [t, "kv_rep_shape"], p + "/%s_repeat" % name)
            kv.append(node("Reshape", [t, "kv_full"], p + "/%s_groups" % name))
        k, v = kv
        kt = node("Transpose", [k], p + "/self_attn/k_t", perm=[0, 1, 3, 2])
        s = node("Mul", [node("MatMul", [q, kt], p + "/self_attn/scores"), "scale"],
                 p + "/self_attn/scaled")
        a = node("MatMul", [node("Softmax", [s], p + "/self_attn/Softmax", axis=-1), v],
                 p + "/self_attn/context")
        a = node("Reshape", [node("Transpose", [a], p + "/self_attn/merge", perm=[0, 2, 1, 3]),
                             "o_shape"], p + "/self_attn/merge_view")
        o = node("MatMul", [a, weight(w + "self_attn.o_proj.weight", [D, D])],
                 p + "/self_attn/o_proj/MatMul")
        x = node("Add", [x, o], p + "/attn_residual")
        h = rmsnorm(x, p + "/post_attention_layernorm",
                    weight(w + "post_attention_layernorm.weight", [D]))
        g = node("MatMul", [h, weight(w + "mlp.gate_proj.weight", [D, FFN])],
                 p + "/mlp/gate_proj/MatMul")
        u = node("MatMul", [h, weight(w + "mlp.up_proj.weight", [D, FFN])],
                 p + "/mlp/up_proj/MatMul")
        silu = node("Mul", [g, node("Sigmoid", [g], p + "/mlp/act/Sigmoid")], p + "/mlp/act/Mul")
        m = node("MatMul", [node("Mul", [silu, u], p + "/mlp/gated"),
                            weight(w + "mlp.down_proj.weight", [FFN, D])],
                 p + "/mlp/down_proj/MatMul")
        x = node("Add", [x, m], p + "/mlp_residual")
    h = rmsnorm(x, "/norm", weight("norm.weight", [D]))
    logits = node("MatMul", [h, weight("lm_head.weight", [D, VOCAB])], "/lm_head/MatMul")
    nodes[-1].output[0] = "logits"

    graph = helper.make_graph(
        nodes, "llama_shaped",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [batch, seq])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, seq, VOCAB])],
        initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, os.path.join(args.out, "model.onnx"))
    with open(os.path.join(args.out, "weights.bin"), "wb") as f:
        f.truncate(offset[0])  # sparse: no blocks written
    print("%s: %d layers, %.1f B parameters, %d nodes" % (
        os.path.join(args.out, "model.onnx"), args.layers, offset[0] / 4e9, len(nodes)))


if __name__ == "__main__":
    main()
