#!/usr/bin/env python3
"""Draws a training run's loss and learning rate from its log as an SVG.

    dist-train ... --log-file run.jsonl
    python3 scripts/plot_training_log.py run.jsonl -o run.svg

The log has one JSON object per line (docs/training.md): each step's
"step", "loss", "lr", ... Two panels share the step axis: the loss (and
"eval_loss" where a record has one) above, the learning rate below. Plain
Python, no plotting library, so it runs wherever dist-train does.
"""
import argparse
import json
import sys

WIDTH, PANEL, MARGIN_L, MARGIN_R, MARGIN_T, GAP = 720, 220, 70, 20, 30, 50


def read_log(path):
    records = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as e:
                sys.exit("%s:%d: not a JSON object: %s" % (path, n, e))
    return records


def series(records, key):
    return [(r["step"], r[key]) for r in records
            if isinstance(r.get(key), (int, float)) and "step" in r]


def ticks(lo, hi, count=5):
    if hi == lo:
        return [lo]
    return [lo + (hi - lo) * i / (count - 1) for i in range(count)]


def panel(out, top, title, lines, x_range):
    """Draws one panel at y offset `top`: lines is [(label, colour, points)]."""
    points = [p for _, _, pts in lines for p in pts]
    if not points:
        return
    x0, x1 = x_range
    y0 = min(v for _, v in points)
    y1 = max(v for _, v in points)
    if y1 == y0:
        y0, y1 = y0 - 0.5 * abs(y0 or 1), y1 + 0.5 * abs(y1 or 1)
    plot_w = WIDTH - MARGIN_L - MARGIN_R

    def sx(x):
        return MARGIN_L + (x - x0) / ((x1 - x0) or 1) * plot_w

    def sy(y):
        return top + PANEL - (y - y0) / (y1 - y0) * PANEL

    out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" '
               'stroke="#888"/>' % (MARGIN_L, top, plot_w, PANEL))
    out.append('<text x="%d" y="%d" font-size="13">%s</text>' %
               (MARGIN_L, top - 8, title))
    for y in ticks(y0, y1):
        out.append('<text x="%d" y="%.1f" font-size="11" text-anchor="end">'
                   '%.4g</text>' % (MARGIN_L - 6, sy(y) + 4, y))
    for x in ticks(x0, x1):
        out.append('<text x="%.1f" y="%d" font-size="11" text-anchor="middle">'
                   '%d</text>' % (sx(x), top + PANEL + 15, round(x)))
    legend_x = MARGIN_L + plot_w - 150
    for i, (label, colour, pts) in enumerate(lines):
        if not pts:
            continue
        path = " ".join("%.1f,%.1f" % (sx(x), sy(y)) for x, y in pts)
        out.append('<polyline fill="none" stroke="%s" stroke-width="1.5" '
                   'points="%s"/>' % (colour, path))
        if len(pts) == 1:
            x, y = pts[0]
            out.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>' %
                       (sx(x), sy(y), colour))
        out.append('<text x="%d" y="%d" font-size="12" fill="%s">%s</text>' %
                   (legend_x, top + 16 + 15 * i, colour, label))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("log", help="the run's --log-file (JSON lines)")
    ap.add_argument("-o", "--out", required=True, help="the SVG to write")
    a = ap.parse_args()
    records = read_log(a.log)
    loss = series(records, "loss")
    if not loss:
        sys.exit("%s: no record has a step and a loss" % a.log)
    evals = series(records, "eval_loss")
    lr = series(records, "lr")
    steps = [s for s, _ in loss + evals]
    x_range = (min(steps), max(steps))
    height = MARGIN_T + 2 * PANEL + GAP + 40
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif">' % (WIDTH, height),
           '<rect width="100%" height="100%" fill="white"/>']
    panel(out, MARGIN_T, "loss", [("train loss", "#1f77b4", loss),
                                  ("eval loss", "#d62728", evals)], x_range)
    panel(out, MARGIN_T + PANEL + GAP, "learning rate",
          [("lr", "#2ca02c", lr)], x_range)
    out.append('<text x="%d" y="%d" font-size="12" text-anchor="middle">step'
               '</text>' % (MARGIN_L + (WIDTH - MARGIN_L - MARGIN_R) // 2,
                            height - 5))
    out.append("</svg>")
    with open(a.out, "w") as f:
        f.write("\n".join(out) + "\n")
    print("wrote %s: %d step(s)%s" % (a.out, len(loss),
          ", %d evaluation(s)" % len(evals) if evals else ""))


if __name__ == "__main__":
    main()
