"""The tables of README.md from the files here: python3 tables.py"""

import json
import re
import tarfile
from pathlib import Path

HERE = Path(__file__).parent


def row(name: str) -> str:
    d = json.loads((HERE / f"{name}.json").read_text())
    c = d["context"]
    libs = [Path(p).parts[-3] for p in c["nccl_libs"]]  # .../stock/lib/libnccl.so.2.30.7 -> stock
    ranks = ", ".join(libs[i % len(libs)] for i in range(c["ranks"]))
    extra = []
    if c["split_share"]:
        extra.append("split " + ",".join(map(str, c["split_share"])))
    if c["abort"]:
        extra.append("abort")
    if c["env"].get("NCCL_RUNTIME_CONNECT") == "0":
        extra.append("NCCL_RUNTIME_CONNECT=0")
    if c["repeat"] > 1:
        extra.append(f"{c['repeat']} communicators in turn")
    run = "ok" if d["run"]["ok"] else d["run"].get("failure", "failed")
    return f"| `{name}` | {ranks} | {'; '.join(extra) or 'every collective'} | {d['passed']} | {d['failed']} | {run} |"


def region_lines(name: str, logs: tarfile.TarFile) -> tuple[int, int, int]:
    """INFO lines in the run's rank logs: regions imported, 'cannot import' notes, CUDA failures."""
    imported = cannot = failures = 0
    for m in logs.getmembers():
        if not m.name.startswith(f"{name}/") or not m.isfile():
            continue
        text = logs.extractfile(m).read().decode(errors="replace")
        imported += len(re.findall(r"P2P/CUMEM peer region \w+ of rank \d+: imported", text))
        cannot += len(re.findall(r"P2P peer regions: \d+ of \d+ ranks cannot import them", text))
        failures += len(re.findall(r"Cuda failure", text))
    return imported, cannot, failures


names = sorted(p.stem for p in HERE.glob("*.json"))
print("| run | ranks 0.. | what | checks passed | failed | run |")
print("|---|---|---|---:|---:|---|")
for n in names:
    print(row(n))
print()
print("| run | regions imported | ranks noting peers that cannot import | CUDA failures |")
print("|---|---:|---:|---:|")
with tarfile.open(HERE / "nccl-logs.tar.gz") as logs:
    for n in names:
        if n.startswith("mixed-"):
            print(f"| `{n}` | " + " | ".join(map(str, region_lines(n, logs))) + " |")
