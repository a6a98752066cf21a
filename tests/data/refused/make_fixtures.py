"""Writes the refused fixtures: results files that parse but lie, each one rule of src/model/validate.h (or of the
JSON reader) broken, and expected.json, which names for each the field (or the reason) its refusal must name. Both the
binary (src/model/validate_test.cc, through bench_results_from_text and `coldstart report`) and Python
(python/tests/test_refused_fixtures.py, through coldstart.load) are fed every one of them.

The base is a real run (2 ranks on one H200, docs/results/2026-12-01-h200x1-fd-table/fdwatch-torch-2.json) cut to
one trial per configuration. To write them again: python3 tests/data/refused/make_fixtures.py
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
SOURCE = HERE.parents[2] / "docs/results/2026-12-01-h200x1-fd-table/fdwatch-torch-2.json"
INT_MAX = 2**31 - 1

Doc = dict[str, Any]


def base() -> Doc:
    doc: Doc = json.loads(SOURCE.read_text())
    doc.pop("summaries", None)  # recomputed on reading
    doc["context"]["inherited_env"] = {}
    # The folder the run was written to, without the parent the measuring session gave it.
    doc["context"]["argv"] = [re.sub(r"^/tmp/[a-z0-9]+/", "/tmp/", a) for a in doc["context"]["argv"]]
    trials, seen = [], set()
    for t in doc["trials"]:
        if t["config_id"] not in seen:
            seen.add(t["config_id"])
            trials.append(t)
    for i, t in enumerate(sorted(trials, key=lambda t: t["config_id"])):
        t["index"] = i
    doc["trials"] = sorted(trials, key=lambda t: t["index"])
    return doc


def rank(doc: Doc, trial: int = 0, r: int = 0) -> Doc:
    return doc["trials"][trial]["ranks"][r]  # type: ignore[no-any-return]


def set_lazy(doc: Doc) -> None:
    rank(doc)["nccl"] = {"lazy_connections": {"P2P/CUMEM": INT_MAX, "SHM": INT_MAX}}


def same_config(doc: Doc) -> None:
    twin = copy.deepcopy(doc["configs"][0])
    twin["id"] = 1
    doc["configs"][1] = twin


def shared_id(doc: Doc) -> None:
    doc["configs"][1]["id"] = 0


def mode_twice(doc: Doc) -> None:
    doc["spec"]["modes"] = ["isolated", "isolated"]


def env_twice(doc: Doc) -> None:
    doc["spec"]["env"] = doc["spec"]["env"] * 2


# name: (edit, what the refusal names)
CASES: dict[str, tuple[Callable[[Doc], None], str]] = {
    "config-twice": (same_config, "configs[1]: the same configuration as configs[0]"),
    "config-id-shared": (shared_id, "configs[1].id: 0"),
    "lazy-connections-near-int-max": (set_lazy, "trials[0].ranks[0].nccl.lazy_connections.P2P/CUMEM: 2147483647"),
    "ranks-per-gpu-int-max": (lambda d: d["spec"].update(ranks_per_gpu=INT_MAX), "spec.ranks_per_gpu: 2147483647"),
    "ranks-per-gpu-zero": (lambda d: d["spec"].update(ranks_per_gpu=0), "spec.ranks_per_gpu: 0"),
    "ranks-per-gpu-65": (lambda d: d["spec"].update(ranks_per_gpu=65), "spec.ranks_per_gpu: 65"),
    "trials-zero": (lambda d: d["spec"].update(trials=0), "spec.trials: 0"),
    "timeout-negative": (lambda d: d["spec"].update(timeout_s=-1), "spec.timeout_s: -1"),
    "iters-negative": (lambda d: d["spec"].update(steady_iters=-5), "spec.steady_iters: -5"),
    "world-huge": (lambda d: d["spec"].update(world=INT_MAX), "spec.world: 2147483647"),
    "mode-twice": (mode_twice, "spec.modes[1]: isolated twice"),
    "env-axis-twice": (env_twice, "spec.env[1].key: COLDSTART_FD_TABLE twice"),
    "modes-empty": (lambda d: d["spec"].update(modes=[]), "spec.modes: empty"),
    "config-id-out-of-range": (
        lambda d: d["trials"][1].update(config_id=7),
        "trials[1].config_id: 7, a configuration the run does not have",
    ),
    "config-key-of-another": (
        lambda d: d["trials"][0].update(config_key=d["configs"][1]["key"]),
        "trials[0].config_key:",
    ),
    "trial-index-twice": (lambda d: d["trials"][1].update(index=0), "trials[1].index: 0 twice"),
    "trial-index-negative": (lambda d: d["trials"][1].update(index=-3), "trials[1].index: -3"),
    "rank-outside-the-job": (lambda d: rank(d, 0, 1).update(rank=7), "trials[0].ranks[1].rank: 7, but the job has 2"),
    "rank-twice": (lambda d: rank(d, 0, 1).update(rank=0), "trials[0].ranks[1].rank: 0 twice"),
    "rank-negative": (lambda d: rank(d, 0, 1).update(rank=-1), "trials[0].ranks[1].rank: -1"),
    "phase-negative-duration": (
        lambda d: rank(d)["phases"][2].update(dur_ms=-5.0),
        "trials[0].ranks[0].phases[2].dur_ms: -5",
    ),
    "memory-below-minus-one": (
        lambda d: rank(d)["mem"].update(used_before_init_bytes=-2),
        "trials[0].ranks[0].mem.used_before_init_bytes: -2",
    ),
    "steady-iters-negative": (lambda d: rank(d)["steady"].update(iters=-1), "trials[0].ranks[0].steady.iters: -1"),
    "pid-negative": (lambda d: rank(d).update(pid=-4), "trials[0].ranks[0].pid: -4"),
    "store-calls-negative-ms": (
        lambda d: rank(d).update(store_calls={"init_process_group": {"count": 3, "ms": -2.5}}),
        "trials[0].ranks[0].store_calls.init_process_group.ms: -2.5",
    ),
}

# Bytes, not structure: what follows the JSON text.
TAILS: dict[str, tuple[bytes, str]] = {
    "bytes-after-a-nul": (b'\0{"trials": []}', "a NUL byte after the value"),
    "nul-between-members": (b"", "a NUL byte"),  # written below: a NUL where a ',' belongs
}


def main() -> None:
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    for old in out.glob("*.json"):
        old.unlink()
    expected: dict[str, str] = {}
    for name, (edit, names) in CASES.items():
        doc = base()
        edit(doc)
        (out / f"{name}.json").write_text(json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n")
        expected[f"{name}.json"] = names
    text = json.dumps(base(), sort_keys=True, separators=(",", ":")).encode()
    (out / "bytes-after-a-nul.json").write_bytes(text + TAILS["bytes-after-a-nul"][0])
    expected["bytes-after-a-nul.json"] = TAILS["bytes-after-a-nul"][1]
    cut = text.index(b",")
    (out / "nul-between-members.json").write_bytes(text[:cut] + b"\0" + text[cut + 1 :])
    expected["nul-between-members.json"] = TAILS["nul-between-members"][1]
    (HERE / "results.expected.json").write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n")
    (HERE / "base.json").write_text(json.dumps(base(), indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
