#!/usr/bin/env bash
# One rank of an nccl-tests job run by nccl_tests.sh: LIBS is one libnccl.so.2 for every rank, or two given in turn
# (even ranks the first, odd ranks the second: a mixed job); the rank's number comes from Open MPI.
#   nccl_tests_rank.sh LIBS PROGRAM ARGS...
# NCCL_TESTS_SANITIZER, when set, is the compute-sanitizer command line the program runs under.
set -euo pipefail
libs=${1:?usage: nccl_tests_rank.sh LIBS PROGRAM ARGS...}
shift
rank=${OMPI_COMM_WORLD_RANK:?not started by Open MPI}
IFS=, read -r -a list <<<"$libs"
lib=${list[$((rank % ${#list[@]}))]}
echo "rank $rank: NCCL $lib" >&2
export LD_PRELOAD="$lib${LD_PRELOAD:+:$LD_PRELOAD}"
export LD_LIBRARY_PATH="$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# shellcheck disable=SC2086
exec ${NCCL_TESTS_SANITIZER:-} "$@"
