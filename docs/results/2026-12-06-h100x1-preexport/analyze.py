"""The tables of this folder's README from its files: per configuration of diag-16 and diag-32 (CS_PREEXPORT unset
and 1), each trial's slowest rank per phase, and the csdiag parts (median over the configuration's rank-lines).
Run from this folder: python3 analyze.py"""

import json
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from run_stats import slowest  # noqa: E402

PHASES = ("comm_init", "first_enqueue", "first_wait")
PARTS = ("p2p_setup", "proxy_connect", "proxy_setup", "gproxy_connect", "getfd", "export", "map_peer", "launches",
         "preconnect", "group")


def preexport(config: dict) -> str:
    env = {e["key"]: e.get("value") for e in config["env"]}
    return env.get("CS_PREEXPORT") or "(unset)"


def tables(k: int) -> None:
    r = json.load(open(HERE / f"diag-{k}/results.json"))
    config_of = {t["index"]: t["config_id"] for t in r["trials"]}
    phases = defaultdict(lambda: defaultdict(list))
    for t in r["trials"]:
        if t["status"] == "ok":
            phases[t["config_id"]]["ready"].append(t["ready_ms"])
            for ph in PHASES:
                phases[t["config_id"]][ph].append(slowest(t, ph))
    parts = defaultdict(lambda: defaultdict(list))
    for line in open(HERE / f"diag-{k}.lines"):
        m = re.match(r"diag-\d+/trials/(\d+)/rank-\d+\.log:.*csdiag rank \d+ nranks \d+: (.*)", line)
        if m:
            for key, ms, _ in re.findall(r"(\w+)=([\d.]+)/(\d+)", m.group(2)):
                parts[config_of[int(m.group(1))]][key].append(float(ms))
    print(f"\ndiag-{k}: the slowest rank per trial (median [min-max] over trials), ms\n")
    print("| CS_PREEXPORT | n | `ready` | " + " | ".join(f"`{p}`" for p in PHASES) + " |")
    print("|---|---|---|" + "---|" * len(PHASES))
    for cid, by in sorted(phases.items()):
        cells = [f"{statistics.median(v):.0f} [{min(v):.0f}–{max(v):.0f}]" for v in (by[p] for p in ("ready", *PHASES))]
        print(f"| {preexport(r['configs'][cid])} | {len(by['ready'])} | " + " | ".join(cells) + " |")
    print(f"\ndiag-{k}: csdiag parts, median ms per rank over the configuration's rank-lines\n")
    cids = sorted(parts)
    print("| part | " + " | ".join(f"CS_PREEXPORT={preexport(r['configs'][c])} (n {len(parts[c]['group'])})"
                                    for c in cids) + " |")
    print("|---|" + "---|" * len(cids))
    for key in PARTS:
        print(f"| {key} | " + " | ".join(f"{statistics.median(parts[c][key]):.1f}" if parts[c][key] else "–"
                                         for c in cids) + " |")


if __name__ == "__main__":
    tables(16)
    tables(32)
