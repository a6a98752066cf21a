"""The tables of this folder's README from its files (docs/results/next_tables.py): per configuration of each bench
run, each trial's slowest rank per phase and per NCCL Init timing, the GPU memory after the first collective, and the
issue's three tests, the series (the cache's 2.30.7+peer-regions build) against NCCL's own. Run from this folder:
python3 analyze.py > tables.md"""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from next_tables import print_tables  # noqa: E402

# next-64-four: the four configurations interleaved (the run); the others came first, in the same call
# before it: stock and the series cuMem on (one trial each), stock cuMem off alone, and one traced trial of each
RUNS = ("next-64-four", "next-64", "next-64-cumem-off", "next-trace-64")

if __name__ == "__main__":
    print_tables(HERE, RUNS, measured="patched")
