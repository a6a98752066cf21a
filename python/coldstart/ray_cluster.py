"""A local Ray instance for `coldstart bench --launcher ray`, owned by this process: it starts Ray with the GPUs the
run uses (declared with --num-gpus, so that a machine without GPUs can stand in for tests), prints
`address HOST:PORT` on stdout, and shuts Ray down when its stdin closes (the lab closes it when the run ends, or dies).
Without Ray it prints `error ...` with the install command and exits 3."""

import argparse
import sys


def main() -> int:
    p = argparse.ArgumentParser(prog="coldstart.ray_cluster")
    p.add_argument("--num-gpus", type=int, required=True)
    p.add_argument("--num-cpus", type=int, default=0)
    args = p.parse_args()
    try:
        import ray
    except ImportError as e:
        print(
            f"error Ray is not installed for {sys.executable} ({e}); install it with: "
            f"{sys.executable} -m pip install 'ray[default]'",
            flush=True,
        )
        return 3
    ray.init(
        num_gpus=args.num_gpus,
        num_cpus=args.num_cpus or max(4, args.num_gpus + 2),
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
    )
    print(f"address {ray.get_runtime_context().gcs_address}", flush=True)
    print(f"ray {ray.__version__}", flush=True)
    sys.stdin.read()  # until the lab closes it
    ray.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
