"""The torch probe's process start: the lab's reading at spawn where /proc agrees, /proc's own elsewhere (as
src/util/clock.cc)."""

from coldstart.protocol import process_start


def test_the_labs_reading_where_proc_agrees_and_procs_elsewhere(monkeypatch: object) -> None:
    monkeypatch.delenv("COLDSTART_SPAWN_MONO_NS", raising=False)
    proc, source = process_start()
    assert proc > 0 and source == "proc"
    monkeypatch.setenv("COLDSTART_SPAWN_MONO_NS", str(proc + 3_000_000))  # within a tick: this process's
    assert process_start() == (proc + 3_000_000, "lab")
    for other in (str(proc - 10_000_000_000), "soon"):  # an ancestor's, or not a number
        monkeypatch.setenv("COLDSTART_SPAWN_MONO_NS", other)
        started, source = process_start()
        assert abs(started - proc) < 20_000_000 and source == "proc"  # a tick; the spawn is 10 s away
