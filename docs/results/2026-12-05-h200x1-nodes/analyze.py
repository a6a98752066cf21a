"""Tables of the multi-node lab (4, 8, 16 ranks over 1, 2, 4 "nodes" on one H200), from the results here:
python3 analyze.py > tables.md; another run's, python3 analyze.py RESULTS_JSON... (the 1 ms run:
../2026-12-06-h100x1-nodes-1ms/).

Per rank count and node count: trials ok of run, the hosts the ranks reported, ready (the slowest rank per trial),
comm_init, NCCL's Init timings bootstrap / allgathers / connections, the first collective's host side and its wait
(the slowest rank's), and the connections NCCL made at the first collective by transport (a rank's, median over
the ranks of the ok trials). Medians over the trials. The growth laws are `coldstart report --growth --markdown`
over the same files (growth.md).
"""

import json
import statistics
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent))  # docs/results: what the analyze.py scripts share
from run_stats import fmt, med, slowest, slowest_init  # noqa: E402

HERE = Path(__file__).parent / "nodes-none"
RANKS = [4, 8, 16]


def transports(ok: list[dict]) -> str:
    per_rank: dict[str, list[int]] = {}
    for t in ok:
        for r in t["ranks"]:
            for name, n in r["nccl"].get("lazy_connections", {}).items():
                per_rank.setdefault(name, []).append(n)
    ranks = sum(len(t["ranks"]) for t in ok)
    # a rank without a transport's connections counts 0 for it
    return ", ".join(
        f"{name} {statistics.median(ns + [0] * (ranks - len(ns))):g}" for name, ns in sorted(per_rank.items())
    )


def main(paths: list[Path]) -> None:
    print("| ranks | nodes | ranks per node | ok | hosts | ready | comm_init | init.bootstrap |", end="")
    print(" init.allgathers | init.connections | first collective (host) | first wait |", end="")
    print(" its connections per rank, by transport |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for path in paths:
        run = json.loads(path.read_text())
        for config in sorted(run["configs"], key=lambda c: c.get("nodes", 1)):
            nodes = config.get("nodes", 1)
            trials = [t for t in run["trials"] if t["config_id"] == config["id"]]
            ok = [t for t in trials if t["status"] == "ok"]
            k = len(ok[0]["ranks"]) if ok else 0
            hosts = Counter(len({r["host"] for r in t["ranks"]}) for t in ok).most_common(1)[0][0] if ok else 0
            cells = [str(k), str(nodes), str(k // nodes), f"{len(ok)}/{len(trials)}", str(hosts)]
            cells += [
                fmt(med(t["ready_ms"] for t in ok)),
                fmt(med(slowest(t, "comm_init") for t in ok)),
                *(fmt(med(slowest_init(t, key) for t in ok)) for key in ("bootstrap", "allgathers", "connections")),
                fmt(med(slowest(t, "first_enqueue") for t in ok)),
                fmt(med(slowest(t, "first_wait") for t in ok)),
                transports(ok),
            ]
            print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main([Path(a) for a in sys.argv[1:]] or [HERE / f"ranks-{k}" / "results.json" for k in RANKS])
