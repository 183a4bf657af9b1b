#!/usr/bin/env bash
# distopt's training step against PyTorch's, in the same run.
#
#   bench/train/run.sh [STEPS] [ROUNDS]      (defaults 5 and 3)
#
# Rows (each: the median of STEPS timed steps after 2 warm-up steps, per run;
# ROUNDS runs of each side, alternating distopt and torch, the order swapped
# every round; the table shows the median over the rounds):
#
#  1. one device: `dist-train --bench` at 1 and 2 threads against torch eager
#     (the same model, weights, batches, loss and AdamW, torch.set_num_threads
#     and OpenBLAS at the same thread count) on a GPT-2-small-shaped decoder
#     (12 layers, d=768, 12 heads, vocabulary 50257, 1 x 128 tokens),
#     cross-entropy over next tokens, AdamW lr 1e-4, weight decay 0.01.
#     Then where the time goes at 1 thread: torch's phases timed inside its
#     step; distopt's from three runs (forward alone with dist-run, the step
#     with plain SGD, the step with AdamW).
#  2. data parallel over 2 processes, one thread each, global batch 2:
#     `mpirun -np 2 dist-train --mesh dp=2 --plan dp --backend mpi` against
#     torch DistributedDataParallel over gloo (2 processes, file://
#     rendezvous), the same model and batches.
#
# Before timing anything it checks that both sides compute the same losses
# (steps 0 and 1, relative 1e-4): a comparison of different work is void.
# Ratios are torch ms / distopt ms: above 1, distopt is faster.
#
# Environment: DISTOPT_BUILD_DIR (default build/); SHAPE and DP_SHAPE: the
# model of row 1 and of row 2 as layers,d,heads,vocab,pos,seq (default GPT-2
# small, 12,768,12,50257,1024,128; e.g. DP_SHAPE=6,512,8,50257,1024,128 for a
# shorter row 2, SHAPE=2,64,4,1000,128,32 to try the script); MODEL_DIR: row
# 1's model ready-made (model.onnx, train.json, tokens.bin, shape.json, as
# bench/gpu/weights.py writes them where torch cannot export), instead of
# SHAPE; PYTHON (default /usr/bin/python3); SKIP_PHASES=1,
# SKIP_DP=1; THREADS (row 1's thread counts, default "1 2"). BF16=1: row 1
# only, in bf16 on both sides: dist-train with `precision: bf16` (f32
# masters, bf16 compute) against torch.autocast(bfloat16) (f32 parameters,
# bf16 matmuls); the warm-up losses must then agree to 2e-3 relative.
#
# Needs a build with dist-train and dist-run (scripts/build.sh), Open MPI
# for row 2, and Debian's PyTorch and ONNX for /usr/bin/python3
# (apt-get install -y python3-torch python3-onnx libopenblas0-pthread).
# The model (about 500 MB) is written to bench/.cache on first use.
# See docs/benchmarks.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${DISTOPT_BUILD_DIR:-$root/build}/bin
cache=$root/bench/.cache
steps=${1:-5}
rounds=${2:-3}
warmup=2
py=${PYTHON:-/usr/bin/python3}
here=$root/bench/train

model_dir() { # SHAPE -> directory holding model.onnx, train.json, tokens.bin
  local shape=$1 dir
  if [ -z "$shape" ]; then dir=$cache/train-gpt2-small; else dir=$cache/train-${shape//,/_}; fi
  if [ ! -f "$dir/model.onnx" ]; then
    echo "exporting the model into $dir ..." >&2
    "$py" "$here/make_model.py" "$dir" ${shape:+--shape "$shape"} >/dev/null 2>&1
  fi
  echo "$dir"
}
shape_of() { "$py" -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$1/shape.json" "$2"; }
median_of() { sed -n 's/median_ms: //p'; }
loss_of() { sed -n "s/^step $2\/[0-9]*: loss \([^ ]*\).*/\1/p" <<<"$1"; } # STEP counts from 1
mid() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
load() { cut -d' ' -f1-3 /proc/loadavg; }

# The loss of every warm-up step must agree (relative 1e-4), else stop.
check_losses() { # LABEL DISTOPT_OUTPUT TORCH_OUTPUT
  local k d t
  for ((k = 0; k < warmup; ++k)); do
    d=$(loss_of "$2" $((k + 1)))
    t=$(loss_of "$3" $((k + 1)))
    printf "  %-28s step %d loss: distopt %s, torch %s\n" "$1" $k "$d" "$t"
    if [ -z "$d" ] || [ -z "$t" ] || ! awk -v a="$d" -v b="$t" -v tol="$loss_rtol" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= tol * (b < 0 ? -b : b)) }'; then
      echo "loss mismatch: distopt and torch do not compute the same step" >&2
      exit 1
    fi
  done
}

dir=${MODEL_DIR:-$(model_dir "${SHAPE:-}")}
seq=$(shape_of "$dir" seq)
config=$dir/train.json
torch_flags=()
loss_rtol=1e-4
if [ "${BF16:-0}" = 1 ]; then
  # Both sides round differently (distopt computes every op but the norms,
  # softmax and loss in bf16; autocast only the matmul-like ones).
  config=$dir/train_bf16.json
  "$py" -c 'import json, sys; c = json.load(open(sys.argv[1])); c["precision"] = "bf16"; json.dump(c, open(sys.argv[2], "w"))' \
    "$dir/train.json" "$config"
  torch_flags=(--bf16)
  loss_rtol=2e-3
  SKIP_PHASES=1 SKIP_DP=1
fi
dt() { # THREADS [extra dist-train flags]: one single-device run
  local threads=$1
  shift
  "$bin/dist-train" "$dir/model.onnx" --train "$config" --tokens "$dir/tokens.bin" \
    --batch 1 --seq "$seq" --dim batch=1 --threads "$threads" --steps $warmup --bench "$steps" "$@" 2>&1
}
pt() { # THREADS
  "$py" "$here/torch_train.py" "$dir" --batch 1 --threads "$1" --warmup $warmup --bench "$steps" \
    "${torch_flags[@]}" 2>&1
}

echo "CPU: $(lscpu | sed -n 's/^Model name: *//p') (family $(lscpu | sed -n 's/^CPU family: *//p'), model $(lscpu | sed -n 's/^Model: *//p')$(grep -q avx512f /proc/cpuinfo && echo ', AVX-512')), $(nproc) cores; load average at start: $(load)"
echo "OPENBLAS_CORETYPE in the environment: ${OPENBLAS_CORETYPE:-(unset)}"
echo "distrt GEMM: $("$bin/dist-run" "$root/test/data/models/gpt_op17/model.onnx" --bench 1 2>/dev/null |
  sed -n 's/.*GEMM \([^;]*\);.*/\1/p'), one thread per GEMM call (distrt splits the work itself)"
"$py" -c 'import torch; print("torch: %s (%s)" % (torch.__version__, torch.__file__))'
echo "model: $dir/model.onnx ($(shape_of "$dir" layers) layers, d=$(shape_of "$dir" d), vocabulary $(shape_of "$dir" vocab), 1 x $seq tokens); AdamW lr 1e-4, weight decay 0.01"
[ "${BF16:-0}" = 1 ] && echo "bf16: distopt precision: bf16 (f32 masters) against torch.autocast(bfloat16); $(grep -q -e avx512_bf16 -e amx_bf16 /proc/cpuinfo && echo 'the CPU has bf16 instructions' || echo 'the CPU has no bf16 instructions')"
echo "each run: $warmup warm-up steps, then the median of $steps steps; $rounds runs of each side"
echo "(the losses of the warm-up steps are checked to agree before the times count)"
echo

declare -A d_ms t_ms t_phases
for threads in ${THREADS:-1 2}; do
  d_ms[$threads]=""
  t_ms[$threads]=""
  for ((r = 1; r <= rounds; ++r)); do
    if ((r % 2)); then
      dout=$(dt "$threads")
      out=$(pt "$threads")
    else
      out=$(pt "$threads")
      dout=$(dt "$threads")
    fi
    if ((r == 1)); then
      sed -n 's/^\(torch.*\)/  \1/p' <<<"$out"
      check_losses "one device, $threads thread(s)" "$dout" "$out"
    fi
    d=$(median_of <<<"$dout")
    t=$(median_of <<<"$out")
    [ "$threads" = 1 ] && t_phases[$r]=$(sed -n 's/^phases_ms: //p' <<<"$out")
    printf "  round %d, %d thread(s): distopt %s ms, torch %s ms (load %s)\n" "$r" "$threads" "$d" "$t" "$(load)"
    d_ms[$threads]+=" $d"
    t_ms[$threads]+=" $t"
  done
done
echo
printf "%-40s %12s %12s %14s\n" "training step, one device$([ "${BF16:-0}" = 1 ] && echo " (bf16)")" "distopt ms" "torch ms" "torch/distopt"
for threads in ${THREADS:-1 2}; do
  d=$(mid <<<"${d_ms[$threads]}")
  t=$(mid <<<"${t_ms[$threads]}")
  printf "%-40s %12.1f %12.1f %14s\n" "$(basename "$dir"), $threads thread(s)" "$d" "$t" "$(ratio "$t" "$d")"
done

if [ "${SKIP_PHASES:-0}" != 1 ]; then
  # distopt has no per-phase timer: time the forward alone (dist-run on the
  # same model) and the step with plain SGD (p -= lr * g, one pass over the
  # parameters), next to the AdamW step above.
  sgd=$dir/train_sgd.json
  cat >"$sgd" <<'JSON'
{"output": "logits", "loss": {"kind": "cross_entropy", "ignore_index": -100},
 "optimizer": {"kind": "sgd", "lr": 0.0001, "momentum": 0.0, "weight_decay": 0.0}, "steps": 1}
JSON
  fwd=$("$bin/dist-run" "$dir/model.onnx" --dim batch=1 --threads 1 --bench "$steps" 2>/dev/null | median_of)
  sgdms=$("$bin/dist-train" "$dir/model.onnx" --train "$sgd" --tokens "$dir/tokens.bin" --batch 1 \
            --seq "$seq" --dim batch=1 --threads 1 --steps $warmup --bench "$steps" 2>/dev/null | median_of)
  adamw=$(mid <<<"${d_ms[1]}")
  echo
  echo "where the time goes, 1 thread (ms):"
  printf "  torch (timed inside its step, median over rounds): "
  for k in 2 4 6; do # forward+loss, backward, optimizer
    printf "%s " "$(for r in "${!t_phases[@]}"; do cut -d' ' -f$k <<<"${t_phases[$r]}"; done | mid)"
  done | awk '{ printf "forward+loss %s, backward %s, optimizer (zero_grad + AdamW) %s\n", $1, $2, $3 }'
  printf "  distopt: forward alone (dist-run) %s, step with SGD %s, step with AdamW %s\n" "$fwd" "$sgdms" "$adamw"
  awk -v f="$fwd" -v s="$sgdms" -v a="$adamw" 'BEGIN {
    printf "  distopt, derived: backward + loss + SGD update ~ %.1f, AdamW beyond SGD ~ %.1f\n", s - f, a - s }'
fi

if [ "${SKIP_DP:-0}" != 1 ] && command -v mpirun >/dev/null; then
  dpdir=$(model_dir "${DP_SHAPE:-}")
  dpseq=$(shape_of "$dpdir" seq)
  mpi() {
    mpirun --allow-run-as-root --oversubscribe --bind-to none --mca mpi_yield_when_idle 1 -np 2 \
      "$bin/dist-train" "$dpdir/model.onnx" --train "$dpdir/train.json" --tokens "$dpdir/tokens.bin" \
      --batch 2 --seq "$dpseq" --dim batch=2 --mesh dp=2 --plan dp --backend mpi --threads 1 \
      --steps $warmup --bench "$steps" 2>&1
  }
  ddp() {
    local init pids=() rank status=0
    init=$(mktemp -u "${TMPDIR:-/tmp}/ddp-init.XXXXXX")
    for rank in 0 1; do
      RANK=$rank WORLD_SIZE=2 INIT_FILE=$init "$py" "$here/torch_train.py" "$dpdir" --ddp --batch 2 \
        --threads 1 --warmup $warmup --bench "$steps" >"$init.$rank" 2>&1 &
      pids+=($!)
    done
    for rank in 0 1; do wait "${pids[$rank]}" || status=1; done
    cat "$init.0"
    [ $status = 0 ] || cat "$init.1" >&2
    rm -f "$init" "$init.0" "$init.1"
    return $status
  }
  echo
  echo "data parallel: $dpdir/model.onnx ($(shape_of "$dpdir" layers) layers, d=$(shape_of "$dpdir" d), vocabulary $(shape_of "$dpdir" vocab)), global batch 2 x $dpseq, 2 processes, 1 thread each"
  dm="" tm=""
  for ((r = 1; r <= rounds; ++r)); do
    if ((r % 2)); then
      dout=$(mpi)
      tout=$(ddp)
    else
      tout=$(ddp)
      dout=$(mpi)
    fi
    if ((r == 1)); then
      sed -n 's/^\(torch.*\)/  \1/p' <<<"$tout"
      check_losses "dp=2" "$dout" "$tout"
    fi
    d=$(median_of <<<"$dout")
    t=$(median_of <<<"$tout")
    printf "  round %d: distopt %s ms, torch DDP %s ms (load %s)\n" "$r" "$d" "$t" "$(load)"
    dm+=" $d"
    tm+=" $t"
  done
  d=$(mid <<<"$dm")
  t=$(mid <<<"$tm")
  echo
  printf "%-40s %12s %12s %14s\n" "training step, dp=2 (2 processes)" "distopt ms" "torch ms" "torch/distopt"
  printf "%-40s %12.1f %12.1f %14s\n" "mpi vs DDP gloo, 1 thread each" "$d" "$t" "$(ratio "$t" "$d")"
fi
echo
echo "load average at the end: $(load)"
