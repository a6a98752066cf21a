"""The tables of this folder's README from its files: per configuration of scale-16 and scale-32, each trial's slowest
rank per phase (median [min-max] over trials), and the csdiag parts of diag-16 (median, 10th percentile and max over
its 48 rank-lines). Run from this folder: python3 analyze.py"""

import json
import re
import statistics
from collections import defaultdict

PHASES = ("ready", "comm_init", "first_enqueue", "first_wait")
AXES = ("NCCL_CUMEM_ENABLE", "COLDSTART_CUDA_SCHEDULE", "NCCL_LOCAL_REGISTER")


def slowest(trial: dict, phase: str) -> float:
    if phase == "ready":
        return trial["ready_ms"]
    return max(p["dur_ms"] for rk in trial["ranks"] for p in rk["phases"] if p["name"] == phase)


def label(config: dict) -> str:
    env = {e["key"]: e.get("value") for e in config["env"]}
    shown = [f"{k}={env[k] if env[k] is not None else '(unset)'}" for k in AXES if k in env]
    return " · ".join(shown)


def scale_table(folder: str) -> None:
    r = json.load(open(f"{folder}/results.json"))
    rows = defaultdict(lambda: defaultdict(list))
    for t in r["trials"]:
        if t["status"] == "ok":
            for ph in PHASES:
                rows[t["config_id"]][ph].append(slowest(t, ph))
    print(f"\n{folder}: the slowest rank per trial, median [min-max] over trials, ms\n")
    print("| configuration | n | " + " | ".join(f"`{p}`" for p in PHASES) + " |")
    print("|---|---|" + "---|" * len(PHASES))
    for cid, by in sorted(rows.items()):
        cells = [f"{statistics.median(v):.0f} [{min(v):.0f}–{max(v):.0f}]" for v in (by[p] for p in PHASES)]
        print(f"| {label(r['configs'][cid])} | {len(by['ready'])} | " + " | ".join(cells) + " |")


def diag_table(path: str) -> None:
    parts = defaultdict(list)
    counts = {}
    for line in open(path):
        m = re.search(r"csdiag rank \d+ nranks \d+: (.*)", line)
        if m:
            for key, ms, n in re.findall(r"(\w+)=([\d.]+)/(\d+)", m.group(1)):
                parts[key].append(float(ms))
                counts[key] = n
    print(f"\n{path}: ms per rank over its first collective's connect, {len(parts['preconnect'])} rank-lines\n")
    print("| part | calls a rank | median | p10 | max |")
    print("|---|---|---|---|---|")
    for key, v in parts.items():
        v.sort()
        print(f"| {key} | {counts[key]} | {statistics.median(v):.1f} | {v[len(v) // 10]:.1f} | {v[-1]:.1f} |")


if __name__ == "__main__":
    scale_table("scale-16")
    scale_table("scale-32")
    diag_table("diag-16.lines")
