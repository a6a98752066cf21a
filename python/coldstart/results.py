"""bench's results from Python: coldstart.load("results.json") gives typed records, rows for pandas (without pandas
being a dependency), and in a notebook the HTML report.

Every file is read through the binary (`coldstart report --json -- FILE`: after `--`, a name that begins with `-` is
a file, not a flag): its one reader upgrades schema /1 and applies the rules every command reads a run under, so that
Python and the binary accept and refuse the same files."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import tempfile
from dataclasses import dataclass, field
from typing import Any

from coldstart._files import MAX_RESULTS_BYTES, check_regular_file
from coldstart._text import shown
from coldstart.cli import binary, run

SCHEMA = "coldstart.bench/2"


@dataclass
class Phase:
    name: str
    start_ms: float  # from the trial's start
    dur_ms: float


@dataclass
class Rank:
    rank: int
    host: str
    worker: str
    cuda_visible_devices: str
    bus_id: str
    ready_ms: float | None  # process start to the first collective done
    phases: list[Phase]
    error: str = ""


@dataclass
class Trial:
    index: int
    config_id: int
    config: str  # the configuration's label
    status: str  # ok, hang, error, interrupted
    message: str
    ready_ms: float | None  # the slowest rank's
    ranks: list[Rank] = field(default_factory=list)


@dataclass
class Config:
    id: int
    key: str
    label: str
    mode: str
    fix: str
    startup: str
    env: dict[str, str | None]


class Run:
    """One bench run: its configurations, trials and ranks as records; summaries as bench computed them."""

    def __init__(self, path: str, doc: dict[str, Any]) -> None:
        self.path = path
        self.context: dict[str, Any] = doc["context"]
        self.spec: dict[str, Any] = doc["spec"]
        self.summaries: list[dict[str, Any]] = doc.get("summaries", [])
        self.configs = [
            Config(
                c["id"],
                c.get("key", ""),
                c.get("label", ""),
                c["mode"],
                c.get("fix", "none"),
                c.get("startup", "none"),
                {e["key"]: e.get("value") for e in c.get("env", [])},
            )
            for c in doc["configs"]
        ]
        labels = {c.id: c.label for c in self.configs}
        self.trials = [
            Trial(
                t["index"],
                t["config_id"],
                labels.get(t["config_id"], "?"),
                t["status"],
                t.get("message", ""),
                t.get("ready_ms"),
                [
                    Rank(
                        r["rank"],
                        r.get("host", ""),
                        r.get("worker", "nccl"),
                        r.get("cuda_visible_devices", ""),
                        r.get("bus_id", ""),
                        r.get("ready_ms"),
                        [Phase(p["name"], p["start_ms"], p["dur_ms"]) for p in r.get("phases", [])],
                        r.get("error", ""),
                    )
                    for r in t.get("ranks", [])
                ],
            )
            for t in doc["trials"]
        ]

    def trial_rows(self) -> list[dict[str, Any]]:
        """One row per trial: configuration, status, ready_ms (cold start: the slowest rank's)."""
        return [
            {"trial": t.index, "config": t.config, "status": t.status, "ready_ms": t.ready_ms, "message": t.message}
            for t in self.trials
        ]

    def phase_rows(self) -> list[dict[str, Any]]:
        """One row per phase of every rank of every trial."""
        return [
            {
                "trial": t.index,
                "config": t.config,
                "status": t.status,
                "rank": r.rank,
                "phase": p.name,
                "start_ms": p.start_ms,
                "dur_ms": p.dur_ms,
            }
            for t in self.trials
            for r in t.ranks
            for p in r.phases
        ]

    def to_pandas(self, rows: str = "phases") -> Any:
        """The rows as a pandas DataFrame ("phases" or "trials"); pandas is imported only here."""
        if rows not in ("phases", "trials"):
            raise ValueError(f"to_pandas(rows={rows!r}): use 'phases' or 'trials'")
        import pandas

        return pandas.DataFrame(self.phase_rows() if rows == "phases" else self.trial_rows())

    def html(self) -> str:
        """The self-contained HTML report coldstart draws for this run; ValueError with the binary's one-line reason
        when it cannot draw it (the file changed since it was loaded)."""
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "report.html")
            done = run(["report", "--html", out, "--", _as_file(self.path)])
            if done.returncode != 0:
                raise ValueError(_reason(done, self.path))
            with open(out, encoding="utf-8") as f:
                return f.read()

    def _repr_html_(self) -> str:  # Jupyter shows the report inline
        return self.html()

    def __repr__(self) -> str:
        return f"<coldstart run {shown(self.path)}: {len(self.configs)} configurations, {len(self.trials)} trials>"


def _as_file(path: str) -> str:
    """`path` as the binary's argument for a file: after `--` a name that begins with - is no flag, and "-" alone,
    which the binary reads as standard input, is the file of that name in this folder."""
    return "./-" if path == "-" else path


def _reason(out: subprocess.CompletedProcess[str], path: str) -> str:
    """The binary's one-line reason for refusing `path`, its control characters escaped whatever it printed."""
    return shown(out.stderr.strip().removeprefix("coldstart: "), 4096) or f"{shown(path)}: coldstart could not read it"


def load(path: str | os.PathLike[str]) -> Run:
    """Reads a results.json that bench wrote (schema /2, or /1, upgraded). The binary reads it (`coldstart report
    --json -- FILE`, so that a name that begins with `-` is never taken for a flag), under the same rules as every
    other command (src/model/validate.h: ranges, unique configurations and trials, ranks inside the job), so that what
    the binary refuses, load() refuses with the same line. Anything else (a missing file, a folder, JSON of another
    kind, a damaged run) raises ValueError with the binary's one-line reason; a FIFO, a device or a file over 512 MiB
    (the binary's bound) raises ValueError at once, naming the path, without reading it. Every message is one line:
    a path's control characters are escaped (\\n, \\x1b). A path that is not a str or os.PathLike raises TypeError;
    no binary that can run, FileNotFoundError naming the fix (coldstart.binary())."""
    if not isinstance(path, (str, os.PathLike)) or not isinstance(os.fspath(path), str):
        raise TypeError(
            f"coldstart.load: path must be a str or os.PathLike, not {type(path).__name__}; give the results.json "
            "bench wrote"
        )
    path = os.fspath(path)
    with contextlib.suppress(OSError):  # missing, unreadable, a folder: the binary says which, and what to give
        check_regular_file(path, MAX_RESULTS_BYTES, "the results.json bench wrote")
    out = run(["report", "--json", "--", _as_file(path)])
    if out.returncode != 0:
        raise ValueError(_reason(out, path))
    doc = json.loads(out.stdout)
    if doc.get("schema") != SCHEMA:
        raise ValueError(
            f"{shown(path)}: the binary ({shown(binary())}) wrote schema {shown(str(doc.get('schema')))}, not "
            f"{SCHEMA}; use the binary of this package's version (COLDSTART_BIN)"
        )
    return Run(path, doc)
