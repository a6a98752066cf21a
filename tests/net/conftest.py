"""The network lab (netlab.py), built once for the session and shared by test_netlab.py and test_doctor_net.py; each
test that turns a knob puts it back. Without root or `ip netns`, the modules skip, saying why."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator

import pytest
from doctor_run import REPO
from netlab import NetLab, missing_tools, skip_without_namespaces


@pytest.fixture(scope="session")
def lab() -> Iterator[NetLab]:
    skip_without_namespaces()
    why = missing_tools()
    if why:
        pytest.fail(why)  # CI is root: the tools must be there
    with NetLab() as built:
        yield built


@pytest.fixture
def peers4(lab: NetLab) -> Iterator[list[str]]:
    """Four peer namespaces on one bridge (10.77.0.1-4), removed after the test."""
    names = lab.add_peer_namespaces(4)
    try:
        yield names
    finally:
        lab.remove_peer_namespaces()


@pytest.fixture(scope="session")
def coldstart() -> str:
    """The binary: $COLDSTART_BIN (ctest sets it), else build/coldstart."""
    path = os.environ.get("COLDSTART_BIN") or str(REPO / "build" / "coldstart")
    if not os.path.exists(path):
        pytest.fail(f"no coldstart binary at {path}; build it or set COLDSTART_BIN")
    r = subprocess.run([path, "doctor", "net", "--help"], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        pytest.fail(f"{path} has no `doctor net` (--help: exit {r.returncode}: {(r.stderr or r.stdout).strip()[:300]})")
    return os.path.abspath(path)
