"""What a rank says about itself when it finishes: the same fields, names, types and units as the C++ worker's report
(src/model/result.h, RankReport). Both are checked against tests/data/golden/rank_report.json."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Steady:
    """Steady-state bandwidth of one collective at a size (nccl-tests' conventions)."""

    bytes: int
    iters: int
    time_us: float
    algbw_gbps: float
    busbw_gbps: float


@dataclass
class Memory:
    """GPU memory in use on the rank's device (total - free), in bytes, -1 where not measured."""

    total_bytes: int = -1
    used_before_init_bytes: int = -1
    used_after_init_bytes: int = -1
    used_after_first_bytes: int = -1
    after_init_at: str = ""  # the phase after which used_after_init_bytes was measured


@dataclass
class PhaseSpan:
    """A phase on the rank's CLOCK_MONOTONIC."""

    name: str
    start_ns: int
    end_ns: int


@dataclass
class RankReport:
    rank: int
    pid: int
    host: str
    worker: str  # "nccl" or "torch"
    cuda_visible_devices: str = ""
    env: dict[str, str] = field(default_factory=dict)
    device_index: int = 0
    visible_device_count: int = -1
    bus_id: str = ""
    uuid: str = ""
    gpu_name: str = ""
    nccl_path: str = ""
    nccl_version: str = ""
    uid_hash: str = ""
    steady: Steady | None = None
    mem: Memory = field(default_factory=Memory)
    overhead_ms: float = 0.0
    start_source: str = ""  # where process_start came from: "lab" or "proc" (protocol.process_start)
    launcher: dict[str, str] = field(default_factory=dict)
    torch_version: str = ""
    torch_init: str = ""
    dry_run: bool = False
    # --worker torch: the rendezvous store's calls on the rank's main thread, per phase they fell in:
    # {"init_process_group": {"count": 4, "ms": 2.5}}
    store_calls: dict[str, dict[str, float]] = field(default_factory=dict)
    phases: list[PhaseSpan] = field(default_factory=list)
    mono_anchor_ns: int = 0
    real_anchor_ns: int = 0

    def to_json(self) -> dict[str, Any]:
        """The report as JSON, leaving out what was not measured, as the C++ worker does."""
        out = dataclasses.asdict(self)
        out["overhead_ms"] = float(self.overhead_ms)
        for optional in ("steady", "start_source", "launcher", "torch_version", "torch_init", "store_calls"):
            if not out[optional]:
                del out[optional]
        if self.steady:
            for k in ("time_us", "algbw_gbps", "busbw_gbps"):
                out["steady"][k] = float(out["steady"][k])
        return out


def bus_id(domain: int, bus: int, device: int, function: int = 0) -> str:
    """A PCI bus id in coldstart's one form, as the C++ worker writes it: 0000:00:06.0."""
    return f"{domain:04x}:{bus:02x}:{device:02x}.{function:x}"
