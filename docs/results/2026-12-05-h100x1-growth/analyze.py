"""Tables of the growth sweep (2..32 ranks on one H100), from the results here: python3 analyze.py > tables.md.

Per configuration and rank count: trials ok of run, ready (the slowest rank per trial), comm_init and the first
collective's host side (the slowest rank's), and the GPU memory NCCL added by the first collective (median over
rank-samples, as bench's table). Then the connection cost wherever it is paid: NCCL's own `connections` Init timing
(what init connects) and the first collective (enqueue and wait: what it connects lazily, and the collective), the
slowest rank's per trial, median over trials. The growth laws are `coldstart report --growth --markdown` over the
same files (growth.md).
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent))  # docs/results: what the analyze.py scripts share
from run_stats import fmt, med, slowest, slowest_init  # noqa: E402

HERE = Path(__file__).parent
RANKS = [2, 4, 8, 16, 32]
NAMES = {
    "NCCL_P2P_PEER_REGION=0|NCCL_CUMEM_ENABLE unset": "stock path (patch switched off)",
    "NCCL_P2P_PEER_REGION=0|NCCL_CUMEM_ENABLE=0": "cuMem off",
    "NCCL_P2P_PEER_REGION=1|NCCL_CUMEM_ENABLE unset": "patched (peer regions)",
    "NCCL_P2P_PEER_REGION=1|NCCL_CUMEM_ENABLE=0": "patched, cuMem off",
}


def slowest_first(trial: dict) -> float | None:
    per_rank = []
    for r in trial["ranks"]:
        parts = [p["dur_ms"] for p in r["phases"] if p["name"] in ("first_enqueue", "first_wait")]
        if len(parts) == 2:
            per_rank.append(sum(parts))
    return max(per_rank) if per_rank else None


def ok_trials(run: dict, key: str) -> list[dict]:
    ids = [c["id"] for c in run["configs"] if key in c["key"]]
    return [t for t in run["trials"] if t["config_id"] in ids and t["status"] == "ok"]


def connection_cost() -> None:
    print()
    print("| configuration | ranks | init: connections | first collective (enqueue + wait) | both |")
    print("|---|---:|---:|---:|---:|")
    for key, name in NAMES.items():
        for k in RANKS:
            ok = ok_trials(json.loads((HERE / f"growth-{k}" / "results.json").read_text()), key)
            if not ok:
                continue
            init = med(slowest_init(t, "connections") for t in ok)
            first = med(slowest_first(t) for t in ok)
            both = med(
                (a + b) if a is not None and b is not None else None
                for a, b in ((slowest_init(t, "connections"), slowest_first(t)) for t in ok)
            )
            print(f"| {name} | {k} | {fmt(init)} | {fmt(first)} | {fmt(both)} |")


def main() -> None:
    print("| configuration | ranks | ok | ready | comm_init | first collective (host) | NCCL mem after first |", end="")
    print(" failure |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for key, name in NAMES.items():
        for k in RANKS:
            run = json.loads((HERE / f"growth-{k}" / "results.json").read_text())
            ids = [c["id"] for c in run["configs"] if key in c["key"]]
            trials = [t for t in run["trials"] if t["config_id"] in ids]
            ok = [t for t in trials if t["status"] == "ok"]
            summary = next(s for s in run["summaries"] if s["config_id"] in ids)
            mem = summary.get("nccl_mem_first", {})
            failure = next((t["message"] for t in trials if t["status"] != "ok"), "")[:140].replace("|", "/")
            cells = [name, str(k), f"{len(ok)}/{len(trials)}"]
            if ok:
                cells += [
                    fmt(med(t["ready_ms"] for t in ok)),
                    fmt(med(slowest(t, "comm_init") for t in ok)),
                    fmt(med(slowest(t, "first_enqueue") for t in ok)),
                    f"{mem['median'] / 2**30:.1f} GiB" if mem.get("n") else "–",
                ]
            else:
                cells += ["–"] * 4
            print("| " + " | ".join(cells + [failure]) + " |")
    connection_cost()


if __name__ == "__main__":
    main()
