"""storebench's clients: one worker process holds many clients of the rendezvous store, each a thread with its own
`torch.distributed.TCPStore` connection, doing what one rank of a job does to the store at start (c10d's
rendezvous, `init_process_group`'s store-based barrier, ProcessGroupNCCL's broadcast of NCCL's unique id).

The steps follow torch's own code. A rank's store is a client `TCPStore(host, port, world_size, False, timeout)`,
as under torchrun, whose agent hosts the server (torch/distributed/rendezvous.py, `_create_c10d_store` with the
agent's store): its constructor connects and adds 1 to the store's `init/` counter. Here the two are made apart, the
constructor with wait_for_workers=False and then the add (on `init/` under the Python API's own `/` prefix): the same
requests to the server, but torch 1.13's binding holds the GIL through the constructor, so a worker's clients would
connect one at a time and stall its other threads meanwhile; an add releases it. The keys go through the prefixes
torch puts on them (`/worker/attempt_0` for torchrun's agent store, then `default_pg`). The barrier is one of two:
  poll  torch <= 2.0's `_store_based_barrier`, after every `init_process_group` and `new_group`: `add(key, 1)`, then
        `add(key, 0)` every 10 ms until the count is the world size;
  wait  torch >= 2.1's, run only under TORCH_DIST_INIT_BARRIER=1 (pytorch/pytorch#99937, #103033): `add(key, 1)`,
        `add(key, 0)`, the rank that sees the world size sets `key:last_worker`, and every rank `wait`s for it;
  none  torch >= 2.1's by default: no store barrier (the phase is left out of the records).
The unique id: rank 0 `set`s 128 bytes (NCCL_UNIQUE_ID_BYTES) under the communicator's key, every other rank `get`s
it (a `get` waits for the key), as ProcessGroupNCCL's broadcastUniqueNCCLID does at the first collective (or at
init with `device_id`)."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import asdict, dataclass
from datetime import timedelta
from multiprocessing.connection import Connection
from typing import Any

UNIQUE_ID_BYTES = 128  # NCCL_UNIQUE_ID_BYTES
POLL_S = 0.01  # torch <= 2.0's barrier sleeps 10 ms between reads of the count
AGENT_PREFIX = "/worker/attempt_0"  # torch/distributed/rendezvous.py, with torchrun's agent store
PG_PREFIX = "default_pg"  # init_process_group's PrefixStore
INIT_KEY = "init/"  # TCPStore's counter of the clients that joined (initKey_)
BARRIER_KEY = "store_based_barrier_key:1"
COMM_PREFIX, COMM_KEY = "0", "0"  # ProcessGroupNCCL: its group's prefix, then its communicator counter
THREAD_STACK = 1 << 20  # a client thread's stack: thousands of threads on a small machine
NICE = 19  # the workers' niceness: the store, which in a job has its host's CPUs, is not starved by its clients


@dataclass(frozen=True)
class Job:
    """One trial's part for one worker: its clients (ranks) of an `n`-rank job on the store at host:port."""

    host: str
    port: int
    n: int
    ranks: list[int]
    barrier: str  # "poll", "wait" or "none"
    timeout_s: float
    unique_id: bytes


@dataclass
class ClientRecord:
    """One client's times (ms; start: from the trial's start signal to the client's thread running; each other phase
    from its own start; end_to_end from the signal to the unique id in hand), the store
    calls it made (the constructor counts one, a get one though it waits first) and, if it failed, where and why."""

    rank: int
    start_ms: float | None = None
    connect_ms: float | None = None
    barrier_ms: float | None = None
    unique_id_ms: float | None = None
    end_to_end_ms: float | None = None
    calls: int = 0
    error: str = ""


def _barrier(dist: Any, store: Any, n: int, kind: str, deadline: float, timeout_s: float) -> int:
    """The store-based barrier of `init_process_group` on `store` (the rank's PrefixStore); returns its calls."""
    store.add(BARRIER_KEY, 1)
    count = store.add(BARRIER_KEY, 0)
    calls = 2
    if kind == "wait":
        last = f"{BARRIER_KEY}:last_worker"
        if count == n:
            store.set(last, "1")
            calls += 1
        store.wait([last], timedelta(seconds=max(deadline - time.monotonic(), 0.001)))
        return calls + 1
    while count != n:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{count} of {n} ranks in the barrier after {timeout_s:g} s")
        time.sleep(POLL_S)
        count = store.add(BARRIER_KEY, 0)
        calls += 1
    return calls


def _client(dist: Any, job: Job, rank: int, go: threading.Event, start: list[float], keep: list[Any]) -> ClientRecord:
    """One rank's start against the store, after `go`; its TCPStore is kept in `keep` (the connection stays open, as a
    rank's does, until the whole trial ends)."""
    rec = ClientRecord(rank)
    go.wait()
    phase = "connect"
    t0 = time.monotonic()
    rec.start_ms = (t0 - start[0]) * 1e3
    deadline = t0 + job.timeout_s
    try:
        timeout = timedelta(seconds=job.timeout_s)
        store = dist.TCPStore(job.host, job.port, job.n, False, timeout, wait_for_workers=False)
        keep.append(store)
        store.add(INIT_KEY, 1)
        t1 = time.monotonic()
        rec.connect_ms, rec.calls = (t1 - t0) * 1e3, 1
        phase = "barrier"
        pg = dist.PrefixStore(PG_PREFIX, dist.PrefixStore(AGENT_PREFIX, store))
        if job.barrier != "none":
            rec.calls += _barrier(dist, pg, job.n, job.barrier, deadline, job.timeout_s)
        t2 = time.monotonic()
        rec.barrier_ms = None if job.barrier == "none" else (t2 - t1) * 1e3
        phase = "unique_id"
        comm = dist.PrefixStore(COMM_PREFIX, pg)
        if rank == 0:
            comm.set(COMM_KEY, job.unique_id)
        elif comm.get(COMM_KEY) != job.unique_id:
            raise ValueError("the unique id read back is not the one rank 0 set")
        rec.calls += 1
        t3 = time.monotonic()
        rec.unique_id_ms = (t3 - t2) * 1e3
        rec.end_to_end_ms = (t3 - start[0]) * 1e3
    except Exception as e:  # a client's failure is a result: the trial reports it with the others
        rec.error = f"{phase}: {type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"
    return rec


def run_trial(dist: Any, conn: Connection, job: Job) -> None:
    """One trial in this worker: the clients' threads started and parked, "ready" sent; on "go" (with the trial's
    start time) they run; their records and this process's CPU time are sent back; on "close" the connections close."""
    go = threading.Event()
    start: list[float] = [0.0]
    keep: list[Any] = []
    records: list[ClientRecord] = []
    lock = threading.Lock()

    def body(rank: int) -> None:
        rec = _client(dist, job, rank, go, start, keep)
        with lock:
            records.append(rec)

    threading.stack_size(THREAD_STACK)
    threads = [threading.Thread(target=body, args=(r,), daemon=True) for r in job.ranks]
    for t in threads:
        t.start()
    conn.send(("ready", None))
    message, t_go = conn.recv()
    if message != "go":
        return
    cpu0 = time.process_time()
    start[0] = t_go
    go.set()
    for t in threads:
        t.join()
    cpu_ms = (time.process_time() - cpu0) * 1e3
    conn.send(("done", {"clients": [asdict(r) for r in records], "cpu_ms": cpu_ms}))
    conn.recv()  # "close": every worker has finished, so closing disturbs no one's timing
    keep.clear()
    conn.send(("closed", None))


def worker_main(conn: Connection) -> None:
    """A worker process: imports torch once, then runs trials until told to exit. Its clients run at the lowest
    priority (nice 19): on one machine they share the CPUs with the store, which in a job they would not, and the
    scheduler then gives the store's thread a CPU whenever it has work."""
    os.nice(NICE)
    try:
        import torch.distributed as dist
    except Exception as e:  # the parent imported it; a worker that cannot says so instead of hanging
        conn.send(("error", f"import torch.distributed: {type(e).__name__}: {e}"))
        return
    conn.send(("up", os.getpid()))
    while True:
        message, payload = conn.recv()
        if message != "trial":
            return
        run_trial(dist, conn, payload)
