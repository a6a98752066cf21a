"""One rank at the PyTorch level: `coldstart bench --worker torch` starts this instead of the C++ worker, with the
same arguments. It times what the field report timed: `import torch`, the CUDA context, `init_process_group`
(lazy, or eager with `device_id` when COLDSTART_TORCH_INIT=eager), the first `barrier()` and the first
`all_reduce(async_op=True)`, each split into the host's return and `wait()`, and steady-state bandwidth; and reports
them over the coordinator protocol like the C++ worker. Under --dry-run it uses the gloo backend on the CPU."""

import argparse
import datetime
import importlib
import os
import socket
import sys
import time
from typing import Any, Callable, Optional

from coldstart.protocol import Client, CoordinatorError, Recorder, mono_ns, process_start_mono_ns
from coldstart.report import RankReport, Steady, bus_id


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="coldstart.torch_worker")
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--nranks", type=int, required=True)
    p.add_argument("--device", type=int, default=0)
    p.add_argument("--trial", type=int, default=0)
    p.add_argument("--coord", required=True)
    p.add_argument("--collective", default="all_reduce")
    p.add_argument("--size", type=int, default=64 << 20)
    p.add_argument("--groups", default="world")
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--nccl-lib", default="")
    p.add_argument("--timeout", type=float, default=600)
    p.add_argument("--dry-run", action="store_true")
    return p.parse_args(argv)


def run(args: argparse.Namespace, main_entry_ns: int) -> int:
    token = os.environ.get("COLDSTART_TOKEN")
    if not token:
        raise SystemExit("coldstart torch probe: COLDSTART_TOKEN is not set; the lab passes it to every rank")
    if args.collective != "all_reduce":
        raise SystemExit(f"coldstart torch probe: --collective {args.collective}: the probe times all_reduce only")
    host, port = args.coord.rsplit(":", 1)
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    eager = os.environ.get("COLDSTART_TORCH_INIT", "lazy") == "eager"
    report = RankReport(
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
    mem = report.mem
    t0 = mono_ns()
    client = Client(host, int(port), token, args.trial, args.rank, args.nranks, args.timeout)
    rec = Recorder(client)
    started = process_start_mono_ns()
    if 0 < started <= main_entry_ns:
        rec.add("process_start", started, main_entry_ns)
    rec.add("connect", t0, mono_ns())
    launcher = os.environ.get("COLDSTART_LAUNCHER_INFO")
    if launcher:
        import json

        report.launcher = {k: str(v) for k, v in json.loads(launcher).items()}
    try:
        torch = rec.run("import_torch", lambda: importlib.import_module("torch"))
        dist = importlib.import_module("torch.distributed")
        report.torch_version = str(torch.__version__)
        if args.dry_run:
            device, backend = torch.device("cpu"), "gloo"
        else:
            device, backend = torch.device("cuda", args.device), "nccl"

            def context() -> None:
                torch.cuda.set_device(device)
                torch.empty(1, device=device)
                torch.cuda.synchronize(device)

            rec.run("cuda_context", context)
            props = torch.cuda.get_device_properties(device)
            report.gpu_name = str(props.name)
            report.uuid = str(getattr(props, "uuid", ""))
            bus = getattr(props, "pci_bus_id", None)
            if bus is not None:
                report.bus_id = bus_id(getattr(props, "pci_domain_id", 0), bus, getattr(props, "pci_device_id", 0))
            report.visible_device_count = int(torch.cuda.device_count())
            try:
                v = torch.cuda.nccl.version()
                report.nccl_version = ".".join(map(str, v)) if isinstance(v, tuple) else str(v)
            except Exception:  # a torch without NCCL
                pass

        def used() -> int:
            if args.dry_run:
                return -1
            free, total = torch.cuda.mem_get_info(device)
            mem.total_bytes = int(total)
            return int(total - free)

        mem.used_before_init_bytes = used()
        # torch's rendezvous: rank 0 starts the TCP store before the ranks meet and hands its address to the others,
        # so that init_process_group measures the rendezvous and NCCL, not a client's back-off while the store starts.
        timeout = datetime.timedelta(seconds=args.timeout)
        if args.rank == 0:
            addr = (
                "127.0.0.1" if host in ("127.0.0.1", "localhost", "::1") else socket.gethostbyname(socket.gethostname())
            )
            store = rec.run(
                "unique_id",
                lambda: dist.TCPStore(addr, 0, args.nranks, True, timeout=timeout, wait_for_workers=False),
            )
            client.put("torch_rendezvous", f"{addr}:{store.port}")
        else:
            rendezvous = rec.run("sync_uid", lambda: client.get("torch_rendezvous"))
            addr, port = rendezvous.rsplit(":", 1)
            store = dist.TCPStore(addr, int(port), args.nranks, False, timeout=timeout)
        rec.run("sync_init", lambda: client.barrier("init"))
        kwargs = {"backend": backend, "store": store, "rank": args.rank, "world_size": args.nranks}
        if eager and not args.dry_run:
            kwargs["device_id"] = device
        rec.run("init_process_group", lambda: dist.init_process_group(**kwargs))
        if eager:
            mem.used_after_init_bytes, mem.after_init_at = used(), "init_process_group"
        rec.run("sync_first", lambda: client.barrier("first"))

        def sync() -> None:
            if not args.dry_run:
                torch.cuda.synchronize(device)

        def timed(enqueue_name: str, wait_name: str, start: Callable[[], Any]) -> None:
            work = rec.run(enqueue_name, start)
            rec.run(wait_name, lambda: (work.wait(), sync()))

        timed("barrier_enqueue", "barrier_wait", lambda: dist.barrier(async_op=True))
        if not eager:  # lazy: the communicator exists once the first barrier made it
            mem.used_after_init_bytes, mem.after_init_at = used(), "barrier_wait"
        x = torch.ones(1, device=device)
        timed("first_enqueue", "first_wait", lambda: dist.all_reduce(x, async_op=True))
        mem.used_after_first_bytes = used()
        timed("second_enqueue", "second_wait", lambda: dist.all_reduce(x, async_op=True))
        if args.size > 0:
            n = max(1, args.size // 4)
            buf = torch.ones(n, device=device)

            def steady() -> float:
                for _ in range(args.warmup):
                    dist.all_reduce(buf)
                sync()
                s = time.perf_counter()
                for _ in range(args.iters):
                    dist.all_reduce(buf)
                sync()
                return (time.perf_counter() - s) / max(args.iters, 1)

            secs = max(rec.run("steady", steady), 1e-9)
            algbw = n * 4 / secs / 1e9
            report.steady = Steady(n * 4, args.iters, secs * 1e6, algbw, algbw * 2 * (args.nranks - 1) / args.nranks)
        rec.run("destroy", dist.destroy_process_group)
    except CoordinatorError:
        raise
    except Exception as e:  # torch's errors: reported to the lab with their type
        message = f"{type(e).__name__}: {e}"
        print(f"coldstart torch probe (rank {args.rank}): {message}", file=sys.stderr)
        client.send({"t": "error", "message": message})
        return 1
    report.phases = rec.phases
    inside = sum(p.end_ns - p.start_ns for p in rec.phases if p.name != "process_start")
    report.overhead_ms = max(0.0, (mono_ns() - main_entry_ns - inside) / 1e6)
    client.send({"t": "result", "result": report.to_json()})
    return 0


def main(argv: Optional[list[str]] = None) -> int:
    main_entry_ns = mono_ns()
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        return run(args, main_entry_ns)
    except CoordinatorError as e:
        print(f"coldstart torch probe (rank {args.rank}): {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
