"""Real launchers (Slurm, Open MPI, Ray, torchrun) start `coldstart worker --dry-run` on two hosts made of network
namespaces (twohosts.py). Root only: elsewhere each module skips saying why; under CI (CI=true), which runs as root
with scripts/setup.sh's packages, a missing namespace or launcher fails instead."""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest
from twohosts import BASE_PATH, skip_without_namespaces

HERE = Path(__file__).resolve().parent


def require(tools: Sequence[str], package: str) -> None:
    """Skips (fails under CI) unless every tool is installed."""
    missing = [t for t in tools if shutil.which(t, path=BASE_PATH) is None]
    if not missing:
        return
    why = f"{', '.join(missing)} not installed (Debian's {package}: scripts/setup.sh installs it)"
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must run this engine, but {why}", pytrace=False)
    pytest.skip(why)


@pytest.fixture(scope="session", autouse=True)
def namespaces() -> None:
    skip_without_namespaces()


@pytest.fixture(scope="session")
def coldstart_bin() -> str:
    """The binary under test: $COLDSTART_BIN (ctest sets it), else build/coldstart."""
    path = os.environ.get("COLDSTART_BIN") or str(HERE.parent.parent / "build" / "coldstart")
    if not os.path.exists(path):
        pytest.fail(f"no coldstart binary at {path}; build it or set COLDSTART_BIN")
    return os.path.abspath(path)
