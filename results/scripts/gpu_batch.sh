#!/usr/bin/env bash
# One short GPU allocation, on a fresh machine that keeps nothing (docs/cluster.md, "A batch in a short
# allocation"). The log goes to $OUT/log.txt; the command ends at most about BUDGET_MINUTES + 1.5 minutes
# after it starts (a watchdog one minute past the budget, 20 s for it to stop the runs), with what finished.
#
#   MODE=batch (the default): train what fits in BUDGET_MINUTES, results in $OUT/results.tar.gz (python -m mlm
#     unpack puts them into results/); runs that cannot finish are not started, the watchdog stops the rest.
#   MODE=bench-batch: first time one run of each model of MANIFEST (BENCH_SECONDS per model, at most
#     BENCH_MINUTES in all; rows in $OUT/bench-batch.json), then the batch in the rest of the budget, planned
#     with those rows first.
#   MODE=bench-headline: the speed of one seed of each headline setting of the full manifest alone
#     ($OUT/bench-headline.json, what later batches plan with: SPEEDS).
#   MODE=bench-switches: the speed switches on three families, alone and JOBS at once ($OUT/bench-switches.json).
#
#   OUT=/tmp/out bash results/scripts/gpu_batch.sh
#   MANIFEST=tuned MODE=bench-batch OUT=/tmp/out bash results/scripts/gpu_batch.sh
#
# Settings, from the environment: MANIFEST (full), DEVICE (cuda), BUDGET_MINUTES (8), BENCH_MINUTES (3),
# BENCH_SECONDS (3), JOBS (14), SPEEDS (bench files, space-separated; default results/bench-h200*.json), ROOT
# (where runs/ and results/ are: this clone), MLM_DATA_DIR (ROOT/data), PYTHON (python3: the interpreter that
# has torch), EXTRA (more reproduce options, e.g. --set train.fused_optimizer=true; bench-batch benches with
# its --set and --only options).
set -u -o pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
: "${OUT:?set OUT to the folder that receives the archive and the log}"
MODE=${MODE:-batch} MANIFEST=${MANIFEST:-full} DEVICE=${DEVICE:-cuda} BUDGET_MINUTES=${BUDGET_MINUTES:-8}
JOBS=${JOBS:-14} ROOT=${ROOT:-$REPO} PYTHON=${PYTHON:-python3}
SPEEDS=${SPEEDS:-$(ls "$REPO"/results/bench-h200*.json)}  # every file's rows; budget.Speeds.of picks a run's
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 MLM_NO_DOWNLOAD=1
export MLM_DATA_DIR=${MLM_DATA_DIR:-$ROOT/data}
mkdir -p "$OUT"
LOG=$OUT/log.txt
# the watchdog's limit in seconds: MINUTES, then a minute to stop what still runs and write the archive
watchdog() { "$PYTHON" -c "print(int(float('$1') * 60 + 60))"; }
LIMIT=$(watchdog "$BUDGET_MINUTES")
"$PYTHON" -c 'import platform, sys, torch
gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
print(f"# {platform.node()}: Python {sys.version.split()[0]}, torch {torch.__version__}, {gpu}")' >>"$LOG" 2>&1
if [ "$DEVICE" = cuda ] && command -v nvidia-cuda-mps-control >/dev/null; then
  # CUDA's multi-process service: the runs share the GPU side by side instead of taking turns
  nvidia-cuda-mps-control -d >>"$LOG" 2>&1 && echo "# MPS on" >>"$LOG"
  trap 'echo quit | nvidia-cuda-mps-control' EXIT
fi
cd "$ROOT" || exit 1
batch() {  # batch MINUTES SPEEDS-FILES...: what fits in MINUTES, planned with the speeds of the files
  local minutes=$1
  shift
  # shellcheck disable=SC2086  # EXTRA holds several options
  timeout -k 20 "$(watchdog "$minutes")" "$PYTHON" -m mlm reproduce "$MANIFEST" --root "$ROOT" --device "$DEVICE" \
    --jobs "$JOBS" --budget-minutes "$minutes" $(printf -- '--speeds %s ' "$@") --archive "$OUT/results.tar.gz" \
    ${EXTRA:-} 2>&1 | tee -a "$LOG"
}
case $MODE in
  batch)
    # shellcheck disable=SC2086  # SPEEDS holds several files
    batch "$BUDGET_MINUTES" $SPEEDS ;;
  bench-batch)
    start=$(date +%s)
    bench_limit=$("$PYTHON" -c "print(int(float('${BENCH_MINUTES:-3}') * 60))")
    # the bench times the runs with the batch's --set and --only options (from EXTRA), so its rows plan them
    read -ra words <<< "${EXTRA:-}"
    picked=()
    for ((i = 0; i + 1 < ${#words[@]}; i++)); do
      case ${words[i]} in --set|--only) picked+=("${words[i]}" "${words[i + 1]}") ;; esac
    done
    timeout -k 20 "$bench_limit" "$PYTHON" -m mlm bench --manifest "$MANIFEST" --device "$DEVICE" \
      --seconds "${BENCH_SECONDS:-3}" "${picked[@]}" --out "$OUT/bench-batch.json" 2>&1 | tee -a "$LOG"
    bench_status=${PIPESTATUS[0]}
    rows=$("$PYTHON" -c "import json, sys; print(len(json.load(open(sys.argv[1]))))" "$OUT/bench-batch.json" \
      2>/dev/null || echo 0)
    left=$("$PYTHON" -c "print(round(float('$BUDGET_MINUTES') - ($(date +%s) - $start) / 60, 2))")
    echo "# bench ended with exit status $bench_status (124: stopped at BENCH_MINUTES, the models after the" \
      "last row unmeasured): $rows model(s) benched; $left minutes left for the batch" | tee -a "$LOG"
    own=()  # the rows the bench wrote before it ended (none: the stored speeds alone)
    [ -s "$OUT/bench-batch.json" ] && own=("$OUT/bench-batch.json")
    if "$PYTHON" -c "import sys; sys.exit(float('$left') < 1)"; then
      # shellcheck disable=SC2086  # SPEEDS holds several files
      batch "$left" "${own[@]}" $SPEEDS
    else
      echo "# less than a minute left: no batch" | tee -a "$LOG"
    fi ;;
  bench-headline)
    ONLY=$("$PYTHON" -c "from mlm.manifests.full import PRIORITY; print(' '.join('--only ' + p for p in PRIORITY))")
    # shellcheck disable=SC2086  # ONLY holds several options
    timeout -k 20 "$LIMIT" "$PYTHON" -m mlm bench --manifest full $ONLY --device "$DEVICE" \
      --out "$OUT/bench-headline.json" 2>&1 | tee -a "$LOG" ;;
  bench-switches)
    timeout -k 20 "$LIMIT" "$PYTHON" -m mlm bench zaremba2014-medium salton2017-ptb-single kong2019-ptb-512-vs-kn \
      --device "$DEVICE" --variant fast=train.fused_optimizer=true,train.compile=reduce-overhead \
      --concurrent 1 --concurrent "$JOBS" --seconds 10 --out "$OUT/bench-switches.json" 2>&1 | tee -a "$LOG" ;;
  *) echo "unknown MODE=$MODE: batch, bench-batch, bench-headline or bench-switches" | tee -a "$LOG"; exit 2 ;;
esac
status=$?
echo "# $MODE ended with exit status $status (124: the watchdog stopped it)" | tee -a "$LOG"
exit 0
