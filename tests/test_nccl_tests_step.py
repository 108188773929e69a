"""The nccl-tests bootstrap step, run in a sandbox with stubbed system commands: the image's all_reduce_perf (or a
pinned build) ends up at one fixed path with an mpirun that carries Open MPI's --prefix."""

from __future__ import annotations

import os
from pathlib import Path

from nodekit import plan_of, run_step, sandbox

from provision.ops.nodes import mock_user_data

BIN = "usr/local/lib/provision/bin"


def _exe(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\necho real\n")
    path.chmod(0o755)


def test_the_images_nccl_tests_are_linked_with_the_newest_cuda_and_mpirun_gets_its_prefix(tmp_path: Path) -> None:
    root = sandbox(tmp_path, mock_user_data(plan_of("aws-p5-64")))
    _exe(root / "usr/local/cuda-12.9/efa/test-cuda-12.9/all_reduce_perf")
    _exe(root / "usr/local/cuda-13.2/efa/test-cuda-13.2/all_reduce_perf")
    _exe(root / "opt/amazon/openmpi/bin/mpirun")
    first = run_step(tmp_path, root, "nccl-tests")
    assert first["rc"] == 0, first["err"]
    wrapper = (root / BIN / "all_reduce_perf").read_text()
    mpirun = (root / BIN / "mpirun").read_text()
    assert "exec /usr/local/cuda-13.2/efa/test-cuda-13.2/all_reduce_perf" in wrapper
    assert "exec /opt/amazon/openmpi/bin/mpirun --prefix /opt/amazon/openmpi" in mpirun
    assert "export OPAL_PREFIX=/opt/amazon/openmpi" in mpirun
    assert os.access(root / BIN / "mpirun", os.X_OK) and os.access(root / BIN / "all_reduce_perf", os.X_OK)
    again = run_step(tmp_path, root, "nccl-tests")  # idempotent: the same files again
    assert again["rc"] == 0 and (root / BIN / "all_reduce_perf").read_text() == wrapper


def test_an_image_without_its_nccl_tests_fails_the_step_and_says_where_it_looked(tmp_path: Path) -> None:
    root = sandbox(tmp_path, mock_user_data(plan_of("aws-p5-64")))
    result = run_step(tmp_path, root, "nccl-tests")
    assert result["rc"] != 0 and "/usr/local/cuda-*/efa/test-cuda-*/all_reduce_perf" in result["err"]
    assert not (root / BIN / "all_reduce_perf").exists()


def test_a_build_follows_googles_cuda_recipe_and_refuses_without_nvcc(tmp_path: Path) -> None:
    """GCP: no nccl-tests on the image; the step adds NVIDIA's repository with the image's add-nvidia-repositories
    and installs the pinned toolkit (Cluster Toolkit a3ultra-vm.yaml); when nvcc is still missing it says so."""
    root = sandbox(tmp_path, mock_user_data(plan_of("gcp-a3-64")))
    result = run_step(tmp_path, root, "nccl-tests")
    assert "add-nvidia-repositories -y" in result["log"]
    assert "cuda-toolkit-12-8" in result["log"] and "openmpi-bin" in result["log"]
    assert result["rc"] != 0 and "CUDA toolkit" in result["err"]
    assert not (root / BIN / "all_reduce_perf").exists()
