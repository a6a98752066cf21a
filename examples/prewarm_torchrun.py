"""A torchrun job whose start-up is copying a model's weights to the GPU, with and without coldstart.prewarm:

    torchrun --standalone --nproc-per-node 8 examples/prewarm_torchrun.py --weights-gib 32 [--no-prewarm] [--mask]
                                                                          [--pinned] [--chunk-mib 256]

Each rank prints one JSON line: from its process start to its first real all-reduce done (ready_ms), the weights'
copy, the wait for the warm-up, the wait for the slower peer (meet_ms: a barrier on a CPU group, which makes no NCCL
connection) and the first all-reduce after it: what connecting costs, not the wait for a peer still loading. --mask
shows each rank only its own GPU (CUDA_VISIBLE_DEVICES=LOCAL_RANK), as Ray does, before CUDA starts: the case where
NCCL connects through cuMem export and import."""

import argparse
import json
import os
import threading
import time


def process_start_ns() -> int:
    """This process's start on CLOCK_MONOTONIC (from /proc/self/stat)."""
    with open("/proc/self/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    boot_ns = int(fields[19]) * (1_000_000_000 // os.sysconf("SC_CLK_TCK"))
    return boot_ns - (time.clock_gettime_ns(time.CLOCK_BOOTTIME) - time.monotonic_ns())


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--weights-gib", type=float, default=32)
    p.add_argument("--no-prewarm", action="store_true")
    p.add_argument("--mask", action="store_true")
    p.add_argument("--pinned", action="store_true", help="copy from page-locked host memory")
    p.add_argument("--chunk-mib", type=int, default=256, help="host memory copied at a time")
    args = p.parse_args()
    if args.mask:
        os.environ["CUDA_VISIBLE_DEVICES"] = os.environ["LOCAL_RANK"]
    import torch
    import torch.distributed as dist

    import coldstart

    start = process_start_ns()
    device = coldstart.local_device()
    torch.cuda.set_device(device)
    t_context = time.monotonic_ns()
    warm = None
    if args.no_prewarm:
        dist.init_process_group("nccl")  # lazy: the communicator is made inside the first collective
    else:
        warm = coldstart.prewarm(device)  # eager init and a warm-up, on a thread

    # The job's own start-up: the model's weights, copied from host memory to the GPU.
    t_load = time.monotonic_ns()
    size = int(args.weights_gib * (1 << 30))
    if size > 0:
        chunk = min(size, args.chunk_mib << 20)
        host = torch.ones(chunk, dtype=torch.uint8)
        if args.pinned:
            host = host.pin_memory()
        weights = torch.empty(size, dtype=torch.uint8, device=device)
        for off in range(0, size, chunk):
            n = min(chunk, size - off)
            weights[off : off + n].copy_(host[:n])
        torch.cuda.current_stream().synchronize()
    t_loaded = time.monotonic_ns()
    times = warm.wait() if warm else None
    t_joined = time.monotonic_ns()
    # Every rank here before the first all-reduce is timed, through gloo: a barrier on the NCCL group would make its
    # connections itself.
    meet = dist.new_group(backend="gloo")
    dist.barrier(group=meet)
    t_met = time.monotonic_ns()

    x = torch.ones(1, device=device)
    dist.all_reduce(x)
    torch.cuda.synchronize()
    t_ready = time.monotonic_ns()
    out = {
        "rank": dist.get_rank(),
        "prewarm": warm is not None,
        "masked": args.mask,
        "pinned": args.pinned,
        "chunk_mib": args.chunk_mib,
        "ready_ms": (t_ready - start) / 1e6,
        "to_context_ms": (t_context - start) / 1e6,
        "load_ms": (t_loaded - t_load) / 1e6,
        "join_ms": (t_joined - t_loaded) / 1e6,
        "meet_ms": (t_met - t_joined) / 1e6,
        "first_all_reduce_ms": (t_ready - t_met) / 1e6,
    }
    out["main_thread_id"] = threading.get_native_id()
    if times:
        out["prewarm_thread_id"] = times.thread_id
        out["prewarm_init_ms"] = (times.init_end_ns - times.init_start_ns) / 1e6
        out["prewarm_collective_ms"] = (times.collective_end_ns - times.collective_start_ns) / 1e6
    os.write(1, (json.dumps(out) + "\n").encode())  # one write: the ranks share torchrun's stdout
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
