"""The tables of README.md from the files in this folder: python3 analyze.py > tables.md (what each table holds:
../patch_tables.py)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import patch_tables as pt  # noqa: E402

pt.HERE = os.path.dirname(os.path.abspath(__file__))
PATCHED, SWITCH_OFF = "NCCL_P2P_PEER_REGION=(unset)", "NCCL_P2P_PEER_REGION=0"
CUMEM_ON, CUMEM_OFF = "NCCL_CUMEM_ENABLE=(unset)", "NCCL_CUMEM_ENABLE=0"
PLAIN, GROWN = "LD_PRELOAD=(unset)", "LD_PRELOAD=/work/main/.device/fdbin/fd_table_preload.so"

if __name__ == "__main__":
    print("## Two GPUs, one rank each, isolated view: the patched library, its switch off (the stock path), cuMem off")
    pt.table("gpu2.json")
    print()
    off = f"{SWITCH_OFF} · {CUMEM_OFF}"  # cuMem off: the switch has nothing to act on
    rows = []
    for table, what in ((PLAIN, "table as it comes"), (GROWN, "table grown before main")):
        patched, stock = f"{PATCHED} · {CUMEM_ON} · {table}", f"{SWITCH_OFF} · {CUMEM_ON} · {table}"
        rows += [
            ("gpu2.json", "first_enqueue", stock, patched, f"patched vs stock path, {what}"),
            ("gpu2.json", "ready", stock, patched, f"patched vs stock path, {what}"),
            ("gpu2.json", "ready", f"{off} · {table}", patched, f"patched vs cuMem off, {what}"),
        ]
    rows.append(
        (
            "gpu2.json",
            "first_enqueue",
            f"{PATCHED} · {CUMEM_ON} · {PLAIN}",
            f"{PATCHED} · {CUMEM_ON} · {GROWN}",
            "patched, table grown vs not",
        )
    )
    pt.saved(rows)
    pt.calls("gpu2-trace.json")
    print("\n## Stock built on the node from the same source, and patched, interleaved (a later call)")
    pt.table("gpu2-stock.json")
    print()
    stock, patched = f"{CUMEM_ON} · NCCL 2.30.7", f"{CUMEM_ON} · NCCL 2.30.7+peer-regions"
    pt.saved(
        [
            ("gpu2-stock.json", "first_enqueue", stock, patched, "patched vs stock"),
            ("gpu2-stock.json", "ready", stock, patched, "patched vs stock"),
            ("gpu2-stock.json", "ready", f"{CUMEM_OFF} · NCCL 2.30.7", patched, "patched vs stock with cuMem off"),
        ]
    )
    pt.calls("gpu2-stock-trace.json")
    print("\n## Bus bandwidth at 1 GiB")
    pt.table("gpu2-busbw.json")
    print("\n## Torch level: the first barrier (PyTorch makes the communicator and connects in it)")
    pt.table("gpu2-torch.json", first="barrier_enqueue")
    print()
    pt.saved(
        [
            (
                "gpu2-torch.json",
                name,
                f"{SWITCH_OFF} · COLDSTART_FD_TABLE={table}",
                f"{PATCHED} · COLDSTART_FD_TABLE={table}",
                f"patched vs stock path, COLDSTART_FD_TABLE={table}",
            )
            for table in ("(unset)", "1024")
            for name in ("barrier_enqueue", "ready")
        ]
        + [
            (
                "gpu2-torch.json",
                "barrier_enqueue",
                f"{PATCHED} · COLDSTART_FD_TABLE=(unset)",
                f"{PATCHED} · COLDSTART_FD_TABLE=1024",
                "patched, table grown vs not",
            )
        ]
    )
