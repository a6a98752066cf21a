"""The coldstart binary this package drives: $COLDSTART_BIN, else the one installed inside the package (a wheel puts
it in coldstart/_bin), else `coldstart` on PATH that is not this package's own launcher."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import subprocess
from typing import Any

from coldstart._files import _kind
from coldstart._text import shown

HERE = os.path.dirname(os.path.abspath(__file__))

_SET_BIN = "set COLDSTART_BIN to a built binary (scripts/build.sh build: build/coldstart)"
_REINSTALL = "reinstall the wheel (pip install --force-reinstall coldstart, or pip install . in coldstart's repository)"


def binary() -> str:
    """The path of the binary. FileNotFoundError, in one line naming what is wrong and the fix, when there is none
    or the one named cannot run: $COLDSTART_BIN or the wheel's binary missing, a folder, a FIFO or another file that
    is not an executable ELF program."""
    return _find()[0]


def _find() -> tuple[str, str]:
    """The binary's path, and the fix to name if it cannot be run after all."""
    env = os.environ.get("COLDSTART_BIN")
    if env:
        fix = f"{_SET_BIN}, or unset it to use the installed one"
        defect = _defect(env)
        if defect:
            raise FileNotFoundError(f"COLDSTART_BIN={shown(env)}: {defect}; {fix}")
        return env, fix
    inside = os.path.join(HERE, "_bin", "coldstart")
    if os.path.lexists(inside):  # a wheel's: if it cannot run, the installation is damaged
        fix = f"{_REINSTALL}, or {_SET_BIN}"
        defect = _defect(inside)
        if defect:
            raise FileNotFoundError(f"coldstart's binary {shown(inside)}: {defect}; {fix}")
        return inside, fix
    found = shutil.which("coldstart")
    if found and _defect(found) is None:  # not a launcher script (this package's own console script)
        return found, f"put the coldstart binary first on PATH, or {_SET_BIN}"
    raise FileNotFoundError(
        "coldstart's binary was not found: install the wheel (pip install . in coldstart's repository), or build "
        "it (scripts/build.sh build) and set COLDSTART_BIN to build/coldstart"
    )


def _defect(path: str) -> str | None:
    """What keeps `path` from being run as the coldstart binary, or None: it must be a regular, executable ELF file.
    Opened without blocking and checked with fstat first, so that a FIFO or a device is refused instead of hanging or
    being read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return "no such file"
    except NotADirectoryError:
        return "no such file (a part of the path is not a folder)"
    except PermissionError:  # execute-only (mode 711) runs without being read
        with contextlib.suppress(OSError):
            if stat.S_ISREG(os.stat(path).st_mode) and os.access(path, os.X_OK):
                return None
        return "cannot be read (permission denied)"
    except OSError as e:
        return f"cannot be opened ({e.strerror or e})"
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            return "a folder, not the binary"
        if not stat.S_ISREG(mode):
            return f"{_kind(mode)}, not the binary"
        if not os.access(path, os.X_OK):
            return "not executable"
        if os.read(fd, 4) != b"\x7fELF":
            return "not an executable program (a text file, a script or a damaged copy)"
    except OSError as e:
        return f"cannot be read ({e.strerror or e})"
    finally:
        os.close(fd)
    return None


def run(args: list[str]) -> subprocess.CompletedProcess[str]:
    """The binary run with `args`, its output captured as UTF-8 text (a byte that is not UTF-8, as in a path the
    binary echoes, kept as a surrogate escape that shown() writes as \\udcXX, not a UnicodeDecodeError).
    FileNotFoundError in one line, naming the binary and the fix, when there is none or it cannot be started."""
    path, fix = _find()
    try:
        return subprocess.run([path, *args], capture_output=True, encoding="utf-8", errors="surrogateescape")
    except OSError as e:
        raise FileNotFoundError(f"coldstart's binary {shown(path)} cannot be run ({e.strerror or e}); {fix}") from None


def doctor(*args: str) -> dict[str, Any]:
    """coldstart doctor's findings for this node and process, as its --json prints them ("facts", "findings")."""
    out = run(["doctor", "--json", *args])
    if out.returncode != 0:
        raise RuntimeError(shown(out.stderr.strip(), 4096) or "coldstart doctor failed")
    return json.loads(out.stdout)
