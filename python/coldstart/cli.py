"""The coldstart binary this package drives: $COLDSTART_BIN, else the one installed inside the package (a wheel puts
it in coldstart/_bin), else `coldstart` on PATH that is not this package's own launcher."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))


def binary() -> str:
    env = os.environ.get("COLDSTART_BIN")
    if env:
        return env
    inside = os.path.join(HERE, "_bin", "coldstart")
    if os.access(inside, os.X_OK):
        return inside
    found = shutil.which("coldstart")
    if found and _is_executable_binary(found):  # not a launcher script (this package's own console script)
        return found
    raise FileNotFoundError(
        "coldstart's binary was not found: install the wheel (pip install . in coldstart's repository), or build "
        "it (scripts/build.sh build) and set COLDSTART_BIN to build/coldstart"
    )


def _is_executable_binary(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def doctor(*args: str) -> dict[str, Any]:
    """coldstart doctor's findings for this node and process, as its --json prints them ("facts", "findings")."""
    out = subprocess.run([binary(), "doctor", "--json", *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip() or "coldstart doctor failed")
    return json.loads(out.stdout)
