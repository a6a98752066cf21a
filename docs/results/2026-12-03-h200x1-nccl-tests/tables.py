"""The README's tables, from the runs' results.tsv files (nccl/checks/nccl_tests.sh writes one line per run:
collective, ranks, mode, verdict, run name). Run from this folder: python3 tables.py"""

import collections
import pathlib

HERE = pathlib.Path(__file__).parent


def rows(*names: str) -> list[list[str]]:
    out = []
    for name in names:
        out += [line.split("\t") for line in (HERE / name).read_text().splitlines() if line.strip()]
    return out


def table(runs: list[list[str]]) -> str:
    kinds = ["stock", "patched", "patched,regions-off", "mixed stock,patched", "mixed patched,stock"]
    modes = sorted(
        dict.fromkeys(r[2] for r in runs),
        key=lambda m: (m.split(" ")[-1], kinds.index(m.rsplit(" ", 1)[0]) if m.rsplit(" ", 1)[0] in kinds else 9),
    )
    cells: dict[tuple[str, int], dict[str, str]] = collections.defaultdict(dict)
    for coll, ranks, mode, verdict, _ in runs:
        cells[(coll, int(ranks))][mode] = verdict
    lines = ["| collective | ranks | " + " | ".join(modes) + " |", "|---|---:|" + "---|" * len(modes)]
    for coll, ranks in sorted(cells, key=lambda k: (k[1], k[0])):
        lines.append(
            f"| {coll} | {ranks} | " + " | ".join(cells[(coll, ranks)].get(m, "not run") for m in modes) + " |"
        )
    count = collections.Counter(r[3] for r in runs)
    lines.append("")
    lines.append(f"{len(runs)} runs: " + ", ".join(f"{v} {count[v]}" for v in ("pass", "wrong", "error", "hang")))
    return "\n".join(lines)


if __name__ == "__main__":
    print("## Each library alone\n")
    print(table(rows("alone.tsv", "alone-8-rc1.tsv", "hypercube-8-rc1.tsv")))
    print("\n## Mixed jobs\n")
    print(table(rows("mixed.tsv")))
