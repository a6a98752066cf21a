#!/usr/bin/env bash
# Runs each libFuzzer target for a bounded time (default 15 s) from its seed corpus. The targets are part of the
# sanitized build (scripts/build.sh --sanitize DIR, default build-asan: built here when it is not), linked from the
# objects its tests ran. A crash fails the script; the input that caused it is left in DIR for a regression test.
#   scripts/fuzz.sh [SECONDS] [DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-15}"
dir="${2:-build-asan}"
[[ "$seconds" =~ ^[0-9]+$ ]] || { echo "fuzz: SECONDS must be a whole number of seconds, not '$seconds'" >&2; exit 2; }
targets=(nccllog wire devices results inputs netinput fatbin topo)
for t in "${targets[@]}"; do
  if [ ! -x "$dir/${t}_fuzz" ]; then
    scripts/build.sh --sanitize "$dir"
    break
  fi
done
# One target: SECONDS of one core each (libFuzzer is single-threaded), from its corpus; 0 when nothing was found.
fuzz_one() {
  local target="$1" seconds="$2" dir="$3"
  mkdir -p "$dir/corpus-$target"
  echo "fuzz: $target for ${seconds}s"
  if ! (cd "$dir" && ./"${target}_fuzz" -max_total_time="$seconds" -max_len=65536 \
         "corpus-$target" "$OLDPWD/fuzz/corpus/$target" >"fuzz-$target.log" 2>&1); then
    tail -30 "$dir/fuzz-$target.log" >&2
    echo "fuzz: $target found a failing input ($dir/crash-*); make it a regression test" >&2
    return 1
  fi
  grep -E "^Done [0-9]+ runs" "$dir/fuzz-$target.log" | sed "s/^/fuzz: $target: /"
}
export -f fuzz_one
# As many at once as there are cores: each keeps a whole core for its SECONDS, the wall time divides. ($1, $2 and $3
# are the inner shell's, hence the single quotes.)
# shellcheck disable=SC2016
printf '%s\n' "${targets[@]}" |
  xargs -P "$(nproc)" -I{} bash -c 'fuzz_one "$1" "$2" "$3"' _ {} "$seconds" "$dir"
echo "fuzz: no findings"
