"""An attached volume is mounted on the nodes like a cluster-owned filesystem, and reached through the cluster's own
network resources (created and deleted with the cluster; the volume stays), on all four clouds (mocked cloud)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from tests.conftest import golden_graph, preview, stack_spec

STACKS = {"aws": "aws-p5-ci", "gcp": "gcp-a3-ci", "azure": "azure-ndh100-ci", "alibaba": "alibaba-gn8-ci"}
FS_TYPES = (
    "aws:fsx/lustreFileSystem:LustreFileSystem",
    "gcp:filestore/instance:Instance",
    "gcp:lustre/instance:Instance",
    "gcp:parallelstore/instance:Instance",
    "azure-native:storagecache:AmlFilesystem",
    "azure-native:netapp:CapacityPoolVolume",
    "alicloud:nas/fileSystem:FileSystem",
)
#: The resources each cloud's cluster creates to reach the volume's network (clouds/<cloud>/volumelink.py, storage.py).
REACH = {
    "aws": {"aws:ec2/vpcPeeringConnection:VpcPeeringConnection", "aws:ec2/route:Route"},
    "azure": {"azure-native:network:VirtualNetworkPeering"},
    "alibaba": {"alicloud:nas/mountTarget:MountTarget", "alicloud:nas/accessRule:AccessRule"},
    "gcp": {"gcp:compute/subnetwork:Subnetwork", "gcp:compute/router:Router", "gcp:compute/routerNat:RouterNat"},
}


@pytest.fixture(autouse=True)
def _own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROVISION_HOME", str(tmp_path / "home"))


def _volume(cloud: str) -> tuple[Any, Any]:
    """A volume of the kind and size of the cloud's CI stack's own filesystem, and that stack's spec."""
    from provision.ops.volumes import create_volume
    from provision.spec.volume import load_volume_spec

    spec = stack_spec(STACKS[cloud])
    shared = spec.storage.shared
    volume = load_volume_spec(
        {"name": "data", "cloud": cloud, "region": spec.region, "kind": shared.kind, "size_gib": shared.size_gib}
    )
    return create_volume(volume, mock=True), spec


def _with_shared(spec: Any, shared: dict[str, Any]) -> Any:
    from provision.spec import load_spec

    data = spec.model_dump(mode="json", exclude_none=True)
    data["storage"]["shared"] = shared
    return load_spec(data)


def _scripts(result: Any) -> list[str]:
    """Every node boot script of the graph (decoded), in a stable order."""
    found: list[str] = []

    def walk(v: Any) -> None:
        if isinstance(v, dict):
            if "script_lines" in v:
                found.append("\n".join(v["script_lines"]))
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(golden_graph(result)["resources"])
    return sorted(found)


@pytest.fixture(scope="module")
def runs() -> Any:
    """:func:`_runs` of a cloud, made once in this module (two tests read AWS's, two Azure's) by the first test that
    asks, in its own home; each test gets its own deep copy of the volume record and the two mocked runs."""
    import copy

    made: dict[str, tuple[Any, Any, Any]] = {}

    def get(cloud: str) -> tuple[Any, Any, Any]:
        if cloud not in made:
            made[cloud] = _runs(cloud)
        return copy.deepcopy(made[cloud])

    return get


def _runs(cloud: str) -> tuple[Any, Any, Any]:
    """A volume like the cloud's CI stack's own filesystem, and the mocked runs of that stack with a filesystem of its
    own of the volume's kind and size, and with the volume attached."""
    from provision.ops.volumes import attached_program_spec

    record, spec = _volume(cloud)
    own = {"kind": record.outputs["filesystem"], "size_gib": record.outputs["size_gib"], "mount": "/data"}
    if record.outputs.get("tier"):
        own["tier"] = record.outputs["tier"]
    attached, _ = attached_program_spec(_with_shared(spec, {"volume": "data", "mount": "/data"}), None, mock=True)
    return record, preview(_with_shared(spec, own)), preview(attached)


@pytest.mark.parametrize("cloud", ["aws", "gcp"])
def test_published_source_clouds_boot_the_same_script_and_publish_the_volume_source(runs: Any, cloud: str) -> None:
    record, own, attached = runs(cloud)
    assert not [r for r in attached.resources if r.type in FS_TYPES]
    assert [r for r in own.resources if r.type in FS_TYPES]
    # The nodes run the very same boot steps (mount point, type, options, client) as with a filesystem of their
    # own: the mount source reaches them through the same published value, now the volume's.
    assert _scripts(attached) == _scripts(own)
    published = {
        "aws": ("aws:ssm/parameter:Parameter", "insecureValue"),
        "gcp": ("gcp:compute/projectMetadataItem:ProjectMetadataItem", "value"),
    }[cloud]
    assert attached.one(published[0]).inputs[published[1]] == record.outputs["mount_source"]
    assert attached.outputs["shared_fs"]["source"] == record.outputs["mount_source"]
    assert attached.outputs["shared_fs"]["mount_point"] == "/data"
    assert attached.outputs["volume"] == "data"


def test_azure_mounts_the_volume_source_with_the_own_filesystem_steps(runs: Any) -> None:
    record, own, attached = runs("azure")
    assert not [r for r in attached.resources if r.type in FS_TYPES]
    own_source = own.outputs["shared_fs"]["source"]
    assert own_source != record.outputs["mount_source"]
    # The cluster's own filesystem is looked up at boot (GPUs first: the scale sets do not wait for it); an
    # attached volume exists before the cluster, so its source is in the custom data and no lookup runs.
    assert any("fs-address" in s for s in _scripts(own)) and not any("fs-address" in s for s in _scripts(attached))
    assert any(record.outputs["mount_source"] in s and "/data" in s for s in _scripts(attached))


def test_alibaba_nodes_look_up_the_volume_filesystem_through_their_own_mount_target(runs: Any) -> None:
    record, own, attached = runs("alibaba")
    assert not [r for r in attached.resources if r.type in FS_TYPES]
    [target] = attached.of_type("alicloud:nas/mountTarget:MountTarget")
    assert target.inputs["fileSystemId"] == record.outputs["filesystem_id"]
    assert target.inputs["vpcId"] == attached.one("alicloud:vpc/network:Network").id
    # Same boot steps; the lookup names the volume's file system by its description.
    assert _scripts(attached) == [
        s.replace("provision-alibaba-gn8-ci-shared", "provision-data-shared") for s in _scripts(own)
    ]


def test_aws_peering_routes_and_rules_reach_the_volume_network(runs: Any) -> None:
    record, _, attached = runs("aws")
    net = record.outputs["network"]
    [peering] = attached.of_type("aws:ec2/vpcPeeringConnection:VpcPeeringConnection")
    assert peering.inputs["peerVpcId"] == net["vpc_id"] and peering.inputs["autoAccept"] is True
    routes = {r.name: r.inputs for r in attached.of_type("aws:ec2/route:Route")}
    assert routes["aws-p5-ci-volume-route"]["destinationCidrBlock"] == net["cidr"]
    assert routes["aws-p5-ci-volume-return"]["routeTableId"] == net["route_table_id"]
    rules = [r.inputs for r in attached.of_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")]
    on_volume = sorted((r["fromPort"], r["toPort"]) for r in rules if r["securityGroupId"] == net["security_group_id"])
    assert on_volume == [(988, 988), (1018, 1023)]
    assert not attached.of_type("aws:ec2/securityGroup:SecurityGroup")[1:]  # no FSx group of the cluster's own


def test_azure_peers_both_ways(runs: Any) -> None:
    record, _, attached = runs("azure")
    net = record.outputs["network"]
    peerings = {r.name: r.inputs for r in attached.of_type("azure-native:network:VirtualNetworkPeering")}
    assert peerings["azure-ndh100-ci-to-volume"]["remoteVirtualNetwork"]["id"] == net["vnet_id"]
    back = peerings["azure-ndh100-ci-from-volume"]
    assert back["virtualNetworkName"] == net["vnet_name"] and back["resourceGroupName"] == net["resource_group"]


def test_attached_stacks_have_no_unchecked_leaf() -> None:
    from provision.ops.volumes import attached_program_spec

    for cloud in STACKS:
        record, spec = _volume(cloud)
        attached, _ = attached_program_spec(_with_shared(spec, {"volume": "data"}), None, mock=True)
        result = preview(attached, accounting=True)
        unchecked = [leaf for leaf in result.accounting if leaf.status == "unchecked"]
        assert unchecked == [], (cloud, unchecked[:5])
        from provision.engine.mockstate import MockStore

        MockStore().delete("vol-data")


def _cli(*args: str) -> tuple[int, str]:
    from provision.cli.app import app

    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout + (result.stderr if result.stderr_bytes is not None else "")


def test_reach_is_created_and_removed_with_the_cluster_and_the_volume_stays(tmp_path: Path) -> None:
    from provision.engine.mockstate import MockStore

    for cloud in ("aws", "azure", "alibaba", "gcp"):
        record, spec = _volume(cloud)
        data = spec.model_dump(mode="json", exclude_none=True)
        data["storage"]["shared"] = {"volume": "data", "mount": "/data"}
        path = tmp_path / f"{cloud}.yaml"
        path.write_text(yaml.safe_dump(data))
        code, out = _cli("up", str(path), "--mock", "--yes")
        assert code == 0, out
        state = MockStore().load(spec.name)
        assert REACH[cloud] <= {r.type for r in state.resources}, cloud
        code, out = _cli("down", spec.name, "--mock", "--yes")
        assert code == 0, out
        assert MockStore().load(spec.name) is None
        kept = MockStore().load("vol-data")
        assert kept is not None and kept.outputs["mount_source"] == record.outputs["mount_source"]
        code, listing = _cli("volume", "list", "--mock", "--json")
        assert [v["used_by"] for v in json.loads(listing)] == [[]]
        assert _cli("volume", "delete", "data", "--mock")[0] == 0


def test_volume_without_network_outputs_is_refused_before_anything_exists() -> None:
    from provision.engine.mockstate import MockStore
    from provision.ops.volumes import attach_problems

    record, spec = _volume("aws")
    state = MockStore().load("vol-data")
    state.outputs = {k: v for k, v in state.outputs.items() if k != "network"}
    MockStore().save(state)
    problems = attach_problems(_with_shared(spec, {"volume": "data"}), None, mock=True)
    assert [p.path for p in problems] == ["storage.shared.volume"]
    assert "no network vpc_id, cidr, route_table_id, security_group_id" in problems[0].rule
