"""storebench's runs rendered: how each phase grows with the clients, and the table. No measurement here.

The growth is the exponent k of ms ∝ N^k: between consecutive client counts (from the medians over trials), and a
least-squares line through every trial's point on log–log axes. Over three or four counts that is a description of
what was measured, not a law: `coldstart report --growth` fits and ranks laws with intervals for bench's runs
(src/analysis/growth.h), but it reads bench's results (GPU jobs of ranks with their phases), not a store's."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from typing import Any

SCHEMA = "coldstart.storebench/1"
PHASES = ("start", "connect", "barrier", "unique_id", "end_to_end")
# The values whose growth is given: each phase's slowest and median client, and the store process's CPU time.
METRICS = tuple((phase, stat) for phase in PHASES for stat in ("slowest_ms", "median_ms")) + (("store", "cpu_ms"),)


def duration(ms: float | None) -> str:
    """12.3 ms, 456 ms, 1.23 s, 2.5 min; "–" for none."""
    if ms is None:
        return "–"
    if ms < 10:
        return f"{ms:.2f} ms"
    if ms < 100:
        return f"{ms:.1f} ms"
    if ms < 1e3:
        return f"{ms:.0f} ms"
    if ms < 60e3:
        return f"{ms / 1e3:.2f} s"
    return f"{ms / 60e3:.1f} min"


def _value(run: dict[str, Any], phase: str, stat: str) -> float | None:
    if phase == "store":
        return run["store_cpu_ms"]
    return run["phases"][phase][stat]


def _config(run: dict[str, Any]) -> tuple[str, str]:
    return run["barrier"], run["backend"]


def _points(runs: Iterable[dict[str, Any]], phase: str, stat: str) -> dict[int, list[float]]:
    """Per client count, the value in each ok trial (> 0: a log needs it)."""
    out: dict[int, list[float]] = {}
    for run in runs:
        v = _value(run, phase, stat) if run["status"] == "ok" else None
        if v is not None and v > 0:
            out.setdefault(run["clients"], []).append(v)
    return dict(sorted(out.items()))


def fit_exponent(points: dict[int, list[float]]) -> float | None:
    """The slope of log(ms) on log(N) by least squares over every trial; None with fewer than 2 counts."""
    xs = [math.log(n) for n, vs in points.items() for _ in vs]
    ys = [math.log(v) for vs in points.values() for v in vs]
    if len(points) < 2:
        return None
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def growth(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per configuration (barrier, backend) and metric: the steps between consecutive counts and the fit."""
    out = []
    for config in dict.fromkeys(_config(r) for r in runs):
        mine = [r for r in runs if _config(r) == config]
        for phase, stat in METRICS:
            points = _points(mine, phase, stat)
            medians = {n: statistics.median(vs) for n, vs in points.items()}
            counts = list(medians)
            steps = [
                {"from": a, "to": b, "exponent": math.log(medians[b] / medians[a]) / math.log(b / a)}
                for a, b in zip(counts, counts[1:])
            ]
            out.append(
                {
                    "barrier": config[0],
                    "backend": config[1],
                    "phase": phase,
                    "stat": stat,
                    "medians_ms": {str(n): m for n, m in medians.items()},
                    "steps": steps,
                    "fit": {
                        "exponent": fit_exponent(points),
                        "counts": len(points),
                        "trials": sum(map(len, points.values())),
                    },
                }
            )
    return out


def _rows(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
        for r in [header, *rows]
    ]
    return "\n".join(lines) + "\n"


def _median(values: list[float | None]) -> float | None:
    vs = [v for v in values if v is not None]
    return statistics.median(vs) if vs else None


# The columns after each phase's: a run's value, median over the trials; how it is written.
EXTRA = (
    ("store CPU", lambda r: r["store_cpu_ms"], duration),
    ("clients CPU", lambda r: r["clients_cpu_ms"], duration),
    ("busy", lambda r: r["machine_busy"], lambda v: f"{v:.0%}"),
    ("store calls", lambda r: r["store_calls"], lambda v: f"{v:,.0f}"),
    ("CPU a call", lambda r: r["store_cpu_ms"] * 1e3 / max(r["store_calls"], 1), "{:.0f} µs".format),
    ("drops", lambda r: r["listen_drops"], "{:.0f}".format),
)

NOTE = (
    "\neach phase: the slowest client · the median client, median over trials (start: the trial's signal to the "
    "client's thread running, which end_to_end holds and the other phases do not); store CPU: the store process's (its "
    "server thread) over the run, clients CPU the workers'; busy: both over the run's wall time on every usable CPU "
    "(near 100%: the clients, which a real job runs on other machines, took CPU the store could have had); store "
    "calls: the clients' store operations; CPU a call: the store's CPU time over them; drops: connections the kernel "
    "dropped at the store's full listen queue (machine-wide; the client retries a second or more later); growth: k "
    "of ms ∝ N^k between consecutive counts, and a least-squares fit over every trial (a few points: a description, "
    "not a law)\n"
)


def _count_row(runs: list[dict[str, Any]], n: int) -> list[str]:
    ok = [r for r in runs if r["status"] == "ok"]
    row = [str(n), f"{len(ok)}" + ("" if len(ok) == len(runs) else f" ({len(runs) - len(ok)} failed)")]
    for phase in PHASES:
        slow = _median([r["phases"][phase]["slowest_ms"] for r in ok])
        mid = _median([r["phases"][phase]["median_ms"] for r in ok])
        row.append(f"{duration(slow)} · {duration(mid)}")
    for _, value, written in EXTRA:
        v = _median([value(r) for r in ok])
        row.append("–" if v is None else written(v))
    return row


def _growth_rows(grown: list[dict[str, Any]]) -> str:
    pairs = sorted({(st["from"], st["to"]) for g in grown for st in g["steps"]})
    header = ["growth N^k", *[f"{a}→{b}" for a, b in pairs], "fit"]
    rows = []
    for g in grown:
        name = "store CPU" if g["phase"] == "store" else f"{g['phase']} ({g['stat'].split('_')[0]})"
        k = {(st["from"], st["to"]): f"{st['exponent']:.2f}" for st in g["steps"]}
        fit = g["fit"]["exponent"]
        rows.append([name, *[k.get(pair, "–") for pair in pairs], "–" if fit is None else f"{fit:.2f}"])
    return _rows(header, rows)


def render(doc: dict[str, Any]) -> str:
    """The table: per configuration (barrier, backend), a row per client count, then the growth exponents."""
    ctx, spread = doc["context"], doc["spread"]
    out = (
        f"storebench: torch {ctx['torch']} (python {ctx['python']}), {ctx['host_cpus']} CPUs ({ctx['cpu_model']}); "
        f"clients spread over {doc['spec']['workers']} worker processes, one thread and "
        f"{spread['connections_per_client']} connection(s) each\n"
    )
    runs = doc["runs"]
    for config in dict.fromkeys(_config(r) for r in runs):
        mine = [r for r in runs if _config(r) == config]
        out += f"\nbarrier {config[0]}, store backend {config[1]}\n"
        header = ["clients", "trials", *PHASES, *[name for name, _, _ in EXTRA]]
        counts = dict.fromkeys(r["clients"] for r in mine)
        out += _rows(header, [_count_row([r for r in mine if r["clients"] == n], n) for n in counts])
        grown = [g for g in doc["growth"] if (g["barrier"], g["backend"]) == config and g["steps"]]
        if grown:
            out += "\n" + _growth_rows(grown)
    return out + NOTE
