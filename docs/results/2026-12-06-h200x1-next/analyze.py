"""The tables of this folder's README from its files (docs/results/next_tables.py): per configuration of each bench
run, each trial's slowest rank per phase and per NCCL Init timing, the GPU memory after the first collective, and the
issue's three tests at each rank count. Run from this folder: python3 analyze.py > tables.md"""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from next_tables import print_tables  # noqa: E402

RUNS = ("next-16", "next-32", "next-trace-32")

if __name__ == "__main__":
    print_tables(HERE, RUNS)
