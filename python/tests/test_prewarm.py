"""coldstart.prewarm, the fix users call, with a fake torch: the process group (eager, with device_id) and a warm-up
collective on a background thread; wait() joins it and raises its error; an existing group is only warmed."""

import sys
import threading

import pytest
from conftest import FAKE_TORCH


@pytest.fixture
def torch(monkeypatch):
    monkeypatch.syspath_prepend(FAKE_TORCH)
    for name in [m for m in sys.modules if m == "torch" or m.startswith("torch.")]:
        monkeypatch.delitem(sys.modules, name)
    import torch

    yield torch
    torch.distributed.destroy_process_group()
    for name in [m for m in sys.modules if m == "torch" or m.startswith("torch.")]:
        del sys.modules[name]  # the fake must not stand in for torch in later tests


def test_prewarm_initialises_eagerly_and_warms_on_a_background_thread(torch):
    import coldstart

    store = torch.distributed.TCPStore("127.0.0.1", 0, 1, True, wait_for_workers=False)
    main = threading.current_thread().name
    warm = coldstart.prewarm(torch.device("cpu"), backend="gloo", store=store, rank=0, world_size=1)
    times = warm.wait(timeout=30)
    state = torch.distributed._state
    assert state["init_thread"] == "coldstart-prewarm" != main
    assert state["backend"] == "gloo" and state["collectives"] == ["all_reduce"]
    assert 0 < times.init_start_ns <= times.init_end_ns <= times.collective_start_ns <= times.collective_end_ns
    assert warm.done() and times.seconds >= 0


def test_an_existing_process_group_is_only_warmed(torch):
    import coldstart

    store = torch.distributed.TCPStore("127.0.0.1", 0, 1, True, wait_for_workers=False)
    torch.distributed.init_process_group("gloo", store=store, rank=0, world_size=1)  # as Ray Train does
    times = coldstart.prewarm(torch.device("cpu"), backend="gloo").wait(timeout=30)
    assert times.init_start_ns == 0 and times.collective_end_ns > 0
    assert torch.distributed._state["init_thread"] == threading.current_thread().name


def test_the_threads_error_is_raised_by_wait(torch):
    import coldstart

    warm = coldstart.prewarm(torch.device("cpu"), backend="gloo", rank=5, world_size=2)  # rank out of range
    with pytest.raises(AssertionError):
        warm.wait(timeout=30)


def test_local_device_follows_the_launcher(torch, monkeypatch):
    import coldstart

    monkeypatch.setattr(torch.cuda, "_count", 8)
    monkeypatch.setenv("LOCAL_RANK", "3")  # torchrun, Ray Train: every GPU of the node visible
    assert coldstart.local_device(torch).index == 3
    monkeypatch.setattr(torch.cuda, "_count", 1)  # a Ray actor with num_gpus=1 sees only its own
    assert coldstart.local_device(torch).index == 0
    monkeypatch.delenv("LOCAL_RANK")
    monkeypatch.setattr(torch.cuda, "_count", 4)
    monkeypatch.setattr(torch.cuda, "_current", 2)
    assert coldstart.local_device(torch).index == 2


def one_rank(torch, **kw):
    """init_process_group's arguments for a world of one, on gloo."""
    store = torch.distributed.TCPStore("127.0.0.1", 0, 1, True, wait_for_workers=False)
    return {"backend": "gloo", "store": store, "rank": 0, "world_size": 1, **kw}


def test_a_second_call_while_the_first_runs_is_the_same_warm_up(torch, monkeypatch):
    import coldstart

    monkeypatch.setattr(torch.distributed, "INIT_DELAY_S", 0.3)  # the first is still initialising
    first = coldstart.prewarm(torch.device("cpu"), **one_rank(torch))
    second = coldstart.prewarm(torch.device("cpu"), **one_rank(torch))
    assert second is first and not first.done()
    first.wait(timeout=30)
    assert torch.distributed.init_calls == ["coldstart-prewarm"]
    assert torch.distributed._state["collectives"] == ["all_reduce"]


def test_a_call_after_the_warm_up_is_done_is_the_same_handle_and_starts_nothing(torch):
    import coldstart

    first = coldstart.prewarm("cpu", **one_rank(torch))
    times = first.wait(timeout=30)
    again = coldstart.prewarm("cpu", **one_rank(torch))
    assert again is first and again.wait(timeout=30) is times
    assert coldstart.prewarm() is first  # no device: the warm-up's
    assert len(torch.distributed.init_calls) == 1 and torch.distributed._state["collectives"] == ["all_reduce"]


def test_another_device_or_group_while_one_is_warmed_is_a_value_error(torch, monkeypatch):
    import coldstart

    warm = coldstart.prewarm("cpu", **one_rank(torch))
    warm.wait(timeout=30)
    monkeypatch.setattr(torch.cuda, "_count", 2)
    with pytest.raises(ValueError, match=r"already warmed .* on device\('cpu', None\), not device\('cuda', 1\)"):
        coldstart.prewarm(1)
    with pytest.raises(ValueError, match="already warmed .* on another group"):
        coldstart.prewarm("cpu", group=object())
    assert torch.distributed._state["collectives"] == ["all_reduce"]


def test_after_destroy_process_group_or_a_failure_a_call_starts_again(torch):
    import coldstart

    failed = coldstart.prewarm("cpu", backend="gloo", rank=5, world_size=2)  # rank out of range
    with pytest.raises(AssertionError):
        failed.wait(timeout=30)
    first = coldstart.prewarm("cpu", **one_rank(torch))
    assert first is not failed
    first.wait(timeout=30)
    torch.distributed.destroy_process_group()
    second = coldstart.prewarm("cpu", **one_rank(torch))
    assert second is not first and second.wait(timeout=30).init_start_ns > 0
    assert len(torch.distributed.init_calls) == 3  # the failed one, then one per process group


@pytest.mark.parametrize(
    "device, index",
    [("cuda:1", 1), ("cuda", 1), (" cuda:0 ", 0), (1, 1), ("numpy", 1), ("torch.device", 1)],
)
def test_a_device_is_a_torch_device_an_index_or_a_string(torch, monkeypatch, device, index):
    import coldstart

    monkeypatch.setattr(torch.cuda, "_count", 2)
    monkeypatch.setattr(torch.cuda, "_current", 1)  # what 'cuda' means: the calling thread's current device
    if device == "numpy":
        device = pytest.importorskip("numpy").int32(1)
    elif device == "torch.device":
        device = torch.device("cuda", 1)
    warm = coldstart.prewarm(device, **one_rank(torch))
    times = warm.wait(timeout=30)  # the warm-up ran, on that GPU: no AttributeError from a string
    got = torch.distributed._state["device_id"]
    assert (got.type, got.index) == ("cuda", index) and times.collective_end_ns > 0


@pytest.mark.parametrize("device", [1.0, True, b"cuda", [0], object()])
def test_a_device_of_another_type_is_one_type_error(torch, monkeypatch, device):
    import coldstart

    monkeypatch.setattr(torch.cuda, "_count", 2)
    with pytest.raises(TypeError) as e:
        coldstart.prewarm(device, **one_rank(torch))
    message = str(e.value)
    assert message.startswith("prewarm: device must be a torch.device, int or str, not ") and "\n" not in message
    assert "'cuda:1'" in message  # what to give
    assert torch.distributed.init_calls == [] and not torch.distributed.is_initialized()


@pytest.mark.parametrize(
    "device, reason",
    [
        ("gpu", "'gpu' is not a device"),
        ("cuda:x", "'cuda:x' is not a device"),
        ("cuda:-1", "'cuda:-1' is not a device"),
        ("", "'' is not a device"),
        ("cuda:0\ncuda:1", r"'cuda:0\\ncuda:1' is not a device"),
        ("cuda:2", r"'cuda:2' is not a GPU of this process \(it sees GPUs 0 to 1\)"),
        (2, r"2 is not a GPU of this process \(it sees GPUs 0 to 1\)"),
        (-1, r"-1 is not a GPU of this process \(it sees GPUs 0 to 1\)"),
    ],
)
def test_a_device_this_process_cannot_use_is_one_value_error(torch, monkeypatch, device, reason):
    import coldstart

    monkeypatch.setattr(torch.cuda, "_count", 2)
    with pytest.raises(ValueError, match=f"^prewarm: device {reason}; give a torch.device") as e:
        coldstart.prewarm(device, **one_rank(torch))
    assert "\n" not in str(e.value)
    assert torch.distributed.init_calls == []


def test_a_gpu_index_without_gpus_says_so(torch):
    import coldstart

    with pytest.raises(ValueError, match=r"device 'cuda:0' is not a GPU of this process \(it sees no GPU\)"):
        coldstart.prewarm("cuda:0", **one_rank(torch))


def test_a_backend_that_is_not_a_string_is_a_type_error(torch):
    import coldstart

    with pytest.raises(TypeError, match="prewarm: backend must be a str, not NoneType"):
        coldstart.prewarm("cpu", backend=None)
