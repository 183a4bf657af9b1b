#!/usr/bin/env bash
# The GPU check: on a machine with a GPU, from the repository root, with
# .gpucarry/ made by scripts/gpu_bundle.sh (on a machine with the build
# dependencies). In about 5 minutes (16 host cores) it runs:
#   1. every CUDA test (distrt_cuda_tests);
#   2. every training case of test/data/train on one GPU, against PyTorch's
#      losses and trained outputs as on the CPU, and multi-rank plans with
#      all ranks on the one GPU (host-staged collectives);
#   3. the GPT-2-small training step on the GPU against torch on the same
#      GPU (bench/gpu/run.sh), with distopt's profile: in f32, with TF32
#      GEMMs, and in bf16 mixed precision (against torch.autocast);
#   4. distrt's matmul rate per dtype (distrt-gemm-rate);
#   5. the host CPU's bf16 GEMMs: which bf16 instructions it has (AMX,
#      AVX512-BF16), the bf16-through-oneDNN test against an f64 reference
#      (skipped, and said so, on a CPU without them), and the matmul rate per
#      dtype on one CPU thread at 1024 tokens;
#   6. the GPT-2-small training step on the host CPU (bench/train/run.sh's
#      row 1, 1 x 128 tokens, at CPU_THREADS, default "1 4"), in f32 and
#      with precision: bf16 (where the CPU has bf16 instructions), each
#      against torch on the same threads.
# Writes everything to $OUT/gpu_check.log (OUT default /tmp/gpu-check) and
# prints a summary; exits non-zero if a test or case failed. Each part has a
# time limit, so that a hang costs minutes, not the machine. PARTS (default
# "1 2 3 4 5 6") picks parts, e.g. PARTS=3 to rerun the benchmark alone.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-/tmp/gpu-check}
mkdir -p "$out"
log=$out/gpu_check.log
: >"$log"
carry=$root/.gpucarry
pack=$(mktemp -d)
tar -C "$pack" -xJf "$carry/bundle.tar.xz" || { echo "gpu_check: no $carry/bundle.tar.xz"; exit 1; }
bin=$pack/bin
nccl=$(dirname "$(ldconfig -p | awk '/libnccl.so.2 / { print $NF; exit }')" 2>/dev/null)
export LD_LIBRARY_PATH=$pack/lib:/usr/local/cuda/lib64${nccl:+:$nccl}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
failures=0
summary=()
note() { echo "$*" | tee -a "$log"; }
section() { note; note "== $*"; }
record() { # NAME STATUS (ok, skipped..., or a failure)
  summary+=("$(printf '%-58s %s' "$1" "$2")")
  [ "$2" = ok ] || [[ $2 == skipped* ]] || failures=$((failures + 1))
}

parts=" ${PARTS:-1 2 3 4 5 6} "
wanted() { [[ $parts == *" $1 "* ]]; }

section "machine"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv 2>&1 | tee -a "$log"
note "host: $(nproc) cores; $(python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1)"

if wanted 1; then
section "1. CUDA tests"
# One process per test suite: a kernel that faults poisons its CUDA context,
# and would end every later test of the same process.
start=$SECONDS
status=0
for suite in $("$bin/distrt_cuda_tests" --gtest_list_tests | sed -n 's/^\([A-Za-z0-9_/]*\)\.$/\1/p'); do
  timeout 120 "$bin/distrt_cuda_tests" --gtest_filter="$suite.*" >"$out/suite.log" 2>&1
  rc=$?
  cat "$out/suite.log" >>"$log"
  passed=$(grep -c '^\[       OK \]' "$out/suite.log")
  failed=$(grep -c '^\[  FAILED  \] .*(' "$out/suite.log")
  skipped=$(grep -c '^\[  SKIPPED \] .*(' "$out/suite.log")
  note "$(printf '%-40s passed %3d  failed %3d  skipped %3d  exit %d' "$suite" "$passed" "$failed" "$skipped" $rc)"
  [ $rc = 0 ] || status=1
done
rm -f "$out/suite.log"
record "CUDA tests ($((SECONDS - start)) s)" "$([ $status = 0 ] && echo ok || echo FAILED)"

fi

if wanted 2; then
section "2. training cases on the GPU vs PyTorch"
train_case() { # NAME ARGS...
  local name=$1 start=$SECONDS
  shift
  local text
  text=$(timeout 150 "$bin/dist-train" "$@" --device cuda 2>&1)
  local status=$?
  note "-- $name: dist-train $* --device cuda"
  note "$text"
  local where
  where=$(sed -n 's/^device: //p' <<<"$text" | head -1)
  if [ $status = 0 ] && grep -q '^PASS' <<<"$text"; then
    record "$name ($((SECONDS - start)) s; $where)" ok
  else
    record "$name" FAILED
  fi
}
# Cases whose torch reference sums the 16-bit gradients of 2 data-parallel
# ranks (make_training_cases.py's reduce_ranks) run on dp=2 below, not here.
dp2_cases=" gpt_f16_dp2 gpt_f16_reduce "
for c in "$root"/test/data/train/*/; do
  c=${c%/}
  [[ $dp2_cases == *" $(basename "$c") "* ]] && continue
  train_case "$(basename "$c"), 1 rank" --train-test "$c"
done
t=$root/test/data/train
train_case "gpt_adamw, dp=2 zero2 (2 ranks, 1 GPU)" --train-test "$t/gpt_adamw" --mesh dp=2 --plan zero2
train_case "gpt_adamw, tp=2 (2 ranks, 1 GPU)" --train-test "$t/gpt_adamw" --mesh tp=2 --plan tp,sp
train_case "gpt_adamw, dp=2,tp=2 fsdp,tp (4 ranks, 1 GPU)" --train-test "$t/gpt_adamw" --mesh dp=2,tp=2 --plan fsdp,tp
train_case "gpt_accumulate, dp=2 (2 ranks, 1 GPU)" --train-test "$t/gpt_accumulate" --mesh dp=2 --plan dp
train_case "moe_gpt, ep=2 (2 ranks, 1 GPU)" --train-test "$t/moe_gpt" --mesh ep=2 --plan ep
train_case "llama_long_context, cp=2 (2 ranks, 1 GPU)" --train-test "$t/llama_long_context" --mesh cp=2 --plan cp
train_case "gpt_f16_dp2, dp=2 zero2 (2 ranks, 1 GPU)" --train-test "$t/gpt_f16_dp2" --mesh dp=2 --plan zero2
train_case "gpt_f16_reduce, dp=2 zero2 (2 ranks, 1 GPU)" --train-test "$t/gpt_f16_reduce" --mesh dp=2 --plan zero2
train_case "llama_long_context, cp=2 ring (2 ranks, 1 GPU)" --train-test "$t/llama_long_context" --mesh cp=2 \
  --plan "$root/test/lit/train/Inputs/cp-ring.yaml"
train_case "llama_long_context, cp=2 balanced ring (2 ranks, 1 GPU)" --train-test "$t/llama_long_context" \
  --mesh cp=2 --plan "$root/test/lit/train/Inputs/cp-ring-balanced.yaml"
train_case "moe_gpt, ep=2,tp=2 (4 ranks, 1 GPU)" --train-test "$t/moe_gpt" --mesh ep=2,tp=2 --plan ep,tp
train_case "gpt_bf16_states, dp=2 zero2 (2 ranks, 1 GPU)" --train-test "$t/gpt_bf16_states" --mesh dp=2 --plan zero2
train_case "gpt_bf16_pure, dp=2 fsdp (2 ranks, 1 GPU)" --train-test "$t/gpt_bf16_pure" --mesh dp=2 --plan fsdp
echo 'pipeline: {split: "h.*", microbatches: 8, schedule: 1f1b}' >"$pack/1f1b.yaml"
train_case "gpt4_pipeline, pp=2 1f1b (2 ranks, 1 GPU)" --train-test "$t/gpt4_pipeline" --mesh pp=2 --plan "$pack/1f1b.yaml"

fi

if wanted 3; then
section "3. GPT-2-small training step: distopt vs torch on this GPU"
gpt=$pack/gpt2
cp -r "$carry/gpt2" "$gpt"
python3 "$root/bench/gpu/weights.py" write "$gpt" >>"$log" 2>&1
gpt2_step() { # NAME FILE [VAR=VALUE...]: bench/gpu/run.sh in that environment
  local name=$1 file=$out/$2 start=$SECONDS
  shift 2
  env "$@" DISTOPT_BIN="$bin" timeout 300 "$root/bench/gpu/run.sh" "$gpt" "${BATCH:-8}" 5 >"$file" 2>&1
  local status=$?
  tee -a "$log" <"$file"
  record "GPT-2-small step vs torch$name ($((SECONDS - start)) s)" "$([ $status = 0 ] && echo ok || echo FAILED)"
}
gpt2_step "" gpt2_step.txt
note
note "-- the same with TF32 tensor cores on both sides"
gpt2_step ", TF32" gpt2_step_tf32.txt TF32=1
note
note "-- bf16 mixed precision on both sides (precision: bf16 vs torch.autocast)"
gpt2_step ", bf16" gpt2_step_bf16.txt BF16=1

fi

if wanted 4; then
section "4. matmul rate per dtype"
timeout 120 "$bin/distrt-gemm-rate" --runs 10 2>&1 | tee -a "$log"
record "distrt-gemm-rate" "$([ "${PIPESTATUS[0]}" = 0 ] && echo ok || echo FAILED)"

fi

if wanted 5; then
section "5. host CPU: bf16 GEMMs through oneDNN"
flags=$(grep -o -w 'amx_bf16\|avx512_bf16' /proc/cpuinfo | sort -u | tr '\n' ' ')
note "cpu: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)," \
  "bf16 instructions: ${flags:-none}"
timeout 120 "$bin/distrt_tests" --gtest_filter='Gemm.BF16*' >"$out/bf16.log" 2>&1
rc=$?
cat "$out/bf16.log" >>"$log"
# (The log has the whole output; the results and a skip's reason here.)
grep -E -A1 '^\[ *(OK|FAILED|SKIPPED) *\] Gemm|Skipped$' "$out/bf16.log" | grep -v '^--$'
if [ $rc != 0 ]; then
  record "bf16 GEMM tests on the host CPU" FAILED
elif grep -q '^\[  SKIPPED \] Gemm.BF16ProductsRunInBF16 (' "$out/bf16.log"; then
  record "bf16 GEMM tests on the host CPU" "skipped (no bf16 GEMM on this CPU)"
else
  record "bf16 GEMM tests on the host CPU" ok
fi
rm -f "$out/bf16.log"
timeout 300 "$bin/distrt-gemm-rate" --device cpu --runs 3 --tokens 1024 2>&1 | tee -a "$log"
record "distrt-gemm-rate on the host CPU" "$([ "${PIPESTATUS[0]}" = 0 ] && echo ok || echo FAILED)"

fi

if wanted 6; then
section "6. host CPU: GPT-2-small training step, bf16 and f32, vs torch"
# bench/train's row 1 on this host (1 x 128 tokens, AdamW), once in f32 and
# once with precision: bf16 against torch.autocast(bfloat16): the same
# thread counts, so distopt's bf16 step can be read against its f32 step.
gpt=$pack/gpt2-s128
cp -r "$carry/gpt2-s128" "$gpt"
python3 "$root/bench/gpu/weights.py" write "$gpt" >>"$log" 2>&1
for bf16 in 0 1; do
  start=$SECONDS
  # (Without bf16 instructions torch's autocast step takes tens of seconds.)
  if [ $bf16 = 1 ] && ! grep -q -w -e amx_bf16 -e avx512_bf16 /proc/cpuinfo; then
    record "GPT-2-small step on the host CPU, bf16" "skipped (no bf16 instructions on this CPU)"
    continue
  fi
  MODEL_DIR=$gpt PYTHON=python3 DISTOPT_BUILD_DIR=$pack BF16=$bf16 SKIP_PHASES=1 SKIP_DP=1 \
    THREADS="${CPU_THREADS:-1 4}" timeout 400 "$root/bench/train/run.sh" 5 1 >"$out/cpu_step.txt" 2>&1
  status=$?
  tee -a "$log" <"$out/cpu_step.txt"
  record "GPT-2-small step on the host CPU, $([ $bf16 = 1 ] && echo bf16 || echo f32) ($((SECONDS - start)) s)" \
    "$([ $status = 0 ] && echo ok || echo FAILED)"
done
rm -f "$out/cpu_step.txt"

fi

section "summary"
for s in "${summary[@]}"; do note "$s"; done
note "failures: $failures"
rm -rf "$pack"
[ $failures = 0 ]
