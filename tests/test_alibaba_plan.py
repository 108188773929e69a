"""The Alibaba adapter's pure plan: checks, decisions, lifetime, NCCL environment. No Pulumi involved."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from datetime import timedelta
from typing import Any

import pytest
from conftest import FIXED_NOW, ROOT, stack_spec

from provision.catalog import load_catalog
from provision.clouds.alibaba.adapter import (
    AUTO_RELEASE_MIN_MINUTES,
    DEPLOYMENT_SET_MAX,
    AlibabaAdapter,
    image_lookup,
)
from provision.clouds.alibaba.plan import auto_release_time
from provision.spec import load_spec
from provision.spec.errors import SpecError

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHByb3Zpc2lvbi1leGFtcGxlLWtleS1kby1ub3QtdXNl provision-example"


def spec(**overrides: Any) -> Any:
    """A valid GN8 spec with ``overrides`` merged in (top-level keys)."""
    data: dict[str, Any] = {
        "name": "ali-test",
        "cloud": "alibaba",
        "region": "cn-hangzhou",
        "zone": "cn-hangzhou-i",
        "instance_type": "ecs.ebmgn8v.48xlarge",
        "nodes": 2,
        "access": {"ssh_public_keys": [KEY], "allowed_cidrs": ["203.0.113.0/24"]},
    }
    data.update(overrides)
    return load_spec(data)


def catalog_with(**changes: dict[str, Any]) -> Any:
    """The test catalog with some Alibaba rows changed (``ecs_type_name={field: value}``)."""
    base = load_catalog()
    rows = []
    for offer in base.instances:
        change = {**FIXED_ROWS.get(offer.instance_type, {}), **changes.get(_key(offer.instance_type), {})}
        rows.append(offer.model_validate({**offer.model_dump(), **change}) if change else offer)
    return dataclasses.replace(base, instances=tuple(rows))


def _key(instance_type: str) -> str:
    return instance_type.replace(".", "_").replace("-", "_")


#: Regions the tests rely on, independent of what the data file records today: GN8 sold (via sales) in
#: cn-hangzhou with unpublished zones, GN7 in cn-beijing.
GN8_REGION = {"cn-hangzhou": {"zones": [], "sales_only": True}}
GN7_REGION = {"cn-beijing": {"zones": ["cn-beijing-l"]}}
FIXED_ROWS: dict[str, dict[str, Any]] = {
    "ecs.ebmgn8v.48xlarge": {"regions": GN8_REGION},
    "ecs.gn8v-8x.48xlarge": {"regions": GN8_REGION},
    "ecs.ebmgn7ex.32xlarge": {"regions": GN7_REGION},
    "ecs.gn7e-c16g1.32xlarge": {"regions": GN7_REGION},
}
TEST_CATALOG = catalog_with()


def plan(s: Any, catalog: Any = None) -> Any:
    return AlibabaAdapter().plan(s, catalog=catalog or TEST_CATALOG, now=FIXED_NOW, owner="tester", stack="test")


def problems(s: Any, catalog: Any = None) -> dict[str, str]:
    with pytest.raises(SpecError) as err:
        plan(s, catalog)
    return {p.path: f"{p.rule} | {p.fix}" for p in err.value.problems}


# ---------------------------------------------------------------- the importable adapter is pure


def test_adapter_module_imports_no_pulumi_or_cloud_sdk() -> None:
    code = (
        "import sys, provision.clouds.alibaba.adapter; print(sorted(m for m in sys.modules if m.startswith('pulumi')))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ---------------------------------------------------------------- eRDMA layout per instance type


@pytest.mark.parametrize(
    ("instance_type", "region", "cards", "jumbo", "nccl_hca"),
    [
        # Jumbo frames only where Alibaba documents them (gn8v); elsewhere eRDMA runs at MTU 1400.
        ("ecs.ebmgn8v.48xlarge", "cn-hangzhou", [0, 1], False, "erdma"),  # two network cards, an ERI on each
        ("ecs.gn8v-8x.48xlarge", "cn-hangzhou", [None], True, "erdma"),  # one ERI, card chosen by ECS
        ("ecs.ebmgn7ex.32xlarge", "cn-beijing", [None, None], False, "erdma"),  # two ERIs, cards chosen by ECS
        ("ecs.gn7e-c16g1.32xlarge", "cn-beijing", [], False, None),  # no RDMA: plain VPC TCP
    ],
)
def test_plan_puts_an_eri_on_every_card_the_type_offers(
    instance_type: str, region: str, cards: list[int | None], jumbo: bool, nccl_hca: str | None
) -> None:
    p = plan(spec(instance_type=instance_type, region=region, zone=f"{region}-{'l' if 'beijing' in region else 'i'}"))
    assert list(p.extra.eri_cards) == cards
    assert p.extra.jumbo_frames is jumbo
    assert p.extra.mtu == (8500 if jumbo else 1400 if cards else 1500)
    assert p.nccl_env.get("NCCL_IB_HCA") == nccl_hca
    assert p.nccl_env["NCCL_SOCKET_IFNAME"] == "eth0"
    assert p.nccl_env["NCCL_IB_DISABLE"] == ("0" if nccl_hca else "1")


def test_plan_with_fabric_none_on_an_erdma_type_gets_no_eri() -> None:
    p = plan(spec(fabric="none"))
    assert p.extra.eri_cards == () and p.extra.jumbo_frames is False
    assert p.nccl_env["NCCL_IB_DISABLE"] == "1"


def test_plan_erdma_without_jumbo_frames_uses_mtu_1400() -> None:
    # Alibaba, "Enable eRDMA on a GPU-accelerated instance": with NCCL's LL128 protocol the MTU must be 8500 with
    # jumbo frames and 1400 without them; a wrong MTU causes data consistency problems.
    p = plan(spec(alibaba={"jumbo_frames": False}))
    assert p.extra.jumbo_frames is False and p.extra.mtu == 1400
    assert p.extra.eri_cards == (0, 1)


def test_nccl_env_for_erdma_lets_nccl_pick_the_ipv4_rocev2_gid_per_device() -> None:
    env = plan(spec()).nccl_env
    assert env == {
        "NCCL_SOCKET_IFNAME": "eth0",
        "NCCL_IB_DISABLE": "0",
        "NCCL_IB_HCA": "erdma",
        "NCCL_IB_GID_INDEX": "-1",
        "NCCL_IB_ADDR_FAMILY": "AF_INET",
        "NCCL_IB_ROCE_VERSION_NUM": "2",
        "NCCL_IB_QPS_PER_CONNECTION": "8",
        "NCCL_MIN_NCHANNELS": "16",
        "NCCL_NET_PLUGIN": "none",
        "NCCL_NET_GDR_LEVEL": "SYS",
    }


# ---------------------------------------------------------------- placement


@pytest.mark.parametrize(
    ("nodes", "groups"),
    [(1, []), (2, [2]), (20, [20]), (21, [11, 10]), (45, [15, 15, 15]), (64, [16, 16, 16, 16])],
)
def test_plan_splits_nodes_into_lowlatency_deployment_sets_of_at_most_20(nodes: int, groups: list[int]) -> None:
    p = plan(spec(nodes=nodes))
    assert list(p.extra.placement_groups) == groups
    assert sum(groups) in (0, nodes) and all(g <= DEPLOYMENT_SET_MAX for g in groups)
    assert any("deployment sets" in w for w in p.warnings) is (nodes > DEPLOYMENT_SET_MAX)


def test_plan_without_placement_option_creates_no_deployment_set() -> None:
    assert plan(spec(alibaba={"placement": "none"})).extra.placement_groups == ()


def test_plan_spot_nodes_get_no_deployment_set_and_a_warning() -> None:
    cat = catalog_with(ecs_ebmgn8v_48xlarge={"consumption": ["on-demand", "spot"]})
    p = plan(spec(capacity={"type": "spot", "max_price_per_hour_usd": 20}), cat)
    assert p.extra.placement_groups == ()
    assert p.extra.spot_strategy == "SpotWithPriceLimit" and p.extra.spot_price_limit == 20
    assert any("cannot join a deployment set" in w for w in p.warnings)
    assert any("currency" in w for w in p.warnings)


def test_plan_reservation_targets_the_private_pool() -> None:
    p = plan(spec(capacity={"type": "reservation", "reservation": "crp-bp67acfmxazb4p0001"}))
    assert p.extra.private_pool_id == "crp-bp67acfmxazb4p0001"
    assert p.extra.charge_type == "PostPaid" and p.extra.spot_strategy == "NoSpot"


# ---------------------------------------------------------------- lifetime: auto_release_time


def test_auto_release_time_is_the_expiry_in_utc_iso_format() -> None:
    p = plan(spec(lifetime={"ttl": "2h"}))
    value = auto_release_time(p)
    assert value == "2026-11-29T14:00:00Z"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", value)
    assert p.expires_at is not None
    ahead = p.expires_at - FIXED_NOW
    assert timedelta(minutes=AUTO_RELEASE_MIN_MINUTES) <= ahead < timedelta(days=3 * 365)


def test_auto_release_time_from_a_cost_cap() -> None:
    # 2 nodes x 50 + the NAT gateway's 0.034 (cn-hangzhou) = 100.034/h -> 300 USD last 2.99898 h = 2:59:56.
    p = plan(spec(lifetime={"max_cost_usd": 300, "hourly_price_usd": 50}))
    assert auto_release_time(p) == "2026-11-29T14:59:56Z"


def test_no_auto_release_time_without_a_lifetime() -> None:
    p = plan(spec())
    assert p.expires_at is None and auto_release_time(p) is None


def test_subscription_nodes_have_no_auto_release_time() -> None:
    p = plan(spec(alibaba={"subscription_months": 1}))
    assert p.extra.charge_type == "PrePaid" and p.extra.period_months == 1
    assert p.extra.auto_release is False and auto_release_time(p) is None
    assert any("force_delete" in w for w in p.warnings)


def test_plan_rejects_subscription_with_a_lifetime() -> None:
    found = problems(spec(alibaba={"subscription_months": 3}, lifetime={"ttl": "6h"}))
    assert "auto_release_time applies to pay-as-you-go" in found["alibaba.subscription_months"]


def test_plan_rejects_subscription_with_a_reservation() -> None:
    found = problems(spec(alibaba={"subscription_months": 3}, capacity={"type": "reservation", "reservation": "crp-x"}))
    assert "reservation" in found["alibaba.subscription_months"]


def test_plan_rejects_ttl_too_short_for_auto_release() -> None:
    found = problems(spec(lifetime={"ttl": "40m"}))
    assert "at least 30 minutes" in found["lifetime.ttl"] and "45m" in found["lifetime.ttl"]


def test_plan_accepts_ttl_of_45_minutes() -> None:
    assert auto_release_time(plan(spec(lifetime={"ttl": "45m"}))) == "2026-11-29T12:45:00Z"


# ---------------------------------------------------------------- storage


def test_plan_rejects_cpfs_lingjun_with_the_reason() -> None:
    found = problems(spec(storage={"shared": {"kind": "cpfs-lingjun", "size_gib": 10240}}))
    assert "bmcpfs" in found["storage.shared.kind"] and "kind cpfs" in found["storage.shared.kind"]


@pytest.mark.parametrize(
    ("shared", "expected"),
    [
        (  # auto prefers a priced tier: advance_200 has Alibaba's CNY price, advance_100 none
            {"kind": "auto"},
            {"file_system_type": "cpfs", "storage_type": "advance_200", "capacity": 3600, "access": "protocol-service"},
        ),
        (
            {"kind": "cpfs", "tier": "advance_200", "size_gib": 36000},
            {"file_system_type": "cpfs", "protocol_type": "cpfs", "storage_type": "advance_200", "capacity": 36000},
        ),
        (
            {"kind": "nas", "tier": "Capacity"},
            {"file_system_type": "standard", "storage_type": "Capacity", "capacity": None, "encrypt_type": 1},
        ),
        (
            {"kind": "nas-extreme", "tier": "advance", "size_gib": 200},
            {"file_system_type": "extreme", "capacity": 200, "encrypt_type": 1, "export_path": "/share"},
        ),
    ],
)
def test_plan_storage_decisions(shared: dict[str, Any], expected: dict[str, Any]) -> None:
    storage = plan(spec(storage={"shared": shared})).extra.storage
    assert storage is not None
    assert {k: getattr(storage, k) for k in expected} == expected


def test_plan_extreme_nas_uses_the_users_kms_key() -> None:
    p = plan(spec(storage={"shared": {"kind": "nas-extreme", "size_gib": 100}}, alibaba={"kms_key_id": "key-hzz1"}))
    assert p.extra.storage.encrypt_type == 2 and p.extra.storage.kms_key_id == "key-hzz1"
    assert p.extra.kms_key_id == "key-hzz1"


def test_plan_rejects_cpfs_below_the_catalog_minimum() -> None:
    found = problems(spec(storage={"shared": {"kind": "cpfs", "size_gib": 1000}}))
    assert "minimum" in found["storage.shared.size_gib"]


def test_plan_retaining_cpfs_retains_the_network_it_lives_in() -> None:
    p = plan(spec(storage={"shared": {"kind": "cpfs", "retain": True}}))
    assert p.extra.retain_network is True
    assert any("retained with it" in w for w in p.warnings)
    assert plan(spec(storage={"shared": {"kind": "nas", "retain": True}})).extra.retain_network is False


# ---------------------------------------------------------------- other checks, all reported at once


def test_plan_requires_a_zone_when_the_catalog_lists_none() -> None:
    found = problems(spec(zone=None))
    assert "DescribeAvailableResource" in found["zone"]


def test_plan_rejects_public_head_without_allowed_cidrs_and_missing_keys_together() -> None:
    found = problems(spec(access={"public_head_node": True}))
    assert set(found) >= {"access.public_head_node", "access.ssh_public_keys"}


RSA_KEY = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQCwcHJvdmlzaW9uLWV4YW1wbGUtcnNhLWtleQ== rsa-example"
ECDSA_KEY = "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTY= ecdsa-example"


@pytest.mark.parametrize(
    ("keys", "key_pair"),
    [([KEY, RSA_KEY], RSA_KEY), ([ECDSA_KEY, RSA_KEY], ECDSA_KEY), ([RSA_KEY], RSA_KEY)],
)
def test_plan_key_pair_takes_the_first_key_ecs_can_import(keys: list[str], key_pair: str) -> None:
    # ECS ImportKeyPair takes rsa, dsa and ecdsa keys only: an ed25519 key pair would fail at `pulumi up`.
    p = plan(spec(access={"ssh_public_keys": keys}))
    assert p.extra.key_pair_public_key == key_pair
    assert not any("key pair" in w for w in p.warnings)


def test_plan_ed25519_only_gets_no_key_pair_and_a_warning() -> None:
    p = plan(spec())
    assert p.extra.key_pair_public_key is None
    assert any("ImportKeyPair" in w and "ubuntu" in w for w in p.warnings)


def test_plan_rejects_tags_alibaba_reserves_and_too_many_tags() -> None:
    found = problems(spec(tags={"aliyun-team": "x", "team": "aliyun-core"}))
    assert "reserves" in found["tags.aliyun-team"] and "reserves" in found["tags.team"]
    many = {f"t{i}": "v" for i in range(16)}
    assert "at most 20 tags" in problems(spec(tags=many))["tags"]


def test_plan_rejects_a_vpc_too_small_for_the_nodes() -> None:
    found = problems(spec(nodes=100, alibaba={"vpc_cidr": "10.1.0.0/24"}))
    assert "100 nodes with 2 ENI(s)" in found["alibaba.vpc_cidr"]


@pytest.mark.parametrize("cidr", ["8.8.8.0/24", "10.0.0.0/28", "10.0.0.1/16", "fd00::/48"])
def test_options_reject_bad_vpc_cidrs(cidr: str) -> None:
    with pytest.raises(SpecError) as err:
        spec(alibaba={"vpc_cidr": cidr})
    assert [p.path for p in err.value.problems] == ["alibaba.vpc_cidr"]


def test_plan_reports_every_problem_at_once() -> None:
    s = spec(
        zone=None,
        tags={"aliyun": "x"},
        storage={"shared": {"kind": "cpfs-lingjun", "size_gib": 10240}},
        access={"public_head_node": True},
        lifetime={"ttl": "35m"},
    )
    found = problems(s)
    assert {"zone", "tags.aliyun", "storage.shared.kind", "access.public_head_node", "lifetime.ttl"} <= set(found)


# ---------------------------------------------------------------- image and stacks


def test_plan_image_is_a_one_time_lookup_with_a_warning() -> None:
    p = plan(spec())
    assert image_lookup(p) == r"^ubuntu_22_04_uefi_x64_20G_alibase_[0-9]{8}\.vhd$"
    assert any("image_pin" in w for w in p.warnings)
    assert p.image.versions["erdma_installer"] == "1.5.7"


def test_plan_pinned_image_needs_no_lookup() -> None:
    p = plan(spec(image={"id": "m-bp1g7004ksh0oeuc****"}))
    assert image_lookup(p) is None and not any("image_pin" in w for w in p.warnings)


@pytest.mark.parametrize("stack", ["alibaba-gn8-64", "alibaba-gn8-ci"])
def test_stacks_plan(stack: str) -> None:
    p = plan(stack_spec(stack))
    assert p.instance_type == "ecs.ebmgn8v.48xlarge" and p.extra.eri_cards == (0, 1)
    assert p.gpus == (64 if stack.endswith("64") else 16)


def test_ci_stack_is_capped_and_releases_itself() -> None:
    p = plan(stack_spec("alibaba-gn8-ci"))
    assert p.spec.lifetime.hourly_price_usd is not None  # the catalog has no price: the stack states one
    assert p.cost.lifetime_usd is not None and p.cost.lifetime_usd <= (p.spec.lifetime.max_cost_usd or 0)
    assert auto_release_time(p) == "2026-11-29T14:00:00Z"


def test_cpfs_plan_warns_that_nodes_use_plain_nfs_and_what_throughput_that_path_can_give() -> None:
    """Review B4: no CPFS client today. The recommended CPFS-NFS client stops at Ubuntu 20.04 and needs a public IP;
    the POSIX client needs quorum nodes and console steps; the plan says so and bounds the NFS path's throughput by
    the file system's published figure (CPFS Specifications: min{0.2 x GiB, 45,000} MB/s for advance_200)."""
    p = plan(spec(storage={"shared": {"kind": "cpfs", "tier": "advance_200", "size_gib": 36000}}))
    text = " ".join(p.warnings)
    assert "plain NFSv3" in text and "Ubuntu up to 20.04" in text and "quorum" in text
    assert "7,200 MB/s" in text  # 0.2 MB/s per GiB x 36,000 GiB


def test_cpfs_plan_says_the_nodes_mount_at_boot_and_what_rights_deploying_needs() -> None:
    p = plan(spec(storage={"shared": {"kind": "cpfs", "tier": "advance_200", "size_gib": 36000}}))
    text = " ".join(p.warnings)
    assert "at every boot" in text and "do not mount" not in text
    assert "ram:PassRole" in text and "ram:CreateRole" in text
    storage = p.extra.storage
    assert storage.lookup_role == f"{p.name}-{p.region}-nodes"
    assert storage.nas_endpoint == f"https://nas-vpc.{p.region}.aliyuncs.com"
