#!/usr/bin/env bash
# Builds NCCL twice from one source: stock, and with the patch series in nccl/ applied (docs/nccl-patch.md).
#   scripts/build_nccl.sh --src SRC [--out DIR] [--which stock|patched|both] [--parallel] [--arch 90[,100..]]
#                         [--jobs N] [--stop-after SECONDS] [--version 2.30.7|2.28.9] [--check-only] [--series DIR]
#                         [--seed-from DIR]
#   scripts/build_nccl.sh --check-series     check nccl/series, its patch files and source hashes (no NCCL source)
# SRC is an NCCL git repository (the release tag's commit is exported with git archive, whatever is checked out),
# a tarball made by git archive (GitHub's release tarballs are), or an unpacked source tree; anything but the
# release the series is written for is refused: its files must hash to what nccl/v<version>/source-tree records, and
# a tarball may hold files, folders and links inside itself only. Outputs DIR/stock/lib/libnccl.so.2 and
# DIR/patched/lib/libnccl.so.2 (DIR defaults to ./build-nccl; it must be new, empty, or made by this script, which
# marks the folders it makes and never removes one without its mark). Running it again continues make in the same
# folders, so a build cut short by a time limit resumes (--stop-after stops make cleanly before such a limit, exit
# status 3; Ctrl-C or SIGTERM stops it as cleanly, exit status 130); changed patches start the patched tree over.
# A build that starts from nothing starts from a finished build of the same source and architectures where there is
# one: the other library of --which both (built first), or one in --seed-from DIR (another --out of this script: the
# cache's other entry of the release). Its objects are copied and make compiles only the files that differ and what
# includes them: the series touches headers most host files include, but only one of NCCL's device files, the costly
# ones, so the second library costs the host files' share of a build.
# --series takes the patches from another folder laid out as nccl/ (tests use it). Bad input is refused in one line,
# exit status 2.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
series_dir="$root/nccl"

# The releases the series is written for: version -> tag and commit.
declare -A release_tag=([2.30.7]=v2.30.7-1 [2.28.9]=v2.28.9-1)
declare -A release_commit=([2.30.7]=73cf112295c33aee2b895f329f592f2a9b4b0f97 [2.28.9]=dbc86fd06e8b0c4517b95d8958a09ccacf9520c9)

# The file this script writes into every folder it makes; it removes no folder that lacks it.
mark=".coldstart-build-nccl"
mark_text="Made by coldstart's scripts/build_nccl.sh, which removes only folders holding this file."

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
die() {
  echo "build_nccl: $*" >&2
  exit 2
}
# The first line of file $1 that says something (gzip starts its error with an empty line), else what happened.
reason() { grep -m 1 -v '^[[:space:]]*$' "$1" 2>/dev/null || echo "it said nothing on stderr"; }
# A flag's value must be there and not be empty.
need() { [ -n "$2" ] || die "$1 needs $3"; }

src="" out="build-nccl" which="both" parallel=0 arch="90" jobs="" version="2.30.7" check_only=0 check_series=0
stop_after="" seed_from=""
while (($#)); do
  case "$1" in
    --src) need "$1" "${2:-}" "a path"; src="$2"; shift 2 ;;
    --out) need "$1" "${2:-}" "a folder"; out="$2"; shift 2 ;;
    --which) need "$1" "${2:-}" "stock, patched or both"; which="$2"; shift 2 ;;
    --parallel) parallel=1; shift ;;
    --arch) need "$1" "${2:-}" "a list such as 90,100"; arch="$2"; shift 2 ;;
    --jobs) need "$1" "${2:-}" "a number"; jobs="$2"; shift 2 ;;
    --stop-after) need "$1" "${2:-}" "seconds"; stop_after="$2"; shift 2 ;;
    --version) need "$1" "${2:-}" "a release such as 2.30.7"; version="$2"; shift 2 ;;
    --check-only) check_only=1; shift ;;
    --check-series) check_series=1; shift ;;
    --series) need "$1" "${2:-}" "the folder holding series and the patches"; series_dir="$2"; shift 2 ;;
    --seed-from) need "$1" "${2:-}" "a folder"; seed_from="$2"; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done

# The series check. --check-series lists every problem (exit status 1); a build runs the same check first and stops
# at the first problem (exit status 2), so that only a series that passes is ever used. It keeps the lines that
# passed in series_lines: the only patches a build applies.
series_lines=()
series_all=0 series_bad=0
series_problem() {
  if ((series_all)); then
    echo "build_nccl: $*" >&2
    series_bad=1
  else
    die "$* (a series is used only once scripts/build_nccl.sh --check-series passes; it lists every problem)"
  fi
}

# Reads nccl/v<version>/source-tree, what the source of that release must hash to: sets tree_commit, tree_entries and
# tree_sha256, or reports a problem and returns 1.
read_source_tree() {
  local v="$1" f="$series_dir/$1/source-tree" real
  tree_commit="" tree_entries="" tree_sha256=""
  if [ ! -f "$f" ]; then
    series_problem "nccl/$v has no source-tree file (the hash of the NCCL source its patches apply to)"
    return 1
  fi
  real="$(realpath -e -- "$f")"
  case "$real" in "$series_dir"/*) ;; *)
    series_problem "nccl/$v/source-tree leads outside the series folder (to $real)"
    return 1
    ;;
  esac
  local key value
  while read -r key value; do
    case "$key" in commit) tree_commit="$value" ;; entries) tree_entries="$value" ;; sha256) tree_sha256="$value" ;; esac
  done <"$f"
  if ! [[ "$tree_commit" =~ ^[0-9a-f]{40}$ && "$tree_entries" =~ ^[1-9][0-9]*$ &&
    "$tree_sha256" =~ ^[0-9a-f]{64}$ ]]; then
    series_problem "nccl/$v/source-tree needs lines 'commit <40 hex digits>', 'entries <count>'" \
      "and 'sha256 <64 hex digits>'"
    return 1
  fi
  local known="${release_commit[${v#v}]:-}"
  if [ -n "$known" ] && [ "$tree_commit" != "$known" ]; then
    series_problem "nccl/$v/source-tree is for commit $tree_commit; the release is $known"
    return 1
  fi
}

# Every line of the series names a patch file inside the series folder, with its DEP-3 header and a diff; every patch
# file is listed, but those in diag/ (applied by hand for a measurement, never part of the series: nccl/diag/README.md)
# and in next/ (candidates that join the series once measured: nccl/next/README.md);
# every release folder has its source-tree file.
check_series_files() {
  local n=0 line f real field v body header
  local -A releases=() listed=()
  series_lines=()
  [ -f "$series_dir/series" ] || die "no series file at $series_dir/series"
  while IFS= read -r line; do
    line="${line%"${line##*[![:space:]]}"}"
    [[ -z "$line" || "$line" == \#* ]] && continue
    n=$((n + 1))
    listed[$line]=1
    f="$series_dir/$line"
    if [[ ! "$line" =~ ^v[0-9]+\.[0-9]+\.[0-9]+/[0-9]{4}-[A-Za-z0-9._-]+\.patch$ ]]; then
      series_problem "nccl/series: '$line' is not v<version>/NNNN-name.patch"
      continue
    fi
    if [ ! -f "$f" ]; then
      series_problem "nccl/series lists $line, which does not exist"
      continue
    fi
    real="$(realpath -e -- "$f")"
    case "$real" in "$series_dir"/*) ;; *)
      series_problem "nccl/series lists $line, which leads outside the series folder (to $real)"
      continue
      ;;
    esac
    body=$'\n'"$(<"$f")"
    # DEP-3 fields come before the first diff
    header="${body%%$'\n'diff --git *}"
    for field in Description Author Forwarded Last-Update Applies-To; do
      [[ "$header" == *$'\n'"$field: "[^$'\n']* ]] ||
        series_problem "nccl/$line has no DEP-3 '$field:' line before its diff"
    done
    # NVIDIA's CONTRIBUTING asks every commit to be signed off (the Developer Certificate of Origin)
    [[ "$header" =~ $'\n'"Signed-off-by: "[^$'\n'\<]+" <"[^$'\n'\>@]+@[^$'\n'\>]+">" ]] ||
      series_problem "nccl/$line has no 'Signed-off-by: Name <email>' line before its diff"
    [[ "$body" == *$'\n''diff --git a/'* && "$body" == *$'\n''+++ b/'* ]] ||
      series_problem "nccl/$line holds no diff for patch -p1"
    series_lines+=("$line")
    releases[${line%%/*}]=1
  done <"$series_dir/series"
  while IFS= read -r f; do
    line="${f#"$series_dir/"}"
    [ -n "${listed[$line]:-}" ] || series_problem "nccl/$line is not listed in nccl/series"
  done < <(find "$series_dir" \( -path "$series_dir/diag" -o -path "$series_dir/next" \) -prune -o -name '*.patch' -print |
    sort)
  ((n > 0)) || series_problem "nccl/series lists no patch"
  for v in $(printf '%s\n' "${!releases[@]}" | sort -V); do read_source_tree "$v" || true; done
  ((series_bad == 0)) || exit 1
  if ((series_all)); then
    echo "build_nccl: nccl/series: $n patches, each with its DEP-3 header and a diff;" \
      "source hashes for $(printf '%s\n' "${!releases[@]}" | sort -V | paste -sd, -)"
  fi
}

# The patch files of one release, in series order: the lines of the series under "v<version>/" that passed the check.
series_patches() {
  local line
  for line in ${series_lines[@]+"${series_lines[@]}"}; do
    [[ "$line" != "v$1/"* ]] || echo "$line"
  done
}

[ -d "$series_dir" ] || die "--series $series_dir is not a folder"
series_dir="$(cd "$series_dir" && pwd -P)"

if ((check_series)); then
  series_all=1
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
check_series_files
[ -n "$(series_patches "$version")" ] || die "nccl/series has no patch for $version"
read_source_tree "v$version"

# --out must be new, empty, or made by this script (it holds the mark): the script removes and replaces folders in
# it, and must never take a folder of someone else's (/, a home folder) for its own. Checked before anything is
# written anywhere.
if [ -e "$out" ] && [ ! -d "$out" ]; then
  die "--out $out is a file, not a folder: give a new folder (or one this script made)"
elif [ -d "$out" ] && [ ! -f "$out/$mark" ]; then
  first="$(find "$out" -mindepth 1 -maxdepth 1 -print -quit 2>/dev/null)" ||
    die "--out $out cannot be read: give a new folder (or one this script made)"
  [ -z "$first" ] ||
    die "--out $out is not empty and was not made by this script (no $mark in it; it holds $(basename "$first")," \
      "...): give a new or empty folder; this script writes and removes folders there"
fi
[ -n "$src" ] || die "--src is needed: an NCCL git repository, a git archive tarball or an unpacked source tree"
[ -e "$src" ] || die "--src $src does not exist"
src="$(cd "$(dirname "$src")" && pwd -P)/$(basename "$src")"
if [ ! -d "$out" ]; then
  err="$(mkdir -p -- "$out" 2>&1)" || die "--out $out cannot be made (${err##*: }): give a folder you can write"
fi
out="$(cd "$out" && pwd -P)"
if [ ! -f "$out/$mark" ]; then
  { echo "$mark_text" >"$out/$mark"; } 2>/dev/null || die "--out $out cannot be written: give a folder you can write"
fi

# --seed-from names where a finished build may be; a folder that is not there is no error (nothing to start from)
[ -z "$seed_from" ] || seed_from="$(cd "$seed_from" 2>/dev/null && pwd -P)" || seed_from=""

tag="${release_tag[$version]}"
commit="${release_commit[$version]}"

# Makes folder $1 for this script (with the mark), or takes it as it is where the mark is there already. A folder
# without the mark is taken only when empty.
make_ours() {
  local d="$1"
  if [ -L "$d" ] || { [ -e "$d" ] && [ ! -d "$d" ]; }; then
    die "$d is in the way and was not made by this script: move it away and run again"
  elif [ -d "$d" ]; then
    [ ! -f "$d/$mark" ] || return 0
    [ -z "$(find "$d" -mindepth 1 -maxdepth 1 -print -quit)" ] ||
      die "$d was not made by this script (no $mark in it), so it is left alone: move it away and run again"
  else
    mkdir -- "$d"
  fi
  echo "$mark_text" >"$d/$mark"
}

# Removes folder $1, which must be one this script made (it holds the mark); anything else is refused.
remove_ours() {
  local d="$1"
  [ -e "$d" ] || [ -L "$d" ] || return 0
  if [ -L "$d" ] || [ ! -d "$d" ] || [ ! -f "$d/$mark" ]; then
    die "$d was not made by this script (no $mark in it), so it is left alone: move it away and run again"
  fi
  rm -rf -- "$d"
}

# The folder a source is unpacked in before it is checked; removed at exit if a check stopped the script.
staging=""
trap '[ -z "$staging" ] || [ ! -f "$staging/$mark" ] || rm -rf -- "$staging"' EXIT

# Checks that an unpacked tree is the release: makefiles/version.mk must say $version. $2 names the tree in messages.
check_version_mk() {
  local dir="$1" name="${2:-$1}" mk="$1/makefiles/version.mk" got
  [ -f "$mk" ] || die "$name has no makefiles/version.mk: not an NCCL source tree"
  got="$(awk '$1=="NCCL_MAJOR"{a=$3} $1=="NCCL_MINOR"{b=$3} $1=="NCCL_PATCH"{c=$3} END{print a"."b"."c}' "$mk")"
  [ "$got" = "$version" ] || die "$name is NCCL $got (makefiles/version.mk); the series is for $version only"
}

# Checks a tar archive's members before anything is unpacked: files, folders and symbolic links only (no devices,
# FIFOs or hard links), no absolute names, no '..' in a name, and no link that leads outside the tree. Prints the
# first offending member and why, or nothing.
tar_member_problem() {
  LC_ALL=C tar -tvf "$1" --numeric-owner --quoting-style=c | awk '
    # A quoted name as tar -tv --quoting-style=c prints it: "a\"b" (no newline inside; \" and \\ are escapes).
    function quoted(s) { return match(s, /"([^"\\]|\\.)*"/) }
    bad != "" { next }
    {
      t = substr($0, 1, 1)
      if (!quoted($0)) { bad = "an entry that tar lists as: " $0; next }
      name = substr($0, RSTART, RLENGTH); rest = substr($0, RSTART + RLENGTH)
      raw = substr(name, 2, length(name) - 2)
      if (t == "c") { bad = name ", a character device"; next }
      if (t == "b") { bad = name ", a block device"; next }
      if (t == "p") { bad = name ", a FIFO"; next }
      if (t == "h") { bad = name ", a hard link"; next }
      if (t != "-" && t != "d" && t != "l") { bad = name ", an entry of type " t " (not a file, folder or link)"; next }
      if (raw ~ /^\//) { bad = name ", an absolute path"; next }
      n = split(raw, c, "/")
      for (i = 1; i <= n; i++) if (c[i] == "..") { bad = name ", a path with .. in it"; next }
      if (t != "l") next
      if (!quoted(rest)) { bad = name ", a link whose target tar does not list"; next }
      target = substr(rest, RSTART + 1, RLENGTH - 2)
      if (target ~ /^\//) { bad = name ", a link to the absolute path " target; next }
      depth = 0
      for (i = 1; i < n; i++) if (c[i] != "" && c[i] != ".") depth++
      m = split(target, d, "/")
      for (i = 1; i <= m; i++) {
        if (d[i] == "..") { if (--depth < 0) { bad = name ", a link to " target " outside the tree"; next } }
        else if (d[i] != "" && d[i] != ".") depth++
      }
    }
    END { if (bad != "") print bad }'
}

# The identity of a source tree (docs/nccl-patch.md, "Which source"): one line per regular file as sha256sum prints
# it ("<sha256>  ./path"), in byte order of path, then one line "link ./path -> target" per symbolic link in the same
# order. Folders, modes, owners and times are not in it. Its sha256 and its number of lines are what
# nccl/v<version>/source-tree records.
tree_manifest() {
  (
    cd "$1" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0r sha256sum -- &&
      find . -type l -print0 | LC_ALL=C sort -z | while IFS= read -r -d '' l; do
        printf 'link %s -> %s\n' "$l" "$(readlink -- "$l")"
      done
  )
}

# Puts a pristine copy of the release's source in $out/src-$1: the source is turned into one tar archive in a staging
# folder, its members checked, unpacked there without owners, special permissions or special files, checked against
# the series' source-tree hash, and only then moved in place of the old copy.
export_source() {
  local kind="$1" dest="$out/src-$1" stage="$out/.unpack-$1" tarf tree top got problem entries
  remove_ours "$stage"
  make_ours "$stage"
  staging="$stage"
  tarf="$stage/source.tar" tree="$stage/tree"
  mkdir "$tree"
  if [ -d "$src" ] && git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
    got="$(git -C "$src" rev-parse -q --verify "$commit^{commit}" 2>/dev/null || true)"
    [ "$got" = "$commit" ] || die "$src does not hold NCCL $tag (commit $commit); fetch the tag or give another --src"
    git -C "$src" archive --format=tar -o "$tarf" "$commit" 2>"$stage/err" ||
      die "git archive of $commit in $src failed: $(reason "$stage/err")"
  elif [ -f "$src" ]; then
    local cat=cat
    case "$src" in *.gz | *.tgz) cat="gzip -dc" ;; *.xz) cat="xz -dc" ;; *.bz2) cat="bzip2 -dc" ;; esac
    # The commit id git archive writes in the tarball's first header (git get-tar-commit-id reads the same; a GPU
    # node may have no git)
    got="$($cat "$src" 2>/dev/null | head -c 1024 | tr -c '[:alnum:]=\n' '\n' |
      sed -n 's/^comment=\([0-9a-f]\{40\}\)$/\1/p' | head -n 1 || true)"
    [ "$got" = "$commit" ] ||
      die "$src is not a git archive of NCCL $tag (its commit id is '${got:-none}', expected $commit)"
    $cat "$src" >"$tarf" 2>"$stage/err" || die "$src cannot be read or decompressed: $(reason "$stage/err")"
  elif [ -d "$src" ]; then
    check_version_mk "$src"
    # Not NCCL's own build folder, a git folder, this script's files, or an --out inside the tree
    local skip=(--exclude=./build --exclude=./.git --exclude="./$mark" --exclude=./.coldstart-source)
    case "$out" in "$src"/*) skip+=(--exclude="./${out#"$src"/}") ;; esac
    tar -C "$src" "${skip[@]}" -cf "$tarf" . 2>"$stage/err" || die "$src cannot be copied: $(reason "$stage/err")"
  else
    die "--src $src is neither a folder nor a file"
  fi
  problem="$(tar_member_problem "$tarf" 2>"$stage/err")" ||
    die "$src cannot be read as a tar archive: $(reason "$stage/err")"
  [ -z "$problem" ] ||
    die "$src holds $problem: a source holds files, folders and links inside itself only; use the release's own source"
  tar -x -f "$tarf" -C "$tree" --no-same-owner --no-same-permissions 2>"$stage/err" ||
    die "$src cannot be unpacked: $(reason "$stage/err")"
  # No setuid, setgid or sticky bit survives, whatever tar does with them
  find "$tree" ! -type l -perm /7000 -exec chmod ug-s,o-t {} +
  while IFS= read -r -d '' l; do
    case "$(realpath -m -- "$l")/" in "$tree"/*) ;; *)
      die "$src holds the link ${l#"$tree"/} -> $(readlink -- "$l"), which leads outside the tree;" \
        "use the release's own source"
      ;;
    esac
  done < <(find "$tree" -type l -print0)
  # git archive --prefix (GitHub's tarballs) puts everything under one folder: take that folder
  top="$tree"
  if [ ! -f "$tree/makefiles/version.mk" ] && [ "$(find "$tree" -mindepth 1 -maxdepth 1 | wc -l)" = 1 ]; then
    top="$(find "$tree" -mindepth 1 -maxdepth 1 -type d)"
    top="${top:-$tree}"
  fi
  [ -f "$top/makefiles/version.mk" ] || die "$src does not unpack to an NCCL source tree (no makefiles/version.mk)"
  check_version_mk "$top" "$src"
  tree_manifest "$top" >"$stage/manifest" 2>"$stage/err" ||
    die "$src: its files cannot be read: $(reason "$stage/err")"
  entries="$(wc -l <"$stage/manifest")"
  got="$(sha256sum <"$stage/manifest" | cut -c1-64)"
  if [ "$got" != "$tree_sha256" ]; then
    if [ "$entries" != "$tree_entries" ]; then
      problem="it holds $entries files and links, the release $tree_entries"
    else
      problem="it holds as many files and links as the release ($entries), but their names or contents differ"
    fi
    die "$src is not NCCL $tag as released: $problem (tree sha256 $got, nccl/v$version/source-tree says" \
      "$tree_sha256); use the release's own source"
  fi
  echo "$mark_text" >"$top/$mark"
  remove_ours "$dest"
  mv -- "$top" "$dest"
  remove_ours "$stage"
  staging=""
}

series_hash() { (cd "$series_dir" && for p in $(series_patches "$version"); do sha256sum "$p"; done) | sha256sum | cut -c1-16; }

# Makes $out/src-$1 ready to build: exported, patched for "patched", and stamped so that a second run reuses it.
prepare() {
  local kind="$1" dir="$out/src-$1" stamp want p restart=0
  want="commit=$commit tree=$tree_sha256"
  [ "$kind" = patched ] && want+=" series=$(series_hash)"
  stamp="$dir/.coldstart-source"
  if [ -f "$dir/$mark" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    echo "build_nccl: $kind: reusing $dir"
    return
  fi
  if [ -e "$dir" ] || [ -L "$dir" ]; then
    # Refused here, before any work, where it or the build folder is not this script's
    local d
    for d in "$dir" "$out/$kind"; do
      if { [ -e "$d" ] || [ -L "$d" ]; } && { [ -L "$d" ] || [ ! -f "$d/$mark" ]; }; then
        die "$d was not made by this script (no $mark in it), so it is left alone: move it away and run again"
      fi
    done
    echo "build_nccl: $kind: $dir was made from other sources or patches; starting $kind over"
    restart=1
  fi
  export_source "$kind"
  ((restart == 0)) || remove_ours "$out/$kind"
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

# Returns 0 when built, 3 when stopped by --stop-after, 130 when stopped by SIGINT or SIGTERM (run again to continue
# either), 1 when make failed.
build() {
  local kind="$1" j="$2" log="$out/$1.log" rc=0
  local cmd=(make -C "$out/src-$kind" -j"$j" src.build BUILDDIR="$out/$kind" NVCC_GENCODE="$gencode")
  [ -z "${CUDA_HOME:-}" ] || cmd+=(CUDA_HOME="$CUDA_HOME")
  # timeout's SIGTERM makes make stop its jobs and delete the files they were writing
  [ -z "$stop_after" ] || cmd=(timeout "$stop_after" "${cmd[@]}")
  recover_killed "$kind"
  echo "build_nccl: $kind: make -j$j${stop_after:+, stopping after $stop_after s} (log: $log)"
  touch "$out/$kind.building"
  # Ctrl-C (or coldstart nccl build stopping its build) reaches make too, which stops its jobs and deletes the files
  # they were writing, as under --stop-after: once make has returned the folder is whole, and the marker goes.
  local stopped=0
  trap 'stopped=1' INT TERM
  # GIT_CEILING_DIRECTORIES keeps NCCL's version header from describing a repository around $out.
  GIT_CEILING_DIRECTORIES="$out" "${cmd[@]}" >>"$log" 2>&1 || rc=$?
  trap - INT TERM
  rm -f "$out/$kind.building"
  if ((stopped)); then
    echo "build_nccl: $kind: make stopped by a signal; run the same command again to continue"
    return 130
  elif [ -n "$stop_after" ] && ((rc == 124)); then
    echo "build_nccl: $kind: stopped after $stop_after s; run the same command again to continue"
    return 3
  elif ((rc != 0)); then
    tail -n 30 "$log" >&2
    echo "build_nccl: $kind: make failed (status $rc); the end of $log is above" >&2
    return 1
  fi
  verify_lib "$kind"
  echo "$built_want" >"$out/$kind/$built_stamp"
}

# NCCL's own headers must be the ones its files include. Some CUDA toolkits (and containers built on them) carry an
# NCCL of their own in $CUDA_HOME/include, and NCCL's host files, which put that folder on their include path, would
# then take its older nccl.h or nccl_device/ (seen: 'NCCL_GIN_MAX_CONNECTIONS' was not declared). Build against the
# toolkit without them: a folder of links to everything else in it.
toolkit="${CUDA_HOME:-/usr/local/cuda}"
if compgen -G "$toolkit/include/nccl*" >/dev/null; then
  shadow="$out/cuda-without-nccl"
  remove_ours "$shadow"
  make_ours "$shadow"
  mkdir "$shadow/include"
  for f in "$toolkit"/*; do [ "$(basename "$f")" = include ] || ln -s "$f" "$shadow/"; done
  for f in "$toolkit"/include/*; do
    case "$(basename "$f")" in nccl*) ;; *) ln -s "$f" "$shadow/include/" ;; esac
  done
  echo "build_nccl: $toolkit/include carries NCCL headers of its own:" \
    "building with CUDA_HOME=$shadow, the toolkit without them"
  CUDA_HOME="$shadow"
fi

# What a finished build was made from, written into its build folder: a build starts from another only where these
# agree (the device objects are those of the architectures; make itself does not know NVCC_GENCODE).
built_stamp=".coldstart-built"
built_want="commit=$commit tree=$tree_sha256 gencode=$gencode"

# $1 as sed reads it literally between # delimiters: as a pattern, or (with $2) as a replacement
sed_literal() {
  if [ -n "${2:-}" ]; then printf '%s' "$1" | sed 's/[\\&#]/\\&/g'; else printf '%s' "$1" | sed 's/[][\\.*^$#]/\\&/g'; fi
}
# Starts the empty build folder of kind $1 from the finished build $2/$3 (a folder of this script's with $3 built from
# src-$3): its objects are copied, their dependency files rewritten to name the new folder, and every source file of
# src-$1 that differs from src-$3 made newer than them, so that make compiles those files and what includes them and
# links again. Nothing is taken from a folder that is not this script's, whose build is not finished or was made for
# other architectures, or whose objects' folders hold a link (its lib/, links to the library, is not taken).
seed() {
  local kind="$1" from="$2/$3" from_src="$2/src-$3" dir="$out/$1" f n=0
  [ -z "$(find "$dir" -mindepth 1 -maxdepth 1 ! -name "$mark" -print -quit)" ] || return 0
  [ -d "$from" ] && [ ! -L "$from" ] && [ -f "$from/$mark" ] && [ -d "$from_src" ] && [ ! -L "$from_src" ] &&
    [ -f "$from_src/$mark" ] || return 0
  [ "$(cat "$from/$built_stamp" 2>/dev/null)" = "$built_want" ] || return 0
  [ -z "$(find "$from" -path "$from/lib" -prune -o -type l -print -quit)" ] || return 0
  (cd "$from" && tar --exclude=./lib --exclude="./$built_stamp" --exclude="./$mark" -cf - .) | tar -xf - -C "$dir"
  # Each keeps its time: a device object depends on its dependency file too, and a newer one would compile it again
  local pattern
  pattern="s#$(sed_literal "$from/")#$(sed_literal "$dir/" replacement)#g"
  while IFS= read -r -d '' f; do
    sed "$pattern" "$f" >"$f.seeding" && touch -r "$f" "$f.seeding" && mv -f "$f.seeding" "$f"
  done < <(find "$dir" -name '*.d' -type f -print0)
  while IFS= read -r -d '' f; do
    if ! cmp -s "$out/src-$kind/$f" "$from_src/$f"; then
      touch "$out/src-$kind/$f"
      n=$((n + 1))
    fi
  done < <(cd "$out/src-$kind" && find . -type f ! -name "$mark" ! -name .coldstart-source -print0)
  local device host
  device="$(find "$dir/obj/device" -name '*.o' -type f 2>/dev/null | wc -l || true)"
  host=$(($(find "$dir/obj" -name '*.o' -type f 2>/dev/null | wc -l || true) - device))
  # Its make log counts them as compiled (coldstart nccl build's progress reads it)
  echo "Seeded     $host host and $device device objects from $from" >>"$out/$kind.log"
  echo "build_nccl: $kind: starting from the finished $3 build in $2 ($host host and $device device objects):" \
    "$n source file(s) differ, which make compiles with what includes them"
}

# The build folders: make writes there, and a killed make's last files are removed from there.
for k in "${kinds[@]}"; do make_ours "$out/$k"; done
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
    # From the other kind here, else from --seed-from's build of the same kind, else of the other
    for other in stock patched; do [ "$other" = "$k" ] || seed "$k" "$out" "$other"; done
    if [ -n "$seed_from" ]; then
      for other in "$k" stock patched; do seed "$k" "$seed_from" "$other"; done
    fi
    build "$k" "$jobs" || rc=$?
    ((rc == 0)) || exit "$rc"
  done
fi
echo "build_nccl: built in $((SECONDS - start)) s for $arch"
for k in "${kinds[@]}"; do echo "$k: $out/$k/lib/libnccl.so.2"; done
