"""bench --worker torch --nccl-lib: the probe loads the named NCCL before PyTorch loads its own and refuses to run
(and so to label results with a library that did not run) when its NCCL calls resolve to another library."""

import os

import pytest

from coldstart.torch_worker import NcclLibraryError, check_torch_nccl, nccl_version_code, preload_nccl


@pytest.fixture
def fake_nccl(coldstart_bin):
    """The build's stand-in library that answers ncclGetVersion with 2.18.5 (tests/fake_nccl)."""
    path = os.path.join(os.path.dirname(coldstart_bin), "libfake_old_nccl.so")
    if not os.path.exists(path):
        pytest.skip("no build folder beside the binary (an installed package): the fake NCCL is a build product")
    return path


def test_version_codes_read_as_nccl_prints_them():
    assert nccl_version_code(23007) == "2.30.7"
    assert nccl_version_code(22809) == "2.28.9"
    assert nccl_version_code(2708) == "2.7.8"


def test_the_named_library_is_loaded_and_its_version_read(fake_nccl):
    assert preload_nccl(fake_nccl) == "2.18.5"


def test_a_missing_or_foreign_library_is_named(tmp_path):
    missing = str(tmp_path / "libnccl.so.2")
    with pytest.raises(NcclLibraryError, match="--nccl-lib " + missing):
        preload_nccl(missing)
    with pytest.raises(NcclLibraryError, match="not an NCCL library"):
        preload_nccl("libm.so.6")


def test_pytorch_resolving_nccl_elsewhere_is_refused(fake_nccl, tmp_path):
    # The fake library is preloaded with a global scope: the process's calls resolve to it, as PyTorch's would.
    preload_nccl(fake_nccl)
    assert check_torch_nccl(fake_nccl) == "2.18.5"
    other = str(tmp_path / "libnccl.so.2")
    with pytest.raises(NcclLibraryError, match=r"resolve to .*libfake_old_nccl\.so \(NCCL 2\.18\.5\)"):
        check_torch_nccl(other)
