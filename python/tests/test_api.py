"""The Python API on committed results: coldstart.load (schema /2 directly, /1 through the binary), rows for pandas,
the HTML report inline, coldstart.doctor(), and `python -m coldstart`."""

import os
import subprocess
import sys

import pytest
from conftest import HERE

import coldstart

RESULTS = os.path.join(HERE, "..", "..", "docs", "results")


@pytest.fixture(autouse=True)
def the_binary_under_test(coldstart_bin, monkeypatch):
    monkeypatch.setenv("COLDSTART_BIN", coldstart_bin)


def test_load_reads_schema_2_into_records():
    run = coldstart.load(os.path.join(RESULTS, "2026-11-30-h200x2", "default.json"))
    assert len(run.configs) == 6 and len(run.trials) == 30
    trial = run.trials[0]
    assert trial.status == "ok" and trial.ready_ms > 0
    assert trial.ready_ms == max(r.ready_ms for r in trial.ranks)  # a trial's cold start: its slowest rank's
    rows = run.trial_rows()
    assert set(rows[0]) == {"trial", "config", "status", "ready_ms", "message"}
    phases = run.phase_rows()
    assert {"cuda_context", "comm_init", "first_enqueue"} <= {p["phase"] for p in phases}
    assert "coldstart run" in repr(run)


def test_load_upgrades_schema_1_through_the_binary():
    run = coldstart.load(os.path.join(RESULTS, "2026-11-29-h200x2", "default.json"))
    assert run.trials and all(t.ready_ms is not None for t in run.trials if t.status == "ok")
    assert run.configs[0].key  # /2's stable configuration key


def test_a_file_load_cannot_read_is_a_value_error_with_the_binarys_reason(tmp_path):
    (tmp_path / "cut.json").write_text('{"schema": "coldstart.bench/2", "trials": [')
    (tmp_path / "list.json").write_text("[1, 2]")
    doctor = os.path.join(RESULTS, "2026-11-29-h200x2", "doctor", "doctor.json")
    cases = {
        str(tmp_path / "missing.json"): "missing.json",
        str(tmp_path): "a folder; give",
        str(tmp_path / "cut.json"): "not valid JSON",
        str(tmp_path / "list.json"): "not a coldstart bench result",
        doctor: "from coldstart doctor --json",
    }
    for path, reason in cases.items():
        with pytest.raises(ValueError) as e:
            coldstart.load(path)
        assert reason in str(e.value) and "\n" not in str(e.value), (path, str(e.value))


def test_a_loaded_run_shows_its_report_in_a_notebook():
    html = coldstart.load(os.path.join(RESULTS, "2026-11-30-h200x2", "fixes-nccl-cpu.json"))._repr_html_()
    assert "<h2>Verdict</h2>" in html and "Best fix measured" in html


def test_to_pandas_without_pandas_being_a_dependency():
    pandas = pytest.importorskip("pandas")
    frame = coldstart.load(os.path.join(RESULTS, "2026-11-30-h200x2", "default.json")).to_pandas("trials")
    assert isinstance(frame, pandas.DataFrame) and len(frame) == 30
    with pytest.raises(ValueError, match="use 'phases' or 'trials'"):
        coldstart.load(os.path.join(RESULTS, "2026-11-30-h200x2", "default.json")).to_pandas("ranks")


def test_doctor_returns_the_findings():
    report = coldstart.doctor()
    assert "facts" in report and isinstance(report["findings"], list)


def test_python_dash_m_coldstart_is_the_binary():
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(coldstart.__file__)))
    env = {**os.environ, "PYTHONPATH": package_parent}
    p = subprocess.run([sys.executable, "-m", "coldstart", "--version"], capture_output=True, text=True, env=env)
    assert p.returncode == 0 and p.stdout.strip(), p.stderr


@pytest.mark.skipif(not os.environ.get("COLDSTART_TEST_INSTALLED"), reason="runs against an installed wheel")
def test_the_package_under_test_is_the_installed_one(coldstart_bin):
    package = os.path.dirname(os.path.abspath(coldstart.__file__))
    assert not package.startswith(os.path.abspath(os.path.join(HERE, "..", ".."))), package
    assert coldstart_bin == os.path.join(package, "_bin", "coldstart")
    assert os.path.exists(os.path.join(package, "_bin", "libcoldstart_cupti.so"))


def test_no_public_name_hides_a_module_of_the_package():
    """`import coldstart.X as m` must give the module X, not a function of the same name the package exports."""
    import importlib
    import pkgutil

    for info in pkgutil.iter_modules(coldstart.__path__):
        module = importlib.import_module(f"coldstart.{info.name}")
        assert getattr(coldstart, info.name, module) is module, f"coldstart.{info.name} is not the module"
