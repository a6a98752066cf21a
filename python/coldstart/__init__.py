"""coldstart: NCCL's cold start, measured under every launcher and hidden behind the job's own start-up.

coldstart.prewarm() is the fix users call (torchrun, Ray actors, Ray Train), coldstart.grow_fd_table() a smaller one
for the top of a job's script; coldstart.load() reads bench's results
and coldstart.doctor() the node's findings. The rest of the package is what the `coldstart` binary runs: the
torch.distributed probe (`bench --worker torch`), the Ray launcher (`bench --launcher ray`), the coordinator
protocol and the rank report both speak."""

from coldstart.cli import binary, doctor
from coldstart.fdtable import FdTable, grow_fd_table
from coldstart.results import Run, load
from coldstart.warmup import Prewarm, PrewarmTimes, local_device, prewarm

__all__ = [
    "FdTable",
    "Prewarm",
    "PrewarmTimes",
    "Run",
    "binary",
    "doctor",
    "grow_fd_table",
    "load",
    "local_device",
    "prewarm",
]
