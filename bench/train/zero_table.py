#!/usr/bin/env python3
"""Prints bench/train/zero.sh's tables from `dist-opt --report=json` files.

  zero_table.py TITLE PLAN=REPORT.json ...   (the first plan is the baseline,
                                              normally dp)

Memory: rank 0's parameter, gradient and optimizer-state bytes
(memory.per_rank_*), their sum (the model states ZeRO divides), the ratio to
the baseline and ZeRO's formula for fp32 AdamW at the data-parallel degree
N of the report's mesh: parameters 4 bytes per parameter (Psi), gradients
4 Psi, optimizer states 8 Psi; dp 16 Psi, level 1 4+4+8/N, level 2
4+(4+8)/N, level 3 16/N (all over 16). The formula counts trainable
parameters only; the report's parameter bytes also hold frozen
initializers.

Communication: bytes rank 0 sends per step (collectives[].bytes, ring
algorithms, times collectives[].count), by phase and in total, the ratio to
the baseline and the ZeRO paper's (levels 0-2: 2 Psi, level 3: 3 Psi).
Then the three largest collectives of each plan (bytes x count), with the
op whose layout caused them, so an excess over the formula can be traced.
"""
import json
import re
import sys

PHASES = ["forward", "loss", "backward", "optimizer"]
STATE_BYTES = {"params": 4, "grads": 4, "states": 8}  # fp32 AdamW, per parameter


def zero_memory(plan, n):
    p, g, s = STATE_BYTES["params"], STATE_BYTES["grads"], STATE_BYTES["states"]
    total = p + g + s
    return {"dp": total, "zero1": p + g + s / n, "zero2": p + (g + s) / n,
            "fsdp": total / n}.get(plan, float("nan")) / total


ZERO_COMM = {"dp": 1.0, "zero1": 1.0, "zero2": 1.0, "fsdp": 1.5}


def fmt(n):
    return "{:,}".format(n)


def cause(reason):
    m = re.match(r"(?:operand layout|function result): (\S+) at (\S+)", reason)
    return "%s at %s" % (m.group(1), m.group(2)) if m else reason[:60]


def main():
    title, specs = sys.argv[1], sys.argv[2:]
    plans, reports = [], {}
    for spec in specs:
        plan, path = spec.split("=", 1)
        plans.append(plan)
        with open(path) as f:
            reports[plan] = json.load(f)
    base = plans[0]
    dp = [a["size"] for a in reports[base]["mesh"] if a["name"] == "dp"]
    n = dp[0] if dp else 1

    mem = {}
    uneven = []
    for plan in plans:
        m = reports[plan]["memory"]
        cols = [m["per_rank_parameter_bytes"], m["per_rank_gradient_bytes"],
                m["per_rank_optimizer_state_bytes"]]
        mem[plan] = [c[0] for c in cols]
        if any(len(set(c)) > 1 for c in cols):
            uneven.append(plan)
    print("%s: model states per rank (rank 0, bytes), mesh dp=%d" % (title, n))
    hdr = "%-6s %14s %14s %14s %14s %8s %8s"
    print(hdr % ("plan", "parameters", "gradients", "opt. states", "total",
                 "vs " + base, "ZeRO"))
    base_total = sum(mem[base])
    for plan in plans:
        p, g, s = mem[plan]
        t = p + g + s
        print("%-6s %14s %14s %14s %14s %8.3f %8.4g" % (
            plan, fmt(p), fmt(g), fmt(s), fmt(t), t / base_total,
            zero_memory(plan, n)))
    m = reports[base]["memory"]
    print("(parameter bytes in all %s, trainable %s (the %s gradient); %s)" % (
        fmt(m["parameter_bytes_total"]), fmt(m["per_rank_gradient_bytes"][0]),
        base, "ranks differ under " + ", ".join(uneven) if uneven
        else "every rank holds the same"))
    print()

    print("%s: bytes sent per step by rank 0 (ring algorithms), by phase"
          % title)
    hdr = "%-6s" + " %14s" * (len(PHASES) + 1) + " %6s %8s %8s"
    print(hdr % (("plan",) + tuple(PHASES) + ("total", "colls", "vs " + base,
                                              "ZeRO")))
    totals = {}
    for plan in plans:
        by_phase = {ph: 0 for ph in PHASES}
        count = 0
        for c in reports[plan]["collectives"]:
            ph = c.get("phase", "forward")
            by_phase[ph] = by_phase.get(ph, 0) + c["bytes"] * c["count"]
            count += c["count"]
        totals[plan] = (by_phase, count)
    base_sent = sum(totals[base][0].values())
    for plan in plans:
        by_phase, count = totals[plan]
        sent = sum(by_phase.values())
        print(("%-6s" + " %14s" * (len(PHASES) + 1) + " %6d %8.3f %8.4g") % (
            (plan,) + tuple(fmt(by_phase[ph]) for ph in PHASES) +
            (fmt(sent), count, sent / base_sent, ZERO_COMM.get(plan, float("nan")))))
    print()
    print("%s: the three largest collectives of each plan (bytes sent x count)"
          % title)
    for plan in plans:
        cs = sorted(reports[plan]["collectives"],
                    key=lambda c: -c["bytes"] * c["count"])[:3]
        for c in cs:
            print("  %-6s %-14s %-9s %12s x%-3d tensor %12s  %s" % (
                plan, c["kind"], c.get("phase", ""), fmt(c["bytes"]),
                c["count"], fmt(c["tensor_bytes"]), cause(c["reason"])))


if __name__ == "__main__":
    main()
