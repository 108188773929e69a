"""GCP volumes: their own stack (VPC, subnet, private services access, filesystem) under the strict mocked cloud,
attached by clusters whose host network is a subnet of the volume's VPC (the services' peering is not transitive),
created and removed with each cluster while the volume's VPC stays."""

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

VOLUME = {
    "name": "llm-data",
    "cloud": "gcp",
    "region": "us-central1",
    "zone": "us-central1-a",
    "kind": "managed-lustre",
    "size_gib": 18000,
    "throughput_mbps_per_tib": 500,
}
NETWORK = "gcp:compute/network:Network"
SUBNET = "gcp:compute/subnetwork:Subnetwork"
FIREWALL = "gcp:compute/firewall:Firewall"


@pytest.fixture(autouse=True)
def _own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROVISION_HOME", str(tmp_path / "home"))


def create(tmp_path: Path, volume: dict[str, Any]) -> None:
    path = tmp_path / "vol.yaml"
    path.write_text(yaml.safe_dump(volume))
    code, out = cli("volume", "create", str(path), "--mock")
    assert code == 0, out


def cluster_file(tmp_path: Path, name: str, shared: dict[str, Any], **gcp: Any) -> str:
    data = stack_spec("gcp-a3-ci").model_dump(mode="json", exclude_none=True)
    data["name"] = name
    data["storage"]["shared"] = shared
    data["gcp"] = {**data.get("gcp", {}), **gcp}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def test_gcp_volume_stack_is_the_program_and_its_outputs_name_its_network(tmp_path: Path) -> None:
    create(tmp_path, VOLUME)
    vol = state("vol-llm-data")
    by_type = {r.type: r for r in vol.resources}
    vpc, subnet = by_type[NETWORK], by_type[SUBNET]
    address = by_type["gcp:compute/globalAddress:GlobalAddress"]
    connection = by_type["gcp:servicenetworking/connection:Connection"]
    fs = by_type["gcp:lustre/instance:Instance"]
    assert subnet.inputs["ipCidrRange"] == "10.250.0.0/16" and subnet.inputs["region"] == "us-central1"
    assert subnet.inputs["network"] == vpc.id == fs.inputs["network"] == connection.inputs["network"]
    assert address.inputs["purpose"] == "VPC_PEERING" and address.inputs["network"] == vpc.id
    assert connection.inputs["reservedPeeringRanges"] == [address.inputs.get("name") or address.id.rsplit("/", 1)[-1]]
    assert fs.inputs["capacityGib"] == "18000" and fs.inputs["perUnitStorageThroughput"] == "500"
    network = vol.outputs["network"]
    assert network["network_id"] == vpc.id and network["self_link"].endswith(vpc.id)
    assert network["network"] == vpc.id.rsplit("/", 1)[-1] and network["cidr"] == "10.250.0.0/16"
    assert network["service_range"].endswith(f"/{int(address.inputs['prefixLength'])}")
    assert vol.outputs["filesystem_id"] == fs.id and vol.outputs["mount_source"].endswith("@tcp:/llmdata")


@pytest.mark.parametrize(
    ("kind", "size", "tier"),
    [("filestore", 2560, "BASIC_SSD"), ("managed-lustre", 18000, "500"), ("parallelstore", 12000, "SCRATCH")],
)
def test_gcp_volume_program_has_no_unchecked_leaf(kind: str, size: int, tier: str) -> None:
    from provision.engine.volumerun import run_volume_mock
    from provision.spec.volume import load_volume_spec

    spec = load_volume_spec({**VOLUME, "kind": kind, "size_gib": size, "throughput_mbps_per_tib": None})
    run = run_volume_mock(spec, tier, {}, accounting=True)
    assert any(r.type == NETWORK for r in run.resources)
    assert [leaf for leaf in run.accounting if leaf.status == "unchecked"] == []


def _in_volume_vpc(stack: str, vpc_id: str) -> dict[str, Any]:
    """The cluster's resources in the volume's VPC (by type), checked to be named for the cluster."""
    cluster = state(stack)
    link = f"https://www.googleapis.com/compute/v1/{vpc_id}"
    found: dict[str, Any] = {}
    for r in cluster.resources:
        if r.inputs.get("network") in (vpc_id, link):
            assert r.name.startswith(f"{stack}-"), r.name
            found.setdefault(r.type, []).append(r)
    return found


def test_volume_attached_by_two_clusters_in_turn_keeps_its_vpc(tmp_path: Path) -> None:
    create(tmp_path, VOLUME)
    before = state("vol-llm-data")
    vpc_id = before.outputs["network"]["network_id"]
    for name in ("first", "second"):
        code, out = cli("up", cluster_file(tmp_path, name, {"volume": "llm-data", "mount": "/data"}), "--mock", "--yes")
        assert code == 0, out
        cluster = state(name)
        # No host VPC of its own: its only VPCs are the GPU NICs' networks.
        assert sorted(r.name for r in cluster.resources if r.type == NETWORK) == [
            f"{name}-gpunet-{i}" for i in range(8)
        ]
        inside = _in_volume_vpc(name, vpc_id)
        [subnet] = inside[SUBNET]
        assert subnet.name == f"{name}-subnet-0" and subnet.inputs["ipCidrRange"] == "10.0.0.0/20"
        rules = {r.name: r.inputs for r in inside[FIREWALL]}
        assert set(rules) == {f"{name}-net-0-internal", f"{name}-net-0-ssh", f"{name}-net-0-storage"}
        assert rules[f"{name}-net-0-storage"]["sourceRanges"] == [before.outputs["network"]["service_range"]]
        assert [r.name for r in inside["gcp:compute/router:Router"]] == [f"{name}-net-0-router"]
        # nic0 of every node is on that subnet.
        [template] = [r for r in cluster.resources if r.type.endswith("regionInstanceTemplate:RegionInstanceTemplate")]
        assert template.inputs["networkInterfaces"][0]["subnetwork"].endswith(subnet.id)
        assert volumes()["llm-data"]["used_by"] == [name]
        code, out = cli("down", name, "--mock", "--yes")
        assert code == 0, out
        after = state("vol-llm-data")
        assert [(r.type, r.name, r.id) for r in after.resources] == [(r.type, r.name, r.id) for r in before.resources]
        assert after.outputs == before.outputs
        assert volumes()["llm-data"]["used_by"] == []
    assert list(volumes()) == ["llm-data"]


def test_plan_shows_the_host_network_in_the_volume_vpc(tmp_path: Path) -> None:
    create(tmp_path, VOLUME)
    code, out = cli("plan", cluster_file(tmp_path, "first", {"volume": "llm-data"}), "--json")
    assert code == 0, out
    networks = json.loads(out)["extra"]["networks"]
    assert networks[0]["key"] == "net-0" and networks[0]["volume"] == "llm-data" and networks[0]["mtu"] == 8896
    assert all("volume" not in n for n in networks[1:])  # the GPU NICs' VPCs stay the cluster's


def test_overlapping_cluster_subnet_is_refused_before_anything_exists(tmp_path: Path) -> None:
    create(tmp_path, {**VOLUME, "network_cidr": "10.20.0.0/16"})
    service = state("vol-llm-data").outputs["network"]["service_range"]
    for cidr, theirs in (("10.20.16.0/20", "10.20.0.0/16"), (service, service)):
        gpu = {"gpu_subnet_cidr_base": "172.16.0.0/12"}  # the GPU VPCs' ranges out of the way
        path = cluster_file(tmp_path, "clash", {"volume": "llm-data"}, host_subnet_cidr=cidr, **gpu)
        code, out = cli("up", path, "--mock", "--yes")
        flat = " ".join(out.split())
        assert code == 2, out
        assert f"gcp.host_subnet_cidr: '{cidr}' overlaps volume llm-data's network {theirs}" in flat
        assert "created in the volume's VPC" in flat and "to fix: set gcp.host_subnet_cidr to a range outside" in flat
        assert json.loads(cli("list", "--mock", "--json")[1])["clusters"] == []


def test_gke_cluster_attaching_a_volume_is_refused_before_anything_exists(tmp_path: Path) -> None:
    create(tmp_path, VOLUME)
    data = stack_spec("gcp-a3-64-gke").model_dump(mode="json", exclude_none=True)
    data["storage"]["shared"] = {"volume": "llm-data"}
    path = tmp_path / "gke.yaml"
    path.write_text(yaml.safe_dump(data))
    code, out = cli("up", str(path), "--mock", "--yes")
    flat = " ".join(out.split())
    assert code == 2 and "storage.shared.volume: 'llm-data' cannot be attached by a GKE cluster yet" in flat, out
    assert "drop scheduler.kind: kubernetes" in flat
    assert json.loads(cli("list", "--mock", "--json")[1])["clusters"] == []


def test_clusters_attached_at_once_need_distinct_subnets(tmp_path: Path) -> None:
    create(tmp_path, VOLUME)
    assert cli("up", cluster_file(tmp_path, "first", {"volume": "llm-data"}), "--mock", "--yes")[0] == 0
    code, out = cli("up", cluster_file(tmp_path, "second", {"volume": "llm-data"}), "--mock", "--yes")
    flat = " ".join(out.split())
    assert code == 2 and "the host subnet cluster first has in volume llm-data's VPC" in flat, out
    path = cluster_file(tmp_path, "second", {"volume": "llm-data"}, host_subnet_cidr="10.1.0.0/20")
    code, out = cli("up", path, "--mock", "--yes")
    assert code == 0, out
    assert sorted(volumes()["llm-data"]["used_by"]) == ["first", "second"]


def test_retained_gcp_filesystem_is_attached_in_its_kept_vpc(tmp_path: Path) -> None:
    own = {"kind": "filestore", "tier": "BASIC_SSD", "size_gib": 2560, "retain": True}
    assert cli("up", cluster_file(tmp_path, "keeper", own), "--mock", "--yes")[0] == 0
    [host] = [r for r in state("keeper").resources if r.type == NETWORK and r.name == "keeper-net-0"]
    code, out = cli("down", "keeper", "--mock", "--yes")
    assert code == 0, out
    assert volumes()["keeper"]["filesystem"] == "filestore"
    assert [r.id for r in state("vol-keeper").resources if r.type == NETWORK] == [host.id]
    code, out = cli("up", cluster_file(tmp_path, "reuser", {"volume": "keeper"}), "--mock", "--yes")
    assert code == 0, out
    assert [r.name for r in _in_volume_vpc("reuser", host.id)[SUBNET]] == ["reuser-subnet-0"]


# ------------------------------------------------------------------ strict network rules


def _rules(typ: str, inputs: dict[str, Any], references: dict[str, Any] | None = None) -> list[str]:
    from provision.clouds.gcp.strict import check
    from provision.clouds.mocking import MockContext
    from provision.clouds.strict import Resource

    ctx = MockContext(region="us-central1")
    ctx.references.update(references or {})
    return [f"{v.field}: {v.rule}" for v in check(Resource(typ, "x", inputs), ctx)]


VOLUME_NET = "projects/p/global/networks/vol-net"
REFERENCE = {
    "vol-x": {"network": {"network_id": VOLUME_NET, "cidr": "10.250.0.0/16", "service_range": "10.200.0.0/20"}}
}


def test_strict_subnet_in_another_stacks_network_takes_a_free_range_of_it() -> None:
    ok = {"network": VOLUME_NET, "ipCidrRange": "10.0.0.0/20", "region": "us-central1"}
    assert _rules(SUBNET, ok, REFERENCE) == []
    clash = _rules(SUBNET, {**ok, "ipCidrRange": "10.200.8.0/21"}, REFERENCE)
    assert clash == ["ipCidrRange: overlaps 10.200.0.0/20, a range already used in that network"]
    assert _rules(SUBNET, ok) == ["network: names no network of this project that exists"]
    link = f"https://www.googleapis.com/compute/v1/{VOLUME_NET}"
    rule = {"network": link, "direction": "INGRESS", "sourceRanges": ["10.0.0.0/20"], "name": "c-net-0-internal"}
    assert _rules(FIREWALL, rule, REFERENCE) == []
    assert _rules(FIREWALL, rule) == ["network: names no network of this project that exists"]


def test_strict_private_services_range_is_internal_sized_and_private() -> None:
    good = {"purpose": "VPC_PEERING", "addressType": "INTERNAL", "prefixLength": 20, "network": VOLUME_NET}
    address = "gcp:compute/globalAddress:GlobalAddress"
    assert _rules(address, good, REFERENCE) == []
    assert _rules(address, {**good, "prefixLength": 26}, REFERENCE) == [
        "prefixLength: VPC_PEERING needs a prefix length of 8 to 24"
    ]
    bad = _rules(address, {**good, "addressType": "EXTERNAL", "address": "8.8.0.0"}, REFERENCE)
    assert bad == ["addressType: VPC_PEERING needs INTERNAL", "address: must be in RFC 1918 space"]


def test_without_mock_the_gcp_volume_stack_runs_through_the_automation_api_in_its_region(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from provision.engine import automation

    calls: list[Any] = []

    class FakeStack:
        def outputs(self) -> dict[str, Any]:  # a new stack: no volume of that name yet
            return {}

        def set_config(self, key: str, value: Any) -> None:
            calls.append(("config", key, value.value))

        def up(self, program: Any, color: str) -> Any:
            calls.append(("up", callable(program)))
            return type("R", (), {"outputs": {}})()

    def open_stack(name: str, program: Any, *, root: Any, command: Any = None, create: bool = True) -> Any:
        calls.append(("open", name, create))
        return FakeStack()

    monkeypatch.setattr(automation, "open_stack", open_stack)
    path = tmp_path / "vol.yaml"
    path.write_text(yaml.safe_dump(VOLUME))
    code, out = cli("volume", "create", str(path))
    assert code == 0, out
    assert calls == [("open", "vol-llm-data", True), ("config", "gcp:region", "us-central1"), ("up", True)]


def test_zone_comes_from_the_catalog_or_is_asked_for(tmp_path: Path) -> None:
    from provision.catalog import load_catalog

    base = {**VOLUME, "zone": None, "region": "europe-west4"}
    create(tmp_path, {k: v for k, v in base.items() if v is not None})
    assert volumes()["llm-data"]["zone"] == load_catalog().zones("gcp", "europe-west4")[0]
    path = tmp_path / "far.yaml"
    path.write_text(
        yaml.safe_dump({**{k: v for k, v in base.items() if v is not None}, "name": "far", "region": "me-central2"})
    )
    code, out = cli("volume", "create", str(path), "--mock")
    flat = " ".join(out.split())
    assert code == 2 and "zone: None is needed: managed-lustre is zonal" in flat and "set zone to a zone of" in flat
    assert "far" not in volumes()


def test_retained_managed_lustre_records_its_service_range_and_is_attached_by_name(tmp_path: Path) -> None:
    own = {"kind": "managed-lustre", "size_gib": 18000, "throughput_mbps_per_tib": 500, "retain": True}
    assert cli("up", cluster_file(tmp_path, "keeper", own), "--mock", "--yes")[0] == 0
    [host] = [r for r in state("keeper").resources if r.type == NETWORK and r.name == "keeper-net-0"]
    [rule] = [r for r in state("keeper").resources if r.type == FIREWALL and r.name == "keeper-net-0-storage"]
    code, out = cli("down", "keeper", "--mock", "--yes")
    assert code == 0, out
    assert volumes()["keeper"]["filesystem"] == "managed-lustre"
    network = state("vol-keeper").outputs["network"]
    assert network["service_range"] == rule.inputs["sourceRanges"][0]  # the range the cluster's own rule opened
    path = cluster_file(tmp_path, "reuser", {"volume": "keeper"})
    code, out = cli("up", path, "--mock", "--yes")
    assert code == 0, out
    attached = _in_volume_vpc("reuser", host.id)
    assert [r.name for r in attached[SUBNET]] == ["reuser-subnet-0"]
    assert [r.inputs["sourceRanges"] for r in attached[FIREWALL] if "storage" in r.name] == [[network["service_range"]]]
    code, out = cli("down", "reuser", "--mock", "--yes")
    assert code == 0, out
    assert volumes()["keeper"]["used_by"] == []
