"""The tables of README.md from the files in this folder: python3 analyze.py > tables.md (what each table holds:
../patch_tables.py)."""

import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import patch_tables as pt  # noqa: E402

pt.HERE = os.path.dirname(os.path.abspath(__file__))
ON, OFF = "NCCL_FD_TABLE_RESERVE=(unset)", "NCCL_FD_TABLE_RESERVE=0"
CUMEM, NO_CUMEM = "NCCL_CUMEM_ENABLE=(unset)", "NCCL_CUMEM_ENABLE=0"


def reservations(path: str) -> None:
    """The INFO line of each rank's reservation (nccl/*/0004): the table's sizes and the time it took."""
    found = re.findall(r"fd table (\d+) -> (\d+) entries in ([\d.]+) ms", open(f"{pt.HERE}/{path}").read())
    sizes = [f"{a} -> {b}" for a, b, _ in found]
    ms = [float(x) for _, _, x in found]
    kinds = ", ".join(f"{sizes.count(s)}× {s}" for s in sorted(set(sizes)))
    print(f"| {path} | {len(ms)} | {kinds} | {pt.fmt(ms)} |")


if __name__ == "__main__":
    print("## The patched library, reservation on and off, with cuMem on and off, NCCL level, interleaved")
    for k in (2, 4, 8):
        pt.table(f"reserve-{k}.json")
    print("\n### What the reservation saves, and the patched library against cuMem off\n")
    rows = []
    for k in (2, 4, 8):
        f = f"reserve-{k}.json"
        rows += [
            (f, "first_enqueue", f"{OFF} · {CUMEM}", f"{ON} · {CUMEM}", "reservation on vs off"),
            (f, "comm_init", f"{OFF} · {CUMEM}", f"{ON} · {CUMEM}", "reservation on vs off"),
            (f, "ready", f"{OFF} · {CUMEM}", f"{ON} · {CUMEM}", "reservation on vs off"),
            (f, "ready", f"{ON} · {NO_CUMEM}", f"{ON} · {CUMEM}", "patched vs cuMem off"),
        ]
    pt.saved(rows)
    print("\n## The reservation's own INFO lines (one per rank and configuration with it on)\n")
    print("| file | lines | fd table | took, ms: median [min–max] |\n|---|---|---|---|")
    for f in ("reserve-2.fdlines", "reserve-4.fdlines", "reserve-8.fdlines", "torch-reserve-2.fdlines"):
        reservations(f)
    print("\n## Torch level (first barrier: init and connect), 2 ranks")
    pt.table("torch-reserve-2.json", first="barrier_enqueue")
    print()
    pt.saved(
        [("torch-reserve-2.json", name, OFF, ON, "reservation on vs off") for name in ("barrier_enqueue", "ready")]
    )
