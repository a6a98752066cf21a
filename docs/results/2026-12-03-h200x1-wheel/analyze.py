"""The tables of README.md from the files in this folder: python3 analyze.py > tables.md (what each table holds:
../patch_tables.py)."""

import json
import os
import statistics as st
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import patch_tables as pt  # noqa: E402

pt.HERE = os.path.dirname(os.path.abspath(__file__))
CUMEM, NO_CUMEM = "NCCL_CUMEM_ENABLE=(unset)", "NCCL_CUMEM_ENABLE=0"


def ratios() -> None:
    """The patched first collective's host side over cuMem off's, medians of the slowest rank per trial."""
    print("| ranks on one GPU | first collective: patched | cuMem off | ratio | `ready`: patched | cuMem off |")
    print("|---|---|---|---|---|---|")
    for k in (2, 4, 8):
        f = f"bench-{k}.json"
        on, off = pt.per_trial(f, CUMEM, "first_enqueue"), pt.per_trial(f, NO_CUMEM, "first_enqueue")
        ron, roff = pt.per_trial(f, CUMEM, "ready"), pt.per_trial(f, NO_CUMEM, "ready")
        print(
            f"| {k} | {pt.fmt(on)} ms | {pt.fmt(off)} ms | {st.median(on) / st.median(off):.2f}× | "
            f"{pt.fmt(ron)} ms | {pt.fmt(roff)} ms |"
        )


def parts(path: str) -> None:
    """Each rank's first collective, traced (CUPTI): every driver-call kind's time, and what no call holds."""
    r = pt.load(path)
    labels = {s["config_id"]: s["label"] for s in r["summaries"]}
    rows: dict[str, list[tuple[float, dict]]] = {}
    for t in r["trials"]:
        if t["status"] != "ok":
            continue
        for k in t["ranks"]:
            first = [p["dur_ms"] for p in k["phases"] if p["name"] == "first_enqueue"]
            rows.setdefault(labels[t["config_id"]], []).append((first[0], k.get("first_collective_calls") or {}))
    kinds = sorted({kind for v in rows.values() for _, calls in v for kind in calls})
    print("| configuration | rank-samples | first collective | " + " | ".join(kinds) + " | in no driver call |")
    print("|---|---|---|" + "---|" * (len(kinds) + 1))
    for label, samples in rows.items():
        cells = []
        for kind in kinds:
            ms = [calls.get(kind, {}).get("ms", 0.0) for _, calls in samples]
            n = sorted({calls.get(kind, {}).get("count", 0) for _, calls in samples})
            cells.append(f"{st.median(ms):.2f} ({'/'.join(map(str, n))})")
        rest = [first - sum(c["ms"] for c in calls.values()) for first, calls in samples]
        firsts = [first for first, _ in samples]
        print(f"| {label} | {len(samples)} | {pt.fmt(firsts)} | " + " | ".join(cells) + f" | {pt.fmt(rest)} |")


if __name__ == "__main__":
    print("## The patched library against cuMem off, NCCL level, interleaved (bench-{2,4,8}.json)")
    for k in (2, 4, 8):
        pt.table(f"bench-{k}.json")
    print("\n### The first collective and `ready`, slowest rank per trial, median [min–max]\n")
    ratios()
    print("\n### What the patched library saves against cuMem off (negative: it costs)\n")
    rows = []
    for k in (2, 4, 8):
        f = f"bench-{k}.json"
        rows += [(f, name, NO_CUMEM, CUMEM, "patched vs cuMem off") for name in ("first_enqueue", "comm_init", "ready")]
    pt.saved(rows)
    print("\n## The first collective by driver call, 2 ranks (trace-2.json: ms per rank, median; (calls))\n")
    parts("trace-2.json")
    print("\n## `coldstart bench` with no flags on the one-GPU node (onegpu.json)")
    pt.table("onegpu.json")
    print("\n## The torchrun job under the printed LD_PRELOAD (torchrun/)\n")
    here = pt.HERE
    for name in ("patched", "own"):
        lines = [x for x in open(f"{here}/torchrun/{name}.txt") if x.startswith(("+ ", "rank "))]
        print(f"`{name}`:\n```\n" + "".join(lines) + "```")
    env = json.load(open(f"{here}/wheel-env.json"))
    print(f"\n`coldstart nccl env --json`: schema {env.get('schema')}, library {env['library']}")
