"""What every engine's trial must show in its results.json: one trial, status ok, each rank on the host it ran on,
the launcher each rank found, and every rank's phases on rank 0's clock."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# How far one rank's phases may sit from where physics puts them once moved onto rank 0's clock: the one-way latency
# of the hello (microseconds on a veth pair) with room for a loaded CI machine. A rank left on its own clock, or moved
# by a wrong offset, misses by its start-up skew under a real launcher: tens of milliseconds to seconds.
SLACK_MS = 25.0


def load_trial(out_dir: Path, context: str) -> dict[str, Any]:
    path = out_dir / "results.json"
    assert path.exists(), f"no {path}\n{context}"
    results = json.loads(path.read_text())
    assert len(results["trials"]) == 1, f"{len(results['trials'])} trials\n{context}"
    trial: dict[str, Any] = results["trials"][0]
    assert trial["status"] == "ok", f"trial {trial['status']}: {trial.get('message')}\n{context}"
    return trial


def check_trial(out_dir: Path, launcher: str, hosts: list[str], context: str, by_rank: bool = True) -> dict[str, Any]:
    """Checks the run's one trial; `hosts` in rank order (by_rank) or in any order (a scheduler placed the ranks).
    `context` (the launcher's output and logs) goes with any failure. Returns the trial."""
    trial = load_trial(out_dir, context)
    ranks = sorted(trial["ranks"], key=lambda r: r["rank"])
    assert [r["rank"] for r in ranks] == list(range(len(hosts))), f"{trial}\n{context}"
    got = [r["host"] for r in ranks]
    assert (got if by_rank else sorted(got)) == (hosts if by_rank else sorted(hosts)), f"hosts {got}\n{context}"
    for r in ranks:
        assert r["launcher"]["name"] == launcher, f"rank {r['rank']}: launcher {r['launcher']}"
        assert r["dry_run"] is True and r["error"] == "", f"rank {r['rank']}: {r}"
    check_one_clock(trial)
    return trial


def check_one_clock(trial: dict[str, Any]) -> None:
    """Every phase lies within the trial, and no rank leaves a barrier (sync_*) before the last rank has entered it:
    which holds only when every rank's phases are on one clock."""
    wall = trial["wall_ms"]
    for r in trial["ranks"]:
        for p in r["phases"]:
            assert -SLACK_MS <= p["start_ms"] <= p["start_ms"] + p["dur_ms"] <= wall + SLACK_MS, (
                f"rank {r['rank']}: {p}"
            )
    barriers: dict[str, list[dict[str, float]]] = {}
    for r in trial["ranks"]:
        for p in r["phases"]:
            if p["name"] in ("sync_init", "sync_first"):
                barriers.setdefault(p["name"], []).append(p)
    assert barriers, f"no barrier phase in {trial['ranks']}"
    for name, ps in barriers.items():
        assert len(ps) == len(trial["ranks"]), f"{name}: {ps}"
        last_in = max(p["start_ms"] for p in ps)
        for p in ps:
            assert p["start_ms"] + p["dur_ms"] >= last_in - SLACK_MS, f"{name} left before the last rank came: {ps}"
