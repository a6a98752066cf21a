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

import os
import threading
import time
from dataclasses import dataclass
from typing import Any


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
    CUDA_VISIBLE_DEVICES); else the current device."""
    if torch is None:
        import torch
    count = torch.cuda.device_count()
    local = os.environ.get("LOCAL_RANK")
    if local is not None and local.isdigit() and int(local) < count:
        return torch.device("cuda", int(local))
    if count == 1:
        return torch.device("cuda", 0)
    return torch.device("cuda", torch.cuda.current_device())


def prewarm(device: Any = None, *, group: Any = None, backend: str = "nccl", **init_kwargs: Any) -> Prewarm:
    """Starts, on a background thread, the default process group (eagerly: init_process_group(backend,
    device_id=device, **init_kwargs), unless it exists already, as under Ray Train) and a 1-element all-reduce on it
    (or on `group`). Returns at once; call wait() on the result before the first collective of the main thread.

    device: a torch.device or index (default: local_device()). init_kwargs go to init_process_group (init_method,
    store, rank, world_size, timeout); with none, torchrun's environment (env://) is used."""
    import torch
    import torch.distributed as dist

    if device is None:
        device = local_device(torch)
    elif isinstance(device, int):
        device = torch.device("cuda", device)

    def warm(times: PrewarmTimes) -> None:
        if device.type == "cuda":
            torch.cuda.set_device(device)  # the current device is per thread
        if not dist.is_initialized():
            times.init_start_ns = time.monotonic_ns()
            kwargs = dict(init_kwargs)
            if device.type == "cuda":
                kwargs["device_id"] = device
            dist.init_process_group(backend=backend, **kwargs)
            times.init_end_ns = time.monotonic_ns()
        times.collective_start_ns = time.monotonic_ns()
        if device.type == "cuda":
            # Its own stream: neither waits for nor holds up the main thread's copies on the default stream.
            stream = torch.cuda.Stream(device)
            with torch.cuda.stream(stream):
                x = torch.ones(1, device=device)
                dist.all_reduce(x, group=group, async_op=True).wait()
                stream.synchronize()
        else:
            dist.all_reduce(torch.ones(1), group=group)
        times.collective_end_ns = time.monotonic_ns()

    return Prewarm(warm)
