#!/usr/bin/env bash
# Tests scripts/build_nccl.sh without building NCCL: the series in nccl/ (every patch listed, with its DEP-3 header),
# the argument checks, and the refusal of any source but the release the series is written for. With NCCL_SRC set
# (an NCCL git repository or a git archive of the release), it also exports the source and applies the series
# (--check-only) and checks the result.
set -euo pipefail
cd "$(dirname "$0")/.."
script="$PWD/scripts/build_nccl.sh"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
failures=0

# expect RC PATTERN -- COMMAND...: COMMAND exits with RC and its output matches PATTERN (grep -E)
expect() {
  local rc="$1" pattern="$2" got=0
  shift 3
  "$@" >"$tmp/out" 2>&1 || got=$?
  if [ "$got" != "$rc" ] || ! grep -Eq -- "$pattern" "$tmp/out"; then
    echo "FAIL: $* exited $got (wanted $rc) and printed:" >&2
    sed 's/^/  | /' "$tmp/out" >&2
    echo "  wanted a line matching: $pattern" >&2
    failures=$((failures + 1))
  fi
}

# The project's own series
expect 0 'patches, each with its DEP-3 header' -- "$script" --check-series

# A series with faults
good="$(grep -v -e "^#" -e "^$" nccl/series | head -n 1)"
mkseries() {
  rm -rf "$tmp/s"
  mkdir -p "$tmp/s/$(dirname "$good")"
  cp "nccl/$good" "$tmp/s/$good"
  echo "$good" >"$tmp/s/series"
}
mkseries
expect 0 '1 patches' -- "$script" --check-series --series "$tmp/s"
echo "v2.30.7/0009-missing.patch" >>"$tmp/s/series"
expect 1 'lists v2.30.7/0009-missing.patch, which does not exist' -- "$script" --check-series --series "$tmp/s"
mkseries
sed -i '/^Author:/d' "$tmp/s/$good"
expect 1 "has no DEP-3 'Author:' line" -- "$script" --check-series --series "$tmp/s"
mkseries
cp "$tmp/s/$good" "$tmp/s/v2.30.7/0005-orphan.patch"
expect 1 '0005-orphan.patch is not listed in nccl/series' -- "$script" --check-series --series "$tmp/s"
mkseries
echo "0001-no-version-folder.patch" >"$tmp/s/series"
expect 1 'is not v<version>/NNNN-name.patch' -- "$script" --check-series --series "$tmp/s"
mkseries
sed -i '/^diff --git/,$d' "$tmp/s/$good"
expect 1 'holds no diff' -- "$script" --check-series --series "$tmp/s"

# Arguments
expect 0 'Builds NCCL twice' -- "$script" --help
expect 2 "unknown argument '--bogus'" -- "$script" --bogus
expect 2 'ONLY_FUNCS is set' -- env ONLY_FUNCS="AllReduce/Sum/f32" "$script" --src "$tmp" --check-only
expect 2 'ONLY_FUNCS is set' -- env MAKEFLAGS="ONLY_FUNCS=AllReduce" "$script" --src "$tmp" --check-only
expect 2 "'9x' is not a compute capability" -- "$script" --src "$tmp" --arch 90,9x --check-only
expect 2 '--which must be stock, patched or both' -- "$script" --src "$tmp" --which neither --check-only
expect 2 '--jobs must be a positive number' -- "$script" --src "$tmp" --jobs 0 --check-only
expect 2 'written for 2.28.9,2.30.7 only' -- "$script" --src "$tmp" --version 2.29.1 --check-only
expect 2 '--src is needed' -- "$script" --check-only
expect 2 'does not exist' -- "$script" --src "$tmp/nowhere" --check-only

# Sources that are not the release
mkdir -p "$tmp/tree/makefiles"
printf 'NCCL_MAJOR   := 2\nNCCL_MINOR   := 29\nNCCL_PATCH   := 1\n' >"$tmp/tree/makefiles/version.mk"
expect 2 'is NCCL 2.29.1 \(makefiles/version.mk\); the series is for 2.30.7 only' -- \
  "$script" --src "$tmp/tree" --out "$tmp/o1" --check-only
printf 'NCCL_MAJOR   := 2\nNCCL_MINOR   := 30\nNCCL_PATCH   := 7\n' >"$tmp/tree/makefiles/version.mk"
expect 2 'does not apply to NCCL v2.30.7-1' -- "$script" --src "$tmp/tree" --out "$tmp/o2" --which patched --check-only
mkdir -p "$tmp/notnccl"
expect 2 'not an NCCL source tree' -- "$script" --src "$tmp/notnccl" --out "$tmp/o3" --check-only
git init -q "$tmp/repo"
expect 2 'does not hold NCCL v2.30.7-1' -- "$script" --src "$tmp/repo" --out "$tmp/o4" --check-only
tar -C "$tmp/tree" -czf "$tmp/tree.tar.gz" .
expect 2 'is not a git archive of NCCL v2.30.7-1' -- "$script" --src "$tmp/tree.tar.gz" --out "$tmp/o5" --check-only

# Building, with a stand-in for NCCL's Makefile (stock only: the patches would not apply to it)
mkdir -p "$tmp/fake/makefiles"
printf 'NCCL_MAJOR   := 2\nNCCL_MINOR   := 30\nNCCL_PATCH   := 7\n' >"$tmp/fake/makefiles/version.mk"
# shellcheck disable=SC2016 # $(...) here are make's, not the shell's
printf 'src.build:\n\tmkdir -p $(BUILDDIR)/lib\n\tsleep $(or $(SLEEP),0)\n\techo "$(LIBTEXT)" >$(BUILDDIR)/lib/libnccl.so.2\n\techo "$(CUDA_HOME)" >$(BUILDDIR)/cuda_home\n' \
  >"$tmp/fake/Makefile"
expect 0 "stock: $tmp/o6/stock/lib/libnccl.so.2" -- "$script" --src "$tmp/fake" --out "$tmp/o6" --which stock --jobs 1
expect 0 'stock: reusing' -- "$script" --src "$tmp/fake" --out "$tmp/o6" --which stock --jobs 1
expect 2 'carries the patch but was built as stock' -- \
  env LIBTEXT="P2P peer regions" "$script" --src "$tmp/fake" --out "$tmp/o7" --which stock --jobs 1
expect 3 'stopped after 1 s; run the same command again to continue' -- \
  env SLEEP=5 "$script" --src "$tmp/fake" --out "$tmp/o8" --which stock --jobs 1 --stop-after 1
[ ! -e "$tmp/o8/stock.building" ] || { echo "FAIL: a stopped make left its marker" >&2; failures=$((failures + 1)); }
# A killed make: its marker is still there and it wrote a file after it; that file goes, older ones stay
touch "$tmp/o6/stock.building"
sleep 1
mkdir -p "$tmp/o6/stock/obj" && echo partial >"$tmp/o6/stock/obj/half.o"
expect 0 'the last make was killed; removed 1 files' -- "$script" --src "$tmp/fake" --out "$tmp/o6" --which stock
[ ! -e "$tmp/o6/stock/obj/half.o" ] || { echo "FAIL: a killed make's last file was kept" >&2; failures=$((failures + 1)); }
expect 2 '--stop-after must be a number of seconds' -- "$script" --src "$tmp/fake" --stop-after soon --check-only
# A toolkit that carries an NCCL of its own: the build gets the toolkit without those headers
mkdir -p "$tmp/cuda/include/nccl_device" "$tmp/cuda/bin"
touch "$tmp/cuda/include/nccl.h" "$tmp/cuda/include/cuda.h" "$tmp/cuda/bin/nvcc"
expect 0 'carries NCCL headers of its own' -- env CUDA_HOME="$tmp/cuda" "$script" --src "$tmp/fake" --out "$tmp/o10" \
  --which stock --jobs 1
built_with="$(cat "$tmp/o10/stock/cuda_home" 2>/dev/null)"
if [ "$built_with" != "$tmp/o10/cuda-without-nccl" ] || [ ! -e "$built_with/include/cuda.h" ] ||
  [ ! -e "$built_with/bin/nvcc" ] || compgen -G "$built_with/include/nccl*" >/dev/null; then
  echo "FAIL: make got CUDA_HOME='$built_with', not the toolkit without its NCCL headers" >&2
  failures=$((failures + 1))
fi

# The real source, where one is given
if [ -n "${NCCL_SRC:-}" ]; then
  expect 0 'applied nccl/v2.30.7/0004' -- "$script" --src "$NCCL_SRC" --out "$tmp/real" --check-only
  if ! grep -q 'NCCL_PARAM(P2pPeerRegion, "P2P_PEER_REGION", 1)' "$tmp/real/src-patched/src/transport/p2p.cc" ||
    grep -q 'P2pPeerRegion' "$tmp/real/src-stock/src/transport/p2p.cc"; then
    echo "FAIL: the patched tree lacks the peer-region switch, or the stock tree has it" >&2
    failures=$((failures + 1))
  fi
  if ! grep -q 'NCCL_PARAM(FdTableReserve, "FD_TABLE_RESERVE", 1024)' "$tmp/real/src-patched/src/proxy.cc" ||
    grep -q 'FdTableReserve' "$tmp/real/src-stock/src/proxy.cc"; then
    echo "FAIL: the patched tree lacks the fd-table reservation, or the stock tree has it" >&2
    failures=$((failures + 1))
  fi
  expect 0 'patched: reusing' -- "$script" --src "$NCCL_SRC" --out "$tmp/real" --check-only
  # The 2.28.9 variant, where the source holds that release too (a git repository with both tags)
  if [ -d "$NCCL_SRC" ] && git -C "$NCCL_SRC" rev-parse -q --verify 'v2.28.9-1^{commit}' >/dev/null 2>&1; then
    expect 0 'applied nccl/v2.28.9/0003' -- "$script" --src "$NCCL_SRC" --version 2.28.9 --out "$tmp/real289" \
      --which patched --check-only
  fi
  # A source of one release refused as the other
  expect 2 'is NCCL 2.30.7 \(makefiles/version.mk\); the series is for 2.28.9 only' -- \
    "$script" --src "$tmp/real/src-stock" --version 2.28.9 --out "$tmp/o9" --check-only
else
  echo "test_build_nccl: NCCL_SRC not set: the series was not applied to a real source"
fi

if ((failures)); then
  echo "test_build_nccl: $failures failures" >&2
  exit 1
fi
echo "test_build_nccl: all checks passed"
