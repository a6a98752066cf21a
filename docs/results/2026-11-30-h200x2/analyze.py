"""The tables of README.md from the files in this folder: python3 analyze.py > tables.md

- fixes: per results file, per fix, ready (median over trials of the slowest rank's), what it saved against the
  baseline, the share of the baseline's connection cost that was (NCCL level: the first collective; torch level:
  init_process_group and the first barrier), the critical path after `import torch` (which no fix touches and which
  varies by seconds between trials), NCCL memory and bus bandwidth;
- comm_init of the lab against the minimal probe (comminit.jsonl);
- real torchrun with examples/prewarm_torchrun.py (torchrun.jsonl, torchrun-loads.jsonl);
- the prewarm thread in coldstart trace's recordings (traces.tar.gz).
"""

import json
import re
import statistics as st
import sys
import tarfile
from collections import defaultdict

HERE = sys.path[0] or "."


def med(v):
    return st.median(v) if v else float("nan")


def phases(rank):
    return {p["name"]: p["dur_ms"] for p in rank["phases"]}


def fixes(path, torch):
    r = json.load(open(f"{HERE}/{path}"))
    by = defaultdict(list)
    for t in r["trials"]:
        if t["status"] != "ok" or "ready_ms" not in t:
            continue
        slowest = max(t["ranks"], key=lambda k: k.get("ready_ms", 0))
        ph = phases(slowest)
        cfg = r["configs"][t["config_id"]]
        scope = (cfg["mode"], cfg["startup"])
        cost = (
            ph.get("init_process_group", 0) + ph.get("barrier_enqueue", 0) + ph.get("barrier_wait", 0)
            if torch
            else ph.get("first_enqueue", 0) + ph.get("first_wait", 0)
        )
        beyond = t["ready_ms"] - ph.get("import_torch", 0) - ph.get("process_start", 0)
        by[(scope, cfg["fix"])].append((t["ready_ms"], beyond, cost, ph.get("prewarm_join", 0)))
    summ = {s["config_id"]: s for s in r["summaries"]}
    mem = defaultdict(float)
    bw = defaultdict(float)
    for c in r["configs"]:
        s = summ[c["id"]]
        key = ((c["mode"], c["startup"]), c["fix"])
        mem[key] = s["nccl_mem_first"]["median"] / 2**20
        bw[key] = s["busbw_gbps"]["median"]
    rows = []
    for (scope, fix), v in sorted(by.items()):
        base = by[(scope, "none")]
        b_ready, b_beyond, b_cost = med([x[0] for x in base]), med([x[1] for x in base]), med([x[2] for x in base])
        ready, beyond = med([x[0] for x in v]), med([x[1] for x in v])
        rows.append(
            f"| {path} | {scope[0]} · {scope[1]} | {fix} | {len(v)} | {ready:.0f} | {b_ready - ready:+.0f} "
            f"| {100 * (b_ready - ready) / b_cost:.0f}% | {beyond:.0f} | {100 * (b_beyond - beyond) / b_cost:.0f}% "
            f"| {med([x[3] for x in v]):.0f} | {mem[(scope, fix)]:.0f} MiB | {bw[(scope, fix)]:.0f} |"
        )
    return rows


FIXES_HEADER = (
    "## Fixes\n\n| file | scope | fix | trials | ready ms | saved ms | hidden (ready) | after import ms "
    "| hidden (after import) | join ms | NCCL mem | busbw GB/s |\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
)


def comm_init():
    rows = [json.loads(line) for line in open(f"{HERE}/comminit.jsonl") if line.strip()]
    by = defaultdict(list)
    for r in rows:
        by[r["variant"]].append(r)
    out = ["| variant | rank-samples | cuda_context ms | comm_init ms median [min–max] | first collective ms |", "|---|---:|---:|---:|---:|"]
    for v, rs in sorted(by.items()):
        init = [x["init_ms"] for x in rs]
        out.append(
            f"| {v} | {len(rs)} | {med([x['context_ms'] for x in rs]):.0f} | {med(init):.0f} [{min(init):.0f}–{max(init):.0f}] "
            f"| {med([x['first_ms'] for x in rs]):.0f} |"
        )
    return out


def torchrun(path, keys):
    objs = []
    for line in open(f"{HERE}/{path}"):
        objs += [json.loads(m.group(0)) for m in re.finditer(r"\{[^{}]*\}", line)]
    by = defaultdict(list)
    for o in objs:
        by[tuple(o.get(k) for k in keys)].append(o)
    out = []
    for k, v in sorted(by.items(), key=lambda kv: str(kv[0])):
        launches = list(zip(v[0::2], v[1::2]))  # the two ranks of a launch print one after the other
        ready = [max(a["ready_ms"], b["ready_ms"]) for a, b in launches]
        after = [max(a["ready_ms"] - a["to_context_ms"], b["ready_ms"] - b["to_context_ms"]) for a, b in launches]
        out.append(
            f"| {' · '.join(f'{n}={x}' for n, x in zip(keys, k))} | {len(launches)} | {med(ready):.0f} | {med(after):.0f} "
            f"| {med([x['load_ms'] for x in v]):.0f} | {med([x.get('prewarm_init_ms', 0) for x in v]):.0f} "
            f"| {med([x['join_ms'] for x in v]):.0f} | {med([x['first_all_reduce_ms'] for x in v]):.0f} |"
        )
    return out


def traces():
    out = []
    with tarfile.open(f"{HERE}/traces.tar.gz") as tar:
        # The prewarm recordings (the lazy baseline has no warm-up thread).
        names = [n for n in tar.getnames() if n.endswith(".tsv") and "prewarm" in n]
        for name in sorted(names):
            calls, pid = [], int(name.split(".")[-2])
            for line in tar.extractfile(name).read().decode().splitlines():
                p = line.split("\t")
                if p[0] == "call" and not p[1].startswith("cuda"):
                    calls.append((p[1], int(p[2]), int(p[3]), int(p[4])))
            others = defaultdict(int)
            for c in calls:
                if c[1] != pid:
                    others[c[1]] += 1
            if not others:
                continue
            tid = max(others, key=others.get)  # the warm-up thread: the busiest besides the main one
            tc = sorted((c for c in calls if c[1] == tid), key=lambda c: c[2])
            end, gaps = tc[0][2], 0
            for c in tc:
                gaps += max(0, c[2] - end) if c[2] - end > 10_000_000 else 0
                end = max(end, c[2] + c[3])
            slow = sum(1 for c in tc if c[3] > 10_000_000)
            syncs = sorted(c[2] for c in calls if c[1] == pid and c[0] == "cuStreamSynchronize")
            chunk = med([b - a for a, b in zip(syncs, syncs[1:])]) / 1e6 if len(syncs) > 2 else 0
            out.append(
                f"| {name.split('/')[0]} | {tid} | {(end - tc[0][2]) / 1e6:.0f} | {sum(c[3] for c in tc) / 1e6:.0f} "
                f"| {slow} | {gaps / 1e6:.0f} | {chunk:.1f} |"
            )
    return out


if __name__ == "__main__":
    print(FIXES_HEADER)
    for f, torch in [
        ("fixes-nccl-cpu.json", False),
        ("fixes-nccl-h2d.json", False),
        ("fixes-nccl-h2d-2gib.json", False),
        ("fixes-nccl-pinned.json", False),
        ("fixes-torch-isolated.json", True),
        ("fixes-torch-ray.json", True),
        ("fixes-torch-isolated-pinned.json", True),
        ("fixes-torch-ray-pinned.json", True),
        ("fixes-torch-isolated-more.json", True),
        ("fixes-nccl-split.json", False),
    ]:
        print("\n".join(fixes(f, torch)))
    print("\n## comm_init: the lab against a minimal probe\n")
    print("\n".join(comm_init()))
    print("\n## Real torchrun, examples/prewarm_torchrun.py\n")
    print("| launch | launches | ready ms | after context ms | load ms | prewarm init ms | join ms | first all-reduce ms |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    print("\n".join(torchrun("torchrun.jsonl", ["masked", "prewarm"])))
    print("\n".join(torchrun("torchrun-loads.jsonl", ["pinned", "chunk_mib", "prewarm"])))
    print("\n## The warm-up thread, traced\n")
    print("| recording | thread | span ms | in driver calls ms | calls over 10 ms | gaps over 10 ms, total ms | main thread's copy, ms each |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    print("\n".join(traces()))
