"""The tables of the issue-45 runs (docs/results/2026-12-06-*-next): per configuration of each bench run, each trial's
slowest rank per phase and per NCCL Init timing (median [min-max] over trials), the GPU memory in use after the first
collective, and the issue's three tests at each rank count. A folder's analyze.py names its runs and prints them."""

import gzip
import json
import re
import statistics
from pathlib import Path

from run_stats import slowest_by_config, slowest_init

PHASES = ("cuda_context", "comm_init", "first_enqueue", "first_wait")
INIT = ("kernels", "topo", "bootstrap", "allgathers", "connections")
# The libraries by their folder on the node: coldstart nccl build's cache entries, and measure_patch.sh's build-next
LIBS = {"2.30.7+stock": "stock", "2.30.7+peer-regions": "patched", "/next/": "next"}


def name(config: dict) -> str:
    lib = next((v for k, v in LIBS.items() if k in config["nccl_lib"]), config["nccl_lib"])
    off = any(e["key"] == "NCCL_CUMEM_ENABLE" and e.get("value") == "0" for e in config["env"])
    return f"{lib}, cuMem off" if off else lib


def cell(v: list) -> str:
    v = [x for x in v if x is not None]
    return f"{statistics.median(v):.0f} [{min(v):.0f}–{max(v):.0f}]" if v else "–"


def load(here: Path, run: str) -> dict:
    return json.load(gzip.open(here / run / "results.json.gz"))


def memory_gib(r: dict, cid: int) -> float | None:
    """GPU memory in use after the first collective (the whole GPU, as the rank saw it), the largest in the config."""
    vals = [
        rk["mem"]["used_after_first_bytes"]
        for t in r["trials"]
        if t["config_id"] == cid and t["status"] == "ok"
        for rk in t["ranks"]
        if rk.get("mem", {}).get("used_after_first_bytes", -1) > 0
    ]
    return max(vals) / 2**30 if vals else None


def phases_table(here: Path, run: str) -> tuple[dict[str, dict[str, list]], set[str]]:
    """Prints the run's tables; returns its finished configurations' rows by name, and the names that did not finish."""
    r = load(here, run)
    by = slowest_by_config(r, PHASES)
    init: dict[int, dict[str, list]] = {}
    for t in r["trials"]:
        if t["status"] == "ok":
            for k in INIT:
                init.setdefault(t["config_id"], {}).setdefault(k, []).append(slowest_init(t, k))
    failed = {t["config_id"] for t in r["trials"] if t["status"] != "ok"} - set(by)
    print(f"\n### {run}: the slowest rank per trial, median [min–max] over trials, ms\n")
    print("| configuration | n | `ready` | " + " | ".join(f"`{p}`" for p in PHASES) + " | GPU memory after |")
    print("|---|---|---|" + "---|" * len(PHASES) + "---|")
    named = {}
    for cid, row in sorted(by.items()):
        named[name(r["configs"][cid])] = row
        mem = memory_gib(r, cid)
        cells = [cell(row[p]) for p in ("ready", *PHASES)]
        mem_cell = f"{mem:.1f} GiB" if mem else "–"
        print(f"| {name(r['configs'][cid])} | {len(row['ready'])} | " + " | ".join(cells) + f" | {mem_cell} |")
    for cid in sorted(failed):
        why = {
            re.sub(r"^rank \d+ exit \d+: ", "", t["message"]).split(";")[0]
            for t in r["trials"]
            if t["config_id"] == cid
        }
        print(f"| {name(r['configs'][cid])} | 0 | did not finish: {'; '.join(sorted(why)) or 'error'} |")
    unfinished = {name(r["configs"][cid]) for cid in failed}
    print(f"\n{run}, NCCL's Init timings of the slowest rank per trial, median [min–max], ms\n")
    print("| configuration | " + " | ".join(f"init.{k}" for k in INIT) + " |")
    print("|---|" + "---|" * len(INIT))
    for cid, row in sorted(init.items()):
        print(f"| {name(r['configs'][cid])} | " + " | ".join(cell(row[k]) for k in INIT) + " |")
    return named, unfinished


def med(v: list) -> float:
    return statistics.median([x for x in v if x is not None])


def verdict(runs: dict[str, tuple[dict[str, dict[str, list]], set[str]]], measured: str) -> None:
    print(f"\n### The issue's tests: {measured} against the four configurations, medians of the slowest rank, ms\n")
    print(
        f"| run | first all-reduce: {measured} / cuMem off | ratio | `comm_init`: {measured} / stock | `ready`: best |"
    )
    print("|---|---|---|---|---|")
    for run, (named, unfinished) in runs.items():
        if measured not in named:
            continue
        n = named[measured]
        # the reference is NCCL's own library with cuMem off; runs without stock have the patched library's
        ref_name = next((k for k in ("stock, cuMem off", "patched, cuMem off") if k in named), None)
        ref = named.get(ref_name or "")
        ratio = f"{med(n['first_enqueue']) / med(ref['first_enqueue']):.2f}×" if ref else "–"
        absent = "cuMem off did not finish" if any("cuMem off" in k for k in unfinished) else "no cuMem off here"
        ref_cell = f"{med(ref['first_enqueue']):.1f} ({ref_name})" if ref else absent
        init = f"{med(n['comm_init']):.0f} / {med(named['stock']['comm_init']):.0f}" if "stock" in named else "–"
        best = min(named, key=lambda k: med(named[k]["ready"]))
        print(
            f"| {run} | {med(n['first_enqueue']):.1f} / {ref_cell} | {ratio} | {init} | "
            f"{best} ({med(named[best]['ready']):.0f}) |"
        )


def print_tables(here: Path, runs: tuple[str, ...], measured: str = "next") -> None:
    """measured: the configuration the issue's tests are about (its library's name in LIBS), "next" for the candidates
    built beside the series, "patched" where the series itself holds them."""
    verdict({run: phases_table(here, run) for run in runs}, measured)
