"""A torchrun job's first collective, and which NCCL it ran on: the check that a library named by LD_PRELOAD (the
line `coldstart nccl env` prints) is the one PyTorch's NCCL calls reach.
    LD_PRELOAD=LIBNCCL torchrun --nproc-per-node N nccl/checks/torchrun_first_collective.py
Every rank takes GPU LOCAL_RANK mod the GPUs it sees (several ranks on one GPU need NCCL >= 2.30 and
NCCL_MULTI_RANK_GPU_ENABLE=1), times init and its first all_reduce, checks the sum, and prints one line: the NCCL
version PyTorch reports, the libnccl files mapped into the process, and whether the result was right. PyTorch's
number is not proof of which library ran: under LD_PRELOAD it still says its own (2.28.9 with PyTorch 2.11, its own
file mapped beside the preloaded one, whose symbols win); NCCL's log (NCCL_DEBUG=INFO: "NCCL version ...", and the
patched library's "P2P peer regions enabled") is. Exits non-zero on a wrong result."""

import os
import time


def mapped_nccl() -> str:
    """The libnccl file(s) mapped into this process, from /proc/self/maps."""
    paths = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            parts = line.split()
            if len(parts) >= 6 and "libnccl" in os.path.basename(parts[5]):
                paths.add(parts[5])
    return ",".join(sorted(paths)) or "none"


def main() -> int:
    import torch
    import torch.distributed as dist

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count())
    torch.cuda.set_device(device)
    t0 = time.perf_counter()
    dist.init_process_group("nccl", device_id=device)
    t1 = time.perf_counter()
    x = torch.full((1 << 20,), float(rank + 1), device=device)
    dist.all_reduce(x)
    torch.cuda.synchronize(device)
    t2 = time.perf_counter()
    right = bool(torch.all(x == world * (world + 1) / 2).item())
    version = ".".join(str(v) for v in torch.cuda.nccl.version())
    print(
        f"rank {rank}/{world}: torch says nccl {version}; mapped {mapped_nccl()} init {1e3 * (t1 - t0):.1f} ms "
        f"first all_reduce {1e3 * (t2 - t1):.1f} ms {'right' if right else 'WRONG'}",
        flush=True,
    )
    dist.destroy_process_group()
    return 0 if right else 1


if __name__ == "__main__":
    raise SystemExit(main())
