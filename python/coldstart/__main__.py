"""`python -m coldstart ...` and the `coldstart` console script: the coldstart binary, with the same arguments.

The binary starts Python ranks (the torch probe, the Ray launcher) with $COLDSTART_PYTHON; from here that is this
interpreter, the one the package is installed in, unless the user named another."""

import os
import sys

from coldstart.cli import binary


def main() -> None:
    try:
        path = binary()
    except FileNotFoundError as e:
        sys.exit(f"coldstart: {e}")
    if sys.executable:
        os.environ.setdefault("COLDSTART_PYTHON", sys.executable)
    os.execv(path, ["coldstart", *sys.argv[1:]])  # usage lines say coldstart; it finds itself by /proc


if __name__ == "__main__":
    main()
