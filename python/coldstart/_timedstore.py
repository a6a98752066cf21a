"""The rendezvous store as the torch probe times it: a `torch.distributed.Store` that passes every call on to the
rank's TCPStore and adds the time of those its main thread makes to the phase they fall in. c10d's own calls are in
there (the store barrier of `init_process_group`, gloo's exchange of addresses, ProcessGroupNCCL's broadcast of
NCCL's unique id), so bench's table can say how much of `init_process_group` and of the first barrier was the store
(docs/casebook.md). Calls from other threads (a watchdog's checks) are passed on untimed. The names of the methods
are those torch's trampoline for Python stores calls, of every torch the probe supports (1.13 to 2.x); a method the
running torch never calls costs nothing.

COLDSTART_TORCH_STORE_TIMING=0 hands torch the TCPStore itself."""

import os
import threading
from typing import Any, Callable, Optional, TypeVar

from coldstart.protocol import Recorder, mono_ns

T = TypeVar("T")
BETWEEN = "between phases"  # a call made outside any phase the probe times


class StoreTally:
    """The count and time of the store calls the rank's main thread makes, per phase (Recorder.current)."""

    def __init__(self, rec: Recorder) -> None:
        self.rec = rec
        self.main = threading.get_ident()
        self.calls: dict[str, dict[str, float]] = {}

    def timed(self, body: Callable[[], T]) -> T:
        if threading.get_ident() != self.main:
            return body()
        t0 = mono_ns()
        try:
            return body()
        finally:
            entry = self.calls.setdefault(self.rec.current or BETWEEN, {"count": 0, "ms": 0.0})
            entry["count"] += 1
            entry["ms"] += (mono_ns() - t0) / 1e6


def timed_store(dist: Any, inner: Any, tally: StoreTally) -> Any:
    """`inner` behind a Store of torch's whose calls `tally` counts; `inner` itself when timing is off or this torch
    cannot subclass its Store."""
    if os.environ.get("COLDSTART_TORCH_STORE_TIMING", "1") == "0" or not hasattr(dist, "Store"):
        return inner

    class TimedStore(dist.Store):  # type: ignore[misc, name-defined]
        def __init__(self) -> None:
            super().__init__()
            timeout = getattr(inner, "timeout", None)
            if timeout is not None:  # waits the wrapper's callers bound by its timeout: the TCPStore's
                self.set_timeout(timeout)

        def set(self, key: str, value: bytes) -> None:
            tally.timed(lambda: inner.set(key, value))

        def get(self, key: str) -> bytes:
            return tally.timed(lambda: inner.get(key))

        def compare_set(self, key: str, expected: bytes, desired: bytes) -> bytes:
            return tally.timed(lambda: inner.compare_set(key, expected, desired))

        def add(self, key: str, amount: int) -> int:
            return tally.timed(lambda: inner.add(key, amount))

        def check(self, keys: list[str]) -> bool:
            return tally.timed(lambda: inner.check(keys))

        def wait(self, keys: list[str], timeout: Optional[Any] = None) -> None:
            tally.timed(lambda: inner.wait(keys) if timeout is None else inner.wait(keys, timeout))

        def getNumKeys(self) -> int:  # noqa: N802 (the trampoline's name)
            return tally.timed(inner.num_keys)

        def num_keys(self) -> int:
            return tally.timed(inner.num_keys)

        def deleteKey(self, key: str) -> bool:  # noqa: N802 (the trampoline's name)
            return tally.timed(lambda: inner.delete_key(key))

        def delete_key(self, key: str) -> bool:
            return tally.timed(lambda: inner.delete_key(key))

        def append(self, key: str, value: bytes) -> None:
            tally.timed(lambda: inner.append(key, value))

        def multi_get(self, keys: list[str]) -> list[bytes]:
            return tally.timed(lambda: inner.multi_get(keys))

        def multi_set(self, keys: list[str], values: list[bytes]) -> None:
            tally.timed(lambda: inner.multi_set(keys, values))

        def has_extended_api(self) -> bool:
            return bool(getattr(inner, "has_extended_api", lambda: False)())

        def clone(self) -> Any:  # a second connection (torch 2.x), timed alike
            return timed_store(dist, inner.clone(), tally)

    try:
        return TimedStore()
    except (TypeError, RuntimeError):  # a torch whose Store cannot be subclassed from Python
        return inner
