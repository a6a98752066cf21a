#!/usr/bin/env bash
# The tool's own costs against their budgets, before a change lands: the report (load and render 1,000 trials x 8
# ranks: build/report_bench), report --compare at 10,000 trials a side (build/report_bench --compare: CPU time only,
# under half a second a run) and the NCCL log parser (build/nccllog_bench). The budgets sit beside the figures in
# docs/performance.md ("Regression check"), in a block this script reads.
#
# Neither check depends on what else the machine runs. Instructions, counted by valgrind's cachegrind, have budgets
# some 30% above what the code takes now: a change that makes either job twice the work fails on a busy CI machine as
# on a quiet one. CPU time, the process's own (best of three runs), is held to the targets themselves: it catches a
# cost that is not instructions (page faults, a system call per line). Wall time is printed, not checked: on a
# 2-core machine shared with other builds it is several times the CPU time.
#   scripts/perf_check.sh [BUILD_DIR=build]
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
for b in report_bench nccllog_bench; do
  [[ -x "$build/$b" ]] || { echo "perf_check: no $build/$b; configure $build with -DCOLDSTART_BENCHMARKS=ON" >&2; exit 1; }
done
command -v valgrind >/dev/null || { echo "perf_check: valgrind is missing (scripts/setup.sh installs it)" >&2; exit 1; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

budget() {
  local v
  v="$(sed -n '/^```perf-budgets$/,/^```$/p' docs/performance.md | awk -v k="$1" '$1 == k { print $2 }')"
  [[ -n "$v" ]] || { echo "perf_check: no budget '$1' in docs/performance.md" >&2; exit 1; }
  echo "$v"
}
# Instructions the command executes (user space, the whole process).
instructions() {
  valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null "$@" 2>&1 >/dev/null |
    sed -n 's/.*I *refs: *//p' | tr -d ','
}
failed=0
check() {  # name value comparison limit unit
  local name="$1" value="$2" op="$3" limit="$4" unit="$5"
  if awk -v v="$value" -v l="$limit" -v op="$op" 'BEGIN { exit !(op == "<=" ? v <= l : v >= l) }'; then
    echo "perf_check: $name: $value $unit (budget $op $limit)"
  else
    echo "perf_check: $name: $value $unit, outside its budget ($op $limit in docs/performance.md)" >&2
    failed=1
  fi
}

# The least CPU time in ms of three runs of report_bench ARGS..., from its line starting with PREFIX: into $best.
# A run that fails (--compare that finds no regression) stops the check.
best_cpu_ms() {
  local prefix="$1" out line ms
  shift
  best=""
  for _ in 1 2 3; do
    out="$("$build/report_bench" "$@")" || { echo "perf_check: report_bench $1 failed: $out" >&2; exit 1; }
    line="$(grep "^$prefix" <<<"$out")"
    echo "perf_check: report_bench $1: $line"
    ms="$(sed -n 's/.*CPU time \([0-9]*\) ms.*/\1/p' <<<"$line")"
    [[ -n "$ms" ]] || { echo "perf_check: no CPU time in report_bench $1's output (rebuild $build/report_bench)" >&2; exit 1; }
    if [[ -z "$best" || "$ms" -lt "$best" ]]; then best="$ms"; fi
  done
}

"$build/report_bench" --make "$tmp/results.json"
best_cpu_ms "all of it" --render "$tmp/results.json"
check "report, load and render 1,000 x 8, CPU time, best of 3" "$best" "<=" "$(budget report_cpu_ms)" ms
check "report, load and render 1,000 x 8" "$(instructions "$build/report_bench" --render "$tmp/results.json")" "<=" \
  "$(budget report_instructions)" instructions

# report --compare, 10,000 trials a side of a 15% regression: it must say REGRESSION (exit 0) within its CPU budget.
best_cpu_ms "compare and render" --compare 10000
check "report --compare 10,000 x 2, CPU time, best of 3" "$best" "<=" "$(budget compare_cpu_ms)" ms

fixture=tests/data/nccl-2.28.9-h200x2
log_mib=64
best=""
for _ in 1 2 3; do
  line="$("$build/nccllog_bench" "$fixture" "$log_mib" "$tmp/nccl.log")"
  echo "perf_check: nccllog_bench: $line"
  rate="$(sed -n 's/.* \([0-9]*\) MB per CPU second.*/\1/p' <<<"$line")"
  [[ -n "$rate" ]] || { echo "perf_check: no CPU rate in nccllog_bench's output (rebuild $build/nccllog_bench)" >&2; exit 1; }
  [[ -z "$best" || "$rate" -gt "$best" ]] && best="$rate"
done
check "nccllog parser, $log_mib MiB, MB per CPU second, best of 3" "$best" ">=" "$(budget nccllog_mb_per_cpu_s)" MB/s
check "nccllog parser, $log_mib MiB" "$(instructions "$build/nccllog_bench" "$fixture" "$log_mib" "$tmp/nccl.log")" \
  "<=" "$(budget nccllog_instructions)" instructions

if ((failed)); then
  echo "perf_check: a cost is over its budget. Find what made it (valgrind --tool=callgrind on the bench, or perf" \
    "record); if the cost is deliberate, update the figures and the budget in docs/performance.md together." >&2
  exit 1
fi
echo "perf_check: every cost within its budget"
