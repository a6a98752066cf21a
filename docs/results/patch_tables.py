"""Tables of the NCCL patch's results folders, shared by their analyze.py scripts: set HERE to the folder, then call.

table: per results file and configuration, over the trials that ended ok (n), ready (the slowest rank's), the first
collective's host side (first_enqueue; the torch probe's connections are in its first barrier, barrier_enqueue) and
comm_init, each the slowest rank's per trial, as median [min-max]; NCCL's memory (what the GPU's use grew by from
before init to after the first collective, per rank: with several ranks on one GPU it includes the growth of the
others) and the steady-state bus bandwidth, medians over ranks and trials. coverage: the first call of each other
collective (bench --coverage). savings: ready saved by the patched library, the Hodges-Lehmann estimate with its exact
95% interval; saved: the same for any two configurations and phase. fd_crossings: when each rank's highest fd first
reached 64 (nccl/gpu/fd_watch.py), by phase. calls: the driver calls of each rank's first collective (trace).
whole_gpu: the GPU's memory in use after the first collective (print_whole_gpu: as a line). diag: the parts of the
patched library's first collective, timed by nccl/diag/nccl-diag-timers.patch, medians over every rank of every trial.
"""

import glob
import json
import re
import statistics as st
from collections import defaultdict
from functools import cache

HERE = "."


@cache
def load(path: str) -> dict:
    """A results file of this folder, read once however many tables use it."""
    with open(f"{HERE}/{path}") as f:
        return json.load(f)


def fmt(values: list[float]) -> str:
    if not values:
        return "–"
    return (
        f"{st.median(values):.0f} [{min(values):.0f}–{max(values):.0f}]"
        if st.median(values) >= 20
        else (f"{st.median(values):.1f} [{min(values):.1f}–{max(values):.1f}]")
    )


def slowest(trial: dict, name: str) -> float | None:
    durs = [p["dur_ms"] for k in trial["ranks"] for p in k["phases"] if p["name"] == name]
    return max(durs) if durs else None


def table(path: str, first: str = "first_enqueue") -> None:
    r = load(path)
    ranks = r["spec"]["ranks_per_gpu"] * len(r["spec"]["devices"])
    labels = {s["config_id"]: s["label"] for s in r["summaries"]}
    by = defaultdict(lambda: defaultdict(list))
    for t in r["trials"]:
        by[t["config_id"]]["all"].append(t)
        if t["status"] != "ok":
            continue
        row = by[t["config_id"]]
        row["ready"].append(t["ready_ms"])
        for name in (first, "comm_init", "init_process_group"):
            v = slowest(t, name)
            if v is not None:
                row[name].append(v)
        for k in t["ranks"]:
            m = k.get("mem", {})
            if m.get("used_after_first_bytes", -1) >= 0 and m.get("used_before_init_bytes", -1) >= 0:
                row["mem"].append((m["used_after_first_bytes"] - m["used_before_init_bytes"]) / 2**30)
            if k.get("steady"):
                row["busbw"].append(k["steady"]["busbw_gbps"])
    init = "init_process_group" if first == "barrier_enqueue" else "comm_init"
    gpus = len(r["spec"]["devices"])
    where = "one GPU" if gpus == 1 else f"{gpus} GPUs"
    print(f"\n### {path}: {ranks} ranks on {where}, {r['spec']['size_bytes'] >> 20} MiB\n")
    print(f"| configuration | n | ready ms | {first} ms | {init} ms | NCCL mem first GiB | busbw GB/s |")
    print("|---|---|---|---|---|---|---|")
    for cid in sorted(by):
        row = by[cid]
        n = f"{len(row['ready'])}/{len(row['all'])}"
        mem = f"{st.median(row['mem']):.2f}" if row["mem"] else "–"
        bw = f"{st.median(row['busbw']):.1f}" if row["busbw"] else "–"
        print(f"| {labels[cid]} | {n} | {fmt(row['ready'])} | {fmt(row[first])} | {fmt(row[init])} | {mem} | {bw} |")


def u_cdf(m: int, n: int) -> list[float]:
    """P(U <= u) for the Mann-Whitney U of samples of m and n without ties, u = 0..mn (exact, by counting)."""

    @cache
    def ways(i: int, j: int, u: int) -> int:  # arrangements of i x's and j y's with U = u
        if u < 0:
            return 0
        if i == 0 or j == 0:
            return 1 if u == 0 else 0
        return ways(i - 1, j, u - j) + ways(i, j - 1, u)

    total = sum(ways(m, n, u) for u in range(m * n + 1))
    acc, out = 0, []
    for u in range(m * n + 1):
        acc += ways(m, n, u)
        out.append(acc / total)
    return out


def shift(base: list[float], other: list[float]) -> tuple[float, float, float]:
    """What `other` saves against `base`: the Hodges-Lehmann estimate (median of the pairwise differences) and its
    exact 95% rank interval, as bench's ranking and report --compare give them."""
    d = sorted(b - o for b in base for o in other)
    cdf = u_cdf(len(base), len(other))
    k = max([u + 1 for u in range(len(cdf)) if cdf[u] <= 0.025] or [1])
    return st.median(d), d[k - 1], d[len(d) - k]


def per_trial(path: str, label_part: str, name: str) -> list[float]:
    """Per ok trial of the configurations whose label holds `label_part` as whole " · "-separated parts: ready, or the
    slowest rank's phase."""
    r = load(path)
    ids = [s["config_id"] for s in r["summaries"] if f" · {label_part} · " in f" · {s['label']} · "]
    trials = [t for t in r["trials"] if t["config_id"] in ids and t["status"] == "ok"]
    return [t["ready_ms"] if name == "ready" else slowest(t, name) for t in trials]


def saved(rows: list[tuple[str, str, str, str, str]]) -> None:
    """One row per (results file, phase, baseline's label part, other's label part, what the row says): what the
    other saves, Hodges-Lehmann estimate and exact 95% interval, n per side."""
    print("| comparison | phase | n | saved ms [95% interval] |")
    print("|---|---|---|---|")
    for path, name, base_part, other_part, what in rows:
        base, other = per_trial(path, base_part, name), per_trial(path, other_part, name)
        est, lo, hi = shift(base, other)
        print(f"| {path}: {what} | {name} | {len(base)}/{len(other)} | {est:+.1f} [{lo:+.1f}, {hi:+.1f}] |")


def fd_crossings(run: str, setting: str) -> None:
    """run.json (bench's results) and run.jsonl (fd_watch.py's lines): per configuration, how many ranks' highest fd
    reached 64 and in which phase. A rank's phases count from its process start; fd_watch counts from when it first
    saw the process, up to 20 ms later, so a crossing is placed at both ends of that window and must agree."""
    r = load(f"{run}.json")
    seen = {w["pid"]: w for w in map(json.loads, open(f"{HERE}/{run}.jsonl"))}
    labels = {s["config_id"]: s["label"] for s in r["summaries"]}
    rows = defaultdict(lambda: {"ranks": 0, "crossed": 0, "where": defaultdict(int), "top": []})
    for t in r["trials"]:
        row = rows[labels[t["config_id"]]]
        for k in t["ranks"]:
            w = seen.get(k["pid"])
            if w is None:
                continue
            row["ranks"] += 1
            row["top"].append(w["max_fd"])
            at = w["crossed_ns"].get("64")
            if at is None:
                continue
            row["crossed"] += 1
            ms = (at - w["first_seen_ns"]) / 1e6

            def phase(x: float, k: dict = k) -> str:
                names = [p["name"] for p in k["phases"] if p["start_ms"] <= x <= p["start_ms"] + p["dur_ms"]]
                return names[0] if names else "between phases"

            a, b = phase(ms), phase(ms + 20)
            row["where"][a if a == b else f"{a} or {b}"] += 1
    print(f"| configuration ({setting}) | ranks watched | highest fd reached 64 | in phase | highest fd, median |")
    print("|---|---|---|---|---|")
    for label, row in rows.items():
        where = ", ".join(f"{name} ({n})" for name, n in row["where"].items()) or "–"
        top = st.median(row["top"]) if row["top"] else "–"
        print(f"| {label} | {row['ranks']} | {row['crossed']} | {where} | {top} |")


def savings(patched_name: str = "NCCL 2.30.7+peer-regions") -> None:
    """ready saved by the library named `patched_name` (cuMem on) in bench-{2,4,8}.json."""
    print("\n### ready saved by the patched library (cuMem on), against stock and against stock with cuMem off\n")
    print("| ranks on one GPU | n | against stock: ms [95% interval] | against cuMem off: ms [95% interval] |")
    print("|---|---|---|---|")
    for k in (2, 4, 8):
        f = f"bench-{k}.json"
        stock = per_trial(f, "NCCL_CUMEM_ENABLE=(unset) · NCCL 2.30.7", "ready")
        off = per_trial(f, "NCCL_CUMEM_ENABLE=0 · NCCL 2.30.7", "ready")
        patched = per_trial(f, f"NCCL_CUMEM_ENABLE=(unset) · {patched_name}", "ready")
        a, b = shift(stock, patched), shift(off, patched)
        n = f"{len(stock)}/{len(patched)}, {len(off)}/{len(patched)}"
        print(f"| {k} | {n} | {a[0]:+.0f} [{a[1]:+.0f}, {a[2]:+.0f}] | {b[0]:+.0f} [{b[1]:+.0f}, {b[2]:+.0f}] |")


def coverage(path: str) -> None:
    """bench --coverage: the first call of each other collective after the first all-reduce, the slowest rank's per
    trial, median [min-max], per configuration."""
    r = load(path)
    labels = {s["config_id"]: s["label"] for s in r["summaries"]}
    rows = defaultdict(lambda: defaultdict(list))
    for t in r["trials"]:
        if t["status"] != "ok":
            continue
        for name in dict.fromkeys(p["name"] for k in t["ranks"] for p in k["phases"] if p["name"].startswith("cover.")):
            rows[t["config_id"]][name].append(slowest(t, name))
    names = list(dict.fromkeys(n for row in rows.values() for n in row))
    print(f"\n### {path}: the first call of each collective after the first all-reduce (--coverage), ms\n")
    print("| configuration | n | " + " | ".join(n.removeprefix("cover.") for n in names) + " |")
    print("|---|---|" + "---|" * len(names))
    for cid in sorted(rows):
        n = len(next(iter(rows[cid].values())))
        print(f"| {labels[cid]} | {n} | " + " | ".join(fmt(rows[cid][name]) for name in names) + " |")


def calls(path: str) -> None:
    r = load(path)
    labels = {s["config_id"]: s["label"] for s in r["summaries"]}
    print(f"\n### {path}: driver calls of each rank's first collective (CUPTI), per rank\n")
    print("| configuration | rank-samples | export | import | map | set_access | export ms | set_access ms |")
    print("|---|---|---|---|---|---|---|---|")
    rows = defaultdict(list)
    for t in r["trials"]:
        if t["status"] == "ok":
            rows[t["config_id"]] += [k.get("first_collective_calls") or {} for k in t["ranks"]]
    for cid in sorted(rows):
        ds = rows[cid]

        def count(kind: str, ds: list[dict] = ds) -> str:
            return "/".join(sorted({str(d.get(kind, {}).get("count", 0)) for d in ds}))

        def ms(kind: str, ds: list[dict] = ds) -> str:
            return fmt([d.get(kind, {}).get("ms", 0.0) for d in ds])

        print(
            f"| {labels[cid]} | {len(ds)} | {count('export')} | {count('import')} | {count('map')} | "
            f"{count('set_access')} | {ms('export')} | {ms('set_access')} |"
        )


def whole_gpu(path: str) -> dict[str, tuple[float, float]]:
    """The GPU's memory in use after the first collective, the most any rank read, per configuration (GiB)."""
    r = load(path)
    labels = {s["config_id"]: s["label"] for s in r["summaries"]}
    used = defaultdict(list)
    for t in r["trials"]:
        if t["status"] == "ok":
            used[t["config_id"]].append(max(k["mem"]["used_after_first_bytes"] for k in t["ranks"]) / 2**30)
    return {labels[c]: (min(v), max(v)) for c, v in used.items()}


def print_whole_gpu(path: str) -> None:
    """whole_gpu's ranges as the line under a bench table."""
    ranges = "; ".join(f"{label.split(' · ', 1)[1]} {lo:.2f}-{hi:.2f}" for label, (lo, hi) in whole_gpu(path).items())
    print(f"\nthe whole GPU's memory in use after the first collective, min-max over trials (GiB): {ranges}")


FIELDS = [
    ("group", "the first all_reduce's group, from its start to the kernel launched"),
    ("p2p_setup", "the connect pass (ncclTransportP2pSetup)"),
    ("recv_setup", "setting up the receive connectors"),
    ("send_setup", "setting up the send connectors"),
    ("proxy_call", "of which calls to the rank's own proxy"),
    ("send_connect", "connecting the send connectors (mapping the peer's receive buffers)"),
    ("recv_connect", "connecting the receive connectors (mapping the peer's send buffers)"),
    ("getfd", "of which asking the peer for an fd"),
    ("uds_init", "  the asker's socket"),
    ("uds_wait", "  waiting for the answer"),
    ("uds_reply", "  (the peer) answering: its socket and the fd sent"),
    ("export", "  (the peer) cuMemExportToShareableHandle"),
    ("import", "of which cuMemImportFromShareableHandle"),
    ("access", "of which cuMemSetAccess"),
    ("final_sync", "the pass's closing barrier"),
    ("launches", "the kernel launch (its first: CUDA loads the module)"),
]


def diag(pattern: str, title: str) -> None:
    rows = defaultdict(lambda: defaultdict(list))
    for path in sorted(glob.glob(f"{HERE}/diag/{pattern}")):
        ranks = int(re.search(r"-(\d+)\.lines$", path).group(1))
        for line in open(path):
            fields = {m[0]: (float(m[1]), int(m[2])) for m in re.findall(r"(\w+)=([\d.]+)/(\d+)", line)}
            # the stock path asks its proxy twice per connector, the peer-region path twice per region
            mode = "off" if fields["proxy_call"][1] > 8 * ranks else "on"
            for name, (ms, _) in fields.items():
                rows[(ranks, mode)][name].append(ms)
    print(f"\n### {title}\n")
    keys = sorted(rows)
    print("| part | " + " | ".join(f"{k} ranks, peer regions {m}" for k, m in keys) + " |")
    print("|---|" + "---|" * len(keys))
    for name, what in FIELDS:
        if not any(name in rows[k] for k in keys):
            continue
        cells = [f"{st.median(rows[k][name]):.1f}" if rows[k][name] else "–" for k in keys]
        print(f"| {name}: {what} | " + " | ".join(cells) + " |")
