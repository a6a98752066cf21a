#!/usr/bin/env bash
# NVIDIA's nccl-tests against the series: stock NCCL as the control and the patched library, in one call, on the GPUs
# of one node (several ranks on one GPU where the node has one: NCCL >= 2.30 with NCCL_MULTI_RANK_GPU_ENABLE=1).
#   nccl_tests.sh build SRC MPI OUT      nccl-tests (SRC: its git checkout, folder or tarball) built with MPI
#                                        (MPI: Open MPI's PyPI wheel, or a prefix with bin/mpicc) into OUT
#   nccl_tests.sh run TESTS STOCK PATCHED OUT [PLAN...]
#                                        TESTS: the folder build made; STOCK, PATCHED: libnccl.so.2 paths;
#                                        MPI (a wheel or prefix) replaces the one build used
# PLAN (default: alone mixed): alone = every collective, -c 1, at RANKS (2 4 8) ranks, NCCL_RUNTIME_CONNECT 0 and 1,
# with stock, patched, and patched with its regions off (NCCL_P2P_PEER_REGION=0; ALONE_MODES picks: stock patched off); mixed = stock and patched ranks in
# one job (even ranks one library, odd ranks the other, both ways), every collective, -c 1, at MIXED_RANKS (2 4 8);
# sanitize = compute-sanitizer memcheck over stock's and the patched library's SANITIZE_COLLECTIVES (default all_reduce)
# at 2 ranks, counting per run the CUDA API calls that returned an error and the memory errors reported.
# Every run is bounded (RUN_TIMEOUT seconds, default 120: a hung collective is killed and reported as a hang), runs
# JOBS at a time (default 3) and is logged in OUT/logs/. OUT/results.tsv holds one line per run and the script ends
# with one table: collective x ranks x mode -> pass / wrong / error / hang. It exits 1 when a run is not a pass.
# Environment: COLLECTIVES (default: the 11 programs), GPU (default 0), SIZES (nccl-tests -b/-e/-f, default "-b 8 -e 16M -f 8"), NVCC_GENCODE (build; default
# sm_90), RANK_ENV (VAR=VALUE words every rank of every run gets, e.g. NCCL_MAX_NCHANNELS=16 where a GPU cannot hold
# the ranks' buffers; each run's log names them). NCCL_NVLS_ENABLE=0 always: never NVLink multicast on a shared node.
set -uo pipefail
export NCCL_NVLS_ENABLE=0
read -r -a collectives <<<"${COLLECTIVES:-all_reduce all_gather broadcast reduce_scatter reduce alltoall alltoallv scatter gather sendrecv hypercube}"
die() {
  echo "nccl_tests.sh: $*" >&2
  exit 2
}

# The MPI prefix inside an unpacked Open MPI wheel, or MPI itself when it is a prefix
mpi_prefix() {
  local mpi=$1 dir
  if [ -f "$mpi" ]; then
    dir=${MPI_UNPACK:-/tmp/nccl-tests-mpi}
    if [ ! -x "$dir/bin/mpirun" ]; then
      rm -rf "$dir.tmp" && mkdir -p "$dir.tmp" &&
        python3 -m zipfile -e "$mpi" "$dir.tmp" || die "$mpi: not a wheel (give Open MPI's PyPI wheel or a prefix)"
      local data
      data=$(find "$dir.tmp" -maxdepth 3 -type d -path '*.data/data' | head -n 1)
      [ -n "$data" ] && [ -f "$data/bin/mpirun" ] || die "$mpi: no bin/mpirun in the wheel's data"
      chmod -R u+x "$data/bin" # zip archives keep no modes
      rm -rf "$dir" && mv "$data" "$dir" && rm -rf "$dir.tmp"
    fi
    mpi=$dir
  fi
  [ -x "$mpi/bin/mpirun" ] && [ -f "$mpi/include/mpi.h" ] || die "$mpi: no bin/mpirun and include/mpi.h (an MPI prefix)"
  (cd "$mpi" && pwd -P) # the real folder: run links TESTS/mpi to it
}

build() {
  local src=${1:?usage: nccl_tests.sh build SRC MPI OUT} mpi=${2:?usage: nccl_tests.sh build SRC MPI OUT}
  local out=${3:?usage: nccl_tests.sh build SRC MPI OUT} tree
  mpi=$(mpi_prefix "$mpi") || exit 2
  mkdir -p "$out" && out=$(cd "$out" && pwd)
  tree="$out/src-tree"
  if [ ! -f "$tree/src/common.cu" ]; then
    rm -rf "$tree" && mkdir -p "$tree"
    if [ -d "$src/.git" ] || [ -f "$src/HEAD" ]; then
      git -C "$src" archive --format=tar HEAD | tar -x -C "$tree" || die "$src: git archive failed"
    elif [ -d "$src" ]; then
      cp -r "$src/." "$tree/"
    else
      tar -xf "$src" -C "$tree" --strip-components=1 --no-same-owner || die "$src: not a tarball of nccl-tests"
    fi
    [ -f "$tree/src/common.cu" ] || die "$src: no src/common.cu (not nccl-tests)"
  fi
  # nccl.h: NCCL_HOME if given, else the CUDA toolkit's; each rank loads the NCCL it is given at run time
  local nccl_home=${NCCL_HOME:-}
  if [ -z "$nccl_home" ]; then
    nccl_home="$out/nccl-home"
    mkdir -p "$nccl_home/include" "$nccl_home/lib"
    cp "${CUDA_HOME:-/usr/local/cuda}/include/nccl.h" "$nccl_home/include/" || die "no nccl.h: set NCCL_HOME"
    cp -P "${CUDA_HOME:-/usr/local/cuda}"/lib64/libnccl.so* "$nccl_home/lib/" 2>/dev/null ||
      cp -P "${CUDA_HOME:-/usr/local/cuda}"/lib/libnccl.so* "$nccl_home/lib/" || die "no libnccl.so to link: set NCCL_HOME"
  fi
  make -C "$tree" -j "${JOBS:-$(nproc)}" MPI=1 MPI_HOME="$mpi" NCCL_HOME="$nccl_home" DSO=1 \
    NVCC_GENCODE="${NVCC_GENCODE:--gencode=arch=compute_90,code=sm_90}" \
    BUILDDIR="$out/build" >"$out/build.log" 2>&1 || {
    tail -n 20 "$out/build.log" >&2
    die "the build failed (log: $out/build.log)"
  }
  # The CUDA runtime travels with the programs (a GPU node may have none on its loader's path)
  cp -P "${CUDA_HOME:-/usr/local/cuda}"/lib64/libcudart.so* "$out/build/" || die "no libcudart.so in CUDA_HOME/lib64"
  ln -sfn "$mpi" "$out/mpi"
  git -C "$src" rev-parse HEAD >"$out/commit" 2>/dev/null || echo "$src" >"$out/commit"
  ls "$out/build/"*_perf >/dev/null || die "no *_perf programs in $out/build"
  echo "nccl-tests built in $out/build ($(ls "$out/build/"*_perf | wc -l) programs, MPI $mpi)"
}

# One job: NAME LIBS RANKS COLLECTIVE ENV...; LIBS is one library, or two given to even and odd ranks
run_one() {
  local name=$1 libs=$2 ranks=$3 coll=$4
  shift 4
  local log="$logs/$name.log" rc verdict e
  local env=(-x NCCL_NVLS_ENABLE=0 -x NCCL_MULTI_RANK_GPU_ENABLE=1 -x NCCL_TESTS_DEVICE=0 -x CUDA_VISIBLE_DEVICES="${GPU:-0}")
  local extra
  read -r -a extra <<<"${RANK_ENV:-}"
  set -- "${extra[@]}" "$@"
  [[ " $* " == *" NCCL_DEBUG="* ]] || env+=(-x NCCL_DEBUG=WARN)
  for e in "$@"; do env+=(-x "$e"); done
  echo "$name: $libs, $ranks ranks, $coll, $*" >"$log"
  # shellcheck disable=SC2086
  timeout -k 5 "${RUN_TIMEOUT:-120}" "$tests/mpi/bin/mpirun" --allow-run-as-root --oversubscribe -np "$ranks" \
    "${env[@]}" "$here/nccl_tests_rank.sh" "$libs" "$tests/build/${coll}_perf" ${SIZES:--b 8 -e 16M -f 8} \
    -c 1 -n 1 -w 1 -g 1 >>"$log" 2>&1
  rc=$?
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    verdict=hang
  elif grep -q "Out of bounds values : 0 OK" "$log" && [ $rc -eq 0 ]; then
    verdict=pass
  elif grep -qE "Out of bounds values : [1-9][0-9]* FAILED" "$log"; then
    verdict=wrong
  else
    verdict=error
  fi
  printf '%s\t%s\t%s\t%s\t%s\n' "$coll" "$ranks" "$mode" "$verdict" "$name" >>"$out/results.tsv"
}

run() {
  tests=${1:?usage: nccl_tests.sh run TESTS STOCK PATCHED OUT [PLAN...]}
  local stock=${2:?usage} patched=${3:?usage}
  out=${4:?usage: nccl_tests.sh run TESTS STOCK PATCHED OUT [PLAN...]}
  shift 4
  local plan=("$@")
  [ ${#plan[@]} -gt 0 ] || plan=(alone mixed)
  here=$(cd "$(dirname "$0")" && pwd)
  tests=$(cd "$tests" && pwd) || die "$tests: no such folder (run build first)"
  [ -x "$tests/build/all_reduce_perf" ] || die "$tests: no build/all_reduce_perf (run build first)"
  for lib in "$stock" "$patched"; do [ -f "$lib" ] || die "$lib: no such library"; done
  export OPAL_PREFIX PRTE_PREFIX PMIX_PREFIX
  OPAL_PREFIX=$(mpi_prefix "${MPI:-$tests/mpi}") || exit 2
  ln -sfn "$OPAL_PREFIX" "$tests/mpi"
  PRTE_PREFIX=$OPAL_PREFIX PMIX_PREFIX=$OPAL_PREFIX
  export LD_LIBRARY_PATH="$OPAL_PREFIX/lib:$tests/build/verifiable:$tests/build:${LD_LIBRARY_PATH:-}"
  mkdir -p "$out/logs" && logs="$out/logs"
  : >"$out/results.tsv"
  local jobs=${JOBS:-3} n=0 k rc coll
  queue() { # MODE NAME LIBS RANKS COLL ENV...
    mode=$1
    shift
    run_one "$@" &
    n=$((n + 1))
    if [ $n -ge "$jobs" ]; then
      wait -n
      n=$((n - 1))
    fi
  }
  for step in "${plan[@]}"; do
    echo "== $step $(date +%T)"
    case $step in
    alone)
      # Interleaved: each collective and rank count runs every mode (ALONE_MODES, default all three) before the next
      local modes=${ALONE_MODES:-stock patched off}
      for k in ${RANKS:-2 4 8}; do
        for rc in ${RUNTIME_CONNECT_VALUES:-0 1}; do
          for coll in "${collectives[@]}"; do
            [[ " $modes " == *" stock "* ]] &&
              queue "stock rc=$rc" "stock-$k-rc$rc-$coll" "$stock" "$k" "$coll" NCCL_RUNTIME_CONNECT=$rc
            [[ " $modes " == *" patched "* ]] &&
              queue "patched rc=$rc" "patched-$k-rc$rc-$coll" "$patched" "$k" "$coll" NCCL_RUNTIME_CONNECT=$rc
            [[ " $modes " == *" off "* ]] &&
              queue "patched,regions-off rc=$rc" "off-$k-rc$rc-$coll" "$patched" "$k" "$coll" \
                NCCL_RUNTIME_CONNECT=$rc NCCL_P2P_PEER_REGION=0
          done
        done
      done
      ;;
    mixed)
      for k in ${MIXED_RANKS:-2 4 8}; do
        for coll in "${collectives[@]}"; do
          queue "mixed stock,patched" "mixed-sp-$k-$coll" "$stock,$patched" "$k" "$coll" NCCL_DEBUG=INFO \
            NCCL_DEBUG_SUBSYS=INIT
          queue "mixed patched,stock" "mixed-ps-$k-$coll" "$patched,$stock" "$k" "$coll" NCCL_DEBUG=INFO \
            NCCL_DEBUG_SUBSYS=INIT
        done
      done
      ;;
    sanitize)
      mode="compute-sanitizer memcheck"
      local sanitizer
      sanitizer=$(command -v compute-sanitizer || echo "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer")
      [ -x "$sanitizer" ] || die "no compute-sanitizer (PATH or CUDA_HOME/bin)"
      # Stock is the control: memcheck also counts CUDA API calls that returned an error, which NCCL's own probing
      # makes on both; a memory access error is what would be the patch's
      for coll in ${SANITIZE_COLLECTIVES:-all_reduce}; do
        for k in stock patched; do
          lib=$stock
          [ $k = patched ] && lib=$patched
          RUN_TIMEOUT=${SANITIZE_TIMEOUT:-500} queue "memcheck $k" "sanitize-$k-2-$coll" "$lib" 2 "$coll" \
            NCCL_RUNTIME_CONNECT=1 "NCCL_TESTS_SANITIZER=$sanitizer --tool memcheck --error-exitcode 3"
        done
      done
      wait
      for f in "$logs"/sanitize-*.log; do
        echo "$(basename "$f" .log): $(grep -c "Program hit" "$f") CUDA API calls returned an error," \
          "$(grep -cE "^========= (Invalid|Out-of-range|Misaligned|Address|Malloc/Free|Memory leak)" "$f")" \
          "memory errors; $(grep -h "ERROR SUMMARY" "$f" | sort | uniq -c | tr -s ' ' | paste -sd';')"
      done
      ;;
    *) die "$step: unknown plan step (alone, mixed, sanitize)" ;;
    esac
    wait
    n=0
  done
  wait
  table
}

# collective x ranks x mode -> verdict, from results.tsv
table() {
  python3 - "$out/results.tsv" <<'EOF'
import collections, sys
rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1]) if line.strip()]
modes = list(dict.fromkeys(r[2] for r in rows))
cells = collections.defaultdict(dict)
for coll, ranks, mode, verdict, _ in rows:
    cells[(coll, int(ranks))][mode] = verdict
print("| collective | ranks | " + " | ".join(modes) + " |")
print("|---|---:|" + "---|" * len(modes))
for (coll, ranks) in sorted(cells, key=lambda k: (k[1], k[0])):
    print(f"| {coll} | {ranks} | " + " | ".join(cells[(coll, ranks)].get(m, "") for m in modes) + " |")
count = collections.Counter(r[3] for r in rows)
print(f"\n{len(rows)} runs: " + ", ".join(f"{v} {count[v]}" for v in ("pass", "wrong", "error", "hang")))
sys.exit(0 if count["pass"] == len(rows) else 1)
EOF
}

case "${1:-}" in
build) shift && build "$@" ;;
run) shift && run "$@" ;;
*) die "usage: nccl_tests.sh build SRC MPI OUT | run TESTS STOCK PATCHED OUT [PLAN...]" ;;
esac
