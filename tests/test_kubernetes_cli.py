"""``provision kubeconfig`` / ``k8s-launch`` and the mocked lifecycle of Kubernetes clusters."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import isolated_home
from typer.testing import CliRunner

from provision.cli.app import app
from provision.engine.mockstate import MockStore
from provision.ops import k8s as ops_k8s
from provision.ops.cluster import Cluster
from provision.spec.errors import CloudError

runner = CliRunner()
GKE, POOL = "gcp:container/cluster:Cluster", "gcp:container/nodePool:NodePool"
EKS, NODEGROUP = "aws:eks/cluster:Cluster", "aws:eks/nodeGroup:NodeGroup"
ACK, ACK_POOL = "alicloud:cs/managedKubernetes:ManagedKubernetes", "alicloud:cs/nodePool:NodePool"
AKS, AGENTPOOL = "azure-native:containerservice:ManagedCluster", "azure-native:containerservice:AgentPool"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolated_home(tmp_path, monkeypatch)


def test_kubeconfig_of_a_vm_cluster_is_a_user_error(home: Path) -> None:
    result = runner.invoke(app, ["kubeconfig", "gcp-a3-64", "--mock", "--json"])
    assert result.exit_code == 2
    doc = json.loads(result.stdout)
    assert doc["problems"][0]["path"] == "scheduler.kind"


def test_kubeconfig_before_up_says_so(home: Path) -> None:
    result = runner.invoke(app, ["kubeconfig", "aws-p5-64-eks", "--mock", "--json"])
    assert result.exit_code == 1 and "not up" in json.loads(result.stdout)["message"]


@pytest.mark.parametrize(
    ("stack", "fabric_resource", "devices"),
    [
        ("aws-p5-64-eks", "vpc.amazonaws.com/efa", "32"),
        ("gcp-a3-64-gke", None, None),
        ("alibaba-gn8-64-ack", "aliyun/erdma", "1"),  # allocateAllDevices: one request, every eRDMA device
        # One unit of the RDMA shared device gives a pod every InfiniBand HCA of its node.
        ("azure-ndh100-64-aks", "rdma/shared_ib", "1"),
    ],
)
def test_up_kubeconfig_launch_down_on_the_mocked_cloud_leaves_nothing(
    home: Path, tmp_path: Path, stack: str, fabric_resource: str | None, devices: str | None
) -> None:
    up = runner.invoke(app, ["up", stack, "--mock", "--yes", "--json"])
    assert up.exit_code == 0, up.output
    created = json.loads(up.stdout)["changes"]["create"]
    state = MockStore(home).load(stack)
    assert state is not None
    types = {r.type for r in state.resources}
    # The Kubernetes objects live in the mocked state beside the cloud resources.
    assert {
        "kubernetes:helm.sh/v3:Release",
        "kubernetes:core/v1:PersistentVolume",
        "pulumi:providers:kubernetes",
    } <= types

    target = tmp_path / "kubeconfig"
    kc = runner.invoke(app, ["kubeconfig", stack, "--mock", "--write", str(target)])
    assert kc.exit_code == 0, kc.output
    config = yaml.safe_load(target.read_text())
    assert config["clusters"][0]["cluster"]["server"].startswith("https://")
    assert "exec" in config["users"][0]["user"]  # no token or key stored
    assert oct(target.stat().st_mode & 0o777) == "0o600"

    launched = runner.invoke(app, ["k8s-launch", stack, "--mock", "--json", "--", "train.py", "--epochs", "1"])
    assert launched.exit_code == 0, launched.output
    doc = json.loads(launched.stdout)
    assert doc["submitted"] is False and doc["requests_per_node"]["nvidia.com/gpu"] == "8"
    if fabric_resource:
        assert doc["requests_per_node"][fabric_resource] == devices
    assert doc["job"]["spec"]["trainer"]["args"] == ["train.py", "--epochs", "1"]

    down = runner.invoke(app, ["down", stack, "--mock", "--yes", "--json"])
    assert down.exit_code == 0, down.output
    assert json.loads(down.stdout)["changes"] == {"delete": created}
    assert MockStore(home).load(stack) is None


def test_launch_submits_with_kubectl_and_a_private_kubeconfig_file_it_removes(home: Path) -> None:
    cluster = Cluster("aws-p5-64-eks", mock=True, display="none")
    cluster.up()
    seen: dict[str, Any] = {}

    def fake_run(argv: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
        path = argv[argv.index("--kubeconfig") + 1]
        seen.update(argv=argv, mode=os.stat(path).st_mode & 0o777, config=Path(path).read_text(), path=path)
        seen["job"] = yaml.safe_load(kw["input"])
        return subprocess.CompletedProcess(argv, 0, "trainjob.trainer.kubeflow.org/x created\n", "")

    doc = ops_k8s.build_job(cluster, "train.py", name="x")
    out = ops_k8s.submit(doc, ops_k8s.kubeconfig(cluster), run=fake_run)
    assert out.endswith("created") and seen["argv"][-3:] == ["apply", "-f", "-"]
    assert seen["mode"] == 0o600 and "aws-p5-64-eks" in seen["config"] and not Path(seen["path"]).exists()
    assert seen["job"]["kind"] == "TrainJob" and seen["job"]["spec"]["trainer"]["numNodes"] == 8

    def refused(argv: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(argv, 1, "", 'admission webhook denied: queue "x" not found')

    with pytest.raises(CloudError, match="queue"):
        ops_k8s.submit(doc, "apiVersion: v1\n", run=refused)
    cluster.down()


@pytest.mark.parametrize(
    ("stack", "cluster", "pool"),
    [
        ("gcp-a3-64-gke", GKE, POOL),
        ("aws-p5-64-eks", EKS, NODEGROUP),
        ("azure-ndh100-64-aks", AKS, AGENTPOOL),
        ("alibaba-gn8-64-ack", ACK, ACK_POOL),
    ],
)
def test_preview_shows_the_managed_cluster_gpu_pool_volume_and_training_operator(
    home: Path, stack: str, cluster: str, pool: str
) -> None:
    result = runner.invoke(app, ["preview", stack, "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    by_type: dict[str, list[dict[str, Any]]] = {}
    for r in doc["resources"]:
        by_type.setdefault(r["type"], []).append(r["inputs"])
    assert len(by_type[cluster]) == 1
    # AKS keeps its system pool inside the cluster (a cluster needs one System pool from its creation).
    pools = by_type[pool] + by_type[cluster][0].get("agentPoolProfiles", [])
    sizes = [
        p.get("nodeCount")
        or p.get("count")
        or (p.get("scalingConfig") or {}).get("desiredSize")
        or int(p["desiredSize"])
        for p in pools
    ]
    assert sorted(sizes) == [2, 8]
    driver = by_type["kubernetes:core/v1:PersistentVolume"][0]["spec"]["csi"]["driver"]
    assert driver.endswith((".gke.io", ".aws.com", ".azure.com", ".alibabacloud.com"))
    assert {r["name"] for r in by_type["kubernetes:helm.sh/v3:Release"]} >= {"kubeflow-trainer", "kueue"}
    assert doc["plan"]["scheduler"]["gpu_pool"]["nodes"] == 8
    assert doc["outputs"]["kubernetes"]["queue"] == "training"


def test_submit_without_kubectl_is_a_user_error_naming_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    from provision.spec.errors import UnsupportedError

    monkeypatch.setattr(ops_k8s.shutil, "which", lambda _: None)
    with pytest.raises(UnsupportedError, match="kubectl is not installed"):
        ops_k8s.submit({"kind": "TrainJob"}, "apiVersion: v1\n")
