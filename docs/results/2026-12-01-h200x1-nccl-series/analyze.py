"""The tables of README.md from the files in this folder: python3 analyze.py > tables.md (what each table holds:
../patch_tables.py)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import patch_tables as pt  # noqa: E402

pt.HERE = os.path.dirname(os.path.abspath(__file__))
PATCHED = "NCCL 2.30.7+peer-regions+fd-reserve"
# the two configurations compared, cuMem on
STOCK_ON, PATCHED_ON = "NCCL_CUMEM_ENABLE=(unset) · NCCL 2.30.7", f"NCCL_CUMEM_ENABLE=(unset) · {PATCHED}"

if __name__ == "__main__":
    print("## NCCL level (coldstart's worker), stock and the whole series interleaved, isolated view")
    for k in (2, 4, 8):
        pt.table(f"bench-{k}.json")
        pt.print_whole_gpu(f"bench-{k}.json")
    pt.savings(PATCHED)
    print("\n### The first all-reduce's host side saved by the patched library (cuMem on)\n")
    pt.saved(
        [
            (
                f"bench-{k}.json",
                "first_enqueue",
                STOCK_ON,
                PATCHED_ON,
                "patched vs stock",
            )
            for k in (2, 4, 8)
        ]
    )
    pt.calls("trace-2.json")
    print("\n## Bus bandwidth at 1 GiB and the first call of every other collective")
    pt.table("busbw-2.json")
    pt.coverage("busbw-2.json")
    print("\n## torch level (coldstart's torch probe), stock and the whole series interleaved")
    pt.table("torch-2.json", first="barrier_enqueue")
    print()
    pt.saved(
        [
            (
                "torch-2.json",
                name,
                STOCK_ON,
                PATCHED_ON,
                "patched vs stock",
            )
            for name in ("barrier_enqueue", "ready")
        ]
    )
