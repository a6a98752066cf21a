"""A stand-in for torch where the real one is not installed: enough of torch and torch.distributed for the probe's
--dry-run path (gloo, CPU). Collectives complete at once; init_process_group checks its arguments."""

__version__ = "0.0-fake"
float32 = "float32"


class device:
    def __init__(self, kind, index=None):
        self.type, self.index = kind, index

    def __repr__(self):
        return f"device({self.type!r}, {self.index})"


class Tensor:
    def __init__(self, n, dev):
        self.n, self.device = n, dev


def ones(n, device=None, dtype=None):
    return Tensor(n, device)


def empty(n, device=None, dtype=None):
    return Tensor(n, device)


from torch import cuda, distributed  # noqa: E402,F401
