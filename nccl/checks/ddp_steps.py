"""A few DistributedDataParallel training steps with a given NCCL library loaded under PyTorch (as coldstart's torch
probe loads --nccl-lib), every rank seeing only its GPU: the parameters must agree across ranks after every step and
match a single-process reference computed from the same batches.
    python3 nccl/checks/ddp_steps.py LIBNCCL [RANKS] [GPUS]
Ranks go on GPUs round-robin; several per GPU need NCCL >= 2.30, asked with NCCL_MULTI_RANK_GPU_ENABLE=1.
Prints one line per rank and "N passed, M failed"; exits non-zero on a mismatch."""

import os
import subprocess
import sys
from typing import Any

STEPS, WIDTH, BATCH = 5, 256, 32


def batches(rank: int, torch: Any) -> list[Any]:
    g = torch.Generator().manual_seed(1000 + rank)
    return [(torch.randn(BATCH, WIDTH, generator=g), torch.randn(BATCH, WIDTH, generator=g)) for _ in range(STEPS)]


def model(torch: Any) -> Any:
    torch.manual_seed(7)
    return torch.nn.Sequential(torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU(), torch.nn.Linear(WIDTH, WIDTH))


def rank_main(lib: str, rank: int, world: int, port: str) -> int:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
    from coldstart.torch_worker import check_torch_nccl, preload_nccl

    loaded = preload_nccl(lib)
    import torch
    import torch.distributed as dist

    runs = check_torch_nccl(lib)
    assert runs == loaded
    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world, device_id=dev)
    net = torch.nn.parallel.DistributedDataParallel(model(torch).to(dev), device_ids=[0])
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    # Reference: the same steps in this process, gradients averaged over every rank's batch by hand.
    ref = model(torch).to(dev)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    every = [batches(r, torch) for r in range(world)]
    worst = 0.0
    for step in range(STEPS):
        x, y = (t.to(dev) for t in every[rank][step])
        opt.zero_grad()
        torch.nn.functional.mse_loss(net(x), y).backward()
        opt.step()
        ref_opt.zero_grad()
        for r in range(world):
            xr, yr = (t.to(dev) for t in every[r][step])
            (torch.nn.functional.mse_loss(ref(xr), yr) / world).backward()
        ref_opt.step()
        for p, q in zip(net.module.parameters(), ref.parameters()):
            worst = max(worst, (p - q).abs().max().item())
            gathered = [torch.empty_like(p) for _ in range(world)]
            dist.all_gather(gathered, p.detach())
            if any(not torch.equal(g, gathered[0]) for g in gathered):
                print(f"rank {rank}: FAIL step {step}: parameters differ between ranks", flush=True)
                return 1
    dist.destroy_process_group()
    ok = worst < 1e-4
    verdict = "PASS" if ok else "FAIL"
    print(f"rank {rank}: {verdict} {STEPS} DDP steps on NCCL {runs}, max |DDP - reference| {worst:.2e}", flush=True)
    return 0 if ok else 1


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--rank":
        _, _, rank, world, port, lib = sys.argv
        return rank_main(lib, int(rank), int(world), port)
    lib = sys.argv[1]
    world = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    gpus = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    env = dict(os.environ, NCCL_NVLS_ENABLE="0")
    if world > gpus:
        env["NCCL_MULTI_RANK_GPU_ENABLE"] = "1"
    port = str(29500 + os.getpid() % 1000)
    procs = []
    for r in range(world):
        e = dict(env, CUDA_VISIBLE_DEVICES=str(r % gpus))
        procs.append(subprocess.Popen([sys.executable, __file__, "--rank", str(r), str(world), port, lib], env=e))
    codes = [p.wait(timeout=300) for p in procs]
    passed = sum(c == 0 for c in codes)
    print(f"{passed} passed, {world - passed} failed")
    return 0 if passed == world else 1


if __name__ == "__main__":
    sys.exit(main())
