#!/usr/bin/env bash
# Builds NCCL stock and patched (nccl/series) from one source on a GPU node in the time one command allows: stock
# first, then the series applied to the same tree and the patched library built whole in its own folder. (Not from a
# copy of stock's objects: NCCL's dependency files name their objects by absolute path, so a copied folder does not
# rebuild what includes a patched header, and its communicators disagree about struct layouts.)
#   bench/gpu/nccl_stock_patched.sh NCCL_TARBALL OUT_DIR [ARCH]      (ARCH: 90 unless given)
# Prints the two libraries' paths; exits non-zero when a build fails. scripts/build_nccl.sh builds the two from
# scratch, each in its own tree, with the same checks; this is its fast path for a node that is lent minutes.
set -euo pipefail
tarball="${1:?usage: nccl_stock_patched.sh NCCL_TARBALL OUT_DIR [ARCH]}"
out="${2:?usage: nccl_stock_patched.sh NCCL_TARBALL OUT_DIR [ARCH]}"
arch="${3:-90}"
root="$(cd "$(dirname "$0")/../.." && pwd)"
[ -z "${ONLY_FUNCS:-}" ] || { echo "nccl_stock_patched: ONLY_FUNCS is set: NCCL would run no-op kernels" >&2; exit 2; }
jobs="$(nproc)"
gencode=""
for a in ${arch//,/ }; do gencode+="-gencode=arch=compute_$a,code=sm_$a "; done
mkdir -p "$out"
src="$out/src"
if [ ! -f "$src/makefiles/version.mk" ]; then
  mkdir -p "$src"
  tar -C "$src" --strip-components=1 -xzf "$tarball"
fi
grep -q 'NCCL_MINOR *:= *30' "$src/makefiles/version.mk" && grep -q 'NCCL_PATCH *:= *7' "$src/makefiles/version.mk" ||
  { echo "nccl_stock_patched: $tarball is not NCCL 2.30.7, the release nccl/series is for" >&2; exit 2; }
# ONLY_PATCHED=1 skips the stock build (a node lent minutes; stock behaviour is the switch NCCL_P2P_PEER_REGION=0).
if [ -z "${ONLY_PATCHED:-}" ] && [ ! -f "$out/stock/lib/libnccl.so.2" ]; then
  make -C "$src" -j"$jobs" src.build BUILDDIR="$out/stock" NVCC_GENCODE="$gencode" >"$out/stock.log" 2>&1 ||
    { tail -20 "$out/stock.log" >&2; exit 1; }
fi
if [ ! -f "$out/patched/lib/libnccl.so.2" ]; then
  if [ ! -f "$out/.patched-sources" ]; then
    grep -v -e '^[[:space:]]*#' -e '^[[:space:]]*$' "$root/nccl/series" | grep '^v2.30.7/' | while read -r p; do
      patch -d "$src" -p1 --forward --quiet <"$root/nccl/$p"
    done
    touch "$out/.patched-sources"
  fi
  make -C "$src" -j"$jobs" src.build BUILDDIR="$out/patched" NVCC_GENCODE="$gencode" >"$out/patched.log" 2>&1 ||
    { tail -20 "$out/patched.log" >&2; exit 1; }
fi
# The patched library must differ from stock where the series says: its peer-region parameter is in it.
grep -q "P2P_PEER_REGION" "$out/patched/lib/libnccl.so.2" ||
  { echo "nccl_stock_patched: the patched library lacks NCCL_P2P_PEER_REGION: the patches did not build" >&2; exit 1; }
[ ! -f "$out/stock/lib/libnccl.so.2" ] || ! grep -q "P2P_PEER_REGION" "$out/stock/lib/libnccl.so.2" ||
  { echo "nccl_stock_patched: the stock library has the patch in it" >&2; exit 1; }
[ ! -f "$out/stock/lib/libnccl.so.2" ] || echo "$out/stock/lib/libnccl.so.2"
echo "$out/patched/lib/libnccl.so.2"
