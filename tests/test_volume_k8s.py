"""Volumes attached by managed Kubernetes clusters (EKS, AKS, ACK) under the strict mocked cloud: the cluster
builds no filesystem of its own, its shared claim's PersistentVolume points at the volume's filesystem, and its
network reaches the volume's the way the VM clusters' does; down leaves the volume listed and unused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import mock_state as state
from conftest import mock_volumes as volumes
from conftest import run_cli as cli

from tests.conftest import stack_spec

PV = "kubernetes:core/v1:PersistentVolume"
PVC = "kubernetes:core/v1:PersistentVolumeClaim"


@pytest.fixture(autouse=True)
def _own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROVISION_HOME", str(tmp_path / "home"))


def attach(tmp_path: Path, volume: dict[str, Any], stack: str) -> tuple[Any, Any]:
    """Create ``volume``, up the shipped ``stack`` attaching it; returns the volume's and the cluster's states."""
    path = tmp_path / "vol.yaml"
    path.write_text(yaml.safe_dump({"name": "llm-data", **volume}))
    code, out = cli("volume", "create", str(path), "--mock")
    assert code == 0, out
    data = stack_spec(stack).model_dump(mode="json", exclude_none=True)
    data["storage"]["shared"] = {"volume": "llm-data"}
    spec = tmp_path / "cluster.yaml"
    spec.write_text(yaml.safe_dump(data))
    code, out = cli("up", str(spec), "--mock", "--yes")
    assert code == 0, out
    assert volumes()["llm-data"]["used_by"] == [stack]
    return state("vol-llm-data"), state(stack)


def detach(stack: str) -> None:
    code, out = cli("down", stack, "--mock", "--yes")
    assert code == 0, out
    assert volumes()["llm-data"]["used_by"] == []


def csi(cluster: Any) -> dict[str, Any]:
    [pv] = [r for r in cluster.resources if r.type == PV]
    assert [r.name for r in cluster.resources if r.type == PVC] == [pv.name.replace("-pv", "-pvc")]
    return dict(pv.inputs["spec"]["csi"])


def test_eks_mounts_the_volumes_fsx_through_a_peering(tmp_path: Path) -> None:
    vol, eks = attach(
        tmp_path, {"cloud": "aws", "region": "us-east-1", "kind": "fsx-lustre", "size_gib": 1200}, "aws-p5-64-eks"
    )
    out, net = vol.outputs, vol.outputs["network"]
    assert not [r for r in eks.resources if r.type == "aws:fsx/lustreFileSystem:LustreFileSystem"]
    dns, mount = out["mount_source"].split("@tcp:/")
    assert csi(eks) == {
        "driver": "fsx.csi.aws.com",
        "volumeHandle": out["filesystem_id"],
        "volumeAttributes": {"dnsname": dns, "mountname": mount},
    }
    [peering] = [r for r in eks.resources if r.type == "aws:ec2/vpcPeeringConnection:VpcPeeringConnection"]
    assert peering.inputs["peerVpcId"] == net["vpc_id"]
    routes = {
        r.inputs["destinationCidrBlock"]: r.inputs["routeTableId"]
        for r in eks.resources
        if r.name.startswith("aws-p5-64-eks-volume-r")
    }
    assert routes[net["cidr"]] != net["route_table_id"] and net["route_table_id"] in routes.values()
    into_volume = [r for r in eks.resources if r.name.startswith("aws-p5-64-eks-volume-in-")]
    assert into_volume and {r.inputs["securityGroupId"] for r in into_volume} == {net["security_group_id"]}
    assert eks.outputs["shared_fs"]["volume"] == "llm-data"
    assert eks.outputs["shared_fs"]["source"] == out["mount_source"]
    detach("aws-p5-64-eks")


def test_aks_mounts_the_volumes_lustre_through_vnet_peerings(tmp_path: Path) -> None:
    volume = {"cloud": "azure", "region": "eastus", "zone": "1", "kind": "amlfs", "size_gib": 16384}
    vol, aks = attach(tmp_path, volume, "azure-ndh100-64-aks")
    out, net = vol.outputs, vol.outputs["network"]
    assert not [r for r in aks.resources if r.type == "azure-native:storagecache:AmlFilesystem"]
    mgs, fsname = out["mount_source"].split("@tcp:/")
    spec = csi(aks)
    assert spec["driver"] == "azurelustre.csi.azure.com"
    assert spec["volumeAttributes"] == {"mgs-ip-address": mgs, "fs-name": fsname}
    peerings = [r for r in aks.resources if r.type == "azure-native:network:VirtualNetworkPeering"]
    assert len(peerings) == 2
    assert any(p.inputs.get("remoteVirtualNetwork", {}).get("id") == net["vnet_id"] for p in peerings)
    assert aks.outputs["shared_fs"]["volume"] == "llm-data"
    assert aks.outputs["shared_fs"]["source"] == out["mount_source"]
    detach("azure-ndh100-64-aks")


def test_ack_mounts_the_volumes_nas_through_its_own_mount_target(tmp_path: Path) -> None:
    volume = {
        "cloud": "alibaba",
        "region": "cn-hangzhou",
        "zone": "cn-hangzhou-i",
        "kind": "nas-extreme",
        "size_gib": 1000,
    }
    vol, ack = attach(tmp_path, volume, "alibaba-gn8-64-ack")
    assert not [r for r in ack.resources if r.type == "alicloud:nas/fileSystem:FileSystem"]
    [target] = [r for r in ack.resources if r.type == "alicloud:nas/mountTarget:MountTarget"]
    assert target.inputs["fileSystemId"] == vol.outputs["filesystem_id"]
    [vpc] = [r for r in ack.resources if r.type == "alicloud:vpc/network:Network"]
    assert target.inputs["vpcId"] == vpc.id  # the cluster's own VPC: a NAS file system takes mount targets in others
    spec = csi(ack)
    assert spec["driver"] == "nasplugin.csi.alibabacloud.com"
    # The PV's server is that mount target's domain (what the nodes mount), under the volume's export path.
    server, path = ack.outputs["shared_fs"]["source"].split(":", 1)
    assert spec["volumeAttributes"] == {"server": server, "path": path} and server
    assert ack.outputs["shared_fs"]["file_system_id"] == vol.outputs["filesystem_id"]
    assert ack.outputs["shared_fs"]["volume"] == "llm-data"
    detach("alibaba-gn8-64-ack")


def test_aks_refuses_a_volume_network_over_its_pod_range_before_anything_exists(tmp_path: Path) -> None:
    path = tmp_path / "vol.yaml"
    volume = {"name": "llm-data", "cloud": "azure", "region": "eastus", "zone": "1", "kind": "amlfs"}
    path.write_text(yaml.safe_dump({**volume, "size_gib": 16384, "network_cidr": "10.244.0.0/16"}))
    assert cli("volume", "create", str(path), "--mock")[0] == 0
    data = stack_spec("azure-ndh100-64-aks").model_dump(mode="json", exclude_none=True)
    data["storage"]["shared"] = {"volume": "llm-data"}
    spec = tmp_path / "cluster.yaml"
    spec.write_text(yaml.safe_dump(data))
    code, out = cli("up", str(spec), "--mock", "--yes")
    flat = " ".join(out.split())
    assert code == 2, out
    assert "storage.shared.volume: 'llm-data' names a volume whose network 10.244.0.0/16 overlaps the AKS pod" in flat
    assert "to fix: recreate the volume with a network_cidr outside" in flat
    assert json.loads(cli("list", "--mock", "--json")[1])["clusters"] == []
    assert volumes()["llm-data"]["used_by"] == []


@pytest.mark.parametrize(
    ("volume", "stack", "allowed"),
    [
        (
            {"cloud": "azure", "region": "eastus", "zone": "1", "kind": "netapp", "size_gib": 2048},
            "azure-ndh100-64-aks",
            "an amlfs",
        ),
        (
            {"cloud": "alibaba", "region": "cn-hangzhou", "zone": "cn-hangzhou-i", "kind": "cpfs", "size_gib": 3600},
            "alibaba-gn8-64-ack",
            "a nas or nas-extreme",
        ),
    ],
)
def test_a_volume_kind_the_cluster_cannot_mount_is_named_as_the_volume(
    tmp_path: Path, volume: dict[str, Any], stack: str, allowed: str
) -> None:
    path = tmp_path / "vol.yaml"
    path.write_text(yaml.safe_dump({"name": "llm-data", **volume}))
    assert cli("volume", "create", str(path), "--mock")[0] == 0
    data = stack_spec(stack).model_dump(mode="json", exclude_none=True)
    data["storage"]["shared"] = {"volume": "llm-data"}
    spec = tmp_path / "cluster.yaml"
    spec.write_text(yaml.safe_dump(data))
    code, out = cli("up", str(spec), "--mock", "--yes")
    flat = " ".join(out.split())
    assert code == 2, out
    assert f"storage.shared.volume: 'llm-data' names a {volume['kind']} volume, which this" in flat
    assert f"to fix: attach {allowed} volume, or attach this one to VM nodes" in flat
    assert json.loads(cli("list", "--mock", "--json")[1])["clusters"] == []
