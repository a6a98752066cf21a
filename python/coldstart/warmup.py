"""Hide NCCL's cold start behind the job's own start-up: create the process group eagerly and make one small
collective on a background thread while the main thread loads the model, then wait before the first real collective.

    warm = coldstart.prewarm()   # torchrun: init_process_group(device_id=cuda:LOCAL_RANK) and a warm-up, behind
    model = load_model()         # the job's own start-up work
    warm.wait()                  # before the first collective
    dist.barrier()

With cuMem on (NCCL's default), NCCL connects to its peers lazily, inside the first collective, by exporting and
importing buffers over a Unix socket: hundreds of milliseconds on 2 GPUs, more with more peers and channels. The
warm-up makes those connections while the start-up runs. It covers the algorithms the warm-up used; a later
operation that picks another (a large all-reduce, an all-gather, point-to-point) may connect again (coldstart
bench --coverage measures which).
"""

from __future__ import annotations

import operator
import os
import re
import threading
import time
from dataclasses import dataclass
from typing import Any

from coldstart._text import whole_number


@dataclass
class PrewarmTimes:
    """When each part ran, on time.monotonic_ns() (CLOCK_MONOTONIC on Linux); init is (0, 0) when the process group
    already existed."""

    init_start_ns: int = 0
    init_end_ns: int = 0
    collective_start_ns: int = 0
    collective_end_ns: int = 0
    thread_id: int = 0  # the warm-up thread's native id (a tracer's tid)

    @property
    def seconds(self) -> float:
        start = self.init_start_ns or self.collective_start_ns
        return max(0, self.collective_end_ns - start) / 1e9


class Prewarm:
    """A warm-up running on a background thread. wait() joins it before the first real collective and raises what
    the thread raised."""

    def __init__(self, target: Any) -> None:
        self.times = PrewarmTimes()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(target,), name="coldstart-prewarm", daemon=True)
        self._thread.start()

    def _run(self, target: Any) -> None:
        self.times.thread_id = threading.get_native_id()
        try:
            target(self.times)
        except BaseException as e:  # handed to wait(), in the caller's thread
            self._error = e

    def done(self) -> bool:
        return not self._thread.is_alive()

    def wait(self, timeout: float | None = None) -> PrewarmTimes:
        """Blocks until the warm-up is done (TimeoutError after `timeout` seconds); raises its error, if any."""
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise TimeoutError(f"coldstart.prewarm: the warm-up did not finish within {timeout} s")
        if self._error is not None:
            raise self._error
        return self.times


def local_device(torch: Any = None) -> Any:
    """The GPU this process should use: cuda:LOCAL_RANK under torchrun, Ray Train and Slurm's torch launchers when
    it sees every GPU of the node; cuda:0 when it sees only its own (Ray actors with num_gpus=1, per-rank
    CUDA_VISIBLE_DEVICES); else the current device. A LOCAL_RANK that is not a number in ASCII digits (empty, a sign,
    whitespace, another script's digits) raises ValueError naming it."""
    if torch is None:
        import torch
    local = _launcher_number("LOCAL_RANK")
    count = torch.cuda.device_count()
    if local is not None and local < count:
        return torch.device("cuda", local)
    if count == 1:
        return torch.device("cuda", 0)
    return torch.device("cuda", torch.cuda.current_device())


# The launcher variables the package reads, and what each must hold: LOCAL_RANK (local_device), and those
# init_process_group's env:// reads when prewarm makes the process group from the environment.
_LAUNCHER_VARIABLES = {
    "LOCAL_RANK": "the process's index on its node, e.g. LOCAL_RANK=0",
    "RANK": "the process's rank in the job, e.g. RANK=0",
    "WORLD_SIZE": "the number of processes in the job, e.g. WORLD_SIZE=2",
    "MASTER_PORT": "the rendezvous port, e.g. MASTER_PORT=29500",
}


def _launcher_number(name: str) -> int | None:
    """The launcher variable `name` as a whole number, None when it is unset. A value of anything but ASCII digits (an
    empty one, a sign, whitespace, '١' or '²', which str.isdigit() passes) raises ValueError in one line naming the
    variable, its value (escaped, cut) and what to give; the launcher (torchrun, Ray Train, Slurm) sets it."""
    value = os.environ.get(name)
    if value is None:
        return None
    return whole_number(name, value, f"give {_LAUNCHER_VARIABLES[name]}, as torchrun and Ray Train set it")


def _check_rendezvous_environment(dist: Any, init_kwargs: dict[str, Any]) -> None:
    """Before prewarm starts anything: the variables init_process_group's env:// rendezvous will read (RANK,
    WORLD_SIZE, MASTER_PORT; each where set and not given as an argument), refused in one line naming the variable
    when it is not a number, instead of an error naming none from the warm-up's thread (or '١' read as 1)."""
    if dist.is_initialized() or init_kwargs.get("store") is not None:
        return
    init_method = init_kwargs.get("init_method")
    if init_method is not None and not str(init_method).startswith("env://"):
        return
    for name, given in (("RANK", "rank"), ("WORLD_SIZE", "world_size"), ("MASTER_PORT", None)):
        if given is None or init_kwargs.get(given, -1) == -1:
            _launcher_number(name)


_DEVICE_STRING = re.compile(r"(cuda|cpu)(?::([0-9]+))?")
_GIVE_DEVICE = "give a torch.device, an index (0) or a string ('cuda', 'cuda:1', 'cpu')"


def _device(torch: Any, device: Any) -> Any:
    """`device` as a torch.device: a torch.device as it is; an int (or numpy integer) as that CUDA device; 'cuda' as
    the calling thread's current CUDA device, 'cuda:N' as device N, 'cpu' as the CPU. Anything else is a TypeError, a
    string of another form or an index this process has no GPU for a ValueError, each in one line."""
    if isinstance(device, torch.device):
        return device
    if isinstance(device, str):
        m = _DEVICE_STRING.fullmatch(device.strip())
        if m is None:
            raise ValueError(f"prewarm: device {device!r} is not a device; {_GIVE_DEVICE}")
        if m.group(1) == "cpu":
            return torch.device("cpu")
        index = torch.cuda.current_device() if m.group(2) is None else int(m.group(2))
        return torch.device("cuda", _cuda_index(torch, index, device))
    if not isinstance(device, bool):
        try:
            index = operator.index(device)
        except TypeError:
            pass
        else:
            return torch.device("cuda", _cuda_index(torch, index, device))
    raise TypeError(f"prewarm: device must be a torch.device, int or str, not {type(device).__name__}; {_GIVE_DEVICE}")


def _cuda_index(torch: Any, index: int, asked: Any) -> int:
    count = torch.cuda.device_count()
    if not 0 <= index < count:
        sees = f"GPUs 0 to {count - 1}" if count > 1 else "GPU 0" if count == 1 else "no GPU"
        raise ValueError(f"prewarm: device {asked!r} is not a GPU of this process (it sees {sees}); {_GIVE_DEVICE}")
    return index


def _same_device(a: Any, b: Any) -> bool:
    return (a.type, a.index) == (b.type, b.index)


@dataclass
class _Started:
    """The process's warm-up: what it was asked for, and the default process group it made or found."""

    device: Any
    group: Any
    handle: Prewarm | None = None
    world: Any = None  # torch.distributed.group.WORLD once the warm-up has it


_lock = threading.Lock()
_started: _Started | None = None


def _world(dist: Any) -> Any:
    """The default process group object (torch.distributed.group.WORLD), to tell the group a warm-up warmed from one
    made after it was destroyed; None where this torch has no such attribute (then is_initialized() alone decides)."""
    return getattr(getattr(dist, "group", None), "WORLD", None)


def _reusable(started: _Started, dist: Any) -> bool:
    """A warm-up stands for later calls while it runs, and once done while the process group it warmed is still the
    default one; not once it failed (a later call starts again) or its group was destroyed."""
    handle = started.handle
    assert handle is not None
    if not handle.done():
        return True
    return handle._error is None and dist.is_initialized() and _world(dist) is started.world


def prewarm(device: Any = None, *, group: Any = None, backend: str = "nccl", **init_kwargs: Any) -> Prewarm:
    """Starts, on a background thread, the default process group (eagerly: init_process_group(backend,
    device_id=device, **init_kwargs), unless it exists already, as under Ray Train) and a 1-element all-reduce on it
    (or on `group`). Returns at once; call wait() on the result before the first collective of the main thread.

    device: a torch.device, an index (3: cuda:3) or a string ('cuda': the current device, 'cuda:3', 'cpu'); default
    local_device(). init_kwargs go to init_process_group (init_method, store, rank, world_size, timeout); with none,
    torchrun's environment (env://) is used. A device of another type raises TypeError, a malformed string or an index
    this process has no GPU for ValueError, before anything starts; so does a launcher variable it reads (LOCAL_RANK;
    RANK, WORLD_SIZE and MASTER_PORT for env://) that is not a number in ASCII digits, naming the variable.

    Once per process group: a second call while the first warm-up runs, or after it succeeded while its process group
    is still the default one, returns the same handle and starts nothing (no second init_process_group, no second
    collective, which the other ranks would not match); its device (if given) and group must be the first call's, or
    it raises ValueError, and its init arguments are not used. After a warm-up failed, or after
    destroy_process_group(), a call starts a new one."""
    global _started
    if not isinstance(backend, str):
        raise TypeError(f"prewarm: backend must be a str, not {type(backend).__name__}; give e.g. 'nccl' or 'gloo'")
    import torch
    import torch.distributed as dist

    asked = None if device is None else _device(torch, device)
    with _lock:
        if _started is not None and _reusable(_started, dist):
            if asked is not None and not _same_device(asked, _started.device):
                raise ValueError(
                    f"prewarm: this process group is already warmed (or being warmed) on {_started.device!r}, not "
                    f"{asked!r}; call prewarm once per process group, with one device"
                )
            if group is not _started.group:
                raise ValueError(
                    "prewarm: this process group is already warmed (or being warmed) on another group; call prewarm "
                    "once per process group (a collective of your own warms another group)"
                )
            assert _started.handle is not None
            return _started.handle
        _check_rendezvous_environment(dist, init_kwargs)
        started = _Started(device=asked if asked is not None else local_device(torch), group=group)
        dev = started.device

        def warm(times: PrewarmTimes) -> None:
            if dev.type == "cuda":
                torch.cuda.set_device(dev)  # the current device is per thread
            if not dist.is_initialized():
                times.init_start_ns = time.monotonic_ns()
                kwargs = dict(init_kwargs)
                if dev.type == "cuda":
                    kwargs["device_id"] = dev
                dist.init_process_group(backend=backend, **kwargs)
                times.init_end_ns = time.monotonic_ns()
            started.world = _world(dist)
            times.collective_start_ns = time.monotonic_ns()
            if dev.type == "cuda":
                # Its own stream: neither waits for nor holds up the main thread's copies on the default stream.
                stream = torch.cuda.Stream(dev)
                with torch.cuda.stream(stream):
                    x = torch.ones(1, device=dev)
                    dist.all_reduce(x, group=group, async_op=True).wait()
                    stream.synchronize()
            else:
                dist.all_reduce(torch.ones(1), group=group)
            times.collective_end_ns = time.monotonic_ns()

        started.handle = Prewarm(warm)
        _started = started
        return started.handle
