"""The tables of README.md from the files in this folder: python3 analyze.py > tables.md

Per results file and configuration, over the trials that ended ok (n): ready (the slowest rank's), the first
collective's host side (first_enqueue; the torch probe's connections are in its first barrier, barrier_enqueue) and
comm_init, each the slowest rank's per trial, as median [min-max]; NCCL's memory (what the GPU's use grew by from
before init to after the first collective, per rank: with several ranks on one GPU it includes the growth of the
others) and the steady-state bus bandwidth, medians over ranks and trials; and from trace-2.json the driver calls
of each rank's first collective.
"""

import json
import statistics as st
import sys
from collections import defaultdict

HERE = sys.path[0] or "."


def fmt(values):
    if not values:
        return "–"
    return f"{st.median(values):.0f} [{min(values):.0f}–{max(values):.0f}]" if st.median(values) >= 20 else (
        f"{st.median(values):.1f} [{min(values):.1f}–{max(values):.1f}]")


def slowest(trial, name):
    durs = [p["dur_ms"] for k in trial["ranks"] for p in k["phases"] if p["name"] == name]
    return max(durs) if durs else None


def table(path, first="first_enqueue"):
    r = json.load(open(f"{HERE}/{path}"))
    ranks = r["spec"]["ranks_per_gpu"] * len(r["spec"]["devices"])
    labels = {s["config_id"]: s["label"] for s in r["summaries"]}
    by = defaultdict(lambda: defaultdict(list))
    for t in r["trials"]:
        by[t["config_id"]]["all"].append(t)
        if t["status"] != "ok":
            continue
        row = by[t["config_id"]]
        row["ready"].append(t["ready_ms"])
        for name in (first, "comm_init", "init_process_group"):
            v = slowest(t, name)
            if v is not None:
                row[name].append(v)
        for k in t["ranks"]:
            m = k.get("mem", {})
            if m.get("used_after_first_bytes", -1) >= 0 and m.get("used_before_init_bytes", -1) >= 0:
                row["mem"].append((m["used_after_first_bytes"] - m["used_before_init_bytes"]) / 2**30)
            if k.get("steady"):
                row["busbw"].append(k["steady"]["busbw_gbps"])
    init = "init_process_group" if first == "barrier_enqueue" else "comm_init"
    print(f"\n### {path}: {ranks} ranks on one GPU, {r['spec']['size_bytes'] >> 20} MiB\n")
    print(f"| configuration | n | ready ms | {first} ms | {init} ms | NCCL mem first GiB | busbw GB/s |")
    print("|---|---|---|---|---|---|---|")
    for cid in sorted(by):
        row = by[cid]
        n = f"{len(row['ready'])}/{len(row['all'])}"
        mem = f"{st.median(row['mem']):.2f}" if row["mem"] else "–"
        bw = f"{st.median(row['busbw']):.1f}" if row["busbw"] else "–"
        print(f"| {labels[cid]} | {n} | {fmt(row['ready'])} | {fmt(row[first])} | {fmt(row[init])} | {mem} | {bw} |")


def calls(path):
    r = json.load(open(f"{HERE}/{path}"))
    labels = {s["config_id"]: s["label"] for s in r["summaries"]}
    print(f"\n### {path}: driver calls of each rank's first collective (CUPTI), per rank\n")
    print("| configuration | rank-samples | export | import | map | set_access | export ms | set_access ms |")
    print("|---|---|---|---|---|---|---|---|")
    rows = defaultdict(list)
    for t in r["trials"]:
        if t["status"] == "ok":
            rows[t["config_id"]] += [k.get("first_collective_calls") or {} for k in t["ranks"]]
    for cid in sorted(rows):
        ds = rows[cid]

        def count(kind):
            return "/".join(sorted({str(d.get(kind, {}).get("count", 0)) for d in ds}))

        def ms(kind):
            return fmt([d.get(kind, {}).get("ms", 0.0) for d in ds])

        print(f"| {labels[cid]} | {len(ds)} | {count('export')} | {count('import')} | {count('map')} | "
              f"{count('set_access')} | {ms('export')} | {ms('set_access')} |")


if __name__ == "__main__":
    print("## NCCL level (coldstart's worker), stock and patched NCCL 2.30.7 interleaved, isolated view")
    for k in (2, 4, 8):
        table(f"bench-{k}.json")
    table("busbw-2.json")
    calls("trace-2.json")
    print("\n## torch level (coldstart's torch probe), the patched library with its switch off and on")
    table("torch-switch-2.json", first="barrier_enqueue")
