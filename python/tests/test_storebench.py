"""`python -m coldstart storebench` against the real torch.distributed.TCPStore, with small client counts: the JSON's
structure, every client through the barrier and the unique id, each barrier (and none); bad input and a file limit
too low refused in one line. torch is not faked on the measured path: the runs need an interpreter that imports
torch.distributed, this one or Debian's /usr/bin/python3 (python3-torch, which scripts/setup.sh installs, is a CPU
build of PyTorch 1.13 for the system's Python, which a virtual environment or pyenv does not see). Without one the
runs skip saying so; under CI (CI=true), which installs python3-torch, they fail instead."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys

import pytest

import coldstart
from coldstart.storebench import torch_barrier
from coldstart.storebench_report import PHASES, SCHEMA, fit_exponent, growth

CANDIDATES = (sys.executable, "/usr/bin/python3")
HAS_STORE = "import torch.distributed as d; assert d.is_available() and hasattr(d, 'TCPStore')"


@pytest.fixture(scope="module")
def torch_python() -> str:
    """The first interpreter that imports torch.distributed with its TCPStore."""
    tried = []
    for py in dict.fromkeys(CANDIDATES):
        if not os.path.exists(py):
            continue
        p = subprocess.run([py, "-c", HAS_STORE], capture_output=True, text=True, timeout=120)
        if p.returncode == 0:
            return py
        tried.append(f"{py}: {(p.stderr.strip().splitlines() or ['?'])[-1]}")
    why = "no interpreter imports torch.distributed (" + "; ".join(tried) + "); Debian's python3-torch provides one"
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must run storebench against a real TCPStore, but {why}", pytrace=False)
    pytest.skip(why)


@pytest.fixture(scope="module")
def package_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A folder holding only the package under test (the tree's, or the installed one), for another interpreter's
    PYTHONPATH: it sees this package and nothing else of this environment."""
    d = tmp_path_factory.mktemp("pkg")
    os.symlink(os.path.dirname(os.path.abspath(coldstart.__file__)), d / "coldstart")
    return str(d)


def storebench(py: str, package: str, *args: str, limit: tuple[int, int] | None = None, timeout: float = 300):
    env = dict(os.environ, PYTHONPATH=package)
    env.pop("COLDSTART_BIN", None)  # storebench runs no binary
    pre = (lambda: resource.setrlimit(resource.RLIMIT_NOFILE, limit)) if limit else None
    return subprocess.run(
        [py, "-m", "coldstart", "storebench", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        preexec_fn=pre,
    )


def test_every_client_goes_through_the_store_and_the_json_says_so(torch_python, package_path, tmp_path) -> None:
    out = tmp_path / "out"
    args = ["--clients", "4,16", "--trials", "2", "--workers", "2", "--barrier", "poll,wait,none", "--out", str(out)]
    p = storebench(torch_python, package_path, *args)
    assert p.returncode == 0, p.stderr
    doc = json.loads((out / "storebench.json").read_text())
    assert doc["schema"] == SCHEMA
    ctx = doc["context"]
    assert ctx["torch"] and ctx["host_cpus"] >= 1 and ctx["cpu_model"] is not None
    spec = doc["spec"]
    assert spec["clients"] == [4, 16] and spec["trials"] == 2 and spec["barrier"] == ["poll", "wait", "none"]
    assert doc["spread"]["connections_per_client"] >= 1
    runs = doc["runs"]
    assert len(runs) == 3 * 2 * 2  # barriers x counts x trials
    assert {(r["barrier"], r["clients"], r["trial"]) for r in runs} == {
        (b, n, t) for b in ("poll", "wait", "none") for n in (4, 16) for t in (0, 1)
    }
    for r in runs:
        assert r["status"] == "ok" and r["failed_clients"] == 0 and r["errors"] == [], r
        assert r["backend"] in ("classic", "libuv")
        assert set(r["phases"]) == set(PHASES)
        for phase in PHASES:
            ph = r["phases"][phase]
            if phase == "barrier" and r["barrier"] == "none":
                assert ph == {"slowest_ms": None, "median_ms": None, "completed": 0}
                continue
            assert ph["completed"] == r["clients"], (phase, r)  # every client finished it: the barrier among them
            assert 0 <= ph["median_ms"] <= ph["slowest_ms"]
        assert r["phases"]["end_to_end"]["slowest_ms"] <= r["wall_ms"]
        barrier_calls = 0 if r["barrier"] == "none" else 2  # at least two adds
        assert r["store_calls"] >= (2 + barrier_calls) * r["clients"]  # its add to init/, the barrier, the id
        assert r["store_cpu_ms"] > 0 and r["workers"] == 2
    grown = [g for g in doc["growth"] if (g["barrier"], g["phase"], g["stat"]) == ("wait", "barrier", "slowest_ms")]
    assert len(grown) == 1
    assert [(s["from"], s["to"]) for s in grown[0]["steps"]] == [(4, 16)]
    assert grown[0]["fit"]["counts"] == 2 and grown[0]["fit"]["trials"] == 4
    assert "barrier poll, store backend" in p.stdout and "barrier wait, store backend" in p.stdout
    assert "storebench: 12/12: 16 clients, barrier none" in p.stderr  # progress, one line a run
    # The table again from the file, by an interpreter without torch if need be.
    again = storebench(sys.executable, package_path, "--from", str(out / "storebench.json"))
    assert again.returncode == 0 and again.stdout == p.stdout


@pytest.mark.parametrize("value", ["64,x", "256,64", "64,64", "1", "", "64,70000", "64,٣"])
def test_a_bad_clients_value_is_one_line_naming_it(package_path, value) -> None:
    p = storebench(sys.executable, package_path, "--clients", value)
    assert p.returncode == 2 and p.stdout == ""
    assert len(p.stderr.strip().splitlines()) == 1 and f"--clients {value!r}" in p.stderr, p.stderr


@pytest.mark.parametrize("args", [["--barrier", "spin"], ["--backend", "libuv,libuv"], ["--trials", "0"], ["--x"]])
def test_other_bad_input_is_one_line(package_path, args) -> None:
    p = storebench(sys.executable, package_path, *args)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr


@pytest.mark.parametrize("text", ["[]", "{}", '{"schema": "coldstart.storebench/1"}', "not json"])
def test_a_from_file_that_is_not_storebench_s_is_one_line(package_path, tmp_path, text) -> None:
    f = tmp_path / "storebench.json"
    f.write_text(text)
    p = storebench(sys.executable, package_path, "--from", str(f))
    assert p.returncode == 2 and p.stdout == "" and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert f"--from {f}" in p.stderr


def test_a_file_limit_too_low_for_the_clients_is_refused_in_one_line(torch_python, package_path) -> None:
    p = storebench(torch_python, package_path, "--clients", "4,2048", "--workers", "1", limit=(256, 256))
    assert p.returncode == 2 and p.stdout == ""
    assert len(p.stderr.strip().splitlines()) == 1 and "hard limit is 256 (ulimit -Hn)" in p.stderr, p.stderr


def test_without_torch_it_says_which_python_and_what_to_run(package_path, tmp_path) -> None:
    broken = tmp_path / "torch"  # a torch that cannot be imported, in front of any the interpreter has
    broken.mkdir()
    (broken / "__init__.py").write_text("raise ImportError('no torch here')\n")
    env_path = f"{package_path}{os.pathsep}{tmp_path}"
    p = subprocess.run(
        [sys.executable, "-m", "coldstart", "storebench", "--clients", "4"],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=env_path),
        timeout=60,
    )
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1
    assert "no torch here" in p.stderr and "python3 -m coldstart storebench" in p.stderr


VERSIONS = [
    ("1.13.0a0", None, "poll"),
    ("1.13.1", "1", "poll"),
    ("2.0.1", None, "poll"),
    ("2.1.0", None, "none"),
    ("2.11.0+cu130", "0", "none"),
    ("2.11.0+cu130", "1", "wait"),
]


@pytest.mark.parametrize("version,env,barrier", VERSIONS)
def test_the_default_barrier_is_the_installed_torch_s(version, env, barrier) -> None:
    assert torch_barrier(version, env) == barrier


def test_growth_is_the_exponent_of_what_was_measured() -> None:
    def run(n: int, trial: int, ms: float) -> dict:
        phases = {p: {"slowest_ms": ms, "median_ms": ms / 2, "completed": n} for p in PHASES}
        return {"clients": n, "trial": trial, "barrier": "poll", "backend": "classic", "status": "ok",
                "store_cpu_ms": ms, "phases": phases}  # fmt: skip

    runs = [run(n, t, 0.001 * n * n * (1 + 0.01 * t)) for n in (64, 256, 1024) for t in range(3)]
    runs.append({**run(4096, 0, 1.0), "status": "failed"})  # a failed run is not a point
    g = next(x for x in growth(runs) if x["phase"] == "barrier" and x["stat"] == "median_ms")
    assert [s["to"] for s in g["steps"]] == [256, 1024]
    assert all(abs(s["exponent"] - 2) < 1e-9 for s in g["steps"])
    assert abs(g["fit"]["exponent"] - 2) < 1e-9 and g["fit"]["counts"] == 3 and g["fit"]["trials"] == 9
    assert fit_exponent({64: [1.0]}) is None


def test_libuv_asked_of_a_torch_without_it_is_one_line(torch_python, package_path) -> None:
    probe = "import torch.distributed as d; print('use_libuv' in (d.TCPStore.__init__.__doc__ or ''))"
    has = subprocess.run([torch_python, "-c", probe], capture_output=True, text=True, timeout=120).stdout.strip()
    if has == "True":
        pytest.skip("this torch's TCPStore has the libuv backend")
    p = storebench(torch_python, package_path, "--clients", "4", "--backend", "libuv")
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "no use_libuv" in p.stderr, p.stderr
