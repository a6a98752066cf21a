import os
import subprocess
import sys
import uuid

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE_TORCH = os.path.join(HERE, "fake_torch")
# The package under test: the source tree's, unless the suite runs against an installed one.
if not os.environ.get("COLDSTART_TEST_INSTALLED"):
    sys.path.insert(0, os.path.join(HERE, ".."))


@pytest.fixture
def coldstart_bin():
    """The coldstart binary under test: $COLDSTART_BIN (ctest sets it), else the installed package's when the suite
    runs against one, else build/coldstart."""
    path = os.environ.get("COLDSTART_BIN")
    if not path and os.environ.get("COLDSTART_TEST_INSTALLED"):
        from coldstart.cli import binary

        path = binary()
    path = path or os.path.join(HERE, "..", "..", "build", "coldstart")
    if not os.path.exists(path):
        pytest.fail(f"no coldstart binary at {path}; build it or set COLDSTART_BIN")
    return os.path.abspath(path)


@pytest.fixture
def coldstart(coldstart_bin):
    """The binary under test, for the tests that run it by name."""
    return coldstart_bin


@pytest.fixture
def out_dir(tmp_path):
    return str(tmp_path / f"run-{uuid.uuid4().hex[:6]}")


def run(cmd, env=None, timeout=300):
    full = dict(os.environ)
    full.update(env or {})
    return subprocess.run(cmd, env=full, capture_output=True, text=True, timeout=timeout)
