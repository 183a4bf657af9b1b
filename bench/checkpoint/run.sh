#!/usr/bin/env bash
# Checkpoint save and load: time and bytes per rank.
#
#   bench/checkpoint/run.sh
#
# On the GPT-2-small-shaped decoder of bench/train/run.sh (12 layers, d=768,
# vocabulary 50257; AdamW, so the state is parameters + 2 moments, about
# 1.5 GB), batch 4 x 128 tokens from its token file, one step, then
#
#   dist-train ... --steps 1 --save-checkpoint DIR         (save)
#   dist-train ... --resume DIR --steps 1                  (load; no step runs)
#
# for the checkpoint saved and loaded on one device and at dp=4 fsdp (4
# ranks as threads of one process, so the 4 ranks write and read one after
# another), and the two crossings (saved at dp=4, loaded on one device; saved
# on one device, loaded at dp=4: the one process reads the rows its 4 ranks
# need, here everything once), and the last crossing under mpirun, one
# process per rank (each reads the 64 KiB checksum blocks holding its rows,
# about a quarter). It prints the bytes each rank wrote
# or read (dist-train's own count, safetensors headers included, index.json
# apart) and the seconds of the save (fsync included) or load (checksums
# included), as dist-train measures them around saveCheckpoint and
# loadCheckpoint. Loads read files the save just wrote: from the page
# cache, not the disk.
#
# Environment: DISTOPT_BUILD_DIR (default build/); MODEL_DIR (default
# bench/.cache/train-gpt2-small, written by bench/train/make_model.py on
# first use, about 500 MB); CKPT_TMP (where checkpoints go, default a
# directory under $TMPDIR; needs about 3 GB). See docs/benchmarks.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${DISTOPT_BUILD_DIR:-$root/build}/bin
py=/usr/bin/python3
dir=${MODEL_DIR:-$root/bench/.cache/train-gpt2-small}
if [ ! -f "$dir/model.onnx" ]; then
  echo "exporting the model into $dir ..." >&2
  "$py" "$root/bench/train/make_model.py" "$dir" >/dev/null 2>&1
fi
seq=$("$py" -c "import json,sys; print(json.load(open(sys.argv[1]))['seq'])" "$dir/shape.json")
tmp=${CKPT_TMP:-$(mktemp -d)}
mkdir -p "$tmp"
trap 'rm -rf "$tmp"/ck-*' EXIT

echo "CPU: $(lscpu | sed -n 's/^Model name: *//p') (family $(lscpu | sed -n 's/^CPU family: *//p'), model $(lscpu | sed -n 's/^Model: *//p')), $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "disk of the checkpoints: $(df -h "$tmp" | awk 'NR == 2 { print $1 ", " $4 " free" }')"
echo "model: $dir/model.onnx, batch 4 x $seq tokens, 1 thread per rank"
echo

train() { # MESH_FLAGS... -- EXTRA_FLAGS...
  "$bin/dist-train" "$dir/model.onnx" --train "$dir/train.json" --tokens "$dir/tokens.bin" \
    --batch 4 --seq "$seq" --dim batch=4 "$@" 2>&1
}
report() { # LABEL OUTPUT VERB
  local bytes seconds
  bytes=$(sed -n "s/^dist-train: checkpoint: rank \([0-9]*\) $3 \([0-9]*\) bytes/rank \1: \2/p" <<<"$2" | tr '\n' ';')
  seconds=$(sed -n 's/^dist-train: checkpoint: .* \([0-9.]*\) s$/\1/p' <<<"$2")
  total=$(sed -n "s/^dist-train: checkpoint: rank [0-9]* $3 \([0-9]*\) bytes/\1/p" <<<"$2" | awk '{ s += $1 } END { print s }')
  printf "%-44s %8s s  %6.0f MB in all  (%s)\n" "$1" "$seconds" "$(awk -v b="$total" 'BEGIN { print b / 1e6 }')" "$bytes"
}

one=()
dp4=(--mesh dp=4 --plan fsdp)
out=$(train "${one[@]}" --steps 1 --save-checkpoint "$tmp/ck-one")
report "save, one device" "$out" wrote
out=$(train "${dp4[@]}" --steps 1 --save-checkpoint "$tmp/ck-dp4")
report "save, dp=4 fsdp" "$out" wrote
out=$(train "${one[@]}" --steps 1 --resume "$tmp/ck-one")
report "load, one device (saved on one device)" "$out" read
out=$(train "${dp4[@]}" --steps 1 --resume "$tmp/ck-dp4")
report "load, dp=4 fsdp (saved at dp=4 fsdp)" "$out" read
out=$(train "${one[@]}" --steps 1 --resume "$tmp/ck-dp4")
report "load, one device (saved at dp=4 fsdp)" "$out" read
out=$(train "${dp4[@]}" --steps 1 --resume "$tmp/ck-one")
report "load, dp=4 fsdp (saved on one device)" "$out" read
if command -v mpirun >/dev/null; then
  out=$(mpirun --allow-run-as-root --oversubscribe --bind-to none --mca mpi_yield_when_idle 1 -np 4 \
    "$bin/dist-train" "$dir/model.onnx" --train "$dir/train.json" --tokens "$dir/tokens.bin" \
    --batch 4 --seq "$seq" --dim batch=4 "${dp4[@]}" --backend mpi --steps 1 --resume "$tmp/ck-one" 2>&1)
  report "load, mpirun dp=4 fsdp (saved on one device)" "$out" read
fi
