#!/usr/bin/env python3
"""Runs the ONNX backend node tests through `dist-run --onnx-test`.

Every case directory under the data directory (default: the one Debian's
libonnx-testdata package installs) runs as its own `dist-run` process, in
parallel, with ONNX's backend-test tolerances and a per-case timeout. The
result is compared with a reviewed expected-failure list: the run fails on a
failure that is not listed AND on a listed case that passes (so the list
stays honest), and on list entries that name no case.

    python3 scripts/onnx_conformance.py --dist-run build/bin/dist-run

See docs/conformance.md.
"""

import argparse
import collections
import concurrent.futures
import os
import re
import subprocess
import sys
import time

DEFAULT_DATA = "/usr/share/libonnx-testdata/data/node"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_XFAIL = os.path.join(ROOT, "test", "conformance", "onnx-node-xfail.txt")


# ---- the op types of a model, without the onnx package ---------------------
# ModelProto.graph is field 7, GraphProto.node field 1, NodeProto.op_type
# field 4 and NodeProto.domain field 7: a few lines of protobuf wire format.

def _varint(buf, pos):
    shift = result = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def _fields(buf):
    """Yields (field number, wire type, value) of one message."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        num, wire = key >> 3, key & 7
        if wire == 0:
            val, pos = _varint(buf, pos)
        elif wire == 1:
            val, pos = buf[pos:pos + 8], pos + 8
        elif wire == 2:
            n, pos = _varint(buf, pos)
            val, pos = buf[pos:pos + n], pos + n
        elif wire == 5:
            val, pos = buf[pos:pos + 4], pos + 4
        else:
            raise ValueError("unsupported wire type %d" % wire)
        yield num, wire, val


def model_op_types(path):
    """The op types of the model's main graph, in node order."""
    with open(path, "rb") as f:
        data = f.read()
    ops = []
    for num, wire, graph in _fields(data):
        if num != 7 or wire != 2:
            continue
        for gnum, gwire, node in _fields(graph):
            if gnum != 1 or gwire != 2:
                continue
            op, domain = "", ""
            for nnum, nwire, val in _fields(node):
                if nnum == 4 and nwire == 2:
                    op = val.decode()
                elif nnum == 7 and nwire == 2:
                    domain = val.decode()
            ops.append(op if domain in ("", "ai.onnx") else domain + "." + op)
    return ops


# ---- the expected-failure list ---------------------------------------------

def read_xfail(path):
    """Returns {case: reason}; errors on entries without a reason or twice."""
    entries, errors = {}, []
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            name, sep, reason = text.partition("#")
            name, reason = name.strip(), reason.strip()
            if not sep or not reason:
                errors.append("%s:%d: '%s' has no reason after '#'" % (path, lineno, name))
            elif name in entries:
                errors.append("%s:%d: '%s' is listed twice" % (path, lineno, name))
            else:
                entries[name] = reason
    return entries, errors


# ---- running the cases -----------------------------------------------------

def first_error_line(out, err):
    for text in (out, err):
        for line in text.splitlines():
            if line.startswith("FAIL "):
                # "FAIL <case dir>: output 0 ...": the case is named already.
                return line.split(": ", 1)[-1].strip()
            if "error:" in line:
                # Diagnostics start with the model's path and location.
                return re.sub(r"^\S*model\.onnx:\d+:\d+: ", "", line.strip())
    for text in (err, out):
        for line in text.splitlines():
            if line.strip():
                return line.strip()
    return "no output"


def run_case(dist_run, case_dir, rtol, atol, timeout):
    """(passed, first error line, seconds)."""
    cmd = [dist_run, "--onnx-test", case_dir, "--rtol", repr(rtol), "--atol", repr(atol)]
    started = time.monotonic()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout, errors="replace")
    except subprocess.TimeoutExpired:
        return False, "timeout after %gs" % timeout, time.monotonic() - started
    elapsed = time.monotonic() - started
    if p.returncode == 0 and p.stdout.startswith("PASS"):
        return True, "", elapsed
    if p.returncode < 0:
        return False, "killed by signal %d: %s" % (-p.returncode,
                                                   first_error_line(p.stdout, p.stderr)), elapsed
    return False, first_error_line(p.stdout, p.stderr), elapsed


def tested_op(case, ops, single_op_of):
    """The op a case is about: its only node's op, or for a function's
    expanded form (`*_expanded`) the op of the unexpanded sibling case."""
    if len(set(ops)) == 1:
        return ops[0]
    base = re.sub(r"_expanded(_ver\d+)?$", "", case)
    if base in single_op_of:
        return single_op_of[base]
    # Multi-node cases without a sibling: the last node usually is the op.
    return ops[-1] if ops else "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dist-run", default="dist-run", help="the dist-run binary")
    ap.add_argument("--data-dir", default=DEFAULT_DATA,
                    help="directory of ONNX node test cases (default: %(default)s)")
    ap.add_argument("--xfail", default=DEFAULT_XFAIL, help="expected-failure list")
    ap.add_argument("--jobs", "-j", type=int, default=2, help="parallel cases")
    ap.add_argument("--timeout", type=float, default=60, help="seconds per case")
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--atol", type=float, default=1e-7)
    ap.add_argument("--filter", default="", help="only cases whose name matches this regex")
    ap.add_argument("--list-failures", action="store_true",
                    help="print every failing case in the xfail file's format "
                         "(a starting point for review, not a list to paste blindly)")
    ap.add_argument("--verbose", "-v", action="store_true", help="print every case")
    args = ap.parse_args()

    if not os.path.isdir(args.data_dir):
        print("onnx_conformance: error: ONNX test data not found at %s; install "
              "it with scripts/setup.sh (Debian package libonnx-testdata)" % args.data_dir)
        return 2
    if os.sep not in args.dist_run and not any(
            os.access(os.path.join(d, args.dist_run), os.X_OK)
            for d in os.environ.get("PATH", "").split(os.pathsep)):
        print("onnx_conformance: error: '%s' not found; pass --dist-run" % args.dist_run)
        return 2
    if os.sep in args.dist_run and not os.access(args.dist_run, os.X_OK):
        print("onnx_conformance: error: %s is not an executable" % args.dist_run)
        return 2

    xfail, errors = read_xfail(args.xfail) if args.xfail else ({}, [])
    cases = sorted(d for d in os.listdir(args.data_dir)
                   if os.path.isfile(os.path.join(args.data_dir, d, "model.onnx")))
    pattern = re.compile(args.filter) if args.filter else None
    if pattern:
        cases = [c for c in cases if pattern.search(c)]
    if not cases:
        print("onnx_conformance: error: no test cases in %s" % args.data_dir)
        return 2
    all_cases = set(os.listdir(args.data_dir))
    for name in sorted(xfail):
        if name not in all_cases:
            errors.append("%s: '%s' names no test case in %s" % (args.xfail, name, args.data_dir))

    ops_of = {}
    for c in cases:
        try:
            ops_of[c] = model_op_types(os.path.join(args.data_dir, c, "model.onnx"))
        except (OSError, ValueError, IndexError) as e:
            ops_of[c] = []
            print("onnx_conformance: warning: cannot read the ops of %s: %s" % (c, e))
    single = {c: ops[0] for c, ops in ops_of.items() if len(set(ops)) == 1}
    op_of = {c: tested_op(c, ops_of[c], single) for c in cases}

    results = {}
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {pool.submit(run_case, args.dist_run, os.path.join(args.data_dir, c),
                               args.rtol, args.atol, args.timeout): c for c in cases}
        for f in concurrent.futures.as_completed(futures):
            c = futures[f]
            results[c] = f.result()
            if args.verbose:
                ok, msg, secs = results[c]
                print("%s %s (%.2fs)%s" % ("PASS" if ok else "FAIL", c, secs,
                                           "" if ok else ": " + msg), flush=True)
    wall = time.monotonic() - started

    passed = [c for c in cases if results[c][0]]
    failed = [c for c in cases if not results[c][0]]
    expected = [c for c in failed if c in xfail]
    unexpected_fail = [c for c in failed if c not in xfail]
    unexpected_pass = [c for c in passed if c in xfail]

    by_op = collections.defaultdict(lambda: [0, 0])
    for c in cases:
        by_op[op_of[c]][0 if results[c][0] else 1] += 1
    covered = sorted(op for op, (p, f) in by_op.items() if f == 0)
    partial = sorted(op for op, (p, f) in by_op.items() if p and f)
    none = sorted(op for op, (p, f) in by_op.items() if not p)

    if args.list_failures:
        print("# failing cases (xfail format):")
        for c in failed:
            print("%s  # %s" % (c, results[c][1]))
        print()

    if expected:
        reasons = collections.Counter(xfail[c] for c in expected)
        print("expected failures by reason:")
        for reason, n in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])):
            print("  %4d  %s" % (n, reason))
    if unexpected_fail:
        print("UNEXPECTED FAILURES (not in %s):" % os.path.basename(args.xfail))
        for c in unexpected_fail:
            print("  %s: %s" % (c, results[c][1]))
    if unexpected_pass:
        print("UNEXPECTED PASSES (listed in %s; remove them):" % os.path.basename(args.xfail))
        for c in unexpected_pass:
            print("  %s  # was: %s" % (c, xfail[c]))
    for e in errors:
        print("XFAIL LIST ERROR: " + e)

    print("op types covered (all cases pass): %d" % len(covered))
    print("  " + " ".join(covered))
    print("op types partially covered: %d" % len(partial))
    print("  " + " ".join("%s(%d/%d)" % (op, by_op[op][0], sum(by_op[op])) for op in partial))
    print("op types not covered: %d" % len(none))
    print("  " + " ".join(none))
    slowest = sorted(cases, key=lambda c: -results[c][2])[:3]
    print("wall time %.1fs with %d job(s); slowest: %s" % (
        wall, args.jobs, ", ".join("%s %.1fs" % (c, results[c][2]) for c in slowest)))
    print("%d passed, %d failed (%d expected)" % (len(passed), len(failed), len(expected)))
    return 1 if unexpected_fail or unexpected_pass or errors else 0


if __name__ == "__main__":
    sys.exit(main())
