"""Running `coldstart doctor net --json` in the lab and reading its report: shared by the lab's test modules (the
binary itself is conftest.py's `coldstart` fixture)."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from netlab import STORE_PORT, NetLab

REPO = Path(__file__).resolve().parents[2]
WSL_NAT_ROOT = REPO / "tests" / "data" / "net" / "wsl-nat"  # a recorded WSL2 (NAT mode) fixture root
LAYERS = ["context", "platform", "resolve", "route", "next_hop", "forward", "proxy", "transport", "service"]
STATUSES = {"ok", "warn", "broken", "not_checked", "skipped"}


@dataclass
class Run:
    rc: int
    out: dict[str, Any]
    stderr: str
    seconds: float

    @property
    def verdict(self) -> dict[str, Any]:
        return dict(self.out["verdict"])

    def why(self) -> str:
        """What a failed assertion prints: the verdict and each target's layers, one line each."""
        lines = [f"exit {self.rc} in {self.seconds:.2f} s; verdict {json.dumps(self.out.get('verdict'))}"]
        for t in self.out.get("targets", []):
            lines.append(f"target {t.get('target')} ({t.get('origin')}):")
            lines += [
                f"  {c.get('layer')}: {c.get('status')}: {c.get('summary')} {c.get('evidence')}" for c in t["layers"]
            ]
        return "\n".join(lines + [f"stderr: {self.stderr.strip()[-1500:]}"])


def parse(rc: int, stdout: str, stderr: str, seconds: float) -> Run:
    try:
        out = json.loads(stdout)
    except json.JSONDecodeError:
        pytest.fail(f"exit {rc}, not JSON on stdout: {stdout[-1000:]!r}; stderr: {stderr[-2000:]}")
    assert isinstance(out, dict), stdout[-1000:]
    return Run(rc, out, stderr, seconds)


def doctor(
    lab: NetLab, coldstart: str, args: Sequence[str], env: Mapping[str, str] | None = None, ns: str | None = None
) -> Run:
    """`coldstart doctor net ARGS --json` inside `ns` (WSL by default) with only `env` set beyond PATH/HOME/LANG."""
    t = time.monotonic()
    r = lab.run(ns or lab.wsl, [coldstart, "doctor", "net", *args, "--json"], env, timeout=60)
    return parse(r.returncode, r.stdout, r.stderr, time.monotonic() - t)


def check_shape(run: Run) -> None:
    """schema coldstart.net/1: known layer and status names, layers inside out, an exit code that matches."""
    assert run.out.get("schema") == "coldstart.net/1", run.why()
    for t in run.out["targets"]:
        names = [c["layer"] for c in t["layers"]]
        assert set(names) <= set(LAYERS) and names == sorted(names, key=LAYERS.index), run.why()
        assert {c["status"] for c in t["layers"]} <= STATUSES, run.why()
    v = run.verdict
    assert v["status"] in {"ok", "warn", "broken"}, run.why()
    if v["status"] != "ok":
        assert v["layer"] in LAYERS and v.get("fix"), run.why()
    assert run.rc == (1 if v["status"] == "broken" else 0), run.why()


def statuses(run: Run, layer: str, target: int = 0) -> set[str]:
    """The statuses of a target's checks at one layer (proxy may have one per client)."""
    return {c["status"] for c in run.out["targets"][target]["layers"] if c["layer"] == layer}


def broken_at(run: Run, layer: str) -> dict[str, Any]:
    check_shape(run)
    v = run.verdict
    assert (v["status"], v["layer"], run.rc) == ("broken", layer, 1), run.why()
    return v


def evidence(v: Mapping[str, Any]) -> str:
    return " ".join(v.get("evidence", []))


def run_peers(
    lab: NetLab,
    coldstart: str,
    peers: Sequence[str],
    coord_port: int,
    extra: Mapping[str, str] | None = None,
    rank_extra: Mapping[int, Mapping[str, str]] | None = None,
) -> list[Run]:
    """Every rank's `doctor net --peers --json --timeout 1s` at once, one per peer namespace, with torchrun's
    variables (MASTER_ADDR is rank 0's address, where nothing listens on MASTER_PORT yet) plus `extra`, and for a rank
    `rank_extra[rank]`; rank 0's coordinator at its own address."""
    procs = []
    t = time.monotonic()
    for rank, ns in enumerate(peers):
        env = {
            "RANK": str(rank),
            "GROUP_RANK": str(rank),
            "WORLD_SIZE": str(len(peers)),
            "LOCAL_RANK": "0",
            "LOCAL_WORLD_SIZE": "1",
            "MASTER_ADDR": lab.peer_address(0),
            "MASTER_PORT": str(STORE_PORT),
            "TORCHELASTIC_RUN_ID": "csn-lab",
            "COLDSTART_COORD_PORT": str(coord_port),
            **(extra or {}),
            **(rank_extra or {}).get(rank, {}),
        }
        procs.append(lab.popen(ns, [coldstart, "doctor", "net", "--peers", "--json", "--timeout", "1s"], env))
    runs = []
    for p in procs:
        try:
            stdout, stderr = p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            stdout, stderr = p.communicate()
        runs.append(parse(p.returncode, stdout, stderr, time.monotonic() - t))
    return runs
