"""What the analyze.py scripts of these folders read from a bench run's results.json, in one place: a phase's or an
Init timing's value for the slowest rank of a trial, the median of what was measured, and milliseconds as the tables
print them. An analyze.py imports it from this folder (its parent): `sys.path.insert(0, str(HERE.parent))`."""

import statistics
from collections.abc import Iterable


def slowest(trial: dict, phase: str) -> float | None:
    """The phase's longest duration over the trial's ranks (None where no rank has it)."""
    vals = [p["dur_ms"] for r in trial["ranks"] for p in r["phases"] if p["name"] == phase]
    return max(vals) if vals else None


def slowest_by_config(results: dict, phases: Iterable[str]) -> dict[int, dict[str, list[float | None]]]:
    """Per configuration id, each finished trial's `ready` and its slowest rank per phase, in trial order."""
    by: dict[int, dict[str, list[float | None]]] = {}
    for t in results["trials"]:
        if t["status"] == "ok":
            row = by.setdefault(t["config_id"], {"ready": []})
            row["ready"].append(t["ready_ms"])
            for ph in phases:
                row.setdefault(ph, []).append(slowest(t, ph))
    return by


def slowest_init(trial: dict, key: str) -> float | None:
    """NCCL's Init timing `key` ("connections", "kernels", ...), the longest over the trial's ranks that logged it."""
    vals = [
        r["nccl"]["init_timings_ms"][key]
        for r in trial["ranks"]
        if r.get("nccl") and key in r["nccl"].get("init_timings_ms", {})
    ]
    return max(vals) if vals else None


def fmt(ms: float | None) -> str:
    if ms is None:
        return "–"
    return f"{ms / 1000:.2f} s" if ms >= 1000 else f"{ms:.0f} ms" if ms >= 10 else f"{ms:.1f} ms"


def med(xs: Iterable[float | None]) -> float | None:
    kept = [x for x in xs if x is not None]
    return statistics.median(kept) if kept else None
