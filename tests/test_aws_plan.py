"""AWS adapter, plan half: EFA layouts, cloud rules, warnings, NCCL env and user data (pure, no Pulumi)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from conftest import FIXED_NOW

from provision.catalog import load_catalog
from provision.clouds.aws import userdata
from provision.clouds.aws.adapter import (
    EFA_ENV,
    FLEET_MAX_NODES,
    AwsAdapter,
    efa_interfaces,
    fsx_efa_allowed,
    vpc_layout,
)
from provision.clouds.aws.plan import Fsx, NetworkInterface, PlacementGroup
from provision.planning.bootstrap import parse
from provision.spec import load_spec
from provision.spec.errors import SpecError

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHByb3Zpc2lvbi1leGFtcGxlLWtleS1kby1ub3QtdXNl provision-example"
KEY2 = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFNlY29uZC1leGFtcGxlLWtleS1mb3ItdGVzdHMtb25seQ second"


def spec(**over: Any) -> Any:
    base: dict[str, Any] = {
        "name": "t1",
        "cloud": "aws",
        "region": "us-east-1",
        "gpu": "H100",
        "nodes": 2,
        "owner": "tester",
        "access": {"ssh_public_keys": [KEY], "allowed_cidrs": ["203.0.113.0/24"]},
    }
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            base[key] = {**base[key], **value}
        else:
            base[key] = value
    return load_spec(base)


def plan(**over: Any) -> Any:
    return AwsAdapter().plan(spec(**over), now=FIXED_NOW)


def problems(**over: Any) -> dict[str, str]:
    with pytest.raises(SpecError) as err:
        plan(**over)
    return {p.path: f"{p.rule} | {p.fix}" for p in err.value.problems}


# ---------------------------------------------------------------------- EFA layout


@pytest.mark.parametrize(
    ("instance_type", "entries", "cards"),
    [
        ("p5.48xlarge", 33, 32),
        ("p5e.48xlarge", 33, 32),
        ("p5en.48xlarge", 17, 16),
        ("p4d.24xlarge", 5, 4),
        ("p4de.24xlarge", 5, 4),
    ],  # fmt: skip
)
def test_efa_layout_follows_catalog_cards(instance_type: str, entries: int, cards: int) -> None:
    offer = load_catalog().instance("aws", instance_type)
    assert offer is not None and offer.network_cards == cards
    layout = efa_interfaces("efa", offer.fabric_interfaces, offer.network_cards)
    assert len(layout) == entries
    assert layout[0] == NetworkInterface(card=0, device=0, type="interface")
    assert layout[1] == NetworkInterface(card=0, device=1, type="efa-only")
    assert [n.card for n in layout[2:]] == list(range(1, cards))
    assert {n.device for n in layout[2:]} == {0}
    assert {n.type for n in layout[1:]} == {"efa-only"}
    assert sorted({n.card for n in layout}) == list(range(cards))
    # Only the primary takes an IP: one subnet address per node.
    assert sum(n.type == "interface" for n in layout) == 1


def test_efa_layout_is_one_ena_interface_without_fabric() -> None:
    assert efa_interfaces("none", 32, 32) == (NetworkInterface(card=0, device=0, type="interface"),)


def test_plan_carries_p5_layout_and_nccl_env() -> None:
    p = plan()
    assert len(p.extra.efa_interfaces) == 33
    assert p.fabric_interfaces == 32
    assert p.nccl_env == EFA_ENV
    assert p.nccl_env["FI_PROVIDER"] == "efa"
    assert p.nccl_env["NCCL_BUFFSIZE"] == "8388608" and p.nccl_env["NCCL_P2P_NET_CHUNKSIZE"] == "524288"
    # Obsolete on the Ubuntu 22.04 DLAMI kernel (fork-safe rdma-core) and on current aws-ofi-nccl; RDMA is
    # libfabric's default where the device has it (awsome-distributed-training dropped the variable, PR #851).
    for obsolete in (
        "FI_EFA_FORK_SAFE",
        "FI_EFA_USE_DEVICE_RDMA",
        "NCCL_PROTO",
        "FI_EFA_ENABLE_SHM_TRANSFER",
        "NCCL_TREE_THRESHOLD",
    ):
        assert obsolete not in p.nccl_env


def test_plan_without_fabric_has_socket_env_only() -> None:
    p = plan(fabric="none")
    assert p.nccl_env == {"NCCL_SOCKET_IFNAME": "^docker,lo,veth"}
    assert p.extra.efa_interfaces == (NetworkInterface(card=0, device=0, type="interface"),)


def test_vpc_layout_quarters_the_vpc() -> None:
    assert vpc_layout("10.0.0.0/16") == {
        "vpc_cidr": "10.0.0.0/16",
        "private_cidr": "10.0.0.0/18",
        "public_cidr": "10.0.64.0/24",
    }


# ---------------------------------------------------------------------- cloud rules


def test_plan_rejects_capacity_block_without_cr_id() -> None:
    found = problems(zone="us-east-1a", capacity={"type": "capacity-block", "reservation": "my-block"})
    assert "capacity.reservation" in found and "cr-" in found["capacity.reservation"]


def test_plan_rejects_reservation_without_zone() -> None:
    found = problems(capacity={"type": "reservation", "reservation": "cr-0123456789abcdef0"})
    assert "zone" in found and "Availability Zone" in found["zone"]


def test_plan_rejects_spot_on_asg() -> None:
    found = problems(capacity={"type": "spot"}, aws={"allocation": "asg"})
    assert "aws.allocation" in found


@pytest.mark.parametrize(
    ("aws", "path"),
    [({"subnet_id": "subnet-0123456789abcdef0"}, "aws.subnet_id"), ({"vpc_id": "vpc-0123456789abcdef0"}, "aws.vpc_id")],
)
def test_plan_rejects_half_an_existing_network(aws: dict[str, str], path: str) -> None:
    assert path in problems(aws=aws)


def test_plan_rejects_fleet_over_min_target_capacity_limit() -> None:
    found = problems(nodes=FLEET_MAX_NODES + 24)
    assert "nodes" in found and "aws.allocation: asg" in found["nodes"]


def test_plan_accepts_large_cluster_on_asg() -> None:
    assert plan(nodes=1024, aws={"allocation": "asg"}).nodes == 1024


def test_plan_rejects_too_small_vpc_for_nodes() -> None:
    found = problems(nodes=1024, aws={"allocation": "asg", "vpc_cidr": "10.0.0.0/20"})
    assert "aws.vpc_cidr" in found


@pytest.mark.parametrize("cidr", ["10.0.0.0/24", "fd00::/48", "10.0.0.0/33"])
def test_options_reject_bad_vpc_cidr(cidr: str) -> None:
    assert "aws.vpc_cidr" in problems(aws={"vpc_cidr": cidr})


def test_plan_rejects_bad_ami_id() -> None:
    assert "image.id" in problems(image={"id": "ubuntu-latest"})


def test_plan_rejects_ipv6_ssh_networks() -> None:
    found = problems(access={"allowed_cidrs": ["2001:db8::/32"]})
    assert "IPv4-only" in found["access.allowed_cidrs"]


def test_plan_rejects_unreachable_public_head_node() -> None:
    found = problems(access={"allowed_cidrs": [], "public_head_node": True})
    assert "access.public_head_node" in found


def test_plan_rejects_world_route_for_public_head_node() -> None:
    found = problems(access={"allowed_cidrs": ["0.0.0.0/0"], "allow_world_ssh": True, "public_head_node": True})
    assert "NAT gateway" in found["access.allowed_cidrs"]


def test_plan_reports_every_aws_problem_at_once() -> None:
    found = problems(
        capacity={"type": "capacity-block", "reservation": "block-1"},
        aws={"subnet_id": "subnet-0123456789abcdef0"},
        image={"id": "latest"},
        access={"allowed_cidrs": ["2001:db8::/32"]},
    )
    assert {"capacity.reservation", "zone", "aws.subnet_id", "image.id", "access.allowed_cidrs"} <= set(found)
    for text in found.values():
        rule, _, fix = text.partition(" | ")
        assert rule and fix


# ---------------------------------------------------------------------- FSx


@pytest.mark.parametrize(
    ("tier", "size", "tput", "ok"),
    [("PERSISTENT_2", 19200, 250, True), ("PERSISTENT_2", 4800, 1000, True), ("PERSISTENT_2", 9600, 250, False),
     ("PERSISTENT_2", 38400, 125, True), ("SCRATCH_2", 4800, None, False), ("PERSISTENT_1", 4800, 200, False)],
)  # fmt: skip
def test_fsx_efa_size_steps(tier: str, size: int, tput: int | None, ok: bool) -> None:
    assert fsx_efa_allowed(tier, size, tput) is ok


def test_plan_turns_on_fsx_efa_when_the_size_allows() -> None:
    shared = {"kind": "fsx-lustre", "tier": "PERSISTENT_2", "size_gib": 19200, "throughput_mbps_per_tib": 250}
    fsx = plan(storage={"shared": shared}).extra.fsx
    assert fsx == Fsx(
        deployment_type="PERSISTENT_2",
        storage_capacity=19200,
        per_unit_storage_throughput=250,
        efa=True,
        metadata_mode="AUTOMATIC",
        lustre_version="2.15",
        retain=False,
    )


def test_plan_warns_when_fsx_runs_without_efa() -> None:
    shared = {"kind": "fsx-lustre", "tier": "PERSISTENT_2", "size_gib": 2400, "throughput_mbps_per_tib": 250}
    p = plan(storage={"shared": shared})
    assert p.extra.fsx.efa is False
    assert any("without EFA" in w and "19200" in w for w in p.warnings)


def test_plan_rejects_forced_fsx_efa_on_scratch() -> None:
    shared = {"kind": "fsx-lustre", "tier": "SCRATCH_2", "size_gib": 2400}
    found = problems(storage={"shared": shared}, aws={"fsx_efa": True})
    assert "PERSISTENT_2" in found["aws.fsx_efa"]


def test_scratch_fsx_has_no_throughput_or_metadata() -> None:
    fsx = plan(storage={"shared": {"kind": "fsx-lustre", "tier": "SCRATCH_2", "size_gib": 1200}}).extra.fsx
    assert fsx is not None and fsx.per_unit_storage_throughput is None and fsx.metadata_mode is None
    assert fsx.efa is False


def test_plan_warns_that_retained_storage_keeps_its_network() -> None:
    shared = {"kind": "fsx-lustre", "tier": "SCRATCH_2", "size_gib": 1200, "retain": True}
    p = plan(storage={"shared": shared})
    assert p.extra.fsx.retain is True
    assert any("retain" in w and "VPC" in w for w in p.warnings)


# ---------------------------------------------------------------------- market, lifetime, image


def test_capacity_block_plan_uses_block_market_without_placement_group() -> None:
    p = plan(zone="us-east-1a", capacity={"type": "capacity-block", "reservation": "cr-0123456789abcdef0"})
    assert p.extra.market.target_capacity_type == "capacity-block"
    assert p.extra.market.market_type == "capacity-block"
    assert p.extra.market.all_or_nothing is False
    assert p.extra.placement_group == PlacementGroup(create=False, name=None)
    assert any("Capacity Block" in w for w in p.warnings)


def test_reservation_on_fleet_targets_a_resource_group() -> None:
    p = plan(zone="us-east-1a", capacity={"type": "reservation", "reservation": "cr-0123456789abcdef0"})
    assert p.extra.market.reservation_group is True
    asg = plan(
        zone="us-east-1a",
        capacity={"type": "reservation", "reservation": "cr-0123456789abcdef0"},
        aws={"allocation": "asg"},
    )
    assert asg.extra.market.reservation_group is False


def test_plan_warns_about_lifetime_enforcement() -> None:
    p = plan(lifetime={"ttl": "6h"})
    assert any("no instance TTL" in w and "reap" in w for w in p.warnings)
    assert p.expires_at is not None


def test_lookup_image_is_carried_and_warned() -> None:
    p = plan()
    assert p.image.ref.startswith("lookup:/aws/service/deeplearning/ami/x86_64/")
    assert p.extra.image_lookup == p.image.ref.removeprefix("lookup:")
    assert any("image_pin" in w for w in p.warnings)
    pinned = plan(image={"id": "ami-0123456789abcdef0"})
    assert pinned.extra.image_lookup is None and pinned.image.ref == "ami-0123456789abcdef0"


def test_adapter_module_imports_no_pulumi() -> None:
    code = "import sys, provision.clouds.aws.adapter; print(any(m.startswith('pulumi') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ---------------------------------------------------------------------- user data


def test_user_data_checks_efa_mounts_fsx_and_arms_the_timer() -> None:
    p = plan(lifetime={"ttl": "6h"}, storage={"shared": {"kind": "fsx-lustre", "tier": "SCRATCH_2"}})
    script = userdata.render(p)
    files = {f["path"]: f["content"] for f in parse(script)["write_files"]}
    assert json.loads(files["/etc/provision/health.json"])["fabric_devices"] == 32
    # GPUs first: no FSx output in the user data; the node reads the mount source from its SSM parameter at boot.
    env = files["/etc/provision/bootstrap.env"]
    assert f"SHARED_SOURCE_PARAMETER={userdata.shared_source_parameter(p.name)}" in env
    assert "fsx.us-east-1.amazonaws.com" not in script
    assert "OnCalendar=2026-11-29 18:00:00 UTC" in files["/etc/systemd/system/provision-expiry.timer"]
    assert "FI_PROVIDER=efa" in files["/etc/provision/nccl.env"]
    assert "PRIVATE KEY" not in script
    assert len(userdata.encode(script)) * 3 // 4 < userdata.MAX_USER_DATA_BYTES


def test_user_data_adds_only_keys_beyond_the_key_pair() -> None:
    p = plan(access={"ssh_public_keys": [KEY, KEY2]})
    script = userdata.render(p)
    assert KEY2 in script and KEY not in script
    other_user = plan(access={"ssh_public_keys": [KEY, KEY2], "ssh_user": "trainer"})
    assert KEY in userdata.render(other_user) and "SSH_USER=trainer" in userdata.render(other_user)


def test_fido_key_goes_to_user_data_instead_of_a_key_pair() -> None:
    fido = "sk-ssh-ed25519@openssh.com AAAAGnNrLXNzaC1lZDI1NTE5QG9wZW5zc2guY29tAAAAIFRlc3Q= fido"
    p = plan(access={"ssh_public_keys": [fido, KEY]})
    assert p.extra.ssh.key_pair is False
    script = userdata.render(p)
    assert fido in script and KEY in script


def test_asg_timer_fires_after_the_scheduled_scale_to_zero() -> None:
    p = plan(lifetime={"ttl": "6h"}, aws={"allocation": "asg"})
    assert p.extra.lifetime.asg_schedule is True
    assert "OnCalendar=2026-11-29 18:15:00 UTC" in userdata.render(p)
