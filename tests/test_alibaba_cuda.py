"""Alibaba GN8/GN7 nodes get a pinned CUDA toolkit subset and NCCL from NVIDIA's signed apt repository before the
nccl-tests build (public Alibaba images carry no CUDA), and a CUDA or NCCL pin the pinned driver cannot run is a
spec error."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from nodekit import plan_of, run_step, sandbox, stubs
from test_alibaba_plan import problems, spec

from provision.ops.nodes import mock_user_data
from provision.planning.bootstrap import parse

FPR = "EB693B3035CD5710E231E123A4B469963BF863CC"
#: apt-get that "installs" what the packages would put on disk (nvcc, cudart, nccl.h), and logs like the stubs.
APT = """#!/bin/bash
printf '%s\\n' "apt-get $*" >>"$STUB_LOG"
for a in "$@"; do
  case $a in
    cuda-nvcc-*) v=${a#cuda-nvcc-}; mkdir -p "$PROVISION_ROOT/usr/local/cuda-${v/-/.}/bin"
                 printf '#!/bin/sh\\n' >"$PROVISION_ROOT/usr/local/cuda-${v/-/.}/bin/nvcc"
                 chmod 0755 "$PROVISION_ROOT/usr/local/cuda-${v/-/.}/bin/nvcc" ;;
    libnccl-dev=*) mkdir -p "$PROVISION_ROOT/usr/include"; : >"$PROVISION_ROOT/usr/include/nccl.h" ;;
  esac
done
"""
#: git clones nothing; make records the nvcc it would run (nccl-tests' Makefile: NVCC = $(CUDA_HOME)/bin/nvcc) and
#: leaves all_reduce_perf where the step wants it.
GIT = '#!/bin/bash\nprintf "%s\\n" "git $*" >>"$STUB_LOG"\nmkdir -p "${@: -1}"\n'
MAKE = """#!/bin/bash
nvcc=none
for a in "$@"; do
  case $a in
    CUDA_HOME=*) bin="$PROVISION_ROOT${a#CUDA_HOME=}/bin/nvcc"; [ -x "$bin" ] && nvcc=$(readlink -f "$bin") ;;
  esac
done
printf '%s\\n' "make $* nvcc=$nvcc" >>"$STUB_LOG"
mkdir -p "$2/build" && printf '#!/bin/sh\\n' >"$2/build/all_reduce_perf" && chmod 0755 "$2/build/all_reduce_perf"
"""


def _env(root: Path) -> dict[str, str]:
    env = {}
    for line in (root / "etc/provision/bootstrap.env").read_text().splitlines():
        if "=" in line and not line.startswith("#"):
            key, _, value = line.partition("=")
            env[key] = value.strip("'")
    return env


def _steps(user_data: str) -> list[str]:
    files = {f["path"]: f["content"] for f in parse(user_data)["write_files"]}
    return [s["name"] for s in json.loads(files["/etc/provision/steps.json"])["steps"]]


def test_the_rendered_bootstrap_installs_the_pinned_cuda_after_the_driver_and_before_nccl_tests(tmp_path: Path) -> None:
    user_data = mock_user_data(plan_of("alibaba-gn8-ci"))
    steps = _steps(user_data)
    assert steps.index("gpu-driver") < steps.index("cuda") < steps.index("nccl-tests")
    env = _env(sandbox(tmp_path, user_data))
    assert env["CUDA_VERSION"] == "12.8" and env["NCCL_VERSION"] == "2.26.2-1+cuda12.8"
    assert env["CUDA_DIR"] == "/usr/local/cuda-12.8"
    assert env["CUDA_REPO_URL"] == "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64"


def _run(tmp: Path, root: Path, step: str, **extra: str) -> dict[str, Any]:
    bin_dir = stubs(tmp)
    for name, text in (("apt-get", APT), ("git", GIT), ("make", MAKE)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    return run_step(tmp, root, step, bin_dir=bin_dir, **extra)


def test_the_cuda_step_adds_nvidias_signed_repo_and_the_build_finds_nvcc(tmp_path: Path) -> None:
    plan = plan_of("alibaba-gn8-ci")
    # The stubbed curl fetches nothing; the source tarball's pin is tested in tests/test_nccl_tests_step.py.
    versions = {k: v for k, v in plan.image.versions.items() if k != "nccl_tests_sha256"}
    plan = plan.model_copy(update={"image": plan.image.model_copy(update={"versions": versions})})
    root = sandbox(tmp_path, mock_user_data(plan))
    cuda = _run(tmp_path, root, "cuda", STUB_OUT_gpg=f"fpr:::::::::{FPR}:")
    assert cuda["rc"] == 0, cuda["err"]
    assert "curl -fsSL" in cuda["log"] and "/3bf863cc.pub" in cuda["log"]
    install = next(line for line in cuda["log"].splitlines() if line.startswith("apt-get") and " install " in line)
    nccl = "2.26.2-1+cuda12.8"
    for pkg in ("cuda-nvcc-12-8", "cuda-cudart-dev-12-8", f"libnccl2={nccl}", f"libnccl-dev={nccl}"):
        assert pkg in install.split()
    sources = (root / "etc/apt/sources.list.d/provision-cuda.list").read_text()
    assert "signed-by=/etc/apt/keyrings/provision-cuda.gpg" in sources and "trusted" not in sources
    assert sources.split()[-2:] == ["https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/", "/"]
    again = _run(tmp_path, root, "cuda", STUB_OUT_gpg=f"fpr:::::::::{FPR}:")  # idempotent: nvcc there, no apt
    assert again["rc"] == 0 and again["log"].count(" install ") == cuda["log"].count(" install ")

    mpirun = root / "usr/bin/mpirun"  # Ubuntu's openmpi-bin, which the step installs with apt
    mpirun.parent.mkdir(parents=True, exist_ok=True)
    mpirun.write_text("#!/bin/sh\n")
    mpirun.chmod(0o755)
    build = _run(tmp_path, root, "nccl-tests")
    assert build["rc"] == 0, build["err"]
    make = next(line for line in build["log"].splitlines() if line.startswith("make "))
    assert "CUDA_HOME=/usr/local/cuda " in make and "NCCL_HOME=/usr" in make
    assert make.endswith(f"nvcc={root}/usr/local/cuda-12.8/bin/nvcc")  # the pinned toolkit's nvcc
    login = subprocess.run(
        ["bash", "-c", f'PATH=/usr/bin:/bin; . {root}/etc/profile.d/provision-cuda.sh; printf %s "$PATH"'],
        capture_output=True,
        text=True,
        check=True,
    )
    assert login.stdout.split(":")[-1] == "/usr/local/cuda/bin"  # people get nvcc on PATH too
    assert os.access(root / "usr/local/lib/provision/bin/all_reduce_perf", os.X_OK)


def test_a_key_with_another_fingerprint_adds_no_repository(tmp_path: Path) -> None:
    root = sandbox(tmp_path, mock_user_data(plan_of("alibaba-gn8-ci")))
    result = _run(tmp_path, root, "cuda", STUB_OUT_gpg="fpr:::::::::0000000000000000000000000000000000000000:")
    assert result["rc"] != 0 and "fingerprint" in result["err"]
    assert not (root / "etc/apt/sources.list.d/provision-cuda.list").exists()
    assert " install " not in result["log"]


def test_a_cuda_pin_newer_than_the_driver_allows_is_a_spec_error() -> None:
    found = problems(spec(image={"versions": {"cuda": "13.0"}}))
    assert "image.versions.driver" in found and "580" in found["image.versions.driver"]


def test_an_nccl_built_for_another_cuda_major_is_a_spec_error() -> None:
    found = problems(spec(image={"versions": {"nccl": "2.28.3-1+cuda13.0"}}))
    assert "image.versions.nccl" in found and "CUDA 13" in found["image.versions.nccl"]
