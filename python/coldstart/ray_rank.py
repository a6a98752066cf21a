"""One rank as a Ray actor, for `coldstart bench --launcher ray`. The lab starts this as the rank's process; it
connects to the run's Ray instance, creates one actor with `num_gpus=1` (so that Ray, not coldstart, chooses the GPU
and sets the actor's CUDA_VISIBLE_DEVICES, as in the field report), and the actor runs the rank's worker command with
the actor's environment plus the configuration's NCCL_*/COLDSTART_* variables. What Ray gave the actor goes to the
worker in COLDSTART_LAUNCHER_INFO and so into the results. Exit status: the worker's.

usage: python -m coldstart.ray_rank --address ADDR [--noset] [--output FILE] -- WORKER_COMMAND...
--output: the worker's stdout and stderr appended to FILE (the rank's output, where the lab reads NCCL's log) rather
than sent to the actor's, which Ray forwards with a prefix of its own.
--noset: the un-masked alternative, RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES=1 for the actor: it sees every GPU
and the worker selects the one Ray assigned (its --device becomes ray.get_gpu_ids()[0])."""

from __future__ import annotations

import argparse
import json
import os
import sys

FORWARDED = (
    "NCCL_",
    "COLDSTART_",
    "CUDA_INJECTION64_PATH",
    "CUDA_MODULE_LOADING",
    "TORCH_NCCL",
    "PYTHONPATH",
    "PYTHONUNBUFFERED",
)


class RankActor:
    """The rank's actor: holds its GPU for its lifetime, like a training worker."""

    def run(self, argv: list[str], forwarded: dict[str, str], noset: bool, output: str | None = None) -> int:
        return run_rank(argv, forwarded, noset, output)


def run_rank(argv: list[str], forwarded: dict[str, str], noset: bool, output: str | None = None) -> int:
    """In the actor: run the worker with what Ray set up here."""
    import contextlib
    import ctypes
    import signal
    import socket
    import subprocess

    import ray

    gpu_ids = [str(g) for g in ray.get_gpu_ids()]
    cvd = os.environ.get("CUDA_VISIBLE_DEVICES")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NCCL_", "COLDSTART_"))}
    env.update(forwarded)
    env["COLDSTART_LAUNCHER_INFO"] = json.dumps(
        {
            "name": "ray",
            "ray_version": ray.__version__,
            "gpu_ids": ",".join(gpu_ids),
            "cuda_visible_devices_set_by_ray": "(unset)" if cvd is None else cvd,
            "noset": "1" if noset else "0",
            "node_id": ray.get_runtime_context().get_node_id(),
            "actor_host": socket.gethostname(),
        }
    )
    argv = list(argv)
    if noset and "--device" in argv and gpu_ids:
        argv[argv.index("--device") + 1] = gpu_ids[0]

    def die_with_actor() -> None:
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG

    # --output: the worker's stdout and stderr appended to the rank's file; else the actor's, inherited (None)
    with open(output, "ab") if output is not None else contextlib.nullcontext() as out:
        return subprocess.run(argv, env=env, stdout=out, stderr=out, preexec_fn=die_with_actor).returncode


def main() -> int:
    p = argparse.ArgumentParser(prog="coldstart.ray_rank")
    p.add_argument("--address", required=True)
    p.add_argument("--noset", action="store_true")
    p.add_argument("--output", metavar="FILE")
    p.add_argument("command", nargs=argparse.REMAINDER)
    args = p.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        p.error("give the worker command after --")
    try:
        import ray
    except ImportError as e:
        print(f"coldstart ray rank: Ray is not installed for {sys.executable} ({e})", file=sys.stderr)
        return 3
    forwarded = {k: v for k, v in os.environ.items() if k.startswith(FORWARDED)}
    ray.init(address=args.address, log_to_driver=True, configure_logging=False)
    options = {"num_gpus": 1, "num_cpus": 0}
    if args.noset:
        options["runtime_env"] = {"env_vars": {"RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES": "1"}}
    actor = ray.remote(RankActor).options(**options).remote()
    return ray.get(actor.run.remote(command, forwarded, args.noset, args.output))


if __name__ == "__main__":
    sys.exit(main())
