"""Checkpoints on the four managed Kubernetes clusters: every TrainJob's pods get ``PROVISION_CHECKPOINT_DIR`` on the
shared claim's mount (the VM path's ``<mount>/checkpoints/<cluster>``) and ``PROVISION_RESUME_FROM`` when they start;
without a shared filesystem they get neither; ``run --save-checkpoint`` is refused before anything exists."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import isolated_home, stack_spec
from typer.testing import CliRunner

from provision.cli.app import app
from provision.ops.cluster import Cluster
from provision.ops.jobs.kubernetes import job_status
from provision.ops.k8s import build_job

STACKS = ("gcp-a3-64-gke", "aws-p5-64-eks", "azure-ndh100-64-aks", "alibaba-gn8-64-ack")
FAKE_TORCHRUN = '#!/bin/sh\necho "dir=$PROVISION_CHECKPOINT_DIR from=$PROVISION_RESUME_FROM args=$*"\n'


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolated_home(tmp_path, monkeypatch)


def env_of(doc: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in doc["spec"]["trainer"]["env"]}


def start_pod(doc: dict[str, Any], tmp_path: Path) -> str:
    """Run the trainer's command and args as the container would (``torchrun`` a fake on PATH); its output."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "torchrun").write_text(FAKE_TORCHRUN)
    (bin_dir / "torchrun").chmod(0o755)
    trainer = doc["spec"]["trainer"]
    env = {**os.environ, **env_of(doc), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    env.pop("PROVISION_RESUME_FROM", None)
    done = subprocess.run([*trainer["command"], *trainer["args"]], env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.mark.parametrize("stack", STACKS)
def test_every_pod_gets_the_checkpoint_folder_on_the_shared_claim(stack: str) -> None:
    cluster = Cluster(stack, mock=True, display="none")
    profile = cluster.plan().kubernetes.job
    spec = stack_spec(stack)
    assert spec.storage.shared is not None and profile.shared_claim
    doc = build_job(cluster, "train.py", ["--lr", "3e-4"])

    folder = env_of(doc)["PROVISION_CHECKPOINT_DIR"]
    assert folder == f"{spec.storage.shared.mount.rstrip('/')}/checkpoints/{spec.name}"
    # The folder is on the claim as the training container mounts it.
    claims = {v["name"] for v in profile.volumes if (v.get("persistentVolumeClaim") or {}).get("claimName")}
    mounted = [m["mountPath"] for m in profile.mounts if m["name"] in claims]
    assert mounted == [spec.storage.shared.mount]
    assert folder.startswith(mounted[0].rstrip("/") + "/")
    # torchrun still runs the script (behind the resume lines), and `jobs` shows it so.
    assert doc["spec"]["trainer"]["args"] == ["train.py", "--lr", "3e-4"]
    assert doc["spec"]["trainer"]["command"][-1] == "torchrun"
    assert job_status(doc, spec.name).spec.line == "torchrun train.py --lr 3e-4"


def test_a_started_pod_resumes_from_the_newest_checkpoint(tmp_path: Path) -> None:
    folder = tmp_path / "ck"  # stands in for the claim's folder, which this machine has not mounted
    doc = build_job(Cluster("aws-p5-64-eks", mock=True, display="none"), "t.py", ["a b"], checkpoint_dir=str(folder))
    assert env_of(doc)["PROVISION_CHECKPOINT_DIR"] == str(folder)
    assert start_pod(doc, tmp_path) == f"dir={folder} from= args=t.py a b"
    assert folder.is_dir()  # made by the pod, as a VM rank makes it
    for step in ("step-1", "step-2"):
        (folder / step).mkdir()
        os.utime(folder / step, (1000.0, 1000.0) if step == "step-1" else None)
    assert start_pod(doc, tmp_path) == f"dir={folder} from={folder}/step-2 args=t.py a b"


def without_shared(stack: str) -> dict[str, Any]:
    data: dict[str, Any] = stack_spec(stack).model_dump(mode="json", exclude_none=True)
    data["storage"].pop("shared")
    return data


@pytest.mark.parametrize("stack", ["aws-p5-64-eks", "gcp-a3-64-gke"])
def test_without_a_shared_filesystem_no_pod_gets_the_variables(stack: str, tmp_path: Path) -> None:
    cluster = Cluster(without_shared(stack), mock=True, display="none")
    assert cluster.plan().kubernetes.job.shared_claim is None
    doc = build_job(cluster, "train.py")
    assert not [k for k in env_of(doc) if k.startswith("PROVISION_")]
    assert doc["spec"]["trainer"]["command"] == ["torchrun"]
    assert start_pod(doc, tmp_path) == "dir= from= args=train.py"


def test_without_a_shared_filesystem_a_detached_job_takes_checkpoint_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As on VMs, ``launch --detach --checkpoint-dir DIR`` names the folder (here a path in the pods)."""
    from provision.ops import jobs

    bin_dir, applied = tmp_path / "kbin", tmp_path / "applied.yaml"
    bin_dir.mkdir()
    (bin_dir / "kubectl").write_text(f"#!/bin/sh\ncat > {applied}\necho trainjob/x created\n")
    (bin_dir / "kubectl").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    cluster = Cluster(without_shared("aws-p5-64-eks"), mock=True, display="none")
    cluster.up()
    try:
        spec = jobs.submit(cluster, "torchrun", ["train.py"], checkpoint_dir="/scratch/ck")
        (doc,) = [d for d in yaml.safe_load_all(applied.read_text()) if d["kind"] == "TrainJob"]
        assert env_of(doc)["PROVISION_CHECKPOINT_DIR"] == "/scratch/ck"
        assert "/scratch/ck/*/" in doc["spec"]["trainer"]["command"][2]
        assert spec.line == "torchrun train.py"
    finally:
        cluster.down()


def test_run_save_checkpoint_on_kubernetes_is_refused_before_up(tmp_path: Path) -> None:
    data: dict[str, Any] = stack_spec("aws-p5-64-eks").model_dump(mode="json", exclude_none=True)
    data["storage"]["shared"]["object_store"] = {
        "uri": "s3://my-train-data/llm",
        "import_path": "/data",
        "export_path": "/data/o",
    }
    path = tmp_path / "eks.yaml"
    path.write_text(yaml.safe_dump(data))
    runner = CliRunner()
    args = ["run", str(path), "--mock", "--max-usd", "9000", "--ttl", "1h", "--save-checkpoint", "--", "true"]
    result = runner.invoke(app, args)
    out = " ".join((result.stdout + result.stderr).split())
    assert result.exit_code == 2, out
    assert "scheduler.kind: 'kubernetes' --save-checkpoint copies the checkpoint on the nodes over SSH" in out
    assert "storage.shared.retain: true" in out and "Traceback" not in out
    listed = runner.invoke(app, ["list", "--mock", "--json"])
    assert json.loads(listed.stdout)["clusters"] == []
    data["storage"]["shared"].pop("object_store")
    data["storage"]["shared"]["retain"] = True
    path.write_text(yaml.safe_dump(data))
    kept = runner.invoke(app, args)
    assert kept.exit_code == 2 and "already keeps $PROVISION_CHECKPOINT_DIR" in " ".join(kept.stderr.split())
