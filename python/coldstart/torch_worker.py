"""One rank at the PyTorch level: `coldstart bench --worker torch` starts this instead of the C++ worker, with the
same arguments. It times what the field report timed: `import torch`, the CUDA context, `init_process_group` (lazy,
or eager with `device_id` when COLDSTART_TORCH_INIT=eager), the job's own start-up work (--startup), the first
`barrier()` and the first `all_reduce(async_op=True)`, each split into the host's return and `wait()`, the first call
of other collectives (--coverage) and steady-state bandwidth; and reports them over the coordinator protocol like the
C++ worker. With --prewarm the process group and a warm-up run in coldstart.prewarm, the function users call, beside
the start-up work. COLDSTART_FD_TABLE=N grows the process's fd table to N first (coldstart.grow_fd_table), before
`import torch` starts threads. Under --dry-run it uses the gloo backend on the CPU."""

import argparse
import datetime
import importlib
import json
import os
import socket
import sys
import time
from typing import Any, Callable, Optional

from coldstart._timedstore import StoreTally, timed_store
from coldstart.fdtable import grow_from_env
from coldstart.protocol import Client, CoordinatorError, Recorder, mono_ns, process_start
from coldstart.report import RankReport, Steady, bus_id
from coldstart.warmup import prewarm

PIECE = 256 << 20  # host-to-device copies of the start-up work, bytes at a time unless the spelling says


# The worker's flags (src/worker/args.h), the rank's part: bench gives the probe the argv it gives its own worker.
# (flag, type, default), as the C++ side has them; python/tests/test_worker_args.py holds the two to the same flags
# and defaults through tests/data/golden/worker_args.json.
WORKER_FLAGS: tuple[tuple[str, type, Any], ...] = (
    ("--rank", int, -1),  # required here: the probe has no launcher to ask
    ("--nranks", int, -1),  # required here
    ("--device", int, -1),  # -1: device 0
    ("--trial", int, 0),
    ("--coord", str, ""),  # required here
    ("--collective", str, "all_reduce"),
    ("--size", int, 64 << 20),
    ("--groups", str, "world"),
    ("--iters", int, 20),
    ("--warmup", int, 5),
    ("--nccl-lib", str, ""),
    ("--timeout", float, 600.0),
    ("--dry-run", bool, False),
    ("--startup", str, "none"),
    ("--prewarm", bool, False),
    ("--split-share", bool, False),
    ("--coverage", bool, False),
)
REQUIRED = ("--rank", "--nranks", "--coord")


def dest(flag: str) -> str:
    """argparse's attribute for a flag: "--nccl-lib" -> "nccl_lib"."""
    return flag[2:].replace("-", "_")


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="coldstart.torch_worker")
    for flag, kind, default in WORKER_FLAGS:
        if kind is bool:
            p.add_argument(flag, action="store_true")
        else:
            p.add_argument(flag, type=kind, default=default)
    args = p.parse_args(argv)
    defaults = {flag: default for flag, _, default in WORKER_FLAGS}
    missing = [flag for flag in REQUIRED if getattr(args, dest(flag)) == defaults[flag]]
    if missing:
        p.error("the following arguments are required: " + ", ".join(missing))
    if args.device < 0:
        args.device = 0
    return args


def nccl_version_code(code: int) -> str:
    """ncclGetVersion's integer as NCCL prints it: 23007 -> "2.30.7" (2.9 and later), 2708 -> "2.7.8"."""
    major, rest = (code // 10000, code % 10000) if code >= 20900 else (code // 1000, code % 1000)
    return f"{major}.{rest // 100}.{rest % 100}"


class NcclLibraryError(RuntimeError):
    """--nccl-lib names a library this process cannot run PyTorch with; reported to the lab like torch's errors."""


def preload_nccl(path: str) -> str:
    """Loads the NCCL library the lab names (--nccl-lib) into the process before PyTorch loads its own: PyTorch's
    CUDA library needs `libnccl.so.2`, and the loader takes a library of that name already in the process instead of
    the one beside PyTorch. Returns its version; raises NcclLibraryError when the file is not a loadable NCCL."""
    import ctypes

    try:
        lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    except OSError as e:
        raise NcclLibraryError(f"--nccl-lib {path}: {e}") from None
    code = ctypes.c_int(0)
    if not hasattr(lib, "ncclGetVersion") or lib.ncclGetVersion(ctypes.byref(code)) != 0:
        raise NcclLibraryError(f"--nccl-lib {path} is not an NCCL library (no working ncclGetVersion)")
    return nccl_version_code(code.value)


def nccl_in_use() -> tuple[str, str]:
    """The file and version of the `ncclGetVersion` this process resolves through its global scope, as PyTorch's
    CUDA library does when it calls NCCL (its own `torch.cuda.nccl.version()` is the version it was built against,
    not the library that runs)."""
    import ctypes

    class DlInfo(ctypes.Structure):
        _fields_ = [
            ("fname", ctypes.c_char_p),
            ("fbase", ctypes.c_void_p),
            ("sname", ctypes.c_char_p),
            ("saddr", ctypes.c_void_p),
        ]

    process = ctypes.CDLL(None)
    fn = process.ncclGetVersion
    info = DlInfo()
    libdl = ctypes.CDLL("libc.so.6")
    if not libdl.dladdr(ctypes.cast(fn, ctypes.c_void_p), ctypes.byref(info)) or not info.fname:
        return "", ""
    code = ctypes.c_int(0)
    fn(ctypes.byref(code))
    return os.path.realpath(info.fname.decode()), nccl_version_code(code.value)


def check_torch_nccl(path: str) -> str:
    """After `import torch`: the NCCL that PyTorch's calls resolve to must be the one preloaded from `path` (a
    PyTorch with NCCL linked in statically, or a library loaded with another scope, keeps its own), and a result
    labelled with another library would be wrong, so that is refused. Returns the version that runs."""
    runs_file, runs = nccl_in_use()
    if runs_file != os.path.realpath(path):
        raise NcclLibraryError(
            f"--nccl-lib {path} was loaded but NCCL calls resolve to {runs_file or 'no library'} (NCCL {runs or '?'}); "
            "run a PyTorch that loads libnccl.so.2 at run time, or leave out --nccl-lib"
        )
    return runs


def parse_amount(value: str) -> float:
    """ "300ms" -> 0.3, "4GiB" -> 4294967296.0, "1000" -> 1000.0."""
    units = {"ms": 1e-3, "s": 1.0, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
    for unit, scale in sorted(units.items(), key=lambda kv: -len(kv[0])):
        if value.endswith(unit):
            return float(value[: -len(unit)]) * scale
    return float(value)


def parse_startup(text: str) -> tuple[str, float, int]:
    """bench's spelling (already checked by the binary) -> (kind, amount, piece): "cpu:300ms" -> ("cpu", 0.3, ...),
    "h2d:4GiB" -> ("h2d", 4294967296, PIECE), "h2d-pinned:1GiB/16MiB" -> ("h2d-pinned", 1073741824, 16777216)."""
    if text == "none":
        return "none", 0, PIECE
    kind, _, value = text.partition(":")
    amount, _, piece = value.partition("/")
    return kind, parse_amount(amount), int(parse_amount(piece)) if piece else PIECE


def run_startup(torch: Any, text: str, device: Any, dry_run: bool, keep: list[Any]) -> int:
    """The job's own start-up work on this thread; returns the device bytes it keeps (its "weights", appended to
    `keep` so that they stay allocated for the rank's lifetime, as a model's do)."""
    kind, amount, piece = parse_startup(text)
    if kind == "cpu":
        # Matrix products on the CPU: real work that releases the GIL, as a model's loading code mostly does.
        until = time.monotonic() + amount
        mm = getattr(torch, "mm", None)
        a = torch.ones(256, 256) if mm else None
        while time.monotonic() < until:
            if mm:
                mm(a, a)
    elif kind in ("h2d", "h2d-pinned") and not dry_run:
        size = int(amount)
        host = torch.empty(min(size, piece), dtype=torch.uint8)
        host.fill_(1)  # pageable and touched, as a file read leaves it
        if kind == "h2d-pinned":
            host = host.pin_memory()  # page-locked: copied by DMA
        weights = torch.empty(size, dtype=torch.uint8, device=device)
        for off in range(0, size, piece):
            n = min(piece, size - off)
            weights[off : off + n].copy_(host[:n])
        torch.cuda.current_stream(device).synchronize()
        keep.append(weights)
        return size
    return 0


def coverage(
    torch: Any, dist: Any, device: Any, rank: int, nranks: int, rec: Recorder, sync: Callable[[], Any]
) -> None:
    """The first call of other collectives and sizes after the first: does the warm-up cover them?"""
    mib = 1 << 20

    def floats(nbytes: int) -> Any:
        return torch.ones(max(1, nbytes // 4), device=device)

    def sendrecv(t: Any, out: Any) -> None:
        ops = [dist.P2POp(dist.isend, t, (rank + 1) % nranks), dist.P2POp(dist.irecv, out, (rank - 1) % nranks)]
        for w in dist.batch_isend_irecv(ops):
            w.wait()

    big, one = floats(64 * mib), floats(mib)
    ops = [
        ("cover.all_reduce.64MiB", lambda: dist.all_reduce(big)),
        ("cover.all_gather.1MiB", lambda: dist.all_gather_into_tensor(floats(nranks * mib), one)),
        ("cover.reduce_scatter.1MiB", lambda: dist.reduce_scatter_tensor(floats(mib // nranks), one)),
        ("cover.broadcast.1MiB", lambda: dist.broadcast(one, src=0)),
        ("cover.sendrecv.1MiB", lambda: sendrecv(one, floats(mib))),
    ]
    for name, op in ops:
        rec.run(name, lambda op=op: (op(), sync()))


def refuse_what_the_probe_cannot_run(args: argparse.Namespace) -> str:
    """The lab's token, after refusing what only coldstart's worker runs."""
    token = os.environ.get("COLDSTART_TOKEN")
    if not token:
        raise SystemExit("coldstart torch probe: COLDSTART_TOKEN is not set; the lab passes it to every rank")
    if args.collective != "all_reduce":
        raise SystemExit(f"coldstart torch probe: --collective {args.collective}: the probe times all_reduce only")
    if args.split_share:
        raise SystemExit("coldstart torch probe: --split-share applies to coldstart's worker only")
    return token


def coordinator_address(coord: str) -> tuple[str, int]:
    """--coord HOST:PORT, with an IPv6 host in brackets: "[::1]:29400" -> ("::1", 29400)."""
    host, port = coord.rsplit(":", 1)
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    return host, int(port)


def new_report(args: argparse.Namespace, main_entry_ns: int, eager: bool) -> RankReport:
    return RankReport(
        rank=args.rank,
        pid=os.getpid(),
        host=socket.gethostname(),
        worker="torch",
        cuda_visible_devices=os.environ.get("CUDA_VISIBLE_DEVICES", ""),
        env={k: v for k, v in os.environ.items() if k.startswith("NCCL_")},
        device_index=args.device,
        dry_run=args.dry_run,
        mono_anchor_ns=main_entry_ns,
        real_anchor_ns=time.time_ns() - (mono_ns() - main_entry_ns),
        torch_init="eager" if eager else "lazy",
    )


def connect(
    args: argparse.Namespace, token: str, address: tuple[str, int], report: RankReport, main_entry_ns: int
) -> tuple[Client, Recorder]:
    """The coordinator's client, with the phases before it: the process's start and the connection."""
    t0 = mono_ns()
    client = Client(address[0], address[1], token, args.trial, args.rank, args.nranks, args.timeout)
    rec = Recorder(client)
    started, source = process_start()
    if 0 < started <= main_entry_ns:
        rec.add("process_start", started, main_entry_ns)
        report.start_source = source
    rec.add("connect", t0, mono_ns())
    launcher = os.environ.get("COLDSTART_LAUNCHER_INFO")
    if launcher:
        report.launcher = {k: str(v) for k, v in json.loads(launcher).items()}
    return client, rec


class Probe:
    """One rank once torch is imported: what its phases share."""

    def __init__(self, args: argparse.Namespace, rec: Recorder, client: Client, report: RankReport) -> None:
        self.args, self.rec, self.client, self.report = args, rec, client, report
        self.torch: Any = None
        self.dist: Any = None
        self.device: Any = None
        self.backend = "gloo"
        self.weights = 0  # device bytes the start-up keeps: left out of the memory readings
        self.kept: list[Any] = []
        self.store_tally = StoreTally(rec)

    def used(self) -> int:
        if self.args.dry_run:
            return -1
        free, total = self.torch.cuda.mem_get_info(self.device)
        self.report.mem.total_bytes = int(total)
        return int(total - free) - self.weights

    def sync(self) -> None:
        if not self.args.dry_run:
            self.torch.cuda.synchronize(self.device)

    def timed(self, enqueue_name: str, wait_name: str, start: Callable[[], Any]) -> None:
        work = self.rec.run(enqueue_name, start)
        self.rec.run(wait_name, lambda: (work.wait(), self.sync()))

    def startup(self) -> None:
        if self.args.startup != "none":
            args, torch, device = self.args, self.torch, self.device
            self.weights = self.rec.run(
                "startup", lambda: run_startup(torch, args.startup, device, args.dry_run, self.kept)
            )


def import_torch(p: Probe) -> None:
    """--nccl-lib loaded first, then `import torch`, and on a GPU the CUDA context and the device's facts."""
    args, rec, report = p.args, p.rec, p.report
    loaded = ""
    if args.nccl_lib and not args.dry_run:
        loaded = preload_nccl(args.nccl_lib)
        report.nccl_path = args.nccl_lib
    p.torch = torch = rec.run("import_torch", lambda: importlib.import_module("torch"))
    p.dist = importlib.import_module("torch.distributed")
    report.torch_version = str(torch.__version__)
    if args.dry_run:
        p.device, p.backend = torch.device("cpu"), "gloo"
        return
    p.device, p.backend = torch.device("cuda", args.device), "nccl"
    device = p.device

    def context() -> None:
        torch.cuda.set_device(device)
        torch.empty(1, device=device)
        torch.cuda.synchronize(device)

    rec.run("cuda_context", context)
    describe_device(torch, device, report)
    report.nccl_version = check_torch_nccl(args.nccl_lib) if loaded else nccl_version_of(torch)


def describe_device(torch: Any, device: Any, report: RankReport) -> None:
    props = torch.cuda.get_device_properties(device)
    report.gpu_name = str(props.name)
    report.uuid = str(getattr(props, "uuid", ""))
    bus = getattr(props, "pci_bus_id", None)
    if bus is not None:
        report.bus_id = bus_id(getattr(props, "pci_domain_id", 0), bus, getattr(props, "pci_device_id", 0))
    report.visible_device_count = int(torch.cuda.device_count())


def nccl_version_of(torch: Any) -> str:
    """The NCCL that runs, not the one torch.cuda.nccl.version() names (what PyTorch was built with); that one when
    no NCCL is in the process's global scope; "" for a torch without NCCL."""
    try:
        return nccl_in_use()[1]
    except AttributeError:
        try:
            v = torch.cuda.nccl.version()
            return ".".join(map(str, v)) if isinstance(v, tuple) else str(v)
        except Exception:  # a torch without NCCL
            return ""


def rendezvous(p: Probe, host: str) -> Any:
    """torch's rendezvous, timed (_timedstore): the rank's store, whose calls the report counts per phase."""
    return timed_store(p.dist, tcp_store(p, host), p.store_tally)


def tcp_store(p: Probe, host: str) -> Any:
    """rank 0 starts the TCP store before the ranks meet and hands its address to the others, so that
    init_process_group measures the rendezvous and NCCL, not a client's back-off while the store starts."""
    args, rec, client, dist = p.args, p.rec, p.client, p.dist
    timeout = datetime.timedelta(seconds=args.timeout)
    if args.rank == 0:
        local = host in ("127.0.0.1", "localhost", "::1")
        # bench --nodes: the node's own address on the lab's bridge (its hostname resolves nowhere).
        node = os.environ.get("COLDSTART_NODE_ADDR", "")
        addr = "127.0.0.1" if local else node or socket.gethostbyname(socket.gethostname())
        store = rec.run(
            "unique_id",
            lambda: dist.TCPStore(addr, 0, args.nranks, True, timeout=timeout, wait_for_workers=False),
        )
        client.put("torch_rendezvous", f"{addr}:{store.port}")
        return store
    addr, port = rec.run("sync_uid", lambda: client.get("torch_rendezvous")).rsplit(":", 1)
    return dist.TCPStore(addr, int(port), args.nranks, False, timeout=timeout)


def start_group(p: Probe, store: Any, eager: bool) -> None:
    """Once the ranks meet: the process group and the job's start-up work, with prewarm (what users call: the process
    group, eager, and a warm-up on a background thread) beside the start-up when asked."""
    args, rec, mem = p.args, p.rec, p.report.mem
    rec.run("sync_init", lambda: p.client.barrier("init"))
    # Read once every rank has met: with several ranks on one GPU, every rank's CUDA context is in the baseline.
    mem.used_before_init_bytes = p.used()
    kwargs = {"store": store, "rank": args.rank, "world_size": args.nranks}
    if args.prewarm:
        warm = prewarm(p.device, backend=p.backend, **kwargs)
        p.startup()
        times = rec.run("prewarm_join", warm.wait)
        if times.init_start_ns:
            rec.add("prewarm_init", times.init_start_ns, times.init_end_ns)
        rec.add("prewarm", times.init_start_ns or times.collective_start_ns, times.collective_end_ns)
        mem.used_after_init_bytes, mem.after_init_at = p.used(), "prewarm_join"
        return
    if eager and not args.dry_run:
        kwargs["device_id"] = p.device
    rec.run("init_process_group", lambda: p.dist.init_process_group(backend=p.backend, **kwargs))
    if eager:
        mem.used_after_init_bytes, mem.after_init_at = p.used(), "init_process_group"
    p.startup()


def first_collectives(p: Probe, eager: bool) -> None:
    """The first barrier and the first two all-reduces, each split into the host's return and wait()."""
    dist, mem = p.dist, p.report.mem
    p.rec.run("sync_first", lambda: p.client.barrier("first"))
    p.timed("barrier_enqueue", "barrier_wait", lambda: dist.barrier(async_op=True))
    if not eager:  # lazy: the communicator exists once the first barrier made it
        mem.used_after_init_bytes, mem.after_init_at = p.used(), "barrier_wait"
    x = p.torch.ones(1, device=p.device)
    p.timed("first_enqueue", "first_wait", lambda: dist.all_reduce(x, async_op=True))
    mem.used_after_first_bytes = p.used()
    p.timed("second_enqueue", "second_wait", lambda: dist.all_reduce(x, async_op=True))


def steady(p: Probe) -> Steady:
    """Steady-state bandwidth of --size bytes: --warmup all-reduces, then --iters timed."""
    args, dist = p.args, p.dist
    n = max(1, args.size // 4)
    buf = p.torch.ones(n, device=p.device)

    def iterations() -> float:
        for _ in range(args.warmup):
            dist.all_reduce(buf)
        p.sync()
        s = time.perf_counter()
        for _ in range(args.iters):
            dist.all_reduce(buf)
        p.sync()
        return (time.perf_counter() - s) / max(args.iters, 1)

    secs = max(p.rec.run("steady", iterations), 1e-9)
    algbw = n * 4 / secs / 1e9
    return Steady(n * 4, args.iters, secs * 1e6, algbw, algbw * 2 * (args.nranks - 1) / args.nranks)


def run_phases(p: Probe, host: str, eager: bool) -> None:
    """The rank's phases in order, from `import torch` to the process group's end."""
    import_torch(p)
    start_group(p, rendezvous(p, host), eager)
    first_collectives(p, eager)
    if p.args.coverage:
        coverage(p.torch, p.dist, p.device, p.args.rank, p.args.nranks, p.rec, p.sync)
    if p.args.size > 0:
        p.report.steady = steady(p)
    p.rec.run("destroy", p.dist.destroy_process_group)


def send_result(client: Client, rec: Recorder, report: RankReport, main_entry_ns: int) -> int:
    """The report, with the probe's own time: its span from main() minus the main thread's phases."""
    report.phases = rec.phases
    background = ("process_start", "prewarm", "prewarm_init")
    inside = sum(p.end_ns - p.start_ns for p in rec.phases if p.name not in background)
    report.overhead_ms = max(0.0, (mono_ns() - main_entry_ns - inside) / 1e6)
    client.send({"t": "result", "result": report.to_json()})
    return 0


def run(args: argparse.Namespace, main_entry_ns: int) -> int:
    token = refuse_what_the_probe_cannot_run(args)
    address = coordinator_address(args.coord)
    eager = args.prewarm or os.environ.get("COLDSTART_TORCH_INIT", "lazy") == "eager"
    report = new_report(args, main_entry_ns, eager)
    client, rec = connect(args, token, address, report, main_entry_ns)
    probe = Probe(args, rec, client, report)
    try:
        run_phases(probe, address[0], eager)
    except CoordinatorError:
        raise
    except Exception as e:  # torch's errors: reported to the lab with their type
        message = f"{type(e).__name__}: {e}"
        print(f"coldstart torch probe (rank {args.rank}): {message}", file=sys.stderr)
        client.send({"t": "error", "message": message})
        return 1
    report.store_calls = probe.store_tally.calls
    return send_result(client, rec, report, main_entry_ns)


def main(argv: Optional[list[str]] = None) -> int:
    main_entry_ns = mono_ns()
    try:  # before torch starts threads, as a job would (coldstart.grow_fd_table)
        grow_from_env()
    except ValueError as e:
        print(f"coldstart torch probe: {e}", file=sys.stderr)
        return 2
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        return run(args, main_entry_ns)
    except CoordinatorError as e:
        print(f"coldstart torch probe (rank {args.rank}): {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
