"""The coordinator protocol, as the C++ worker speaks it (src/coord/wire.h): each message is a 4-byte little-endian
length and that many bytes of JSON with a "t" field. The first message is a hello with the run's token."""

import json
import os
import socket
import struct
import time
from typing import Any, Callable, Optional, TypeVar

from coldstart.report import PhaseSpan

T = TypeVar("T")

PROTOCOL_VERSION = 1
MAX_FRAME = 1 << 20


def mono_ns() -> int:
    return time.monotonic_ns()  # CLOCK_MONOTONIC on Linux, as the C++ side


def process_start() -> tuple[int, str]:
    """When this process started, on CLOCK_MONOTONIC, and where that came from: the lab's reading just before it forked
    the process (COLDSTART_SPAWN_MONO_NS, ns; "lab") where /proc/self/stat agrees within two clock ticks, else /proc's
    own (10 ms ticks: a process an outside launcher started; "proc"); (0, "") when neither can be read. As the C++
    worker (src/util/clock.cc)."""
    proc, tick = 0, 0
    try:
        with open("/proc/self/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        tick = 1_000_000_000 // os.sysconf("SC_CLK_TCK")
        proc = int(fields[19]) * tick - (time.clock_gettime_ns(time.CLOCK_BOOTTIME) - time.monotonic_ns())
    except (OSError, IndexError, ValueError):
        proc = 0
    own = (proc, "proc") if proc > 0 else (0, "")
    try:
        spawned = int(os.environ.get("COLDSTART_SPAWN_MONO_NS", ""))
    except ValueError:
        return own
    if 0 < spawned <= time.monotonic_ns() and (proc == 0 or abs(spawned - proc) <= 2 * tick):
        return spawned, "lab"
    return own


class CoordinatorError(RuntimeError):
    pass


class Client:
    def __init__(self, host: str, port: int, token: str, trial: int, rank: int, nranks: int, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        deadline = time.monotonic() + timeout_s
        last = None
        while True:  # the coordinator may not listen yet when every rank starts at once
            try:
                self.sock = socket.create_connection((host, port), timeout=timeout_s)
                break
            except OSError as e:
                last = e
                if time.monotonic() > deadline:
                    raise CoordinatorError(f"coordinator {host}:{port}: cannot connect ({last})") from e
                time.sleep(0.02)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.send(
            {
                "t": "hello",
                "v": PROTOCOL_VERSION,
                "token": token,
                "trial": trial,
                "rank": rank,
                "nranks": nranks,
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "mono_ns": mono_ns(),
                "real_ns": time.time_ns(),
            }
        )
        welcome = self.recv()
        if welcome.get("t") != "welcome":
            raise CoordinatorError(f"coordinator refused the hello: {welcome.get('message', welcome)}")

    def send(self, msg: dict[str, Any]) -> None:
        data = json.dumps(msg, separators=(",", ":")).encode()
        if len(data) > MAX_FRAME:
            raise CoordinatorError(f"message of {len(data)} bytes is over the coordinator's limit")
        self.sock.sendall(struct.pack("<I", len(data)) + data)

    def _exactly(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise CoordinatorError("coordinator closed the connection")
            buf += chunk
        return buf

    def recv(self) -> dict[str, Any]:
        self.sock.settimeout(self.timeout_s)
        try:
            (n,) = struct.unpack("<I", self._exactly(4))
            if n > MAX_FRAME:
                raise CoordinatorError(f"frame of {n} bytes is over the limit")
            msg = json.loads(self._exactly(n))
        except socket.timeout as e:
            raise CoordinatorError(f"no answer from the coordinator within {self.timeout_s:.0f} s") from e
        if msg.get("t") == "error":
            raise CoordinatorError(msg.get("message", "coordinator error"))
        return msg

    def put(self, key: str, value: str) -> None:
        self.send({"t": "put", "key": key, "value": value})

    def get(self, key: str) -> str:
        self.send({"t": "get", "key": key})
        msg = self.recv()
        if msg.get("t") != "value" or msg.get("key") != key:
            raise CoordinatorError(f"expected the value of {key!r}")
        return msg["value"]

    def barrier(self, name: str) -> None:
        self.send({"t": "barrier", "name": name})
        msg = self.recv()
        if msg.get("t") != "barrier_ok" or msg.get("name") != name:
            raise CoordinatorError(f"expected the end of barrier {name!r}")

    def phase_event(self, name: str, state: str, ns: int, start_ns: Optional[int] = None) -> None:
        msg = {"t": "phase", "name": name, "state": state, "ns": ns}
        if start_ns is not None:
            msg["start_ns"] = start_ns
        self.send(msg)


class Recorder:
    """Times phases and streams a begin/end event for each, as the C++ worker does."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.phases: list[PhaseSpan] = []
        self.current: Optional[str] = None  # the phase run() is in (the innermost, where one runs inside another)

    def add(self, name: str, start_ns: int, end_ns: int) -> None:
        self.phases.append(PhaseSpan(name, start_ns, end_ns))

    def run(self, name: str, body: Callable[[], T]) -> T:
        t0 = mono_ns()
        self.client.phase_event(name, "begin", t0)
        outer, self.current = self.current, name
        try:
            value = body()
        finally:
            self.current = outer
        t1 = mono_ns()
        self.add(name, t0, t1)
        self.client.phase_event(name, "end", t1, t0)
        return value
