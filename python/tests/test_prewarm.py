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
