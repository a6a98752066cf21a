"""The tables of README.md from the files in this folder: python3 analyze.py > tables.md (what each table holds:
../patch_tables.py)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import patch_tables as pt  # noqa: E402

pt.HERE = os.path.dirname(os.path.abspath(__file__))
table, savings, calls, diag = pt.table, pt.savings, pt.calls, pt.diag

if __name__ == "__main__":
    print("## NCCL level (coldstart's worker), stock and patched NCCL 2.30.7 interleaved, isolated view")
    for k in (2, 4, 8):
        table(f"bench-{k}.json")
        pt.print_whole_gpu(f"bench-{k}.json")
    savings()
    calls("trace-2.json")
    print("\n## torch level (coldstart's torch probe), stock and patched NCCL 2.30.7 interleaved")
    table("torch-2.json", first="barrier_enqueue")
    print("\n## Where the patched first collective goes (nccl/diag/nccl-diag-timers.patch), ms per rank, medians")
    diag("run1-diag-*.lines", "run 1: the connect pass by part (NCCL_P2P_PEER_REGION=0,1; 3 trials each)")
    diag("run2-uds-*.lines", "run 2: the fd request by part (NCCL_P2P_PEER_REGION=0,1; 3 trials each)")
