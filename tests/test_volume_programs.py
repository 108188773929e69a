"""Azure and Alibaba volumes are Pulumi programs (clouds/<cloud>/volume.py) run under the strict mocked cloud: their
stacks hold the network and the filesystem, two clusters attach one in turn, and it outlives both."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import mock_volumes as volumes
from conftest import run_cli as cli

from tests.conftest import stack_spec

#: Per cloud: the CI cluster stack that attaches, the volume, and the types its stack must hold.
CASES: dict[str, tuple[str, dict[str, Any], set[str]]] = {
    "azure": (
        "azure-ndh100-ci",
        {"kind": "amlfs", "size_gib": 16 * 1024, "zone": "1"},
        {
            "azure-native:resources:ResourceGroup",
            "azure-native:network:VirtualNetwork",
            "azure-native:network:Subnet",
            "azure-native:network:NetworkSecurityGroup",
            "azure-native:network:NatGateway",
            "azure-native:network:PublicIPAddress",
            "azure-native:storagecache:AmlFilesystem",
        },
    ),
    "azure-netapp": (
        "azure-ndh100-ci",
        {"kind": "netapp", "size_gib": 2048},
        {
            "azure-native:resources:ResourceGroup",
            "azure-native:network:VirtualNetwork",
            "azure-native:network:Subnet",
            "azure-native:network:NetworkSecurityGroup",
            "azure-native:netapp:Account",
            "azure-native:netapp:CapacityPool",
            "azure-native:netapp:CapacityPoolVolume",
        },
    ),
    "alibaba": (
        "alibaba-gn8-ci",
        {"kind": "cpfs", "size_gib": 12 * 1024},
        {
            "alicloud:vpc/network:Network",
            "alicloud:vpc/switch:Switch",
            "alicloud:nas/fileSystem:FileSystem",
            "alicloud:nas/protocolService:ProtocolService",
        },
    ),
    "alibaba-nas": ("alibaba-gn8-ci", {"kind": "nas", "size_gib": 1024}, {"alicloud:vpc/network:Network"}),
}


@pytest.fixture(autouse=True)
def _own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROVISION_HOME", str(tmp_path / "home"))


def _volume(case: str) -> tuple[str, Any, dict[str, Any], set[str]]:
    stack, volume, types = CASES[case]
    spec = stack_spec(stack)
    zone = volume.get("zone", spec.zone)
    data = {"name": "shared-data", "cloud": spec.cloud, "region": spec.region, **volume, "zone": zone}
    return stack, spec, data, types


@pytest.mark.parametrize("case", list(CASES))
def test_volume_stack_is_its_program_attached_by_two_clusters_in_turn_and_outlives_them(
    case: str, tmp_path: Path
) -> None:
    from provision.engine.mockstate import MockStore

    _, spec, volume, types = _volume(case)
    path = tmp_path / "vol.yaml"
    path.write_text(yaml.safe_dump(volume))
    code, out = cli("volume", "create", str(path), "--mock")
    assert code == 0, out
    state = MockStore().load("vol-shared-data")
    assert state is not None
    assert types <= {r.type for r in state.resources}, sorted({r.type for r in state.resources})
    [fs] = [
        r for r in state.resources if r.name.startswith("vol-shared-data-") and r.id == state.outputs["filesystem_id"]
    ]
    network = state.outputs["network"]
    if spec.cloud == "azure":
        [vnet] = [r for r in state.resources if r.type == "azure-native:network:VirtualNetwork"]
        assert network == {
            "vnet_id": vnet.id,
            "vnet_name": "vol-shared-data-vnet",
            "resource_group": "vol-shared-data-rg",
            "cidr": "10.250.0.0/16",
        }
        assert vnet.inputs["addressSpace"]["addressPrefixes"] == ["10.250.0.0/16"]
    else:
        [vpc] = [r for r in state.resources if r.type == "alicloud:vpc/network:Network"]
        assert network["vpc_id"] == vpc.id and network["cidr"] == "10.250.0.0/16"
        assert fs.inputs["description"] == "provision-shared-data-shared"  # how the nodes find it at boot
        if volume["kind"] == "cpfs":
            [service] = [r for r in state.resources if r.type == "alicloud:nas/protocolService:ProtocolService"]
            assert service.inputs["fileSystemId"] == fs.id and network["protocol_service_id"]
    data = spec.model_dump(mode="json", exclude_none=True)
    data["storage"]["shared"] = {"volume": "shared-data", "mount": "/data"}
    for name in ("first", "second"):
        data["name"] = name
        cluster = tmp_path / f"{name}.yaml"
        cluster.write_text(yaml.safe_dump(data))
        code, out = cli("up", str(cluster), "--mock", "--yes")
        assert code == 0, out
        outputs = json.loads(cli("outputs", name, "--mock", "--json")[1])
        assert outputs["volume"] == "shared-data" and outputs["volume_filesystem_id"] == fs.id
        assert volumes()["shared-data"]["used_by"] == [name]
        code, out = cli("volume", "delete", "shared-data", "--mock")
        assert code == 2 and "attached by cluster" in out and name in out
        assert cli("down", name, "--mock", "--yes")[0] == 0
    listed = volumes()["shared-data"]
    assert listed["used_by"] == [] and listed["filesystem_id"] == fs.id and listed["tier"]
    assert MockStore().load("vol-shared-data").resources == state.resources  # the clusters left it as it was
    assert cli("volume", "delete", "shared-data", "--mock")[0] == 0
    assert volumes() == {}


@pytest.mark.parametrize("case", list(CASES))
def test_volume_programs_have_no_unchecked_leaf(case: str) -> None:
    from provision.engine.volumerun import run_volume_mock
    from provision.ops.volumes import volume_price
    from provision.spec.volume import load_volume_spec

    spec = load_volume_spec(_volume(case)[2])
    tier, _ = volume_price(spec)
    run = run_volume_mock(spec, str(tier), {}, accounting=True)
    assert run.resources
    assert [leaf for leaf in run.accounting if leaf.status == "unchecked"] == []


def test_an_amlfs_size_no_tier_sells_is_refused_before_anything_exists(tmp_path: Path) -> None:
    path = tmp_path / "vol.yaml"
    path.write_text(yaml.safe_dump({**_volume("azure")[2], "size_gib": 10 * 1024}))
    code, out = cli("volume", "create", str(path), "--mock")
    flat = " ".join(out.split())
    assert code == 2 and "size_gib: 10240 is a size no amlfs tier sells" in flat and "to fix: use one of" in flat
    assert volumes() == {}
    # The strict mocked cloud refuses it too, had it got that far (the rule and its source live there).
    from provision.clouds.mocking import CloudFaultError
    from provision.engine.volumerun import run_volume_mock
    from provision.spec.volume import load_volume_spec

    with pytest.raises(CloudFaultError, match="storageCapacityTiB"):
        run_volume_mock(
            load_volume_spec({**_volume("azure")[2], "size_gib": 10 * 1024}), "AMLFS-Durable-Premium-250", {}
        )


def test_alibaba_zonal_kind_without_zone_and_lingjun_are_refused_before_anything_exists(tmp_path: Path) -> None:
    path = tmp_path / "vol.yaml"
    path.write_text(yaml.safe_dump({**_volume("alibaba")[2], "zone": None}))
    code, out = cli("volume", "create", str(path), "--mock")
    assert code == 2 and "zone" in out and "is required for cpfs" in out
    path.write_text(yaml.safe_dump({**_volume("alibaba")[2], "kind": "cpfs-lingjun"}))
    code, out = cli("volume", "create", str(path), "--mock")
    assert code == 2 and "cannot be a volume" in out
    assert volumes() == {}


def test_azure_volume_network_too_small_for_the_lustre_subnet_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "vol.yaml"
    path.write_text(yaml.safe_dump({**_volume("azure")[2], "size_gib": 528 * 1024, "network_cidr": "10.250.0.0/24"}))
    code, out = cli("volume", "create", str(path), "--mock")
    assert code == 2 and "network_cidr" in out and "cannot hold" in out
    assert volumes() == {}


def test_azure_cluster_admits_the_attached_volume_network_on_its_nodes() -> None:
    """Lustre servers call clients back (988, 1019-1023): the node NSG admits the volume's peered network, which its
    final rule (deny from VirtualNetwork, peered VNets included) would otherwise refuse."""
    from provision.ops.volumes import attached_program_spec, create_volume
    from provision.spec import load_spec
    from provision.spec.volume import load_volume_spec
    from tests.conftest import preview

    _, spec, volume, _ = _volume("azure")
    create_volume(load_volume_spec(volume), mock=True)
    data = spec.model_dump(mode="json", exclude_none=True)
    data["storage"]["shared"] = {"volume": "shared-data"}
    attached, _ = attached_program_spec(load_spec(data), spec.zone, mock=True)
    groups = preview(attached).of_type("azure-native:network:NetworkSecurityGroup")
    [nsg] = [r for r in groups if r.name == f"{spec.name}-nsg"]  # the nodes' (the other is the unused fs subnet's)
    rules = {r["name"]: r for r in nsg.inputs["securityRules"]}
    volume_rule = rules["allow-volume-inbound"]
    assert volume_rule["sourceAddressPrefixes"] == ["10.250.0.0/16"] and volume_rule["access"] == "Allow"
    assert volume_rule["priority"] < rules["deny-other-inbound"]["priority"]
