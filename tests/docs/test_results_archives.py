"""Every bench run that docs/results keeps compressed (results.json.gz) still reads and renders with this binary, as
the C++ test Recorded.EveryCommittedResultsFileLoadsAndRenders holds the plain results.json files to: decompressed
and given to `coldstart report -` (the table) and `coldstart report - --markdown`.

COLDSTART_BIN names the binary (ctest sets it); COLDSTART_SOURCE_DIR the tree (default: this file's)."""

from __future__ import annotations

import gzip
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(os.environ.get("COLDSTART_SOURCE_DIR", Path(__file__).resolve().parents[2]))
BIN = os.environ.get("COLDSTART_BIN", str(ROOT / "build" / "coldstart"))
ARCHIVES = sorted((ROOT / "docs" / "results").rglob("results.json.gz"))


def test_some_runs_are_kept_compressed() -> None:
    assert len(ARCHIVES) >= 10, f"only {len(ARCHIVES)} results.json.gz under docs/results"


@pytest.mark.parametrize("archive", ARCHIVES, ids=lambda p: str(p.relative_to(ROOT / "docs" / "results")))
def test_a_compressed_run_reads_and_renders(archive: Path) -> None:
    text = gzip.decompress(archive.read_bytes())
    for extra in ([], ["--markdown"]):
        p = subprocess.run([BIN, "report", "-", *extra], input=text, capture_output=True, timeout=60)
        assert p.returncode == 0, f"{archive}: report {' '.join(extra)} exited {p.returncode}: {p.stderr[-2000:]!r}"
        assert b"isolated" in p.stdout or b"shared" in p.stdout, f"{archive}: no configuration in {p.stdout[:500]!r}"


def test_a_compressed_run_given_as_is_is_named_so() -> None:
    p = subprocess.run([BIN, "report", str(ARCHIVES[0])], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2
    assert "gzip-compressed; give it decompressed" in p.stderr, p.stderr
