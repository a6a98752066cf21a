#!/usr/bin/env bash
# The wheel as a user gets it: built (scripts/wheel.sh; from BUILD_DIR when given, as scripts/test.sh gives the folder
# its tests ran), its platform tag checked (manylinux_2_28 or older),
# installed into a fresh virtual environment, and run from outside the source tree with only the installed files: the
# binary through PATH and `python -m coldstart`, the Python API on a committed results file, and the Python suite
# against the installed package. The environment sees the system's site-packages for Ray and pytest, never this tree's python/.
#   scripts/wheel_test.sh [BUILD_DIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build_dir="${1:-}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$root/scripts/wheel.sh" "$work/dist" ${build_dir:+"$build_dir"}
wheel="$(ls "$work"/dist/coldstart-*.whl)"
python3 -m auditwheel show "$wheel"
# manylinux_2_28 or older: the glibc of RHEL/Rocky 8 and Ubuntu 20.04, and of PyTorch's own wheels.
glibc_minor="$(basename "$wheel" | sed -nE 's/.*-manylinux_2_([0-9]+)_x86_64[.].*/\1/p')"
if [ -z "$glibc_minor" ] || ((glibc_minor > 28)); then
  echo "wheel_test: $(basename "$wheel") is not manylinux_2_28 or older; a binary needs a newer glibc symbol" \
    "(python3 -m auditwheel show names it)" >&2
  exit 1
fi
echo "wheel_test: $(basename "$wheel") installs on glibc >= 2.$glibc_minor"
python3 -m venv --system-site-packages "$work/venv"
"$work/venv/bin/python" -m pip install -q --no-index --no-deps "$wheel"
cd "$work"
unset COLDSTART_BIN COLDSTART_PYTHONPATH COLDSTART_PYTHON PYTHONPATH
export PATH="$work/venv/bin:$PATH"
set -x
[ "$(command -v coldstart)" = "$work/venv/bin/coldstart" ]
# One version: the wheel's metadata and the binary's, both from CMakeLists.txt.
[ "$(coldstart --version)" = "$(python -c 'import importlib.metadata as m; print(m.version("coldstart"))')" ]
coldstart doctor --json | python -c 'import json, sys; d = json.load(sys.stdin); assert d["findings"] is not None'
coldstart bench --dry-run --gpus 2 --trials 1
# The torch probe from the package inside the wheel (torch itself: the suite's stand-in; this machine has no GPU).
PYTHONPATH="$root/python/tests/fake_torch" coldstart bench --dry-run --gpus 2 --trials 1 --worker torch
coldstart trace --out "$work/trace" -- python -c 'pass'
# nccl build from the wheel: the series and build_nccl.sh installed beside the binary, found there and whole (its
# plan names them; build_nccl.sh's own check of the series passes on the installed copy)
share="$(python -c 'import coldstart, os; print(os.path.dirname(coldstart.__file__))')/share/coldstart"
coldstart nccl build --dry-run --version 2.30.7 --arch 90 --cache-dir "$work/nccl-cache" | tee "$work/nccl-plan.txt"
grep -qF "installed beside the binary: $share)" "$work/nccl-plan.txt"
bash "$share/scripts/build_nccl.sh" --check-series
coldstart nccl list --cache-dir "$work/nccl-cache"
python -m coldstart --help
python - "$root/docs/results/2026-11-30-h200x2/default.json" <<'PY'
import sys

import coldstart

run = coldstart.load(sys.argv[1])
assert "site-packages" in coldstart.__file__, coldstart.__file__
assert len(run.trials) == 30 and "<html" in run._repr_html_()
print(run, "- first trial ready in", run.trials[0].ready_ms, "ms")
PY
COLDSTART_TEST_INSTALLED=1 python -m pytest -q -p no:cacheprovider "$root/python/tests"
