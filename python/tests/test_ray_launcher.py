"""bench --launcher ray with a real Ray on the CPU: GPUs are declared (num_gpus), so Ray hands out GPU ids and sets
each actor's CUDA_VISIBLE_DEVICES as it would on a GPU node; the ranks run `coldstart worker --dry-run`."""

import json
import os

import pytest
from conftest import run

ray = pytest.importorskip("ray", reason="Ray is installed by scripts/setup.sh (python/requirements-test.txt)")


def test_each_actor_gets_one_gpu_and_the_lab_records_it(coldstart, out_dir):
    p = run(
        [
            coldstart,
            "bench",
            "--launcher",
            "ray",
            "--dry-run",
            "--gpus",
            "2",
            "--trials",
            "1",
            "--env",
            "NCCL_CUMEM_ENABLE=0",
            "--out",
            out_dir,
        ]
    )
    assert p.returncode == 0, p.stdout + p.stderr
    r = json.load(open(os.path.join(out_dir, "results.json")))
    assert r["spec"]["launcher"] == "ray"
    assert r["context"]["launcher"].startswith("ray ")
    by_mode = {}
    for t in r["trials"]:
        assert t["status"] == "ok", t
        by_mode[r["configs"][t["config_id"]]["mode"]] = t
    assert set(by_mode) == {"ray", "ray-noset"}

    masked = by_mode["ray"]["ranks"]
    ids = [rk["launcher"]["gpu_ids"] for rk in masked]
    assert sorted(ids) == ["0", "1"], ids  # one GPU each, different ones
    for rk in masked:
        assert rk["launcher"]["name"] == "ray"
        assert rk["launcher"]["noset"] == "0"
        # Ray set the actor's visibility to its GPU; the worker saw exactly that and selected device 0.
        assert rk["launcher"]["cuda_visible_devices_set_by_ray"] == rk["launcher"]["gpu_ids"]
        assert rk["cuda_visible_devices"] == rk["launcher"]["gpu_ids"]
        assert rk["device_index"] == 0
        assert rk["env"].get("NCCL_CUMEM_ENABLE") == "0"  # the configuration reached the worker in the actor

    unmasked = by_mode["ray-noset"]["ranks"]
    assert sorted(rk["launcher"]["gpu_ids"] for rk in unmasked) == ["0", "1"]
    for rk in unmasked:
        assert rk["launcher"]["noset"] == "1"
        assert rk["cuda_visible_devices"] == ""  # Ray left every GPU visible
        assert str(rk["device_index"]) == rk["launcher"]["gpu_ids"]  # and the worker selected its own


def test_without_ray_the_launcher_says_so_in_one_line(coldstart, out_dir, tmp_path):
    hide = tmp_path / "no_ray" / "ray"
    hide.mkdir(parents=True)
    (hide / "__init__.py").write_text("raise ImportError(\"No module named 'ray'\")\n")
    p = run(
        [coldstart, "bench", "--launcher", "ray", "--dry-run", "--gpus", "2", "--out", out_dir],
        env={"PYTHONPATH": str(tmp_path / "no_ray")},
    )
    assert p.returncode == 2, p.stdout + p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.strip() and not ln.startswith("starting a local Ray")]
    assert len(lines) == 1, p.stderr
    assert "Ray is not installed" in lines[0] and "pip install" in lines[0]


def test_ray_modes_need_the_ray_launcher(coldstart, out_dir):
    p = run([coldstart, "bench", "--dry-run", "--modes", "ray", "--out", out_dir])
    assert p.returncode == 2
    assert "--launcher ray" in p.stderr


def test_doctor_shows_what_ray_gives_each_actor(coldstart):
    p = run([coldstart, "doctor", "--ranks", "2", "--launcher", "ray", "--json"])
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout)
    ranks = report["ranks"]
    assert len(ranks) == 2
    for rk in ranks:
        assert rk["launcher"].startswith("Ray: GPU id ")
        assert rk["visible_nvml"] == [rk["own_nvml"]]  # Ray masked it to its own GPU
    assert any(f["id"] in ("masked-cumem", "masked") for f in report["findings"])
    p = run([coldstart, "doctor", "--ranks", "2", "--launcher", "ray", "--mode", "ray-noset", "--json"])
    assert p.returncode == 0, p.stderr
    for rk in json.loads(p.stdout)["ranks"]:
        assert "left unset" in rk["launcher"]
        assert sorted(rk["visible_nvml"]) == [0, 1]


def test_the_actor_appends_its_workers_output_to_the_ranks(tmp_path, monkeypatch):
    """--output: the worker's stdout and stderr go, appended, to the rank's output file (where the lab reads NCCL's
    log), not to the actor's, which Ray would forward to the driver with a prefix of its own."""
    import coldstart
    from coldstart.ray_rank import RankActor

    # Ray's workers import the actor's class: the package under test, wherever this suite found it
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(coldstart.__file__)))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")])))
    log = tmp_path / "rank-0.log"
    log.write_text("the driver's line\n")
    ray.init(num_cpus=1, num_gpus=0, include_dashboard=False, log_to_driver=False)
    try:
        actor = ray.remote(RankActor).remote()
        argv = ["/bin/sh", "-c", "echo from the worker; echo to stderr >&2; exit 3"]
        assert ray.get(actor.run.remote(argv, {}, False, str(log))) == 3
    finally:
        ray.shutdown()
    assert log.read_text().splitlines() == ["the driver's line", "from the worker", "to stderr"]
