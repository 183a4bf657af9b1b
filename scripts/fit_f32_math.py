#!/usr/bin/env python3
"""Fits the coefficients of runtime/src/erf_f32.h and exp_f32.h: near-minimax
polynomials (least squares on Chebyshev nodes, then Lawson reweighting) for
  erf(x) / x     as a polynomial of degree 6 in x*x on [0, 1],
  erfc(x)        as a polynomial of degree 12 in t = (x - 2.4375) / 1.4375
                 on [1, 3.875], and
  expm1(r) / r   as a polynomial of degree 5 in r on [-ln2/2, ln2/2].
Needs numpy (Debian's python3-numpy). Prints the coefficients, lowest first.
"""
import math

import numpy as np


def fit(f, a, b, deg, var, nodes=2000, rounds=60):
    k = np.arange(nodes)
    x = (a + b) / 2 + (b - a) / 2 * np.cos(np.pi * (k + 0.5) / nodes)
    v = np.vander(var(x), deg + 1, increasing=True)
    y = np.array([f(t) for t in x])
    w = np.ones(nodes)
    for _ in range(rounds):
        c, *_ = np.linalg.lstsq(v * np.sqrt(w)[:, None], y * np.sqrt(w), rcond=None)
        w = w * np.abs(v @ c - y)
        w /= w.sum()
    return c, np.max(np.abs(v @ c - y))


small, e1 = fit(lambda t: math.erf(t) / t, 0, 1, 6, lambda x: x * x)
large, e2 = fit(math.erfc, 1, 3.875, 12, lambda x: (x - 2.4375) / 1.4375)
print("small (max error %.2g):" % e1, ", ".join("%.9ef" % c for c in small))
print("large (max error %.2g):" % e2, ", ".join("%.9ef" % c for c in large))
half = math.log(2) / 2
expc, e3 = fit(lambda t: math.expm1(t) / t, -half, half, 5, lambda x: x)
print("exp (max error %.2g):" % e3, ", ".join("%.9ef" % c for c in expc))
