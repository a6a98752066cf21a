"""The tables of README.md from the files in this folder: python3 analyze.py > tables.md (what each table holds:
../patch_tables.py)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import patch_tables as pt  # noqa: E402

pt.HERE = os.path.dirname(os.path.abspath(__file__))
GROWN = "LD_PRELOAD=/work/main/.device/fdbin/fd_table_preload.so"  # the table grown before main (fd_table_preload.c)
PLAIN = "LD_PRELOAD=(unset)"

if __name__ == "__main__":
    print("## The kernel's fd-table growth on the node (nccl/gpu/fd_growth.c)\n")
    print("```\n" + open(f"{pt.HERE}/uname.txt").read() + open(f"{pt.HERE}/fd_growth.txt").read() + "```")
    print("\n## When the ranks' highest fd reaches 64 (nccl/gpu/fd_watch.py)\n")
    pt.fd_crossings("fdwatch-2", "2 ranks, NCCL level")
    print()
    pt.fd_crossings("fdwatch-8", "8 ranks, NCCL level")
    print()
    pt.fd_crossings("fdwatch-torch-2", "2 ranks, torch level")
    print("\n## The patched library with the fd table grown before main, NCCL level, interleaved")
    for k in (2, 4, 8):
        pt.table(f"fdtable-{k}.json")
    print("\n### What the grown table saves, and the patched library against cuMem off\n")
    rows = []
    for k in (2, 4, 8):
        f = f"fdtable-{k}.json"
        on, off = "NCCL_CUMEM_ENABLE=(unset)", "NCCL_CUMEM_ENABLE=0"
        rows += [
            (f, "first_enqueue", f"{on} · {PLAIN}", f"{on} · {GROWN}", "patched, table grown vs not"),
            (f, "ready", f"{on} · {PLAIN}", f"{on} · {GROWN}", "patched, table grown vs not"),
            (f, "ready", f"{off} · {PLAIN}", f"{on} · {PLAIN}", "patched vs cuMem off"),
            (f, "ready", f"{off} · {GROWN}", f"{on} · {GROWN}", "patched vs cuMem off, both grown"),
        ]
    pt.saved(rows)
    print("\n## Torch level: the probe grows its table (COLDSTART_FD_TABLE=1024, coldstart.grow_fd_table)")
    runs = ("fdtable-torch-2.json", "fdtable-torch-4.json", "fdtable-torch-2-12.json")
    for f in runs:
        pt.table(f, first="barrier_enqueue")
    print()
    pt.saved(
        [
            (f, name, "COLDSTART_FD_TABLE=(unset)", "COLDSTART_FD_TABLE=1024", "grown vs not")
            for f in runs
            for name in ("barrier_enqueue", "ready")
        ]
    )
