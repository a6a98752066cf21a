"""The field report's measurement at the PyTorch level: the first all_reduce of a fresh process group, split into the
host side (until async_op returns) and the wait. Run it under torchrun; ISOLATE=1 gives each rank only its own GPU
(torchrun with per-rank CUDA_VISIBLE_DEVICES, as Ray does).

    torchrun --nproc-per-node 2 examples/first_allreduce.py
    ISOLATE=1 torchrun --nproc-per-node 2 examples/first_allreduce.py
    coldstart trace -- torchrun --nproc-per-node 2 examples/first_allreduce.py
"""

import json
import os
import time

local_rank = int(os.environ["LOCAL_RANK"])
isolate = os.environ.get("ISOLATE") == "1"
if isolate:
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    os.environ["CUDA_VISIBLE_DEVICES"] = visible.split(",")[local_rank] if visible else str(local_rank)

t_import = time.perf_counter()
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

t_imported = time.perf_counter()
device = torch.device("cuda", 0 if isolate else local_rank)
torch.cuda.set_device(device)
torch.cuda.synchronize()
t_context = time.perf_counter()
dist.init_process_group("nccl")  # lazy: the communicator is made inside the first collective
t_pg = time.perf_counter()
x = torch.ones(1, device=device)
work = dist.all_reduce(x, async_op=True)
t_enqueued = time.perf_counter()
work.wait()
torch.cuda.synchronize()
t_done = time.perf_counter()
assert x.item() == dist.get_world_size()
print(
    json.dumps(
        {
            "rank": dist.get_rank(),
            "isolate": isolate,
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "import_torch_ms": round((t_imported - t_import) * 1e3, 1),
            "cuda_context_ms": round((t_context - t_imported) * 1e3, 1),
            "init_process_group_ms": round((t_pg - t_context) * 1e3, 1),
            "first_all_reduce_enqueue_ms": round((t_enqueued - t_pg) * 1e3, 1),
            "first_all_reduce_wait_ms": round((t_done - t_enqueued) * 1e3, 1),
        }
    ),
    flush=True,
)
dist.destroy_process_group()
