"""The coldstart binary this package drives: $COLDSTART_BIN, else the one installed inside the package (a wheel puts
it in coldstart/_bin), else `coldstart` on PATH that is not this package's own launcher."""

from __future__ import annotations

import json
import os
import shutil
import stat
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
    """Whether `path` (found on PATH) is an ELF file. Opened without blocking and checked with fstat first, so that a
    FIFO or a device named coldstart on PATH is passed over instead of hanging or being read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode) and os.read(fd, 4) == b"\x7fELF"
    except OSError:
        return False
    finally:
        os.close(fd)


def doctor(*args: str) -> dict[str, Any]:
    """coldstart doctor's findings for this node and process, as its --json prints them ("facts", "findings")."""
    out = subprocess.run([binary(), "doctor", "--json", *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip() or "coldstart doctor failed")
    return json.loads(out.stdout)
