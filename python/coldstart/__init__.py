"""coldstart: NCCL's cold start, measured under every launcher and hidden behind the job's own start-up.

coldstart.prewarm() is the fix users call (torchrun, Ray actors, Ray Train); the rest of the package is what the
`coldstart` binary runs: the torch.distributed probe (`bench --worker torch`), the Ray launcher (`bench --launcher
ray`), the coordinator protocol and the rank report both speak."""

from coldstart.prewarm import Prewarm, PrewarmTimes, local_device, prewarm

__all__ = ["Prewarm", "PrewarmTimes", "local_device", "prewarm"]
