"""`python -m coldstart ...` and the `coldstart` console script: the coldstart binary, with the same arguments.

The binary starts Python ranks (the torch probe, the Ray launcher) with $COLDSTART_PYTHON; from here that is this
interpreter, the one the package is installed in, unless the user named another. Without a binary that can run, one
line on stderr names what is wrong and the fix, and the exit status is 2 (bad input), as the binary's own.
`storebench` is the package's own (coldstart/storebench.py: the rendezvous store under N clients): no binary runs."""

import os
import sys
from typing import NoReturn

from coldstart._text import shown
from coldstart.cli import _find


def _refuse(message: str) -> NoReturn:
    print(f"coldstart: {message}", file=sys.stderr)
    sys.exit(2)


def main() -> None:
    if sys.argv[1:2] == ["storebench"]:
        from coldstart.storebench import main as storebench

        sys.exit(storebench(sys.argv[2:]))
    try:
        path, fix = _find()
    except FileNotFoundError as e:
        _refuse(str(e))
    if sys.executable:
        os.environ.setdefault("COLDSTART_PYTHON", sys.executable)
    try:
        os.execv(path, ["coldstart", *sys.argv[1:]])  # usage lines say coldstart; it finds itself by /proc
    except OSError as e:  # checked, but changed since, or an ELF this machine cannot run
        _refuse(f"{shown(path)} cannot be run ({e.strerror or e}); {fix}")


if __name__ == "__main__":
    main()
