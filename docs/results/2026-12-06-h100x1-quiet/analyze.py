"""The tables of this folder's README from its files: per configuration of each run, each trial's slowest rank per
phase (median [min-max] over trials), and the diagnostic library's csdiag parts with the scheduler's account
(median over the configuration's rank-lines). Run from this folder: python3 analyze.py"""

import gzip
import json
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from run_stats import slowest_by_config  # noqa: E402

RUNS = ("screen-16", "screen-32", "quiet-16", "quiet-32", "stock-16", "next-16", "next-32")
PHASES = ("comm_init", "first_enqueue", "first_wait")
PARTS = (
    "preconnect",
    "p2p_setup",
    "proxy_call",
    "getfd",
    "map_peer",
    "exchange",
    "final_sync",
    "launches",
    "group",
    "main_cpu",
    "main_runq",
    "proc_cpu",
    "proc_runq",
)
# The libraries by their folder on the node (the labels' "(patched)", "(next)", "(diag)"); which patches "next" held
# differs by run: 0005-0006 in screen-*, 0005-0007 in next-* (steps.log, build-next*.txt)
LIBS = {"2.30.7+stock": "stock", "2.30.7+peer-regions": "patched", "/next/": "next", "/diag/": "diag"}
SHORT = {
    "NCCL_P2P_PEER_REGION": None,
    "NCCL_CSDIAG_BLOCKING_WAITS": "waits",
    "NCCL_SOCKET_POLL_TIMEOUT_MSEC": "poll",
    "COLDSTART_CUDA_SCHEDULE": "sched",
    "NCCL_CUMEM_ENABLE": "cumem",
    "NCCL_LOCAL_REGISTER": "noreg",
    "NCCL_GRAPH_REGISTER": None,
}


def name(config: dict, run: str) -> str:
    lib = next((v for k, v in LIBS.items() if k in config["nccl_lib"]), config["nccl_lib"])
    if lib == "next":
        lib = "next 0005-0006" if run.startswith("screen") else "next 0005-0007"
    env = [
        f"{SHORT.get(e['key'], e['key'])}={e['value']}"
        for e in config["env"]
        if e.get("value") is not None and SHORT.get(e["key"], e["key"]) is not None
    ]
    return " ".join([lib, *env])


def cell(v: list[float]) -> str:
    return f"{statistics.median(v):.0f} [{min(v):.0f}–{max(v):.0f}]" if v else "–"


def table(run: str) -> None:
    r = json.load(gzip.open(HERE / run / "results.json.gz"))
    config_of = {t["index"]: t["config_id"] for t in r["trials"]}
    phases = slowest_by_config(r, PHASES)
    print(f"\n### {run}: the slowest rank per trial, median [min–max] over trials, ms\n")
    print("| configuration | n | `ready` | " + " | ".join(f"`{p}`" for p in PHASES) + " |")
    print("|---|---|---|" + "---|" * len(PHASES))
    for cid, by in sorted(phases.items()):
        cells = [cell(by[p]) for p in ("ready", *PHASES)]
        print(f"| {name(r['configs'][cid], run)} | {len(by['ready'])} | " + " | ".join(cells) + " |")
    lines = HERE / f"{run}.lines"
    if not lines.exists() or not lines.stat().st_size:
        return
    parts: dict = defaultdict(lambda: defaultdict(list))
    for line in open(lines):
        m = re.match(r"[\w-]+/trials/(\d+)/rank-\d+\.log:.*csdiag rank \d+ nranks \d+: (.*)", line)
        if m:
            for key, ms, _ in re.findall(r"(\w+)=([-\d.]+)/(\d+)", m.group(2)):
                parts[config_of[int(m.group(1))]][key].append(float(ms))
    cids = sorted(parts)
    print(f"\n{run}, the diagnostic library: csdiag parts, median ms a rank over the configuration's rank-lines\n")
    print("| part | " + " | ".join(f"{name(r['configs'][c], run)} (n {len(parts[c]['group'])})" for c in cids) + " |")
    print("|---|" + "---|" * len(cids))
    for key in PARTS:
        print(
            f"| {key} | "
            + " | ".join(f"{statistics.median(parts[c][key]):.1f}" if parts[c][key] else "–" for c in cids)
            + " |"
        )


if __name__ == "__main__":
    for run in RUNS:
        table(run)
