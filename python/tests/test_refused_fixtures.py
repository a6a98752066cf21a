"""C++ and Python agree: every refused fixture (tests/data/refused/results, a real run with one rule of
src/model/validate.h broken) is refused by the binary (exit 2, one line naming the field) and by coldstart.load() with
the same line; the fixtures' base, and every run committed under docs/results, loads in both."""

import json
import os
import subprocess

import pytest
from conftest import HERE

import coldstart

ROOT = os.path.join(HERE, "..", "..")
REFUSED = os.path.join(ROOT, "tests", "data", "refused")
EXPECTED: dict[str, str] = json.load(open(os.path.join(REFUSED, "results.expected.json")))


def test_every_fixture_is_in_the_table():
    assert sorted(os.listdir(os.path.join(REFUSED, "results"))) == sorted(EXPECTED)
    assert len(EXPECTED) >= 20


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_binary_and_load_refuse_it_with_one_line(name, coldstart_bin, monkeypatch):
    monkeypatch.setenv("COLDSTART_BIN", coldstart_bin)
    path = os.path.join(REFUSED, "results", name)
    binary = subprocess.run([coldstart_bin, "report", path], capture_output=True, text=True)
    assert binary.returncode == 2 and binary.stdout == "", binary
    line = binary.stderr.strip().removeprefix("coldstart: ")
    assert "\n" not in line and line.startswith(f"{path}: ") and EXPECTED[name] in line, line
    with pytest.raises(ValueError) as e:
        coldstart.load(path)
    assert str(e.value) == line


def test_the_base_loads_in_both(coldstart_bin, monkeypatch):
    monkeypatch.setenv("COLDSTART_BIN", coldstart_bin)
    path = os.path.join(REFUSED, "base.json")
    assert subprocess.run([coldstart_bin, "report", path], capture_output=True).returncode == 0
    run = coldstart.load(path)
    assert len(run.configs) == 2 and len(run.trials) == 2
    assert [t.config for t in run.trials] == [c.label for c in run.configs]
    assert all(t.ready_ms and t.ready_ms > 0 for t in run.trials)
