"""The README's fixes table from the committed results: python3 docs/results/readme_tables.py [COLDSTART] > docs/results/readme-tables.md

Every number is the fix ranking's own, as `coldstart doctor --from FILE` prints it (src/doctor/fixes.cc): each fix
against the baseline on the part of ready it can act on, the Hodges-Lehmann estimate of what it saves with its 95%
interval and n trials a side, and the share of the baseline's connection cost that is (docs/fixes.md). The real
torchrun row (the example's own lines, not a bench run) uses the same estimator on ready after the CUDA context,
written out below for 4 launches a side.
"""

import json
import os
import re
import subprocess
import sys
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BIN = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "coldstart")
L1, L2 = "2026-11-30-h200x2", "2026-11-30-h200x2-pieces"
FIXES = ["prewarm", "cumem-off", "eager-connect", "channels:8"]

# (row label, file, the scope's start)
ROWS = [
    ("NCCL · shared (torchrun) · 300 ms CPU", f"{L1}/fixes-nccl-cpu.json", "shared"),
    ("NCCL · isolated (Ray, per-rank view) · 300 ms CPU", f"{L1}/fixes-nccl-cpu.json", "isolated"),
    ("NCCL · isolated · 356 ms of pinned copies", f"{L1}/fixes-nccl-pinned.json", "isolated"),
    ("NCCL · isolated · 327 ms of pageable copies, 16 MiB each", f"{L2}/fixes-nccl-pieces-4gib.json", "isolated"),
    (
        "NCCL · isolated · 466 ms of pageable copies, 256 MiB each",
        f"{L2}/fixes-nccl-pieces.json",
        "isolated · NCCL 2.28.9 · startup=h2d:2GiB:",
    ),
    ("torch · isolated · 32 GiB of weights copied, 16 MiB each", f"{L2}/fixes-torch-isolated-pieces.json", "isolated"),
    ("torch · isolated · 32 GiB copied from pinned memory", f"{L2}/fixes-torch-isolated-pinned.json", "isolated"),
    ("torch · Ray actors · 32 GiB copied, 16 MiB each", f"{L2}/fixes-torch-ray-pieces.json", ""),
    ("torch · Ray actors · 32 GiB copied from pinned memory", f"{L1}/fixes-torch-ray-pinned.json", ""),
    (
        "torch · isolated · 32 GiB copied, 256 MiB each",
        f"{L2}/fixes-torch-isolated-both.json",
        "isolated · nccl-log=off · startup=h2d:32GiB:",
    ),
    (
        "torch · Ray actors · 32 GiB copied, 256 MiB each",
        f"{L2}/fixes-torch-ray-both.json",
        "ray · nccl-log=off · startup=h2d:32GiB:",
    ),
]

FIX_LINE = re.compile(r"^\s+(?:\d+\.|FAILED) (\S+)\s+(.*)$")
SAVING = re.compile(
    r"(saves|loses|no difference measured) (?:(-?[\d.]+) ms )?(after init|after the ranks met|on the groups|on ready) "
    r"\((?:(-?[\d.]+) ms; )?(\d+)% interval (-?[\d.]+) to (-?[\d.]+) ms(: too few trials for 95%)?, n (\d+)/(\d+)\)"
)
HIDES = re.compile(r"hides (-?\d+)% \[(-?\d+)%, (-?\d+)%\]")


def ranking(path):
    """Per scope: its header line, {fix: (text, saving match, hides match)}, the leaders."""
    out = subprocess.run([BIN, "doctor", "--from", os.path.join(HERE, path)], capture_output=True, text=True)
    scopes, cur = [], None
    for line in out.stdout.splitlines():
        s = line.strip()
        if s.startswith("fixes for "):
            cur = {"header": s[len("fixes for ") :], "fixes": {}, "leaders": [], "alike": False}
            scopes.append(cur)
        elif cur is not None and (m := FIX_LINE.match(line)) and not s.startswith(("why", "cost", "more than")):
            cur["fixes"][m.group(1)] = (m.group(2), SAVING.search(m.group(2)), HIDES.search(m.group(2)))
        elif cur is not None and s.startswith("best: "):
            cur["leaders"] = [s[len("best: ") :]]
        elif cur is not None and s.startswith("no single best: "):
            cur["leaders"] = s[len("no single best: ") :].split(" save alike")[0].split(", ")
            cur["alike"] = True
    if not scopes:
        sys.exit(f"{path}: coldstart doctor --from printed no fix ranking:\n{out.stdout}{out.stderr}")
    return scopes


def cell(fix, scope):
    if fix not in scope["fixes"]:
        return ""
    text, s, h = scope["fixes"][fix]
    if text.startswith("FAILED") or "did not finish" in text:
        return "failed: " + text
    if not s:
        sys.exit(f"cannot read the saving of {fix}: {text}")
    kind, est, _, tie_est, level, lo, hi, few, _, _ = s.groups()
    interval = f"[{float(lo):.0f}, {float(hi):.0f}]" + (f" ({level}%)" if few else "")
    if kind == "no difference measured":
        return f"no difference: {float(tie_est):+.0f} ms {interval}"
    ms = float(est) * (1 if kind == "saves" else -1)
    hides = f", hides {h.group(1)}% [{h.group(2)}, {h.group(3)}]" if h and fix != "split-share" else ""
    out = f"{ms:+.0f} ms {interval}{hides}"
    if fix in scope["leaders"]:
        out = f"**{out}**" + (" (alike)" if scope["alike"] else "")
    return out


def n_of(scope):
    for _, s, _ in scope["fixes"].values():
        if s:
            return f"{s.group(9)}/{s.group(10)}"
    return "?"


# The Hodges-Lehmann estimate and its interval from the exact Mann-Whitney U distribution, as src/util/stats.cc.
def u_cdf(n1, n2):
    f = {(0, n): [1] for n in range(n2 + 1)}
    for m in range(1, n1 + 1):
        f[(m, 0)] = [1]
        for n in range(1, n2 + 1):
            a, b = f[(m - 1, n)], f[(m, n - 1)]
            size = m * n + 1
            f[(m, n)] = [(a[u - n] if 0 <= u - n < len(a) else 0) + (b[u] if u < len(b) else 0) for u in range(size)]
    counts = f[(n1, n2)]
    total, run, out = sum(counts), 0, []
    for c in counts:
        run += c
        out.append(run / total)
    return out


def hodges_lehmann(a, b, level=0.95):
    d = sorted(y - x for x in a for y in b)
    n = len(d)
    est = (d[(n - 1) // 2] + d[n // 2]) / 2
    cdf, tail = u_cdf(len(a), len(b)), (1 - level) / 2
    k, reached = 0, cdf[0] <= tail
    while reached and k + 1 < (n + 1) // 2 and cdf[k + 1] <= tail:
        k += 1
    return est, d[k], d[n - k - 1], 1 - 2 * cdf[k], reached


def torchrun_row(path):
    """Real torchrun, 16 MiB pieces: per launch, ready and its part after the CUDA context (the slowest rank's)."""
    by = defaultdict(list)
    for line in open(os.path.join(HERE, path)):
        first = None
        for m in re.finditer(r"\{[^{}]*\}", line):
            o = json.loads(m.group(0))
            first = first or o
            by[(first["fix"], first["launch"])].append(o)
    after = {
        f: [max(r["ready_ms"] - r["to_context_ms"] for r in v) for (g, _), v in sorted(by.items()) if g == f]
        for f in ("none", "prewarm", "cumem-off")
    }
    cells = []
    for fix in ("prewarm", "cumem-off"):
        est, lo, hi, level, reached = hodges_lehmann(after[fix], after["none"])  # baseline - fix
        interval = f"[{lo:.0f}, {hi:.0f}]" + ("" if reached else f" ({100 * level:.0f}%)")
        cells.append(f"no difference: {est:+.0f} ms {interval}" if lo <= 0 <= hi else f"{est:+.0f} ms {interval}")
    ready = sorted(max(r["ready_ms"] for r in v) for (g, _), v in by.items() if g == "none")
    median = (ready[(len(ready) - 1) // 2] + ready[len(ready) // 2]) / 2
    return (
        f"| real torchrun, per-rank view · 32 GiB copied, 16 MiB each (n {len(after['none'])}/{len(after['prewarm'])}"
        f" launches; after the CUDA context) | {median:.0f} ms | {cells[0]} | {cells[1]} | | |"
    )


def memory_row(path, start):
    """NCCL memory after the first collective and bus bandwidth, against the baseline's, as the ranking prints them."""
    scope = next(s for s in ranking(path) if s["header"].startswith(start))
    cells = []
    for fix in FIXES:
        text = scope["fixes"].get(fix, ("",))[0]
        mem = re.search(r"NCCL memory ([+-][\d.]+ \w+)", text)
        bw = re.search(r"busbw (\S+) GB/s \(([+-]\d+)%\)", text)
        cells.append(f"{mem.group(1) if mem else '±0'} · {bw.group(1)} GB/s ({bw.group(2)}%)" if bw else "")
    return (
        "| NCCL memory after the first collective · busbw, against the baseline (NCCL · isolated · 300 ms CPU) | | "
        + " | ".join(cells)
        + " |"
    )


def main():
    print(
        "| level · launch model · start-up work (n baseline/fix) | baseline ready | prewarm | cumem-off | eager-connect "
        "| channels:8 |"
    )
    print("|---|---|---|---|---|---|")
    for label, path, start in ROWS:
        scope = next(s for s in ranking(path) if s["header"].startswith(start))
        ready = re.search(r"baseline ready (\S+) ms", scope["header"]).group(1)
        cells = " | ".join(cell(f, scope) for f in FIXES)
        print(f"| {label} (n {n_of(scope)}) | {ready} ms | {cells} |")
    print(torchrun_row(f"{L2}/torchrun-pieces.jsonl"))
    print(memory_row(f"{L1}/fixes-nccl-cpu.json", "isolated"))


if __name__ == "__main__":
    main()
