"""The job runtime: every VM stack's plan names its image by digest and its launcher tools; the compat rules refuse
a runtime whose CUDA the node's driver cannot run, before anything is created; the container line carries the
fabric's devices, mounts and library path."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
import yaml
from conftest import MINIMAL_SPEC, ROOT, isolated_home, set_dotted
from typer.testing import CliRunner

from provision.cli.app import app
from provision.planning.runtime import LAUNCHER_TOOLS, container_line, runtime_setup_script
from provision.spec.errors import SpecError
from provision.spec.runtime import PINNED_IMAGE

runner = CliRunner()
VM_STACKS = sorted(
    p.name[len("Pulumi.") : -len(".yaml")]
    for p in (ROOT / "stacks").glob("Pulumi.*.yaml")
    if "scheduler" not in p.read_text(encoding="utf-8")
)
CUDA13 = "nvcr.io/nvidia/pytorch:25.08-py3@sha256:ace9a848c0ae543317e3c4763b6b4248961c47902625abfe3c77a0fb931c50fb"


def _plan(doc: dict) -> object:
    from provision.clouds.base import plan_spec
    from provision.spec import load_spec

    return plan_spec(load_spec(doc))


@pytest.mark.parametrize("stack", VM_STACKS)
def test_every_vm_stack_plan_names_its_runtime_by_digest_and_its_launcher_tools(stack: str) -> None:
    out = runner.invoke(app, ["plan", stack, "--json"])
    assert out.exit_code == 0, out.output
    import json

    runtime = json.loads(out.stdout)["runtime"]
    assert runtime["kind"] == "container"
    assert PINNED_IMAGE.match(runtime["image"]), runtime["image"]
    assert set(LAUNCHER_TOOLS) <= set(runtime["tools"])
    assert "pdsh" in " ".join(runtime["setup"]) and "deepspeed==" in " ".join(runtime["setup"])


def test_the_compat_rules_refuse_a_cuda_the_node_driver_cannot_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Azure's HPC image carries driver 560 (images/azure.yaml); CUDA 13 needs 580 (images/compat.yaml)."""
    isolated_home(tmp_path, monkeypatch)
    spec = yaml.safe_load((ROOT / "stacks" / "Pulumi.azure-ndh100-ci.yaml").read_text())
    path = tmp_path / "stack.yaml"
    doc = set_dotted(spec, "config.provision:cluster.runtime", {"image": CUDA13, "cuda": "13.0"})
    path.write_text(yaml.safe_dump(doc))
    out = runner.invoke(app, ["up", str(path), "--mock", "--yes"])
    assert out.exit_code == 2, out.output
    assert "runtime.image" in out.output and "580" in out.output and "560" in out.output
    listed = runner.invoke(app, ["list", "--mock", "--json"])
    assert '"clusters": []' in listed.stdout  # refused before anything was created
    # The same image on AWS (driver 595) plans.
    ok = _plan(set_dotted({**MINIMAL_SPEC}, "runtime", {"image": CUDA13, "cuda": "13.0"}))
    assert ok.runtime.image == CUDA13  # type: ignore[attr-defined]


def test_an_unpinned_or_unversioned_image_is_refused() -> None:
    for runtime, words in (
        ({"image": "nvcr.io/nvidia/pytorch:25.01-py3"}, "not pinned by digest"),
        ({"image": CUDA13}, "runtime.cuda"),
        ({"kind": "node", "image": CUDA13, "cuda": "13.0"}, "kind: container"),
    ):
        with pytest.raises(SpecError) as e:
            _plan({**MINIMAL_SPEC, "runtime": runtime})
        assert words in str(e.value)


def test_node_runtime_runs_lines_unchanged_and_runs_setup_on_the_node() -> None:
    plan = _plan({**MINIMAL_SPEC, "runtime": {"kind": "node", "setup": ["pip install torch"]}})
    rt = plan.runtime  # type: ignore[attr-defined]
    assert container_line(rt, "torchrun x.py") == "torchrun x.py"
    assert runtime_setup_script(rt) == "pip install torch"


def test_tcpxo_container_gets_the_plugin_path_and_devices() -> None:
    from provision.clouds.base import plan_spec
    from provision.spec import load_target

    plan = plan_spec(load_target("gcp-a3-64", ROOT))
    words = shlex.split(container_line(plan.runtime, "torchrun t.py", mounts=["/shared"], workdir="/shared/w"))
    assert words[:2] == ["docker", "run"] and "--gpus" in words and "host" in words
    assert "LD_LIBRARY_PATH=/var/lib/tcpxo/lib64" in words
    assert "--device=/dev/dmabuf_import_helper" in words
    assert "/var/lib/tcpxo/lib64:/var/lib/tcpxo/lib64:ro" in words and "/etc/provision:/etc/provision:ro" in words
    assert words[-3:] == ["bash", "-c", "torchrun t.py"] and words[-4].startswith("provision-runtime:")
    setup = runtime_setup_script(plan.runtime)
    assert plan.runtime.image in setup and "docker commit" in setup and "pdsh" in setup


def test_without_a_pinned_default_the_plan_runs_jobs_on_the_node_and_says_so() -> None:
    """AMD GPUs: images/runtime.yaml has no digest-pinned image, so no unpinned one is used either."""
    from provision.planning.runtime import plan_runtime
    from provision.spec import load_spec

    runtime, problems = plan_runtime(load_spec(MINIMAL_SPEC), "amd", "infiniband", {})
    assert problems == [] and runtime.kind == "node" and runtime.image is None
    assert "no digest-pinned default image for amd GPUs" in runtime.source
