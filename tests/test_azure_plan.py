"""Azure plan: islands, access, image, capacity and network rules (pure; no Pulumi)."""

from __future__ import annotations

import base64
import struct
from typing import Any

import pytest
from conftest import FIXED_NOW
from hypothesis import given
from hypothesis import strategies as st

from provision.catalog import load_catalog
from provision.clouds.azure import rules
from provision.clouds.azure.adapter import AzureAdapter
from provision.clouds.azure.plan import ImageReference
from provision.spec import load_spec
from provision.spec.errors import SpecError

EXAMPLE_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHByb3Zpc2lvbi1leGFtcGxlLWtleS1kby1ub3QtdXNl provision-example"


def _ssh_string(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def rsa_key(bits: int) -> str:
    """A well-formed ssh-rsa public key with a ``bits``-bit modulus (not a usable key pair)."""
    modulus = (1 << (bits - 1)) | 1
    body = (
        _ssh_string(b"ssh-rsa")
        + _ssh_string(b"\x01\x00\x01")
        + _ssh_string(b"\x00" + modulus.to_bytes(bits // 8, "big"))
    )
    return f"ssh-rsa {base64.b64encode(body).decode()} test"


def azure_spec(**overrides: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "name": "az-test",
        "cloud": "azure",
        "region": "eastus",
        "gpu": "H100",
        "nodes": 8,
        "access": {"ssh_user": "azureuser", "ssh_public_keys": [EXAMPLE_KEY], "allowed_cidrs": ["203.0.113.0/24"]},
        "storage": {"shared": {"kind": "amlfs", "tier": "AMLFS-Durable-Premium-250", "size_gib": 8192}},
    }
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(spec.get(key), dict):
            spec[key] = {**spec[key], **value}
        else:
            spec[key] = value
    return spec


def plan(**overrides: Any) -> Any:
    return AzureAdapter().plan(load_spec(azure_spec(**overrides)), now=FIXED_NOW)


def problems(**overrides: Any) -> dict[str, Any]:
    with pytest.raises(SpecError) as err:
        plan(**overrides)
    return {p.path: p for p in err.value.problems}


# ------------------------------------------------------------------ islands


def test_plan_splits_256_nodes_into_three_even_islands_when_asked() -> None:
    p = plan(nodes=256, azure={"split_islands": True})
    assert p.islands == (86, 85, 85)
    islands = p.extra.islands
    assert any("one NCCL job cannot span them" in w and "NCCL_IB_DISABLE=1" in w for w in p.warnings)
    assert [i.nodes for i in islands] == [86, 85, 85]
    assert [i.first_rank for i in islands] == [0, 86, 171]
    # Three scale sets in ONE proximity placement group (one datacenter for the Ethernet path between islands).
    assert len({i.vmss for i in islands}) == 3 and len({i.ppg for i in islands}) == 1
    assert p.island_of(85) == 0 and p.island_of(86) == 1 and p.island_of(255) == 2
    assert any("3 InfiniBand islands" in w for w in p.warnings)


@pytest.mark.parametrize(("field", "value"), [("nodes", 101), ("gpus", 808)])
def test_plan_rejects_a_cluster_above_the_island_size_without_opt_in(field: str, value: int) -> None:
    overrides: dict[str, Any] = {"nodes": None, field: value}
    found = problems(**overrides)
    problem = found[field]
    assert problem.value == value
    assert "100" in problem.rule and "singlePlacementGroup" in problem.rule
    assert "azure.split_islands: true" in problem.fix and "azure.max_island_nodes" in problem.fix


def test_plan_keeps_one_island_up_to_a_raised_island_cap() -> None:
    p = plan(nodes=256, azure={"max_island_nodes": 300})
    assert p.islands == (256,)
    assert p.extra.single_placement_group is True


def test_options_refuse_an_island_cap_above_300() -> None:
    with pytest.raises(SpecError) as err:
        load_spec(azure_spec(azure={"max_island_nodes": 301}))
    assert [p.path for p in err.value.problems] == ["azure.max_island_nodes"]


@given(nodes=st.integers(1, 5000), cap=st.integers(1, 300))
def test_islands_are_as_few_and_as_even_as_the_cap_allows(nodes: int, cap: int) -> None:
    sizes = rules.split_islands(nodes, cap)
    assert sum(sizes) == nodes
    assert max(sizes) <= cap and max(sizes) - min(sizes) <= 1
    assert len(sizes) == -(-nodes // cap)


def test_plan_without_infiniband_uses_one_scale_set_without_placement_group() -> None:
    p = plan(nodes=150, fabric="none")
    assert p.islands == (150,)
    assert p.extra.single_placement_group is False
    assert p.extra.islands[0].ppg is None
    assert p.nccl_env["NCCL_IB_DISABLE"] == "1"


# ------------------------------------------------------------------ access


@pytest.mark.parametrize(
    ("key", "accepted"),
    [
        (EXAMPLE_KEY, True),
        (rsa_key(2048), True),
        (rsa_key(4096), True),
        (rsa_key(1024), False),
        ("ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBA== x", False),
        ("sk-ssh-ed25519@openssh.com AAAAGnNrLXNzaC1lZDI1NTE5QG9wZW5zc2guY29t x", False),
        ("ssh-ed25519 AAAAC3NzaC1yc2E= mislabelled", False),
    ],
)
def test_ssh_key_rule_accepts_only_what_azure_accepts(key: str, accepted: bool) -> None:
    assert (rules.ssh_key_problem(key) is None) is accepted


def test_plan_rejects_short_rsa_and_ecdsa_keys_naming_each_key() -> None:
    found = problems(access={"ssh_public_keys": [EXAMPLE_KEY, rsa_key(1024), "ecdsa-sha2-nistp256 AAAAE2VjZHNh x"]})
    assert "1024-bit" in found["access.ssh_public_keys[1]"].rule
    assert "ssh-ed25519" in found["access.ssh_public_keys[2]"].rule
    assert "ssh-keygen -t ed25519" in found["access.ssh_public_keys[2]"].fix
    assert "access.ssh_public_keys[0]" not in found


def test_plan_rejects_a_cluster_without_ssh_keys() -> None:
    found = problems(access={"ssh_public_keys": []})
    assert "password login is disabled" in found["access.ssh_public_keys"].rule


def test_plan_rejects_an_admin_user_name_azure_refuses() -> None:
    assert "refuses" in problems(access={"ssh_user": "administrator"})["access.ssh_user"].rule
    # root is refused on every cloud by the spec itself (a system account).
    assert "superuser" in problems(access={"ssh_user": "root"})["access.ssh_user"].rule


def test_plan_rejects_a_public_head_node() -> None:
    found = problems(access={"public_head_node": True})
    assert "Bastion" in found["access.public_head_node"].fix


# ------------------------------------------------------------------ image, capacity, network


def test_plan_keeps_the_computer_name_prefix_within_15_characters() -> None:
    [island] = plan(name="a-very-long-cluster-name-for-test").extra.islands
    assert island.computer_name_prefix == "a-very-long-clu"
    [island] = plan(name="abcdefghijklmn-x").extra.islands
    assert island.computer_name_prefix == "abcdefghijklmn"


def test_plan_gives_every_island_its_own_computer_name_prefix() -> None:
    # A Uniform scale set names its VMs <prefix><instance id in 6 base-36 digits>, and every scale set
    # counts from 000000: islands sharing a prefix would boot duplicate hostnames into one VNet.
    islands = plan(name="a-very-long-cluster-name-for-test", nodes=256, azure={"split_islands": True}).extra.islands
    prefixes = [i.computer_name_prefix for i in islands]
    assert prefixes == ["a-very-long-ci0", "a-very-long-ci1", "a-very-long-ci2"]


@given(
    name=st.from_regex(r"^[a-z][a-z0-9-]{0,38}[a-z0-9]$", fullmatch=True),
    islands=st.integers(1, 1200),
)
def test_computer_name_prefixes_are_distinct_and_valid(name: str, islands: int) -> None:
    prefixes = rules.computer_name_prefixes(name, islands)
    assert len(prefixes) == islands == len(set(prefixes))
    # Hostnames are prefix + 6 fixed-width characters, so distinct prefixes give distinct hostnames.
    assert all(1 <= len(p) <= 15 and not p.endswith("-") and p[0].isalpha() for p in prefixes)


def test_plan_pins_the_hpc_image_to_an_exact_version() -> None:
    p = plan()
    assert p.image.ref == "microsoft-dsvm:ubuntu-hpc:2204:22.04.2024102301"
    assert p.extra.image == ImageReference(
        publisher="microsoft-dsvm", offer="ubuntu-hpc", sku="2204", version="22.04.2024102301"
    )
    assert p.image.versions["nccl"] == "2.22.3-1"


@pytest.mark.parametrize(
    "image_id",
    [
        "microsoft-dsvm:ubuntu-hpc:2204:latest",
        "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/img/providers/Microsoft.Compute/"
        "galleries/g1/images/hpc/versions/latest",
        "ubuntu-hpc-2204",
    ],
)
def test_plan_rejects_an_unpinned_or_unknown_image(image_id: str) -> None:
    found = problems(image={"id": image_id})
    assert found["image.id"].value == image_id


def test_plan_accepts_a_pinned_gallery_image_version() -> None:
    image_id = (
        "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/img/providers/Microsoft.Compute/"
        "galleries/g1/images/hpc/versions/1.2.3"
    )
    assert plan(image={"id": image_id}).extra.image == ImageReference(id=image_id)


def test_plan_refuses_capacity_reservations_for_nd_sizes_and_checks_the_group_id_too() -> None:
    found = problems(capacity={"type": "reservation", "reservation": "my-group"})
    assert "ND-series" in found["capacity.type"].rule and "single-placement-group" in found["capacity.type"].rule
    assert "capacityReservationGroups" in found["capacity.reservation"].rule


def test_capacity_reservation_group_ids_are_checked_by_format() -> None:
    good = (
        "/subscriptions/0b1f6471-1bf0-4dda-aec3-111122223333/resourceGroups/rg1/providers/"
        "Microsoft.Compute/capacityReservationGroups/crg1"
    )
    assert rules.capacity_reservation_problem(good) is None
    assert rules.capacity_reservation_problem(good.replace("capacityReservationGroups", "hostGroups"))


@pytest.mark.parametrize(("max_price", "expected"), [(None, -1), (40.5, 40.5)])
def test_plan_bids_spot_at_the_cap_or_the_on_demand_price(max_price: float | None, expected: float) -> None:
    capacity: dict[str, Any] = {"type": "spot"}
    if max_price is not None:
        capacity["max_price_per_hour_usd"] = max_price
    p = plan(capacity=capacity)
    assert (p.extra.priority, p.extra.eviction_policy, p.extra.max_price) == ("Spot", "Delete", expected)


@pytest.mark.parametrize(
    ("cidr", "words"),
    [
        ("8.8.0.0/16", "private"),
        ("10.0.0.0/25", "cannot hold"),
        ("10.0.0.1/16", "CIDR"),
        # Review 2026-12-01 Azure B2 and D3: ranges Azure reserves.
        ("172.16.0.0/16", "RDMA"),
        ("172.16.0.0/12", "RDMA"),
        ("169.254.0.0/16", "link-local"),
        ("127.0.0.0/16", "loopback"),
    ],
)
def test_plan_rejects_a_vnet_that_is_public_too_small_or_malformed(cidr: str, words: str) -> None:
    assert words in problems(azure={"vnet_cidr": cidr})["azure.vnet_cidr"].rule


def test_plan_accepts_the_shared_address_space_azure_allows() -> None:
    assert plan(azure={"vnet_cidr": "100.64.0.0/16"}).extra.vnet_cidr == "100.64.0.0/16"


def test_plan_rejects_a_zone_azure_does_not_have() -> None:
    assert "availability zone" in problems(zone="4")["zone"].rule


def test_plan_reports_every_problem_at_once() -> None:
    found = problems(
        nodes=120,
        zone="9",
        access={"ssh_user": "admin", "public_head_node": True, "ssh_public_keys": [rsa_key(1024)]},
        image={"id": "microsoft-dsvm:ubuntu-hpc:2204:latest"},
        azure={"vnet_cidr": "8.8.0.0/16"},
    )
    assert {
        "nodes",
        "zone",
        "access.ssh_user",
        "access.public_head_node",
        "access.ssh_public_keys[0]",
        "image.id",
        "azure.vnet_cidr",
    } <= set(found)
    assert all(p.fix for p in found.values())


# ------------------------------------------------------------------ subnets and filesystems


@pytest.mark.parametrize(
    ("tib", "prefix"), [(4, 27), (16, 27), (20, 26), (44, 25), (128, 24), (200, 23), (400, 23), (768, 22)]
)
def test_amlfs_subnet_rule_follows_the_documented_table(tib: int, prefix: int) -> None:
    assert rules.amlfs_subnet_prefix(tib) == min(prefix, 24)


@pytest.mark.parametrize(("nodes", "prefix"), [(1, 24), (251, 24), (252, 23), (300, 23), (1000, 22)])
def test_node_subnet_holds_every_node_besides_the_five_reserved_addresses(nodes: int, prefix: int) -> None:
    assert rules.nodes_subnet_prefix(nodes) == prefix


def test_plan_sizes_the_lustre_subnet_from_the_filesystem_capacity() -> None:
    p = plan(storage={"shared": {"kind": "amlfs", "tier": "AMLFS-Durable-Premium-40", "size_gib": 786432}})
    assert p.extra.subnets["filesystem"].endswith("/22")
    assert p.extra.filesystem.capacity_tib == 768


def test_plan_rejects_an_amlfs_size_off_the_sku_step() -> None:
    found = problems(storage={"shared": {"kind": "amlfs", "tier": "AMLFS-Durable-Premium-250", "size_gib": 9000}})
    assert "8192" in found["storage.shared.size_gib"].rule


def test_plan_warns_when_regional_nodes_may_land_outside_the_lustre_zone() -> None:
    assert any("set zone: '1'" in w for w in plan().warnings)
    assert not any("set zone:" in w for w in plan(zone="1").warnings)
    assert not any("set zone:" in w for w in plan(storage={"shared": {"kind": "netapp", "tier": "Standard"}}).warnings)


@pytest.mark.parametrize("stack", ["azure-ndh100-64", "azure-ndh100-256"])
def test_shipped_lustre_stacks_put_the_nodes_in_the_file_systems_zone(stack: str) -> None:
    """Review 2026-12-01 Azure B3: azure-ndh100-64 put AMLFS in zone 1 and its nodes in no zone, against Microsoft's
    "ensure Lustre clients ... and AMLFS are in the same Azure region and Availability Zone"
    (azure-managed-lustre/troubleshoot-performance.md)."""
    from conftest import stack_spec

    shipped = AzureAdapter().plan(stack_spec(stack))
    assert shipped.extra.filesystem.kind == "amlfs"
    assert shipped.zone == shipped.extra.filesystem.zone is not None
    assert not any("set zone:" in w for w in shipped.warnings)


def test_plan_puts_retained_storage_and_its_network_in_their_own_resource_group() -> None:
    p = plan(storage={"shared": {"retain": True}})
    assert p.extra.retain_network is True
    assert p.extra.network_resource_group == "az-test-data-rg" != p.extra.resource_group
    assert any("az-test-data-rg" in w for w in p.warnings)


def test_plan_sizes_a_large_netapp_volume_as_a_large_volume() -> None:
    p = plan(storage={"shared": {"kind": "netapp", "tier": "Premium", "size_gib": 200 * 1024, "retain": False}})
    fs = p.extra.filesystem
    assert fs.pool_bytes == 200 * 1024**4 == fs.volume_bytes
    assert fs.large_volume is True
    assert fs.allowed_clients == p.extra.subnets["nodes"]


# ------------------------------------------------------------------ NCCL / RCCL and lifetime


@pytest.mark.parametrize(
    ("instance_type", "topo"),
    [
        ("Standard_ND96isr_H100_v5", "/opt/microsoft/ndv5-topo.xml"),
        ("Standard_ND96isr_H200_v5", "/opt/microsoft/ndv5-topo.xml"),
        ("Standard_ND96asr_v4", "/opt/microsoft/ndv4-topo.xml"),
        ("Standard_ND96amsr_A100_v4", "/opt/microsoft/ndv4-topo.xml"),
    ],
)
def test_nccl_env_points_at_the_image_topology_file(instance_type: str, topo: str) -> None:
    offer = load_catalog().instance("azure", instance_type)
    assert offer is not None
    env = AzureAdapter().nccl_env(offer, "infiniband")
    assert env["NCCL_TOPO_FILE"] == topo
    assert env["NCCL_IB_PCI_RELAXED_ORDERING"] == "1" and env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"


def test_rccl_env_for_mi300x_has_no_cuda_settings() -> None:
    offer = load_catalog().instance("azure", "Standard_ND96isr_MI300X_v5")
    assert offer is not None
    env = AzureAdapter().nccl_env(offer, "infiniband")
    assert env == {
        "NCCL_IB_PCI_RELAXED_ORDERING": "1",
        "NCCL_SOCKET_IFNAME": "eth0",
        "NCCL_IB_HCA": "mlx5_ib0:1,mlx5_ib1:1,mlx5_ib2:1,mlx5_ib3:1,mlx5_ib4:1,mlx5_ib5:1,mlx5_ib6:1,mlx5_ib7:1",
        "HSA_NO_SCRATCH_RECLAIM": "1",
    }


def test_rccl_gets_microsofts_documented_settings_and_none_that_only_apply_elsewhere() -> None:
    """RCCL on ND MI300X v5 runs as Microsoft's own RCCL check does (azurehpc-health-checks azure_rccl_allreduce.nhc):
    relaxed ordering, eth0 for bootstrap, HSA_NO_SCRATCH_RECLAIM=1, and the eight IB HCAs only; nothing for PCIe-only
    GPUs (HSA_FORCE_FINE_GRAIN_PCIE) or RoCE (NCCL_IB_GID_INDEX)."""
    offer = load_catalog().instance("azure", "Standard_ND96isr_MI300X_v5")
    assert offer is not None
    env = AzureAdapter().nccl_env(offer, "infiniband")
    assert env["HSA_NO_SCRATCH_RECLAIM"] == "1" and env["NCCL_IB_PCI_RELAXED_ORDERING"] == "1"
    assert "mlx5_an0" not in env["NCCL_IB_HCA"] and env["NCCL_IB_HCA"].count("mlx5_ib") == 8
    assert not {"HSA_FORCE_FINE_GRAIN_PCIE", "NCCL_IB_GID_INDEX", "CUDA_DEVICE_ORDER", "NCCL_TOPO_FILE"} & set(env)


def test_plan_says_the_nodes_delete_the_cluster_at_its_expiry() -> None:
    p = plan(lifetime={"ttl": "6h"})
    assert p.tags["provision-expires-at"] == "20261129t1800z"
    assert p.extra.lifetime == "node-timer"
    assert p.lifetime_enforced_by is not None and "resource group" in p.lifetime_enforced_by
    assert p.summary()["lifetime_enforced_by"] == p.lifetime_enforced_by


def test_plan_says_plainly_that_only_the_reaper_enforces_an_opted_out_lifetime() -> None:
    p = plan(lifetime={"ttl": "6h"}, azure={"delete_at_expiry": False})
    assert any("nothing in the cloud deletes the cluster" in w and "provision reap" in w for w in p.warnings)
    assert p.extra.lifetime == "tags+reaper" and p.lifetime_enforced_by is None
