"""`python -m coldstart storebench`: the rendezvous store under N clients at once, what every job's start goes
through before NCCL does anything.

A real `torch.distributed.TCPStore` server (the torch of this interpreter) runs in this process, as torchrun's agent
hosts it, and N clients, each its own TCPStore connection, are spread round-robin over W worker processes as threads
(_storeclient.py: what each does, after torch's own code). Per N and trial it times each phase from the clients' side
(connect, barrier, unique_id, end_to_end) as the slowest client (the job waits for it) and the median one, with the
store process's CPU time, the clients' and the store calls they made; then how each grows with N
(storebench_report.py). Trials are interleaved (every N once, then again), each on a fresh server.

    python3 -m coldstart storebench --clients 64,256,1024,4096 --trials 3 --out DIR
    python3 -m coldstart storebench --from DIR/storebench.json      # the table again, without torch

Output: the table on stdout, progress on stderr, DIR/storebench.json (schema coldstart.storebench/1, rewritten after
every run). Exit status 0 when every client of every run finished, 1 when one failed (the run says which and why), 2
on bad input or a machine that cannot hold the clients (one line), 130 interrupted (finished runs are kept)."""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import socket
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta, timezone
from multiprocessing.connection import Connection
from typing import Any, NoReturn

from coldstart._storeclient import NICE, UNIQUE_ID_BYTES, Job, worker_main
from coldstart._storehost import Footprint, Refused, cpu_model, fd_plan, listen_drops, probe
from coldstart._text import shown
from coldstart.storebench_report import PHASES, SCHEMA, duration, growth, render

BARRIERS = ("poll", "wait", "none")
BACKENDS = ("default", "libuv", "classic")
MAX_CLIENTS = 65_536  # bench's most ranks in one job
ANSWER_S = 120.0  # a worker's answer to anything but a trial's end


def _list(flag: str, text: str, choices: tuple[str, ...]) -> list[str]:
    items = text.split(",")
    if any(x not in choices for x in items) or len(set(items)) != len(items):
        raise Refused(f"{flag} {shown(text)!r}: give one or more of {', '.join(choices)}, each once, comma-separated")
    return items


def parse_clients(text: str) -> list[int]:
    """ "64,256,1024" -> [64, 256, 1024]: ascending, each 2 to MAX_CLIENTS; anything else is one line naming it."""
    counts = []
    for item in text.split(","):
        if not item.isascii() or not item.isdigit():
            raise Refused(f"--clients {shown(text)!r}: {shown(item)!r} is not a count; give counts, e.g. 64,256")
        counts.append(int(item))
    for a, b in zip(counts, counts[1:]):
        if b <= a:
            raise Refused(f"--clients {shown(text)!r}: {b} after {a}; give the counts ascending, each once")
    if counts[0] < 2 or counts[-1] > MAX_CLIENTS:
        raise Refused(f"--clients {shown(text)!r}: each count must be 2 to {MAX_CLIENTS}")
    return counts


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, as every refusal here
        raise Refused(message)


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = _Parser(prog="coldstart storebench", description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--clients", default="64,256,1024,4096", help="client counts, ascending (default %(default)s)")
    p.add_argument("--trials", type=int, default=3, help="runs of each count, interleaved (default %(default)s)")
    p.add_argument("--workers", type=int, default=16, help="processes the clients are spread over (default 16)")
    p.add_argument("--barrier", default="", help="poll (torch <= 2.0), wait, none (torch >= 2.1); default: torch's")
    p.add_argument("--backend", default="default", help="the store server: default (torch's choice), libuv, classic")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds a run may take (the store's timeout too)")
    p.add_argument("--host", default="127.0.0.1", help="the address the store listens on (default %(default)s)")
    p.add_argument("--out", default="", help="a folder for storebench.json")
    p.add_argument("--from", dest="from_file", default="", help="print the table of a storebench.json and exit")
    args = p.parse_args(argv)
    args.clients = parse_clients(args.clients)
    for flag, value in (("--trials", args.trials), ("--workers", args.workers)):
        if not 1 <= value <= 1024:
            raise Refused(f"{flag} {value}: give 1 to 1024")
    if not 0 < args.timeout <= 86_400:
        raise Refused(f"--timeout {args.timeout:g}: give seconds, more than 0 and at most 86400")
    args.backend = _list("--backend", args.backend, BACKENDS)
    args.barrier = _list("--barrier", args.barrier, BARRIERS) if args.barrier else []
    return args


def torch_barrier(version: str, init_barrier: str | None) -> str:
    """The store barrier `init_process_group` runs in this torch and environment: poll up to 2.0; from 2.1 wait
    under TORCH_DIST_INIT_BARRIER=1 (`init_barrier`), else none."""
    parts = [int("".join(c for c in x if c.isdigit()) or 0) for x in version.split("+")[0].split(".")]
    if tuple((parts + [0, 0])[:2]) < (2, 1):
        return "poll"
    return "wait" if init_barrier == "1" else "none"


class Workers:
    """W worker processes (spawned: a fork of a process with torch's threads is not safe), each on its own pipe."""

    def __init__(self, count: int) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.conns: list[Connection] = []
        self.procs: list[Any] = []
        for _ in range(count):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=worker_main, args=(child,), daemon=True)
            proc.start()
            child.close()
            self.conns.append(parent)
            self.procs.append(proc)
        for i in range(count):
            message, payload = self.recv(i, ANSWER_S)
            if message != "up":
                raise RuntimeError(f"worker {i} could not start: {payload}")

    def recv(self, i: int, timeout_s: float) -> tuple[str, Any]:
        """Worker i's next message; RuntimeError in one line when it is silent for timeout_s or has exited."""
        conn = self.conns[i]
        try:
            if conn.poll(timeout_s):
                return conn.recv()
        except (EOFError, OSError):
            pass
        code = self.procs[i].exitcode
        what = f"exited (status {code})" if code is not None else f"did not answer in {timeout_s:g} s"
        raise RuntimeError(f"worker {i} {what}")

    def close(self) -> None:
        for conn in self.conns:
            try:
                conn.send(("exit", None))
            except OSError:
                pass
        for proc in self.procs:
            proc.join(5)
            if proc.is_alive():
                proc.kill()


@dataclass
class PhaseStats:
    slowest_ms: float | None  # the slowest client's, of those that finished the phase
    median_ms: float | None
    completed: int  # clients that finished the phase


@dataclass
class Run:
    """One trial of one configuration at one client count, as storebench.json's "runs" hold it."""

    clients: int
    trial: int
    barrier: str
    backend: str  # the server's, as it reported itself: "libuv" or "classic"
    workers: int  # the worker processes its clients were spread over
    status: str  # "ok", or "failed" (a client did not finish: errors says why)
    failed_clients: int
    errors: list[str]  # the distinct errors, at most 5
    wall_ms: float  # the start signal to the last client's records
    store_cpu_ms: float  # this process's CPU time over the run: the server's thread, this thread waiting
    clients_cpu_ms: float  # the workers' CPU time over the run
    machine_busy: float  # both, over wall_ms on every usable CPU
    store_calls: int  # the clients' store operations (a constructor, an add, a get: one each)
    listen_drops: int | None  # connections the kernel dropped at a full listen queue, machine-wide
    phases: dict[str, PhaseStats] = field(default_factory=dict)


def summarize(clients: list[dict[str, Any]]) -> dict[str, PhaseStats]:
    out = {}
    for phase in PHASES:
        values = [c[f"{phase}_ms"] for c in clients if c[f"{phase}_ms"] is not None]
        out[phase] = PhaseStats(max(values, default=None), statistics.median(values) if values else None, len(values))
    return out


def run_once(dist: Any, workers: Workers, n: int, barrier: str, backend: str, args: argparse.Namespace) -> Run:
    """One trial: a fresh server, n clients over the workers (rank r in worker r mod W), their records summarized."""
    kwargs = {} if backend == "default" else {"use_libuv": backend == "libuv"}
    server = dist.TCPStore(args.host, 0, n, True, timedelta(seconds=args.timeout), wait_for_workers=False, **kwargs)
    used = range(min(len(workers.conns), n))
    uid = os.urandom(UNIQUE_ID_BYTES)
    for i in used:
        job = Job(args.host, server.port, n, list(range(i, n, len(used))), barrier, args.timeout, uid)
        workers.conns[i].send(("trial", job))
    for i in used:
        workers.recv(i, ANSWER_S)  # "ready": its clients' threads wait for the signal
    drops0, cpu0, t_go = listen_drops(), time.process_time(), time.monotonic()
    for i in used:
        workers.conns[i].send(("go", t_go))
    clients: list[dict[str, Any]] = []
    cpu_clients = 0.0
    for i in used:
        _, payload = workers.recv(i, args.timeout + ANSWER_S)
        clients += payload["clients"]
        cpu_clients += payload["cpu_ms"]
    wall_ms = (time.monotonic() - t_go) * 1e3
    store_cpu_ms = (time.process_time() - cpu0) * 1e3
    drops1 = listen_drops()
    for i in used:
        workers.conns[i].send(("close", None))
    for i in used:
        workers.recv(i, ANSWER_S)
    libuv = bool(getattr(server, "libuvBackend", False))
    del server
    errors = sorted({c["error"] for c in clients if c["error"]})
    return Run(
        clients=n,
        trial=0,
        barrier=barrier,
        backend="libuv" if libuv else "classic",
        workers=len(used),
        status="failed" if errors or len(clients) != n else "ok",
        failed_clients=n - sum(1 for c in clients if not c["error"]),
        errors=errors[:5],
        wall_ms=wall_ms,
        store_cpu_ms=store_cpu_ms,
        clients_cpu_ms=cpu_clients,
        machine_busy=(store_cpu_ms + cpu_clients) / (wall_ms * len(os.sched_getaffinity(0))),
        store_calls=sum(c["calls"] for c in clients),
        listen_drops=None if drops0 is None or drops1 is None else drops1 - drops0,
        phases=summarize(clients),
    )


def document(argv: list[str], args: argparse.Namespace, torch: Any, barriers: list[str], foot: Footprint,
             fds: dict[str, int], libuv_here: bool) -> dict[str, Any]:  # fmt: skip
    """storebench.json without its runs: what ran, where, and how the clients were spread."""
    return {
        "schema": SCHEMA,
        "context": {
            "argv": ["coldstart", "storebench", *argv],
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "host": socket.gethostname(),
            "host_cpus": os.cpu_count(),
            "cpus_usable": len(os.sched_getaffinity(0)),
            "cpu_model": cpu_model(),
            "python": platform.python_version(),
            "torch": torch.__version__,
            "libuv_available": libuv_here,
        },
        "spec": {
            "clients": args.clients,
            "trials": args.trials,
            "workers": min(args.workers, args.clients[-1]),
            "barrier": barriers,
            "backend": args.backend,
            "timeout_s": args.timeout,
            "host": args.host,
        },
        "spread": {
            "how": "rank r in worker process r mod W, a thread each, every client its own TCPStore",
            "workers_nice": NICE,
            "connections_per_client": foot.connections,
            "other_fds_per_client": foot.other_fds,
            "threads_per_client": foot.threads + 1,
            "fds_needed": {"store": fds["store"], "worker": fds["worker"]},
            "nofile": {"soft_before": fds["soft_before"], "soft": fds["soft"], "hard": fds["hard"]},
        },
        "runs": [],
        "growth": [],
    }


def progress(done: int, total: int, run: Run, trials: int, elapsed_s: float) -> str:
    e2e = run.phases["end_to_end"]
    failed = "" if run.status == "ok" else f", FAILED ({run.failed_clients} clients): {run.errors[:1]}"
    return (
        f"storebench: {done}/{total}: {run.clients} clients, barrier {run.barrier}, {run.backend}, trial "
        f"{run.trial + 1}/{trials}: end_to_end {duration(e2e.slowest_ms)} slowest, {duration(e2e.median_ms)} median, "
        f"store CPU {duration(run.store_cpu_ms)}{failed} ({elapsed_s:.0f} s so far)"
    )


def _write(path: str, doc: dict[str, Any]) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


def measure(dist: Any, args: argparse.Namespace, doc: dict[str, Any], out_path: str) -> int:
    """Every run, interleaved; each appended to doc (and the file rewritten) as it ends. The exit status."""
    configs = [(b, k) for b in doc["spec"]["barrier"] for k in args.backend]
    total = len(configs) * len(args.clients) * args.trials
    t0 = time.monotonic()
    print(f"storebench: starting {doc['spec']['workers']} worker processes (each imports torch)", file=sys.stderr)
    workers = Workers(doc["spec"]["workers"])
    status = 0
    try:
        for trial in range(args.trials):
            for barrier, backend in configs:
                for n in args.clients:
                    run = run_once(dist, workers, n, barrier, backend, args)
                    run.trial = trial
                    doc["runs"].append(asdict(run))
                    status = status or int(run.status != "ok")
                    print(progress(len(doc["runs"]), total, run, args.trials, time.monotonic() - t0),
                          file=sys.stderr, flush=True)  # fmt: skip
                    if out_path:
                        doc["growth"] = growth(doc["runs"])
                        _write(out_path, doc)
    except KeyboardInterrupt:
        status = 130
    except RuntimeError as e:  # a worker died or hung: the runs so far are kept
        print(f"coldstart storebench: {e}; stopped after {len(doc['runs'])} of {total} runs", file=sys.stderr)
        status = 1
    finally:
        workers.close()
    return status


def _refuse(message: str) -> NoReturn:
    print(f"coldstart storebench: {message}", file=sys.stderr)
    sys.exit(2)


def main(argv: list[str]) -> int:
    try:
        args = parse_args(argv)
        if args.from_file:
            with open(args.from_file) as f:
                doc = json.load(f)
            schema = doc.get("schema") if isinstance(doc, dict) else None
            if schema != SCHEMA:
                raise Refused(f"--from {shown(args.from_file)}: not a {SCHEMA} file (schema {shown(str(schema))})")
            print(render(doc), end="")
            return 0
        if args.out:
            os.makedirs(args.out, exist_ok=True)
    except Refused as e:
        _refuse(str(e))
    except (OSError, ValueError) as e:
        _refuse(f"{'--from' if args.from_file else '--out'} {shown(args.from_file or args.out)}: {shown(str(e))}")
    except (KeyError, TypeError, AttributeError) as e:  # a file of that schema, damaged
        _refuse(f"--from {shown(args.from_file)}: a {SCHEMA} file without what it needs ({type(e).__name__}: {e})")
    try:
        import torch
        import torch.distributed as dist

        if not dist.is_available() or not hasattr(dist, "TCPStore"):
            raise ImportError("this torch was built without torch.distributed")
    except ImportError as e:
        _refuse(
            f"torch.distributed cannot be imported by {shown(sys.executable)} ({shown(str(e))}); run storebench with "
            "the Python that has PyTorch (Debian's python3-torch: /usr/bin/python3 -m coldstart storebench)"
        )
    libuv_here = "use_libuv" in (dist.TCPStore.__init__.__doc__ or "")
    if "libuv" in args.backend and not libuv_here:
        _refuse(f"--backend libuv: torch {torch.__version__}'s TCPStore has no use_libuv (the default from torch 2.4)")
    foot = probe(dist, args.host)
    try:
        fds = fd_plan(foot, args.clients[-1], args.workers)
    except Refused as e:
        _refuse(str(e))
    barriers = args.barrier or [torch_barrier(torch.__version__, os.environ.get("TORCH_DIST_INIT_BARRIER"))]
    doc = document(argv, args, torch, barriers, foot, fds, libuv_here)
    out_path = os.path.join(args.out, "storebench.json") if args.out else ""
    status = measure(dist, args, doc, out_path)
    doc["growth"] = growth(doc["runs"])
    if out_path:
        _write(out_path, doc)
    print(render(doc), end="")
    return status
