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


def _alibaba_build(tmp_path: Path, url: str = "", sha256: str = "") -> Path:
    """A sandboxed alibaba-gn8-ci node whose image builds nccl-tests, with nvcc and NCCL's headers in place.

    ``url`` goes through the spec (image.versions.nccl_tests_url); ``sha256`` replaces the image entry's pin (a
    spec refuses 64 hex digits as possible key material), so a test tarball can match it.
    """
    from nodekit import FIXED_NOW, stack_spec

    from provision.clouds.base import get_adapter
    from provision.spec import load_spec

    data = stack_spec("alibaba-gn8-ci").model_dump(mode="json", exclude_none=True)
    if url:
        image = data.get("image", {})
        data["image"] = {**image, "versions": {**image.get("versions", {}), "nccl_tests_url": url}}
    spec = load_spec(data)
    plan = get_adapter(spec.cloud).plan(spec, now=FIXED_NOW, owner="test")
    if sha256:
        versions = {**plan.image.versions, "nccl_tests_sha256": sha256}
        plan = plan.model_copy(update={"image": plan.image.model_copy(update={"versions": versions})})
    root = sandbox(tmp_path, mock_user_data(plan))
    _exe(root / "usr/local/cuda/bin/nvcc")
    (root / "usr/include").mkdir(parents=True, exist_ok=True)
    (root / "usr/include/nccl.h").write_text("/* nccl */\n")
    _exe(root / "usr/bin/mpirun")  # Ubuntu's openmpi-bin
    return root


def _source_tarball(tmp_path: Path, version: str) -> tuple[Path, str]:
    import hashlib
    import io
    import tarfile

    path = tmp_path / f"nccl-tests-{version}.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        body = b"all:\n\ttrue\n"
        info = tarfile.TarInfo(f"nccl-tests-{version}/Makefile")
        info.size = len(body)
        tar.addfile(info, io.BytesIO(body))
    return path, hashlib.sha256(path.read_bytes()).hexdigest()


def _fetching_stubs(tmp_path: Path, served: dict[str, Path]) -> Path:
    """The node stubs, with a curl that serves ``served`` (URL -> file) and fails every other URL (exit 7)."""
    from nodekit import stubs

    bin_dir = stubs(tmp_path)
    table = "\n".join(f'  {url!r}) cp {str(path)!r} "$out"; exit 0 ;;' for url, path in served.items())
    (bin_dir / "curl").write_text(
        '#!/bin/bash\nprintf \'curl %s\\n\' "$*" >>"$STUB_LOG"\nout=\n'
        'while [ $# -gt 1 ]; do [ "$1" = -o ] && out=$2; shift; done\n'
        f'case "$1" in\n{table}\n  *) exit 7 ;;\nesac\n'
    )
    (bin_dir / "make").write_text('#!/bin/bash\nprintf \'make %s\\n\' "$*" >>"$STUB_LOG"\n')
    (bin_dir / "make").chmod(0o755)
    return bin_dir


def test_the_source_comes_from_the_in_region_copy_first_checked_against_its_pin(tmp_path: Path) -> None:
    """Alibaba: no git clone from github.com; the spec's in-region copy is fetched first and checked."""
    tarball, digest = _source_tarball(tmp_path, "2.17.6")
    mirror = "https://bucket.oss-cn-hangzhou-internal.aliyuncs.com/nccl-tests-2.17.6.tar.gz"
    root = _alibaba_build(tmp_path, url=mirror, sha256=digest)
    result = run_step(tmp_path, root, "nccl-tests", _fetching_stubs(tmp_path, {mirror: tarball}))
    assert result["rc"] == 0, result["err"]
    assert "git " not in result["log"] and "github.com" not in result["log"]  # never asked GitHub
    assert (
        f"curl -fsSL --connect-timeout 20 --max-time 600 -o {root}/var/tmp/provision-nccl-tests.tar.gz {mirror}"
        in (result["log"])
    )
    assert (
        f"tar -xzf {root}/var/tmp/provision-nccl-tests.tar.gz -C {root}/opt/provision/nccl-tests-2.17.6 "
        in (result["log"])
    )
    assert "make -C" in result["log"] and "MPI=1" in result["log"]
    assert "nccl-tests-2.17.6/build/all_reduce_perf" in (root / BIN / "all_reduce_perf").read_text()


def test_a_copy_with_another_digest_is_refused_and_the_next_source_used(tmp_path: Path) -> None:
    good, digest = _source_tarball(tmp_path, "2.17.6")
    bad = tmp_path / "tampered.tar.gz"
    bad.write_bytes(good.read_bytes() + b"\0")
    mirror = "https://bucket.oss-cn-hangzhou-internal.aliyuncs.com/nccl-tests.tar.gz"
    archive = "https://github.com/NVIDIA/nccl-tests/archive/v2.17.6.tar.gz"
    root = _alibaba_build(tmp_path, url=mirror, sha256=digest)
    result = run_step(tmp_path, root, "nccl-tests", _fetching_stubs(tmp_path, {mirror: bad, archive: good}))
    assert result["rc"] == 0, result["err"]
    assert f"checksum mismatch for {mirror}" in result["err"]
    assert result["log"].index(mirror) < result["log"].index(archive)


def test_no_reachable_source_fails_the_step_and_names_the_fix(tmp_path: Path) -> None:
    """cn-hangzhou without a copy: GitHub does not answer, the step fails and says which setting fixes it."""
    root = _alibaba_build(tmp_path)
    result = run_step(tmp_path, root, "nccl-tests", _fetching_stubs(tmp_path, {}))
    assert result["rc"] != 0
    assert "image.versions.nccl_tests_url" in result["err"]
    assert not (root / BIN / "all_reduce_perf").exists()


def test_the_plan_of_a_mainland_china_cluster_names_the_in_region_copy_fix() -> None:
    from nodekit import stack_spec

    from provision import plan as plan_spec
    from provision.spec import load_spec

    shipped = plan_spec(stack_spec("alibaba-gn8-ci"))
    [warning] = [w for w in shipped.warnings if "nccl-tests" in w]
    assert "https://github.com/NVIDIA/nccl-tests/archive/v2.17.6.tar.gz" in warning and "cn-hangzhou" in warning
    assert "image.versions.nccl_tests_url" in warning and shipped.image.versions["nccl_tests_sha256"] in warning
    data = stack_spec("alibaba-gn8-ci").model_dump(mode="json", exclude_none=True)
    url = "https://bucket.oss-cn-hangzhou-internal.aliyuncs.com/nccl-tests-2.17.6.tar.gz"
    data["image"] = {**data.get("image", {}), "versions": {"nccl_tests_url": url}}
    assert not [w for w in plan_spec(load_spec(data)).warnings if "nccl-tests" in w]
