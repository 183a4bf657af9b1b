#!/usr/bin/env bash
# A mixture-of-experts layer's training step: distopt on one device and on
# ep=2 against PyTorch's step of the same layer on one device, and the
# bytes the ep=2 step's all-to-alls send against the formula.
#
#   bench/moe/run.sh
#
# Exports the GShard top-2 layer of bench/moe/moe_layer.py (shapes from its
# environment variables: BATCH, TOKENS, D, EXPERTS, HIDDEN, CAPACITY) into
# bench/.cache/moe-layer-..., then runs
#
#   moe_layer.py torch THREADS STEPS                  # torch's median step
#   dist-train MODEL --train CONFIG [--mesh ep=2 --plan ep] --steps 1 --bench STEPS --threads T
#   dist-opt MODEL --train CONFIG --mesh ep=2 --plan ep --report=json   # all-to-all bytes
#
# (the ep=2 run with --profile: rank 0's all-to-all calls and time per step)
#
# The formula: per MoE layer and direction (forward, backward), the dispatch
# and the combine all-to-alls each send (ep-1)/ep of the rank's dispatched
# tensor, BATCH/ep x EXPERTS x CAPACITY x D floats. Environment:
# DISTOPT_BUILD_DIR (default build/), STEPS (default 5).
# See docs/benchmarks.md ("Mixture of experts").
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${DISTOPT_BUILD_DIR:-$root/build}/bin
py=/usr/bin/python3
steps=${STEPS:-5}
export BATCH=${BATCH:-8} TOKENS=${TOKENS:-64} D=${D:-128} EXPERTS=${EXPERTS:-8} \
  HIDDEN=${HIDDEN:-256} CAPACITY=${CAPACITY:-20}
dir=$root/bench/.cache/moe-layer-g$BATCH-s$TOKENS-d$D-e$EXPERTS-f$HIDDEN-c$CAPACITY
[ -f "$dir/model.onnx" ] || "$py" "$root/bench/moe/moe_layer.py" export "$dir" >/dev/null 2>&1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cpu=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)
echo "CPU: $cpu, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "layer: $BATCH groups x $TOKENS tokens, d $D, $EXPERTS experts of hidden $HIDDEN, capacity $CAPACITY, top-2, SGD"
echo
echo "| run | ranks x threads | step ms (median of $steps) |"
echo "| --- | --- | ---: |"
dist() { # label, threads, extra args...
  local label=$1 threads=$2; shift 2
  "$bin/dist-train" "$dir/model.onnx" --train "$dir/train.json" "$@" \
    --steps 1 --bench "$steps" --threads "$threads" >"$tmp/run.txt" 2>&1
  echo "| $label | $(awk '/^bench:/ {print $5 " x " $7}' "$tmp/run.txt") | $(awk '/^median_ms:/ {print $2}' "$tmp/run.txt") |"
}
for threads in 1 2; do
  echo "| torch, one process | 1 x $threads | $("$py" "$root/bench/moe/moe_layer.py" torch "$threads" "$steps") |"
  dist "distopt, one device" "$threads"
done
dist "distopt, ep=2" 1 --mesh ep=2 --plan ep --profile
# rank 0's profile of the timed steps: all-to-all calls and time per step
a2a=$(awk '/^profile of rank 0/ {p = 1} p && $1 == "all_to_all" {print $2 " call(s), " $3 " ms"; exit}' "$tmp/run.txt")

"$bin/dist-opt" "$dir/model.onnx" --train "$dir/train.json" --mesh ep=2 --plan ep \
  --report=json -o /dev/null >"$tmp/report.json" 2>/dev/null
"$py" - "$tmp/report.json" "$a2a" <<'PY'
import json, os, sys
r = json.load(open(sys.argv[1]))
print()
print("ep=2, rank 0, measured (--profile): all_to_all %s per step" % sys.argv[2])
a2a = [c for c in r["collectives"] if c["kind"] == "all_to_all"]
sent = sum(c["bytes"] * c["count"] for c in a2a)
ep = 2
g, e, c, d = (int(os.environ[k]) for k in ("BATCH", "EXPERTS", "CAPACITY", "D"))
layers = len(r.get("experts", {}).get("layers", [])) or 1
formula = layers * 4 * (ep - 1) / ep * (g // ep) * e * c * d * 4
print("ep=2, rank 0, report: %d all-to-all(s), %d bytes sent per step; formula "
      "%d MoE layer(s) x 4 x (ep-1)/ep x %d x %d x %d x %d x 4 bytes = %d"
      % (sum(x["count"] for x in a2a), sent, layers, g // ep, e, c, d, formula))
others = [c for c in r["collectives"] if c["kind"] != "all_to_all"]
print("other collectives: " + ", ".join(
    "%s x%d (%d bytes each)" % (x["kind"], x["count"], x["bytes"]) for x in others))
PY
