#!/usr/bin/env bash
# Builds NCCL twice from one source: stock, and with the patch series in nccl/ applied (docs/nccl-patch.md).
#   scripts/build_nccl.sh --src SRC [--out DIR] [--which stock|patched|both] [--parallel] [--arch 90[,100..]]
#                         [--jobs N] [--stop-after SECONDS] [--version 2.30.7|2.28.9] [--check-only] [--series DIR]
#   scripts/build_nccl.sh --check-series     check nccl/series and its patch files (no NCCL source needed)
# SRC is an NCCL git repository (the release tag's commit is exported with git archive, whatever is checked out),
# a tarball made by git archive (GitHub's release tarballs are), or an unpacked source tree; anything but the
# release the series is written for is refused. Outputs DIR/stock/lib/libnccl.so.2 and DIR/patched/lib/libnccl.so.2
# (DIR defaults to ./build-nccl). Running it again continues make in the same folders, so a build cut short by a
# time limit resumes (--stop-after stops make cleanly before such a limit, exit status 3); changed patches start the
# patched tree over. --series takes the patches from another folder laid out as nccl/ (tests use it).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
series_dir="$root/nccl"

# The releases the series is written for: version -> tag and commit.
declare -A release_tag=([2.30.7]=v2.30.7-1 [2.28.9]=v2.28.9-1)
declare -A release_commit=([2.30.7]=73cf112295c33aee2b895f329f592f2a9b4b0f97 [2.28.9]=dbc86fd06e8b0c4517b95d8958a09ccacf9520c9)

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
die() {
  echo "build_nccl: $*" >&2
  exit 2
}

src="" out="build-nccl" which="both" parallel=0 arch="90" jobs="" version="2.30.7" check_only=0 check_series=0
stop_after=""
while (($#)); do
  case "$1" in
    --src) src="${2:?--src needs a path}"; shift 2 ;;
    --out) out="${2:?--out needs a folder}"; shift 2 ;;
    --which) which="${2:?--which needs stock, patched or both}"; shift 2 ;;
    --parallel) parallel=1; shift ;;
    --arch) arch="${2:?--arch needs a list such as 90,100}"; shift 2 ;;
    --jobs) jobs="${2:?--jobs needs a number}"; shift 2 ;;
    --stop-after) stop_after="${2:?--stop-after needs seconds}"; shift 2 ;;
    --version) version="${2:?--version needs a release such as 2.30.7}"; shift 2 ;;
    --check-only) check_only=1; shift ;;
    --check-series) check_series=1; shift ;;
    --series) series_dir="${2:?--series needs the folder holding series and the patches}"; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done

# The patch files of one release, in series order (lines of nccl/series under "v<version>/").
series_patches() {
  local v="$1"
  grep -v -e '^[[:space:]]*#' -e '^[[:space:]]*$' "$series_dir/series" | sed 's/[[:space:]]*$//' |
    { grep "^v$v/" || true; }
}

# Every line of the series names an existing patch with its DEP-3 header and a diff; every patch file is listed.
check_series_files() {
  local bad=0 n=0 line f field
  [ -f "$series_dir/series" ] || die "no series file at $series_dir/series"
  while IFS= read -r line; do
    line="${line%"${line##*[![:space:]]}"}"
    [[ -z "$line" || "$line" == \#* ]] && continue
    n=$((n + 1))
    f="$series_dir/$line"
    if [[ ! "$line" =~ ^v[0-9]+\.[0-9]+\.[0-9]+/[0-9]{4}-[A-Za-z0-9._-]+\.patch$ ]]; then
      echo "build_nccl: nccl/series: '$line' is not v<version>/NNNN-name.patch" >&2
      bad=1
      continue
    fi
    if [ ! -f "$f" ]; then
      echo "build_nccl: nccl/series lists $line, which does not exist" >&2
      bad=1
      continue
    fi
    for field in Description Author Forwarded Last-Update Applies-To; do
      # DEP-3 fields come before the first diff
      if ! sed '/^diff --git /q' "$f" | grep -q "^$field: ."; then
        echo "build_nccl: nccl/$line has no DEP-3 '$field:' line before its diff" >&2
        bad=1
      fi
    done
    if ! grep -q '^diff --git a/' "$f" || ! grep -q '^+++ b/' "$f"; then
      echo "build_nccl: nccl/$line holds no diff for patch -p1" >&2
      bad=1
    fi
  done <"$series_dir/series"
  while IFS= read -r f; do
    line="${f#"$series_dir/"}"
    if ! grep -qxF "$line" <(grep -v '^[[:space:]]*#' "$series_dir/series" | sed 's/[[:space:]]*$//'); then
      echo "build_nccl: nccl/$line is not listed in nccl/series" >&2
      bad=1
    fi
  done < <(find "$series_dir" -name '*.patch' | sort)
  ((n > 0)) || { echo "build_nccl: nccl/series lists no patch" >&2; bad=1; }
  ((bad == 0)) || exit 1
  echo "build_nccl: nccl/series: $n patches, each with its DEP-3 header and a diff"
}

[ -d "$series_dir" ] || die "--series $series_dir is not a folder"
series_dir="$(cd "$series_dir" && pwd)"

if ((check_series)); then
  check_series_files
  exit 0
fi

# A build restricted to some collectives is never what anyone measures: NCCL replaces the kernels it leaves out with
# ones that do nothing, so the missing collectives return wrong data without an error.
if [ -n "${ONLY_FUNCS+set}" ] || [[ "${MAKEFLAGS:-}" == *ONLY_FUNCS* ]]; then
  die "ONLY_FUNCS is set; NCCL would replace the kernels it leaves out with no-ops (wrong results, no error): unset it"
fi
case "$which" in stock | patched | both) ;; *) die "--which must be stock, patched or both, not '$which'" ;; esac
[ -n "${release_commit[$version]:-}" ] ||
  die "--version $version: the series is written for $(printf '%s\n' "${!release_commit[@]}" | sort -V | paste -sd, -) only"
[ -n "$(series_patches "$version")" ] || die "nccl/series has no patch for $version"
gencode=""
IFS=',' read -r -a arches <<<"$arch"
((${#arches[@]})) || die "--arch needs at least one architecture, such as 90"
for a in "${arches[@]}"; do
  [[ "$a" =~ ^[0-9]{2,3}[af]?$ ]] || die "--arch: '$a' is not a compute capability such as 90, 100 or 90a"
  gencode+="${gencode:+ }-gencode=arch=compute_$a,code=sm_$a"
done
if [ -z "$jobs" ]; then
  jobs="$(nproc)"
elif ! [[ "$jobs" =~ ^[1-9][0-9]*$ ]]; then
  die "--jobs must be a positive number, not '$jobs'"
fi
[ -z "$stop_after" ] || [[ "$stop_after" =~ ^[1-9][0-9]*$ ]] ||
  die "--stop-after must be a number of seconds, not '$stop_after'"
[ -n "$src" ] || die "--src is needed: an NCCL git repository, a git archive tarball or an unpacked source tree"
[ -e "$src" ] || die "--src $src does not exist"
src="$(cd "$(dirname "$src")" && pwd)/$(basename "$src")"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

tag="${release_tag[$version]}"
commit="${release_commit[$version]}"

# Checks that an unpacked tree is the release: makefiles/version.mk must say $version.
check_version_mk() {
  local dir="$1" mk="$1/makefiles/version.mk" got
  [ -f "$mk" ] || die "$dir has no makefiles/version.mk: not an NCCL source tree"
  got="$(awk '$1=="NCCL_MAJOR"{a=$3} $1=="NCCL_MINOR"{b=$3} $1=="NCCL_PATCH"{c=$3} END{print a"."b"."c}' "$mk")"
  [ "$got" = "$version" ] || die "$dir is NCCL $got (makefiles/version.mk); the series is for $version only"
}

# Puts a pristine copy of the release's source in $1.
export_source() {
  local dest="$1" got
  rm -rf "$dest"
  mkdir -p "$dest"
  if [ -d "$src" ] && git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
    got="$(git -C "$src" rev-parse -q --verify "$commit^{commit}" 2>/dev/null || true)"
    [ "$got" = "$commit" ] || die "$src does not hold NCCL $tag (commit $commit); fetch the tag or give another --src"
    git -C "$src" archive --format=tar "$commit" | tar -x -C "$dest"
  elif [ -f "$src" ]; then
    local cat=cat
    case "$src" in *.gz | *.tgz) cat="gzip -dc" ;; *.xz) cat="xz -dc" ;; *.bz2) cat="bzip2 -dc" ;; esac
    # The commit id git archive writes in the tarball's first header (git get-tar-commit-id reads the same; a GPU
    # node may have no git)
    got="$($cat "$src" 2>/dev/null | head -c 1024 | tr -c '[:alnum:]=\n' '\n' |
      sed -n 's/^comment=\([0-9a-f]\{40\}\)$/\1/p' | head -n 1 || true)"
    [ "$got" = "$commit" ] ||
      die "$src is not a git archive of NCCL $tag (its commit id is '${got:-none}', expected $commit)"
    $cat "$src" | tar -x -C "$dest"
    # git archive --prefix (GitHub's tarballs) puts everything under one folder: bring its contents up
    local top=("$dest"/*)
    if [ ! -f "$dest/makefiles/version.mk" ] && ((${#top[@]} == 1)) && [ -d "${top[0]}" ]; then
      mv "${top[0]}" "$dest.top" && rm -rf "$dest" && mv "$dest.top" "$dest"
    fi
    [ -f "$dest/makefiles/version.mk" ] || die "$src does not unpack to an NCCL source tree"
  elif [ -d "$src" ]; then
    check_version_mk "$src"
    tar -C "$src" --exclude=./build --exclude=./.git -cf - . | tar -x -C "$dest"
  else
    die "--src $src is neither a folder nor a file"
  fi
  check_version_mk "$dest"
}

series_hash() { (cd "$series_dir" && for p in $(series_patches "$version"); do sha256sum "$p"; done) | sha256sum | cut -c1-16; }

# Makes $out/src-$1 ready to build: exported, patched for "patched", and stamped so that a second run reuses it.
prepare() {
  local kind="$1" dir="$out/src-$1" stamp want p
  want="commit=$commit"
  [ "$kind" = patched ] && want+=" series=$(series_hash)"
  stamp="$dir/.coldstart-source"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    echo "build_nccl: $kind: reusing $dir"
    return
  fi
  if [ -d "$dir" ]; then
    echo "build_nccl: $kind: $dir was made from other sources or patches; starting $kind over"
    rm -rf "${out:?}/${kind:?}"
  fi
  export_source "$dir"
  if [ "$kind" = patched ]; then
    for p in $(series_patches "$version"); do
      if ! patch -d "$dir" -p1 --dry-run --quiet -F0 <"$series_dir/$p" >/dev/null; then
        patch -d "$dir" -p1 --dry-run -F0 <"$series_dir/$p" >&2 || true
        die "nccl/$p does not apply to NCCL $tag"
      fi
      patch -d "$dir" -p1 --quiet -F0 <"$series_dir/$p"
      echo "build_nccl: patched: applied nccl/$p"
    done
  fi
  echo "$want" >"$stamp"
}

# A built library must be the one asked for: the patched one announces peer regions at init, the stock one cannot.
verify_lib() {
  local kind="$1" lib="$out/$1/lib/libnccl.so.2"
  [ -f "$lib" ] || die "$kind: make finished but $lib is missing"
  if grep -qa "P2P peer regions" "$lib"; then
    [ "$kind" = patched ] || die "$lib carries the patch but was built as stock"
  else
    [ "$kind" = stock ] || die "$lib lacks the patch (no 'P2P peer regions' string)"
  fi
}

kinds=()
[ "$which" = patched ] || kinds+=(stock)
[ "$which" = stock ] || kinds+=(patched)
for k in "${kinds[@]}"; do prepare "$k"; done

if ((check_only)); then
  for k in "${kinds[@]}"; do
    echo "build_nccl: $k: would run make -C $out/src-$k -j$jobs src.build BUILDDIR=$out/$k NVCC_GENCODE=\"$gencode\""
  done
  echo "build_nccl: check only: sources ready, nothing built"
  exit 0
fi

# A make that was killed (not stopped) can leave a half-written file newer than its source, which a second make would
# take as done. A marker lives while make runs: finding it means the last run was killed, and the files written in
# its last two minutes are removed so that make writes them again.
recover_killed() {
  local kind="$1" marker="$out/$1.building" newest cutoff t f n=0
  [ -f "$marker" ] || return 0
  newest="$(find "$out/$kind" -type f -newer "$marker" -printf '%T@\n' 2>/dev/null | sort -n | tail -n 1)"
  if [ -n "$newest" ]; then
    cutoff=$((${newest%.*} - 120))
    while read -r t f; do
      if ((${t%.*} >= cutoff)); then
        rm -f "$f"
        n=$((n + 1))
      fi
    done < <(find "$out/$kind" -type f -newer "$marker" -printf '%T@ %p\n')
  fi
  echo "build_nccl: $kind: the last make was killed; removed $n files it wrote in its last two minutes"
  rm -f "$marker"
}

# Returns 0 when built, 3 when stopped by --stop-after (run again to continue), 1 when make failed.
build() {
  local kind="$1" j="$2" log="$out/$1.log" rc=0
  local cmd=(make -C "$out/src-$kind" -j"$j" src.build BUILDDIR="$out/$kind" NVCC_GENCODE="$gencode")
  [ -z "${CUDA_HOME:-}" ] || cmd+=(CUDA_HOME="$CUDA_HOME")
  # timeout's SIGTERM makes make stop its jobs and delete the files they were writing
  [ -z "$stop_after" ] || cmd=(timeout "$stop_after" "${cmd[@]}")
  recover_killed "$kind"
  echo "build_nccl: $kind: make -j$j${stop_after:+, stopping after $stop_after s} (log: $log)"
  touch "$out/$kind.building"
  # GIT_CEILING_DIRECTORIES keeps NCCL's version header from describing a repository around $out.
  GIT_CEILING_DIRECTORIES="$out" "${cmd[@]}" >>"$log" 2>&1 || rc=$?
  rm -f "$out/$kind.building"
  if [ -n "$stop_after" ] && ((rc == 124)); then
    echo "build_nccl: $kind: stopped after $stop_after s; run the same command again to continue"
    return 3
  elif ((rc != 0)); then
    tail -n 30 "$log" >&2
    echo "build_nccl: $kind: make failed (status $rc); the end of $log is above" >&2
    return 1
  fi
  verify_lib "$kind"
}

# NCCL's own headers must be the ones its files include. Some CUDA toolkits (and containers built on them) carry an
# NCCL of their own in $CUDA_HOME/include, and NCCL's host files, which put that folder on their include path, would
# then take its older nccl.h or nccl_device/ (seen: 'NCCL_GIN_MAX_CONNECTIONS' was not declared). Build against the
# toolkit without them: a folder of links to everything else in it.
toolkit="${CUDA_HOME:-/usr/local/cuda}"
if compgen -G "$toolkit/include/nccl*" >/dev/null; then
  shadow="$out/cuda-without-nccl"
  rm -rf "$shadow"
  mkdir -p "$shadow/include"
  for f in "$toolkit"/*; do [ "$(basename "$f")" = include ] || ln -s "$f" "$shadow/"; done
  for f in "$toolkit"/include/*; do
    case "$(basename "$f")" in nccl*) ;; *) ln -s "$f" "$shadow/include/" ;; esac
  done
  echo "build_nccl: $toolkit/include carries NCCL headers of its own:" \
    "building with CUDA_HOME=$shadow, the toolkit without them"
  CUDA_HOME="$shadow"
fi

start=$SECONDS
if ((parallel)) && ((${#kinds[@]} == 2)); then
  half=$(((jobs + 1) / 2))
  build stock "$half" &
  stock_pid=$!
  build patched "$half" &
  patched_pid=$!
  rc=0
  wait "$stock_pid" || rc=$?
  wait "$patched_pid" || { r=$?; ((rc == 1)) || rc=$r; }
  ((rc == 0)) || exit "$rc"
else
  for k in "${kinds[@]}"; do
    rc=0
    build "$k" "$jobs" || rc=$?
    ((rc == 0)) || exit "$rc"
  done
fi
echo "build_nccl: built in $((SECONDS - start)) s for $arch"
for k in "${kinds[@]}"; do echo "$k: $out/$k/lib/libnccl.so.2"; done
