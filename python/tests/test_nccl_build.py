"""coldstart nccl build's dry run as a user meets it: the NCCL release their PyTorch loads is found in a real install
layout (a site-packages folder with torch and NVIDIA's nvidia/nccl/lib/libnccl.so.2; torch a stand-in package, the
library the CUDA toolkit's real one), and the series shipped with the binary is found (installed beside it when the
suite runs against the wheel)."""

import ctypes
import os

import pytest
from conftest import run

PORTS = ("2.28.9", "2.30.7")


@pytest.fixture
def toolkit_nccl():
    home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    for lib in (os.path.join(home, "lib64", "libnccl.so.2"), os.path.join(home, "lib", "libnccl.so.2")):
        if os.path.exists(lib):
            return lib
    pytest.skip(f"no libnccl.so.2 in {home} (the CUDA toolkit's NCCL) here")


def nccl_version(lib):
    code = ctypes.c_int()
    ctypes.CDLL(lib).ncclGetVersion(ctypes.byref(code))
    v = code.value
    return f"{v // 10000}.{v // 100 % 100}.{v % 100}"


def site_packages(tmp_path, lib):
    site = tmp_path / "site-packages"
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text("raise SystemExit('nccl build must not import torch')\n")
    (site / "nvidia" / "nccl" / "lib").mkdir(parents=True)
    os.symlink(lib, site / "nvidia" / "nccl" / "lib" / "libnccl.so.2")
    return site


def test_the_dry_run_names_the_release_pytorch_loads_and_the_plan(coldstart_bin, tmp_path, toolkit_nccl):
    site = site_packages(tmp_path, toolkit_nccl)
    version = nccl_version(toolkit_nccl)
    cache = tmp_path / "cache"
    cmd = [coldstart_bin, "nccl", "build", "--dry-run", "--arch", "90", "--cache-dir", str(cache)]
    out = run(cmd, env={"PYTHONPATH": str(site)})
    lib = f"{site}/nvidia/nccl/lib/libnccl.so.2"
    if version not in PORTS:
        assert out.returncode == 2, out.stdout + out.stderr
        assert f"PyTorch loads NCCL {version} ({lib}); the series has no port for it" in out.stderr
        return
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"nccl build: NCCL {version}: the release PyTorch loads ({lib}, for " in out.stdout
    url = f"https://github.com/NVIDIA/nccl/archive/refs/tags/v{version}-1.tar.gz"
    assert f"nccl build: dry run: would download {url} (nothing fetched)" in out.stdout
    assert f"into {cache}/{version}+peer-regions (its library: " in out.stdout
    if os.environ.get("COLDSTART_TEST_INSTALLED"):
        assert "installed beside the binary: " in out.stdout and "site-packages" in out.stdout, out.stdout
    assert not (cache / f"{version}+peer-regions").exists()  # a dry run without --src makes no entry


def test_no_pytorch_is_one_line_naming_version(coldstart_bin, tmp_path):
    out = run(
        [coldstart_bin, "nccl", "build", "--dry-run", "--arch", "90", "--cache-dir", str(tmp_path / "c")],
        env={"PYTHONPATH": str(tmp_path)},
    )
    if out.returncode == 0:
        pytest.skip("this python3 has a PyTorch of its own")
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "PyTorch is not installed for" in out.stderr, out.stderr
    assert "give --version" in out.stderr


def test_the_dry_run_of_both_plans_the_stock_library_beside_the_patched_one(coldstart_bin, tmp_path):
    cache = tmp_path / "cache"
    cmd = [coldstart_bin, "nccl", "build", "--dry-run", "--which", "both", "--version", "2.30.7", "--arch", "90"]
    out = run(cmd + ["--cache-dir", str(cache)], env={})
    assert out.returncode == 0, out.stdout + out.stderr
    assert "nccl build: 1 of 2: the patched library\n" in out.stdout
    assert "nccl build: 2 of 2: the stock library\n" in out.stdout
    assert f"into {cache}/2.30.7+stock (its library: {cache}/2.30.7+stock/build/stock/lib/libnccl.so.2)" in out.stdout
    # the tarball is fetched once, into the patched entry, and nothing is made by a dry run
    assert out.stdout.count(f"downloaded to {cache}/2.30.7+peer-regions/v2.30.7-1.tar.gz") == 2, out.stdout
    assert "both are in the cache" not in out.stdout
    assert not (cache / "2.30.7+stock").exists()
