"""GCP adapter: the pure plan (no Pulumi). Checks, layout per machine type, scheduling, NCCL env."""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any

import pytest
from conftest import FIXED_NOW
from hypothesis import given
from hypothesis import strategies as st

from provision.clouds.gcp import layout
from provision.clouds.gcp.adapter import GcpAdapter, assert_labels, check_labels
from provision.clouds.gcp.plan import ManagedLustre, Nic, NoReservation, SpecificReservation
from provision.spec import NAME_PATTERN, load_spec
from provision.spec.errors import SpecError

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHByb3Zpc2lvbi1leGFtcGxlLWtleS1kby1ub3QtdXNl example"


def spec(**over: Any) -> Any:
    base: dict[str, Any] = {
        "name": "llm-train",
        "cloud": "gcp",
        "region": "us-central1",
        "zone": "us-central1-a",
        "instance_type": "a3-megagpu-8g",
        "nodes": 2,
        "access": {"allowed_cidrs": ["203.0.113.0/24"], "ssh_public_keys": [KEY]},
        "lifetime": {"ttl": "6h"},
        "gcp": {"project": "my-ml-project"},
    }
    for key, value in over.items():
        if value is None:
            base.pop(key, None)
        elif isinstance(value, dict) and isinstance(base.get(key), dict):
            base[key] = {**base[key], **value}
        else:
            base[key] = value
    return load_spec(base)


#: GPUDirect-TCPX is refused on the stock image (no TCPX kernel): a3-highgpu-8g plans pin a TCPX image.
TCPX_IMAGE = {"id": "projects/my-ml-project/global/images/a3high-tcpx-ubuntu2204"}


def plan(**over: Any) -> Any:
    if over.get("instance_type") == "a3-highgpu-8g" and "image" not in over:
        over["image"] = TCPX_IMAGE
    return GcpAdapter().plan(spec(**over), now=FIXED_NOW, owner="tester")


def problems(**over: Any) -> list[Any]:
    with pytest.raises(SpecError) as err:
        plan(**over)
    return list(err.value.problems)


def paths(**over: Any) -> list[str]:
    return [p.path for p in problems(**over)]


# ---------------------------------------------------------------------------- purity


def test_adapter_module_imports_no_pulumi_and_no_gcp_sdk() -> None:
    code = (
        "import sys, provision.clouds.gcp.adapter, provision.clouds.gcp.layout\n"
        "bad = [m for m in sys.modules if m == 'pulumi' or m.startswith(('pulumi.', 'pulumi_'))]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# ---------------------------------------------------------------------------- rejections


def test_plan_rejects_a3_ultra_on_demand() -> None:
    found = problems(instance_type="a3-ultragpu-8g", zone="us-central1-b")
    assert [p.path for p in found] == ["capacity.type"]
    assert "reservation" in found[0].fix and "flex-start" in found[0].fix


def test_plan_rejects_flex_start_without_ttl() -> None:
    found = problems(capacity={"type": "flex-start"}, lifetime={"ttl": None, "max_cost_usd": 5000})
    assert [p.path for p in found] == ["lifetime.ttl"]
    assert "7 days" in found[0].rule


def test_plan_rejects_flex_start_longer_than_seven_days() -> None:
    assert paths(capacity={"type": "flex-start"}, lifetime={"ttl": "8d"}) == ["lifetime.ttl"]


def test_plan_accepts_flex_start_of_exactly_seven_days() -> None:
    assert plan(capacity={"type": "flex-start"}, lifetime={"ttl": "7d"}).extra.allocation.resize_by == 2


@pytest.mark.parametrize(
    ("over", "path"),
    [
        ({"access": {"public_head_node": True}}, "access.public_head_node"),
        ({"capacity": {"type": "spot", "max_price_per_hour_usd": 40}}, "capacity.max_price_per_hour_usd"),
        ({"access": {"allowed_cidrs": ["2001:db8::/32"]}}, "access.allowed_cidrs[0]"),
        ({"gcp": {"host_subnet_cidr": "10.0.0.1/20"}}, "gcp.host_subnet_cidr"),
        ({"gcp": {"host_subnet_cidr": "8.8.8.0/24"}}, "gcp.host_subnet_cidr"),
        ({"gcp": {"gpu_subnet_cidr_base": "10.0.0.0/8"}}, "gcp.gpu_subnet_cidr_base"),  # overlaps the host subnet
        ({"gcp": {"gpu_subnet_cidr_base": "10.128.0.0/22"}}, "gcp.gpu_subnet_cidr_base"),  # 8 x /20 do not fit
        ({"gcp": {"reservation_bound": True}}, "gcp.reservation_bound"),
        ({"gcp": {"host_subnet_cidr": "10.0.0.0/29"}, "nodes": 8}, "gcp.host_subnet_cidr"),
        (
            {"instance_type": "a2-highgpu-8g", "gcp": {"max_topology_distance": "BLOCK"}},
            "gcp.max_topology_distance",
        ),
        ({"storage": {"shared": {"kind": "parallelstore", "size_gib": 12000}}}, "storage.shared.kind"),
    ],
)
def test_plan_rejects_gcp_only_problems(over: dict[str, Any], path: str) -> None:
    found = problems(**over)
    assert path in [p.path for p in found]
    assert all(p.fix for p in found)


def test_plan_reports_every_gcp_problem_at_once() -> None:
    found = paths(
        access={"public_head_node": True, "allowed_cidrs": ["2001:db8::/32"]},
        capacity={"type": "flex-start"},
        lifetime={"ttl": None},
        gcp={"host_subnet_cidr": "not-a-cidr"},
    )
    assert {"access.public_head_node", "access.allowed_cidrs[0]", "lifetime.ttl", "gcp.host_subnet_cidr"} <= set(found)


def test_parallelstore_is_allowed_on_a_22_04_image() -> None:
    image = {**TCPX_IMAGE, "versions": {"os": "ubuntu-22.04"}}
    storage = {"shared": {"kind": "parallelstore", "size_gib": 12000}}
    p = plan(instance_type="a3-highgpu-8g", image=image, storage=storage)
    assert p.extra.storage.kind == "parallelstore"
    assert p.image.versions["os"] == "ubuntu-22.04"


# ---------------------------------------------------------------------------- layout per machine type

LAYOUTS = [
    # instance type, zone, capacity, NICs, VPCs, subnets, GVNIC, MRDMA, MTUs
    ("a3-highgpu-8g", "us-central1-a", "on-demand", 5, 5, 5, 5, 0, {8244}),
    ("a3-megagpu-8g", "us-central1-a", "on-demand", 9, 9, 9, 9, 0, {8244}),
    ("a3-ultragpu-8g", "us-central1-b", "spot", 10, 3, 10, 2, 8, {8896}),
    ("a2-highgpu-8g", "us-central1-a", "on-demand", 1, 1, 1, 1, 0, {8896}),
    ("a2-ultragpu-8g", "us-central1-a", "on-demand", 1, 1, 1, 1, 0, {8896}),
]


@pytest.mark.parametrize(("itype", "zone", "cap", "nics", "vpcs", "subnets", "gvnic", "mrdma", "mtus"), LAYOUTS)
def test_layout_follows_googles_topology(
    itype: str, zone: str, cap: str, nics: int, vpcs: int, subnets: int, gvnic: int, mrdma: int, mtus: set[int]
) -> None:
    extra = plan(instance_type=itype, zone=zone, capacity={"type": cap}).extra
    assert len(extra.nics) == nics
    assert len(extra.networks) == vpcs
    assert sum(len(n.subnets) for n in extra.networks) == subnets
    assert [n.nic_type for n in extra.nics].count("GVNIC") == gvnic
    assert [n.nic_type for n in extra.nics].count("MRDMA") == mrdma
    assert {n.mtu for n in extra.networks} == mtus
    assert extra.nics[0] == Nic(network="net-0", subnet="subnet-0", nic_type="GVNIC")
    # every subnet is used by exactly one NIC
    all_subnets = sorted(s.key for n in extra.networks for s in n.subnets)
    assert sorted(n.subnet for n in extra.nics) == all_subnets


def test_a3_ultra_uses_one_roce_vpc_with_the_zone_profile_and_no_firewall() -> None:
    extra = plan(instance_type="a3-ultragpu-8g", zone="us-central1-b", capacity={"type": "spot"}).extra
    rdma = [n for n in extra.networks if n.role == "rdma"]
    assert len(rdma) == 1
    assert rdma[0].profile == "us-central1-b-vpc-roce"
    assert rdma[0].internal_firewall is False  # RoCE VPCs take no VPC firewall rules
    assert len(rdma[0].subnets) == 8


def test_gpu_subnets_are_disjoint_and_carved_from_the_base() -> None:
    extra = plan().extra
    import ipaddress

    gpu = [ipaddress.ip_network(s.cidr) for n in extra.networks if n.role == "gpu" for s in n.subnets]
    base = ipaddress.ip_network("10.128.0.0/9")
    assert all(g.subnet_of(base) for g in gpu)
    assert all(not a.overlaps(b) for i, a in enumerate(gpu) for b in gpu[i + 1 :])


def test_only_the_host_vpc_gets_ssh_and_nat() -> None:
    nets = plan(instance_type="a3-ultragpu-8g", zone="us-central1-b", capacity={"type": "spot"}).extra.networks
    assert [n.key for n in nets if n.ssh] == ["net-0"]
    assert [n.key for n in nets if n.nat] == ["net-0"]


def test_iap_range_is_on_by_default_and_can_be_turned_off() -> None:
    assert plan().extra.ssh_source_ranges == ("203.0.113.0/24", "35.235.240.0/20")
    assert plan(gcp={"allow_iap_ssh": False}).extra.ssh_source_ranges == ("203.0.113.0/24",)
    assert plan(access={"allowed_cidrs": []}, gcp={"allow_iap_ssh": False}).extra.ssh_source_ranges == ()


# ---------------------------------------------------------------------------- placement, allocation, scheduling

ALLOCATIONS = [
    # type, zone, capacity, placement kind, allocation mode, bulk, provisioning model
    ("a3-megagpu-8g", "us-central1-a", "on-demand", "workload-policy", "target-size", False, "STANDARD"),
    ("a3-megagpu-8g", "us-central1-a", "spot", "workload-policy", "target-size", False, "SPOT"),
    ("a3-megagpu-8g", "us-central1-a", "flex-start", "none", "resize-request", False, "FLEX_START"),
    ("a3-megagpu-8g", "us-central1-a", "reservation", "none", "target-size", False, "STANDARD"),
    ("a3-ultragpu-8g", "us-central1-b", "reservation", "workload-policy", "target-size", True, "RESERVATION_BOUND"),
    ("a3-ultragpu-8g", "us-central1-b", "flex-start", "none", "resize-request", False, "FLEX_START"),
    ("a2-highgpu-8g", "us-central1-a", "on-demand", "compact-placement", "target-size", False, "STANDARD"),
    ("a2-highgpu-8g", "us-central1-a", "reservation", "none", "target-size", False, "STANDARD"),
]


@pytest.mark.parametrize(("itype", "zone", "cap", "kind", "mode", "bulk", "model"), ALLOCATIONS)
def test_gang_allocation_and_placement_per_consumption_model(
    itype: str, zone: str, cap: str, kind: str, mode: str, bulk: bool, model: str
) -> None:
    capacity: dict[str, Any] = {"type": cap}
    if cap == "reservation":
        capacity["reservation"] = "my-reservation"
    extra = plan(instance_type=itype, zone=zone, capacity=capacity, nodes=4).extra
    assert extra.placement.kind == kind
    assert extra.allocation.mode == mode
    assert extra.allocation.bulk is bulk
    assert extra.scheduling.provisioning_model == model
    assert extra.scheduling.on_host_maintenance == "TERMINATE"
    if mode == "resize-request":
        assert (extra.allocation.target_size, extra.allocation.resize_by) == (0, 4)
    else:
        assert extra.allocation.target_size == 4


def test_spot_and_flex_start_never_restart_automatically_and_delete_on_termination() -> None:
    for cap in ("spot", "flex-start"):
        sched = plan(capacity={"type": cap}).extra.scheduling
        assert sched.automatic_restart is False
        assert sched.instance_termination_action == "DELETE"
    assert plan(capacity={"type": "spot"}).extra.scheduling.preemptible is True


def test_flex_start_runs_for_the_ttl_and_consumes_no_reservation() -> None:
    sched = plan(capacity={"type": "flex-start"}, lifetime={"ttl": "4h"}).extra.scheduling
    assert sched.lifetime == "run-duration"
    assert sched.max_run_duration_s == 4 * 3600
    assert sched.reservation_affinity == NoReservation()


def test_reservation_affinity_names_the_reservation() -> None:
    sched = plan(capacity={"type": "reservation", "reservation": "res-a"}).extra.scheduling
    assert sched.reservation_affinity == SpecificReservation(
        key="compute.googleapis.com/reservation-name", values=("res-a",)
    )


def test_reservation_bound_is_the_default_for_a3_ultra_and_can_be_switched_off() -> None:
    res = {"type": "reservation", "reservation": "res-a"}
    ultra = {"instance_type": "a3-ultragpu-8g", "zone": "us-central1-b", "capacity": res}
    assert plan(**ultra).extra.scheduling.instance_termination_action == "DELETE"
    off = plan(**ultra, gcp={"reservation_bound": False}).extra
    assert off.scheduling.provisioning_model == "STANDARD"
    assert off.allocation.bulk is False


def test_lifetime_uses_the_termination_time_and_none_without_a_lifetime() -> None:
    with_ttl = plan().extra.scheduling
    assert (with_ttl.lifetime, with_ttl.instance_termination_action) == ("termination-time", "DELETE")
    without = plan(lifetime={"ttl": None}).extra.scheduling
    assert (without.lifetime, without.instance_termination_action) == ("none", None)


def test_a3_ultra_boots_from_hyperdisk_and_others_from_pd_ssd() -> None:
    ultra = plan(instance_type="a3-ultragpu-8g", zone="us-central1-b", capacity={"type": "spot"})
    assert ultra.extra.boot_disk.type == "hyperdisk-balanced"
    assert plan().extra.boot_disk.type == "pd-ssd"


# ---------------------------------------------------------------------------- identity, labels, storage


def test_node_service_account_has_minimal_scopes_never_cloud_platform() -> None:
    sa = plan().extra.service_account
    assert not any(s.endswith("/cloud-platform") for s in sa.scopes)
    assert sa.roles == ("roles/logging.logWriter", "roles/monitoring.metricWriter")


@given(st.from_regex(NAME_PATTERN, fullmatch=True))
def test_service_account_id_and_lustre_name_fit_gcp_rules_for_any_cluster_name(name: str) -> None:
    assert re.fullmatch(r"[a-z](?:[-a-z0-9]{4,28}[a-z0-9])", layout.service_account_id(name))
    fs = layout.lustre_filesystem_name(name)
    assert 1 <= len(fs) <= 8 and fs.isalnum()


def test_plan_tags_are_gcp_labels() -> None:
    p = plan(tags={"team": "research"})
    assert check_labels(p.tags) == []
    assert_labels(p.tags)


def test_assert_labels_rejects_an_upper_case_label() -> None:
    with pytest.raises(SpecError) as err:
        assert_labels({"provision-cluster": "Bad_Value"})
    assert err.value.problems[0].path == "tags.provision-cluster"


LUSTRE = {"kind": "managed-lustre", "size_gib": 36000, "throughput_mbps_per_tib": 250}


def test_lustre_plan_uses_psa_and_the_catalog_tier() -> None:
    st_ = plan(storage={"shared": LUSTRE}).extra.storage
    assert st_ is not None and st_.model_copy(update={"location": None}) == ManagedLustre(
        retain=False,
        mount="/shared",
        instance_id="llm-train-lustre",
        filesystem="llmtrain",
        capacity_gib="36000",
        throughput="250",
        psa=True,
        firewall=True,
        firewall_ports=("988", "6988"),
        location=None,
    )


def test_parallelstore_plan_opens_every_tcp_port_from_the_psa_range() -> None:
    st_ = plan(instance_type="a3-highgpu-8g", storage={"shared": {"kind": "parallelstore", "size_gib": 12000}})
    # Google's Parallelstore VPC set-up: `firewall-rules create --allow=tcp --source-ranges=<PSA range>`
    assert (st_.extra.storage.firewall, st_.extra.storage.firewall_ports) == (True, ())


def test_lustre_size_off_the_tier_step_is_rejected_by_the_catalog() -> None:
    assert "storage.shared.size_gib" in paths(storage={"shared": {**LUSTRE, "size_gib": 40000}})


def test_filestore_uses_direct_peering_and_zonal_location() -> None:
    st_ = plan(storage={"shared": {"kind": "filestore", "tier": "BASIC_SSD", "size_gib": 2560}}).extra.storage
    assert (st_.connect_mode, st_.psa, st_.location, st_.tier) == (
        "DIRECT_PEERING",
        False,
        "us-central1-a",
        "BASIC_SSD",
    )


def test_retain_keeps_the_host_vpc_with_the_filesystem() -> None:
    nets = plan(storage={"shared": {**LUSTRE, "retain": True}}).extra.networks
    assert [n.key for n in nets if n.retain] == ["net-0"]
    assert not any(n.retain for n in plan(storage={"shared": LUSTRE}).extra.networks)


# ---------------------------------------------------------------------------- NCCL


@pytest.mark.parametrize(
    ("itype", "zone", "cap", "must"),
    [
        ("a3-highgpu-8g", "us-central1-a", "on-demand", {"NCCL_NET": "GPUDirectTCPX_v7"}),
        ("a3-megagpu-8g", "us-central1-a", "on-demand", {"NCCL_FASTRAK_USE_LLCM": "1"}),
        ("a3-ultragpu-8g", "us-central1-b", "spot", {"NCCL_NET": "gIB", "NCCL_IB_QPS_PER_CONNECTION": "4"}),
    ],
)
def test_nccl_env_matches_the_fabric(itype: str, zone: str, cap: str, must: dict[str, str]) -> None:
    env = plan(instance_type=itype, zone=zone, capacity={"type": cap}).nccl_env
    assert must.items() <= env.items()
    assert env["NCCL_CROSS_NIC"] == "0"


def test_tcpxo_env_lists_the_eight_gpu_nics() -> None:
    assert len(plan().nccl_env["NCCL_FASTRAK_IFNAME"].split(",")) == 8


def test_images_are_pinned_by_exact_name_never_a_family() -> None:
    for itype, zone, cap in [(t, z, c) for t, z, c, *_ in LAYOUTS if t != "a3-highgpu-8g"]:
        ref = plan(instance_type=itype, zone=zone, capacity={"type": cap}).image.ref
        assert "/family/" not in ref
        assert re.fullmatch(r"projects/ubuntu-os-accelerator-images/global/images/ubuntu-accelerator-.*-v\d{8}", ref)


def test_a_pinned_image_keeps_the_fabric_pieces_the_setup_installs() -> None:
    custom = "projects/my-ml-project/global/images/a3high-tcpx-20261101"
    p = plan(instance_type="a3-highgpu-8g", image={"id": custom, "versions": {"nccl": "2.19.4-1"}})
    assert p.image.ref == custom and p.image.source == "spec"
    assert p.image.versions["nccl_plugin"].endswith("nccl-plugin-gpudirecttcpx-dev:v3.1.12")
    assert p.image.versions["nccl"] == "2.19.4-1"  # the spec's pin wins
    assert "driver" not in p.image.versions and "os" not in p.image.versions
    assert not any("TCPX kernel" in w for w in p.warnings)
