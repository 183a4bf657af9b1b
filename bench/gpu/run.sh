#!/usr/bin/env bash
# distopt's training step on a GPU against PyTorch's on the same GPU.
#
#   bench/gpu/run.sh MODEL_DIR [BATCH] [STEPS]      (defaults 8 and 5)
#
# MODEL_DIR holds model.onnx with weights.bin (bench/gpu/weights.py), train.json,
# tokens.bin and shape.json, as scripts/gpu_bundle.sh prepares them: a
# GPT-2-small-shaped decoder (bench/train/gpt.py) at BATCH x seq tokens,
# cross-entropy over next tokens, AdamW. Both sides run in f32 (TF32 off):
# dist-train --device cuda, and torch eager on cuda (bench/train/torch_train.py).
# Each: 2 warm-up steps whose losses must agree (relative 1e-4) before any
# time counts, then the median of STEPS steps. Prints the ratio torch ms /
# distopt ms (above 1: distopt is faster), then distopt's profile from a
# separate run (time per op kind and where it ran, GEMM GFLOP/s; the
# profile waits for the device after every instruction, so its total
# exceeds the timed step).
#
# Environment: DISTOPT_BIN (default build/bin), PYTHON (default python3),
# PROFILE_TOP (how many slowest instructions the profile lists, default 30),
# TF32=1: both sides multiply f32 matrices on TF32 tensor cores
# (DISTRT_CUDA_TF32=1, torch's allow_tf32); the losses then agree within
# 2e-3 relative instead of 1e-4.
# BF16=1: mixed precision on both sides: dist-train with "precision": "bf16"
# added to train.json (bf16 compute, f32 masters and reductions, norms,
# softmax and the loss in f32), torch with forward and loss under
# torch.autocast(bfloat16); the two policies round differently, so the
# losses agree within 1e-2 relative.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${DISTOPT_BIN:-$root/build/bin}
py=${PYTHON:-python3}
dir=$1
batch=${2:-8}
steps=${3:-5}
warmup=2
seq=$("$py" -c "import json,sys; print(json.load(open(sys.argv[1]))['seq'])" "$dir/shape.json")

tf32=${TF32:-0}
tol=1e-4
torch_flags=()
if [ "$tf32" = 1 ]; then
  export DISTRT_CUDA_TF32=1
  tol=2e-3
  torch_flags=(--tf32)
fi
train=$dir/train.json
bf16=${BF16:-0}
if [ "$bf16" = 1 ]; then
  tol=1e-2
  torch_flags+=(--bf16)
  train=$(mktemp --suffix .json)
  trap 'rm -f "$train"' EXIT
  "$py" -c "import json,sys; c = json.load(open(sys.argv[1])); c['precision'] = 'bf16'; json.dump(c, open(sys.argv[2], 'w'))" "$dir/train.json" "$train"
fi
dt() { # dist-train on the GPU, then its flags
  "$bin/dist-train" "$dir/model.onnx" --train "$train" --tokens "$dir/tokens.bin" \
    --batch "$batch" --seq "$seq" --dim batch="$batch" --device cuda "$@" 2>&1
}
dout=$(dt --steps $warmup --bench "$steps") || { echo "$dout"; exit 1; }
# The profile waits for the device after every instruction: a run of its own.
pout=$(dt --steps 1 --bench 2 --profile --profile-top "${PROFILE_TOP:-30}") || { echo "$pout"; exit 1; }
tout=$("$py" "$root/bench/train/torch_train.py" "$dir" --device cuda --batch "$batch" \
  --warmup $warmup --bench "$steps" "${torch_flags[@]}" 2>&1) || { echo "$tout"; exit 1; }
loss_of() { sed -n "s/^step $2\/[0-9]*: loss \([^ ]*\).*/\1/p" <<<"$1"; } # STEP counts from 1
for ((k = 0; k < warmup; ++k)); do
  d=$(loss_of "$dout" $((k + 1)))
  t=$(loss_of "$tout" $((k + 1)))
  printf "step %d loss: distopt %s, torch %s\n" $k "$d" "$t"
  if [ -z "$d" ] || [ -z "$t" ] || ! awk -v a="$d" -v b="$t" -v tol="$tol" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= tol * (b < 0 ? -b : b)) }'; then
    echo "loss mismatch: distopt and torch do not compute the same step" >&2
    echo "$dout" >&2
    exit 1
  fi
done
d=$(sed -n 's/median_ms: //p' <<<"$dout")
t=$(sed -n 's/median_ms: //p' <<<"$tout")
sed -n 's/^\(torch.*\)/\1/p; s/^phases_ms: /torch phases (ms): /p' <<<"$tout"
echo "model: $dir ($batch x $seq tokens per step)"
kind=f32
if [ "$bf16" = 1 ]; then
  kind="bf16 mixed precision"
elif [ "$tf32" = 1 ]; then
  kind="f32, TF32 GEMMs"
fi
printf "%-34s %12s %12s %14s\n" "training step ($kind)" "distopt ms" "torch ms" "torch/distopt"
printf "%-34s %12s %12s %14s\n" "one GPU" "$d" "$t" "$(awk -v a="$t" -v b="$d" 'BEGIN { printf "%.2f", a / b }')"
echo
sed -n '/^profile of rank/,$p' <<<"$pout"
