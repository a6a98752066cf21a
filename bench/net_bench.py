#!/usr/bin/env python3
"""How long `coldstart doctor net` takes on a real network: the namespace lab of tests/net/netlab.py (as root).

    python3 bench/net_bench.py [--bin build/coldstart] [--runs 10] [--timeout 2] [--ranks 8] [--check]

Cases, each timed inside its namespace around the binary alone (no `ip netns exec` in the figure), with the process's
own CPU time beside the wall time (on a shared 2-core machine the wall time inflates, the CPU time does not):
  healthy            https://inet.test/ direct, every layer ok                        target: median <= 300 ms
  healthy via proxy  the same through the proxy on the gateway                        target: median <= 300 ms
  all-timeout        Windows not forwarding: the connect times out                    target: <= timeout + 1 s
  all-timeout x2     the same plus a name the silent resolver never answers           target: <= timeout + 1 s
  peers              --peers with N healthy ranks, one namespace each (rank 0's time) target: <= 1 s
Prints a Markdown table for docs/performance.md; with --check, exits 1 when a median misses its target.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "net"))

import netlab  # noqa: E402 - found through the path above
from netlab import NetLab  # noqa: E402

# Runs the command after `--` and prints its wall time and CPU time (user + system, its own and its children's) as
# JSON, with its exit code; its output goes to stderr's end of the pipe only when it fails.
_TIMER = r"""
import json, resource, subprocess, sys, time
t = time.monotonic()
r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
wall = time.monotonic() - t
u = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"wall": wall, "cpu": u.ru_utime + u.ru_stime, "rc": r.returncode, "stderr": r.stderr[-500:]}))
"""


@dataclass
class Case:
    name: str
    target_s: float
    target_text: str
    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    rcs: list[int] = field(default_factory=list)

    def add(self, m: dict[str, float]) -> None:
        self.walls.append(float(m["wall"]))
        self.cpus.append(float(m["cpu"]))
        self.rcs.append(int(m["rc"]))

    @property
    def met(self) -> bool:
        return bool(self.walls) and statistics.median(self.walls) <= self.target_s

    def row(self) -> str:
        med, top, cpu = statistics.median(self.walls), max(self.walls), statistics.median(self.cpus)
        codes = ",".join(str(c) for c in sorted(set(self.rcs)))
        verdict = "met" if self.met else "**missed**"
        return (
            f"| {self.name} | {len(self.walls)} | {fmt(med)} | {fmt(top)} | {fmt(cpu)} | {codes} | "
            f"{self.target_text} | {verdict} |"
        )


def fmt(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def timed(lab: NetLab, ns: str, argv: list[str], env: dict[str, str] | None = None) -> dict[str, float]:
    r = lab.run(ns, [sys.executable, "-c", _TIMER, *argv], env, timeout=120)
    if r.returncode != 0:
        raise SystemExit(f"net_bench: the timer failed in {ns}: {r.stderr.strip()}")
    m = json.loads(r.stdout)
    if m["rc"] not in (0, 1):
        raise SystemExit(f"net_bench: {' '.join(argv)} in {ns}: exit {m['rc']}: {m['stderr']}")
    return dict(m)


def bench_peers(lab: NetLab, coldstart: str, ranks: int, runs: int) -> Case:
    case = Case(f"peers, {ranks} healthy ranks (rank 0)", 1.0, "≤ 1 s")
    peers = lab.add_peer_namespaces(ranks)
    try:
        for k in range(runs):
            procs = []
            for rank, ns in enumerate(peers):
                env = {
                    "RANK": str(rank),
                    "GROUP_RANK": str(rank),
                    "WORLD_SIZE": str(ranks),
                    "LOCAL_RANK": "0",
                    "LOCAL_WORLD_SIZE": "1",
                    "MASTER_ADDR": lab.peer_address(0),
                    "MASTER_PORT": str(netlab.STORE_PORT),
                    "TORCHELASTIC_RUN_ID": "csn-bench",
                    "COLDSTART_COORD_PORT": str(29400 + k),  # a fresh port each run: no wait on TIME_WAIT
                }
                argv = [sys.executable, "-c", _TIMER, coldstart, "doctor", "net", "--peers", "--json", "--timeout"]
                procs.append(lab.popen(ns, [*argv, "1s"], env))
            results = []
            for p in procs:
                out, err = p.communicate(timeout=120)
                if p.returncode != 0:
                    raise SystemExit(f"net_bench: the timer failed: {err.strip()}")
                results.append(json.loads(out))
            if results[0]["rc"] != 0:
                raise SystemExit(f"net_bench: healthy peers, rank 0 exit {results[0]['rc']}: {results[0]['stderr']}")
            case.add(results[0])
    finally:
        lab.remove_peer_namespaces()
    return case


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.environ.get("COLDSTART_BIN") or str(REPO / "build" / "coldstart"))
    ap.add_argument("--runs", type=int, default=10, help="runs of each single-process case (default 10)")
    ap.add_argument("--timeout", type=float, default=2, help="doctor net's --timeout for the all-timeout cases")
    ap.add_argument("--ranks", type=int, default=8, help="ranks for the peers case (default 8)")
    ap.add_argument("--peer-runs", type=int, default=5, help="runs of the peers case (default 5)")
    ap.add_argument("--check", action="store_true", help="exit 1 when a median misses its target")
    ap.add_argument("--prefix", default="csnb-", help="the lab's name prefix (default csnb-: apart from the tests')")
    a = ap.parse_args()
    why = netlab.why_no_namespaces() or netlab.missing_tools()
    if why:
        print(f"net_bench: {why}", file=sys.stderr)
        return 2
    coldstart = os.path.abspath(a.bin)
    if not os.access(coldstart, os.X_OK):
        print(f"net_bench: no coldstart binary at {coldstart}; build it or give --bin", file=sys.stderr)
        return 2
    timeout = f"{a.timeout:g}s"
    url = f"https://{netlab.INET_NAME}/"
    cases: list[Case] = []
    with NetLab(prefix=a.prefix) as lab:
        cacert = ["--cacert", str(lab.ca_file)]
        doctor = [coldstart, "doctor", "net", "--json"]
        proxy = {"https_proxy": f"http://{netlab.GATEWAY}:{netlab.LAN_PROXY_PORT}"}
        timeout_target = (a.timeout + 1, f"≤ {a.timeout + 1:g} s (timeout {timeout} + 1 s)")
        healthy = Case("healthy: https://inet.test/ direct", 0.3, "≤ 300 ms")
        via_proxy = Case("healthy: the same through the proxy", 0.3, "≤ 300 ms")
        one = Case("all-timeout: connect dropped beyond the gateway", *timeout_target)
        two = Case("all-timeout, 2 targets: + a name the resolver never answers", *timeout_target)
        timed(lab, lab.wsl, [*doctor, url, *cacert])  # warm the page cache: the first run reads the binary from disk
        for _ in range(a.runs):
            healthy.add(timed(lab, lab.wsl, [*doctor, url, *cacert]))
            via_proxy.add(timed(lab, lab.wsl, [*doctor, url, *cacert], proxy))
        with lab.forwarding_off():
            for _ in range(max(1, a.runs // 2)):
                one.add(timed(lab, lab.wsl, [*doctor, "--timeout", timeout, f"{netlab.INET_ADDR}:{netlab.STORE_PORT}"]))
                two.add(
                    timed(
                        lab,
                        lab.wsl,
                        [
                            *doctor,
                            "--timeout",
                            timeout,
                            f"{netlab.INET_ADDR}:{netlab.STORE_PORT}",
                            "https://nowhere.test/",
                        ],
                    )
                )
        cases += [healthy, via_proxy, one, two, bench_peers(lab, coldstart, a.ranks, a.peer_runs)]
    cmd = f"python3 bench/net_bench.py --runs {a.runs} --timeout {a.timeout:g} --ranks {a.ranks}"
    print(f"`{cmd}` as root, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}:")
    print()
    print("| case | runs | median wall | max wall | median CPU | exit | target | |")
    print("|---|---|---|---|---|---|---|---|")
    for c in cases:
        print(c.row())
    return 1 if a.check and not all(c.met for c in cases) else 0


if __name__ == "__main__":
    sys.exit(main())
