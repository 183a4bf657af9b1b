#!/usr/bin/env python3
"""Writes a chain of matmul + relu layers as linalg IR for the compile-speed
benchmark, in one of two forms that differ only in how the sharding is
stated:

  upstream  shard.grid + shard.sharding/shard.shard (annotate_for_users) on
            every weight, for mlir-opt --sharding-propagation --shard-partition
  distopt   dist.mesh + dist.annotate on every weight, for dist-opt's
            propagate / insert-reshards / partition / collectives passes

Layers alternate Megatron-style: even layers take a column-split weight
(D x H, split along H), odd layers a row-split weight (H x D, split along H),
so every odd layer ends in one all-reduce. `--ops N` counts the compute ops
(matmuls and relus): N/2 layers. Each layer has its own zero init, relu body
constant and sharding op, so no value has more than a few users (upstream's
propagation is quadratic in the users of one value; this benchmark measures
chains, not that). `--share` writes the IR as CSE leaves it instead: one
zero init per shape and one sharding op per kind, used by every layer.
"""
import argparse
import sys

MAP = "affine_map<(d0, d1) -> (d0, d1)>"


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ops", type=int, required=True,
                   help="compute ops (matmul + relu), rounded down to even")
    p.add_argument("--form", choices=["upstream", "distopt"], required=True)
    p.add_argument("--devices", type=int, default=4,
                   help="size of the 1-D mesh/grid (default 4)")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--model", type=int, default=16, help="D")
    p.add_argument("--hidden", type=int, default=32, help="H")
    p.add_argument("--weights", choices=["args", "ops"], default="args",
                   help="weights as function arguments (default) or as "
                        "tensor.empty ops in the body")
    p.add_argument("--share", action="store_true",
                   help="one zero init per shape and one sharding op per "
                        "kind, shared by all layers (IR after CSE)")
    p.add_argument("-o", "--output", default="-")
    a = p.parse_args()

    layers = max(2, a.ops // 2)
    B, D, H = a.batch, a.model, a.hidden
    out = sys.stdout if a.output == "-" else open(a.output, "w")
    w = out.write

    def t(r, c):
        return f"tensor<{r}x{c}xf32>"

    if a.form == "upstream":
        w(f"shard.grid @grid(shape = {a.devices})\n")
    else:
        w(f"dist.mesh @mesh [tp = {a.devices}]\n")
    args = [f"%x: {t(B, D)}"]
    if a.weights == "args":
        for i in range(layers):
            shape = (D, H) if i % 2 == 0 else (H, D)
            args.append(f"%w{i}: {t(*shape)}")
    w(f"func.func @chain({', '.join(args)}) -> {t(B, D)} {{\n")
    if a.share:
        for n in (H, D):
            w(f"  %zero{n} = arith.constant dense<0.0> : {t(B, n)}\n")
        if a.form == "upstream":
            w("  %scol = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding\n")
            w("  %srow = shard.sharding @grid split_axes = [[0]] : !shard.sharding\n")

    prev, prev_cols = "%x", D
    for i in range(layers):
        column = i % 2 == 0
        k, n = (D, H) if column else (H, D)
        wt = t(k, n)
        if a.weights == "ops":
            w(f"  %w{i} = tensor.empty() : {wt}\n")
        if a.form == "upstream":
            axes = "[[], [0]]" if column else "[[0]]"
            sharding = ("%scol" if column else "%srow") if a.share else f"%s{i}"
            if not a.share:
                w(f"  {sharding} = shard.sharding @grid split_axes = {axes} : !shard.sharding\n")
            w(f"  %ws{i} = shard.shard %w{i} to {sharding} annotate_for_users : {wt}\n")
        else:
            placement = "S(1)" if column else "S(0)"
            w(f"  %ws{i} = dist.annotate %w{i} to <@mesh, [{placement}]> : {wt}\n")
        init = f"%zero{n}" if a.share else f"%z{i}"
        if not a.share:
            w(f"  {init} = arith.constant dense<0.0> : {t(B, n)}\n")
        w(f"  %m{i} = linalg.matmul ins({prev}, %ws{i} : {t(B, k)}, {wt}) "
          f"outs({init} : {t(B, n)}) -> {t(B, n)}\n")
        w(f"  %e{i} = tensor.empty() : {t(B, n)}\n")
        w(f"  %r{i} = linalg.generic {{indexing_maps = [{MAP}, {MAP}], "
          f"iterator_types = [\"parallel\", \"parallel\"]}} "
          f"ins(%m{i} : {t(B, n)}) outs(%e{i} : {t(B, n)}) {{\n")
        w("  ^bb0(%in: f32, %out: f32):\n")
        w("    %c0 = arith.constant 0.0 : f32\n")
        w("    %v = arith.maximumf %in, %c0 : f32\n")
        w("    linalg.yield %v : f32\n")
        w(f"  }} -> {t(B, n)}\n")
        prev, prev_cols = f"%r{i}", n
    if prev_cols != D:
        raise SystemExit("internal: the chain must end with D columns")
    w(f"  return {prev} : {t(B, D)}\n}}\n")
    if out is not sys.stdout:
        out.close()


if __name__ == "__main__":
    main()
