"""The tables of README.md from the files in this folder: python3 analyze.py > tables.md

The fixes tables use the same columns as ../2026-11-30-h200x2/analyze.py (imported from there): per results file, per
fix, ready (median over trials of the slowest rank's), what it saved against the baseline and the share of the
baseline's connection cost that was. Real torchrun (torchrun-pieces.jsonl): the two ranks of a launch print one
line each, and now and then in one line; a line's second object belongs to the launch of the first.
"""

import json
import os
import re
import statistics as st
import sys
from collections import defaultdict

HERE = sys.path[0] or "."
sys.path.insert(0, os.path.join(HERE, "..", "2026-11-30-h200x2"))
import analyze as s3  # noqa: E402

s3.HERE = HERE


def after_meeting(path):
    """Per configuration: ready, and its part after the ranks met (the last rank leaving sync_init to the last first
    collective done: what bench's ranking measures a fix on), median [min-max] over trials; saved and hidden on it."""
    r = json.load(open(f"{HERE}/{path}"))
    cfg = {c["id"]: c for c in r["configs"]}
    torch = r["spec"].get("worker") == "torch"
    by = defaultdict(list)
    for t in r["trials"]:
        if t["status"] != "ok" or "ready_ms" not in t:
            continue
        end = lambda k, name: max(p["start_ms"] + p["dur_ms"] for p in k["phases"] if p["name"] == name)  # noqa: E731
        met = max(end(k, "sync_init") for k in t["ranks"])
        done = max(end(k, "barrier_wait" if torch else "first_wait") for k in t["ranks"])
        cost = max(
            sum(p["dur_ms"] for p in k["phases"] if p["name"] in
                (("init_process_group", "barrier_enqueue", "barrier_wait") if torch else ("first_enqueue", "first_wait")))
            for k in t["ranks"]
        )
        c = cfg[t["config_id"]]
        by[(c["mode"], c["startup"], c["fix"])].append((t["ready_ms"], done - met, cost))
    out = []
    for (mode, startup, fix), v in sorted(by.items()):
        base = by[(mode, startup, "none")]
        b_after, b_cost = st.median(x[1] for x in base), st.median(x[2] for x in base)
        after = [x[1] for x in v]
        out.append(
            f"| {path} | {mode} · {startup} | {fix} | {len(v)} | {st.median(x[0] for x in v):.0f} "
            f"| {st.median(after):.0f} [{min(after):.0f}–{max(after):.0f}] | {b_after - st.median(after):+.0f} "
            f"| {100 * (b_after - st.median(after)) / b_cost:.0f}% |"
        )
    return out


def torchrun(path):
    by = defaultdict(list)
    for line in open(f"{HERE}/{path}"):
        first = None
        for m in re.finditer(r"\{[^{}]*\}", line):
            o = json.loads(m.group(0))
            first = first or o
            by[(first["fix"], first["launch"])].append(o)
    out = []
    for fix in ("none", "prewarm", "cumem-off"):
        launches = [v for (f, _), v in sorted(by.items()) if f == fix]
        ready = [max(r["ready_ms"] for r in v) for v in launches]
        after = [max(r["ready_ms"] - r["to_context_ms"] for r in v) for v in launches]
        ranks = [r for v in launches for r in v]
        out.append(
            f"| {fix} | {len(launches)} | {st.median(ready):.0f} | {' '.join(f'{x:.0f}' for x in ready)} "
            f"| {st.median(after):.0f} | {st.median(r['load_ms'] for r in ranks):.0f} "
            f"| {st.median(r['join_ms'] for r in ranks):.0f} | {st.median(r['first_all_reduce_ms'] for r in ranks):.0f} |"
        )
    return out


if __name__ == "__main__":
    print(s3.FIXES_HEADER)
    for f, torch in [
        ("fixes-nccl-pieces.json", False),
        ("fixes-nccl-pieces-4gib.json", False),
        ("fixes-torch-isolated-pieces.json", True),
        ("fixes-torch-isolated-pinned.json", True),
        ("fixes-torch-ray-pieces.json", True),
        ("fixes-torch-ray-both.json", True),
        ("fixes-torch-isolated-both.json", True),
    ]:
        print("\n".join(s3.fixes(f, torch)))
    print("\n## After the ranks met: what bench's ranking measures a fix on (both leases)\n")
    print("| file | scope | fix | trials | ready ms | after the meeting ms | saved ms | hidden |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    earlier = ["../2026-11-30-h200x2/" + f for f in (
        "fixes-nccl-cpu.json", "fixes-nccl-h2d-2gib.json", "fixes-nccl-pinned.json", "fixes-torch-isolated.json",
        "fixes-torch-ray.json", "fixes-torch-isolated-pinned.json", "fixes-torch-ray-pinned.json")]
    for f in earlier + [
        "fixes-nccl-pieces.json", "fixes-nccl-pieces-4gib.json", "fixes-torch-isolated-pieces.json",
        "fixes-torch-isolated-pinned.json", "fixes-torch-ray-pieces.json", "fixes-torch-ray-both.json",
        "fixes-torch-isolated-both.json",
    ]:
        print("\n".join(after_meeting(f)))
    print("\n## Real torchrun, per-rank visibility, 32 GiB copied from pageable memory 16 MiB at a time\n")
    print("| fix | launches | ready ms (median) | ready ms, each launch | after context ms | load ms | join ms | first all-reduce ms |")
    print("|---|---:|---:|---|---:|---:|---:|---:|")
    print("\n".join(torchrun("torchrun-pieces.jsonl")))
