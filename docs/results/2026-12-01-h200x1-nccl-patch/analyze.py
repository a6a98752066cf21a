"""The tables of README.md from the files in this folder: python3 analyze.py > tables.md (what each table holds:
../patch_tables.py)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import patch_tables as pt  # noqa: E402

pt.HERE = os.path.dirname(os.path.abspath(__file__))
table, savings, calls = pt.table, pt.savings, pt.calls

if __name__ == "__main__":
    print("## NCCL level (coldstart's worker), stock and patched NCCL 2.30.7 interleaved, isolated view")
    for k in (2, 4, 8):
        table(f"bench-{k}.json")
    savings()
    table("busbw-2.json")
    calls("trace-2.json")
    print("\n## torch level (coldstart's torch probe), the patched library with its switch off and on")
    table("torch-switch-2.json", first="barrier_enqueue")
