"""Strict mocked Azure: REST-spec enums, naming rules, NSG address families, Managed Lustre network and sizes."""

from __future__ import annotations

import inspect

import pytest
from pulumi_azure_native import compute, netapp, network, resources, storagecache
from strict_helpers import one, run, violations_of

from provision.clouds.azure import strict
from provision.clouds.mocking import StrictViolationError
from provision.clouds.strict import Resource

VMSS = "azure-native:compute:VirtualMachineScaleSet"
NSG = "azure-native:network:NetworkSecurityGroup"
BASE = {"resourceGroupName": "rg", "location": "eastus"}


def test_enums_come_from_the_rest_spec_types() -> None:
    found = violations_of(
        VMSS,
        "x-island0",
        {
            **BASE,
            "vmScaleSetName": "x-island0",
            "orchestrationMode": "Bogus",
            "virtualMachineProfile": {
                "storageProfile": {"osDisk": {"caching": "Sometimes", "createOption": "FromImage"}}
            },
        },
    )
    assert "Uniform, Flexible" in one(found, "orchestrationMode").rule
    caching = one(found, "virtualMachineProfile.storageProfile.osDisk.caching")
    assert "CachingTypes" in caching.source and "azure-rest-api-specs" in caching.source


def test_enums_inside_lists_are_checked() -> None:
    rules = [{"name": "r1", "priority": 100, "direction": "Sideways", "access": "Allow", "protocol": "Tcp"}]
    v = one(
        violations_of(NSG, "x-nsg", {**BASE, "networkSecurityGroupName": "x-nsg", "securityRules": rules}),
        "securityRules[].direction",
    )
    assert "Inbound, Outbound" in v.rule


def test_computer_name_prefix_is_at_most_15_characters() -> None:
    inputs = {**BASE, "vmScaleSetName": "x", "virtualMachineProfile": {"osProfile": {"computerNamePrefix": "p" * 16}}}
    v = one(violations_of(VMSS, "x", inputs), "virtualMachineProfile.osProfile.computerNamePrefix")
    assert strict.COMPUTER_NAME_PREFIX_QUOTE in v.source


@pytest.mark.parametrize(
    ("type_token", "inputs", "field"),
    [
        (VMSS, {"vmScaleSetName": "ends-with-"}, "vmScaleSetName"),
        ("azure-native:network:VirtualNetwork", {"virtualNetworkName": "v" * 65}, "virtualNetworkName"),
        ("azure-native:resources:ResourceGroup", {"resourceGroupName": "rg."}, "resourceGroupName"),
        ("azure-native:storagecache:AmlFilesystem", {"amlFilesystemName": "-lustre"}, "amlFilesystemName"),
        ("azure-native:netapp:CapacityPoolVolume", {"volumeName": "1vol"}, "volumeName"),
    ],
)
def test_names_follow_microsofts_naming_rules(type_token: str, inputs: dict, field: str) -> None:
    v = one(violations_of(type_token, "x", {**BASE, **inputs}), field)
    assert "resource-name-rules" in v.source or "azure-rest-api-specs" in v.source


def test_an_nsg_rule_mixing_ipv4_and_ipv6_is_refused() -> None:
    rule = {
        "name": "ssh",
        "priority": 100,
        "direction": "Inbound",
        "access": "Allow",
        "protocol": "Tcp",
        "sourceAddressPrefixes": ["203.0.113.0/24", "2001:db8::/32"],
        "destinationPortRange": "22",
    }
    v = one(
        violations_of(NSG, "x-nsg", {**BASE, "networkSecurityGroupName": "x", "securityRules": [rule]}),
        "securityRules[0].sourceAddressPrefixes",
    )
    assert "IPv4 and IPv6" in v.rule and "DifferentAddressFamilies" in v.source


@pytest.mark.parametrize(
    ("priorities", "bad"), [((99,), 0), ((4097,), 0), ((200, 200), 1)], ids=["low", "high", "duplicate"]
)
def test_nsg_rule_priorities_are_in_range_and_unique(priorities: tuple[int, ...], bad: int) -> None:
    rules = [
        {"name": f"r{i}", "priority": p, "direction": "Inbound", "access": "Allow", "protocol": "Tcp"}
        for i, p in enumerate(priorities)
    ]
    inputs = {**BASE, "networkSecurityGroupName": "x", "securityRules": rules}
    v = one(violations_of(NSG, "x-nsg", inputs), f"securityRules[{bad}].priority")
    assert "4096" in v.source and "SecurityRulePropertiesFormat" in v.source


def test_the_same_priority_in_both_directions_is_allowed() -> None:
    rules = [
        {"name": f"r{d}", "priority": 200, "direction": d, "access": "Allow", "protocol": "Tcp"}
        for d in ("Inbound", "Outbound")
    ]
    from provision.testing import strict_check

    inputs = {**BASE, "networkSecurityGroupName": "x", "securityRules": rules}
    assert not [v for v in strict_check(NSG, inputs) if "priority" in v.field]


@pytest.mark.parametrize(
    ("sku", "size", "ok"),
    [
        ("AMLFS-Durable-Premium-250", 8, True),
        ("AMLFS-Durable-Premium-250", 12, False),
        ("AMLFS-Durable-Premium-40", 24, False),
    ],
)
def test_managed_lustre_sizes_per_sku(sku: str, size: int, ok: bool) -> None:
    inputs = {
        **BASE,
        "amlFilesystemName": "x-lustre",
        "sku": {"name": sku},
        "storageCapacityTiB": size,
        "filesystemSubnet": "/subscriptions/s/x",
        "zones": ["1"],
    }
    if ok:
        assert strict.storage_rules(Resource("azure-native:storagecache:AmlFilesystem", "x-lustre", inputs)) == []
    else:
        assert (
            "create-file-system-portal"
            in one(
                violations_of("azure-native:storagecache:AmlFilesystem", "x-lustre", inputs), "storageCapacityTiB"
            ).source
        )


def test_netapp_pool_and_volume_sizes() -> None:
    pool = {**BASE, "accountName": "a", "poolName": "p", "serviceLevel": "Standard", "size": 1.5 * 2**40}
    assert strict.POOL_SIZE_QUOTE in one(violations_of("azure-native:netapp:CapacityPool", "p", pool), "size").source
    vol = {
        **BASE,
        "accountName": "a",
        "poolName": "p",
        "volumeName": "v",
        "creationToken": "v",
        "subnetId": "s",
        "usageThreshold": 10 * 2**30,
    }
    assert one(violations_of("azure-native:netapp:CapacityPoolVolume", "v", vol), "usageThreshold")


@pytest.mark.parametrize(
    ("cls", "quote"),
    [
        (compute.VirtualMachineScaleSetOSProfileArgs, strict.COMPUTER_NAME_PREFIX_QUOTE),
        (netapp.CapacityPool, strict.POOL_SIZE_QUOTE),
        (netapp.CapacityPoolVolume, strict.VOLUME_QUOTE),
        (netapp.CapacityPoolVolume, strict.LARGE_VOLUME_QUOTE),
    ],
)
def test_quoted_limits_are_still_in_the_installed_sdk(cls: type, quote: str) -> None:
    assert quote in inspect.getsource(cls)


def _amlfs_program(*, deny_ssh_inside: bool) -> None:
    rg = resources.ResourceGroup("t-rg", resource_group_name="t-rg", location="eastus")
    deny = network.SecurityRuleArgs(
        name="deny-other-ssh",
        priority=4096,
        direction="Inbound",
        access="Deny",
        protocol="Tcp",
        source_address_prefix="*",
        source_port_range="*",
        destination_address_prefix="VirtualNetwork",
        destination_port_range="22",
    )
    nsg = network.NetworkSecurityGroup(
        "t-nsg",
        resource_group_name=rg.name,
        network_security_group_name="t-nsg",
        location="eastus",
        security_rules=[deny] if deny_ssh_inside else [],
    )
    vnet = network.VirtualNetwork(
        "t-vnet",
        resource_group_name=rg.name,
        virtual_network_name="t-vnet",
        location="eastus",
        address_space=network.AddressSpaceArgs(address_prefixes=["10.0.0.0/16"]),
    )
    subnet = network.Subnet(
        "t-fs",
        resource_group_name=rg.name,
        virtual_network_name=vnet.name,
        subnet_name="t-fs",
        address_prefix="10.0.1.0/24",
        network_security_group=network.NetworkSecurityGroupArgs(id=nsg.id),
    )
    storagecache.AmlFilesystem(
        "t-lustre",
        resource_group_name=rg.name,
        aml_filesystem_name="t-lustre",
        location="eastus",
        sku=storagecache.SkuNameArgs(name="AMLFS-Durable-Premium-250"),
        storage_capacity_ti_b=8,
        filesystem_subnet=subnet.id,
        zones=["1"],
        maintenance_window=storagecache.AmlFilesystemMaintenanceWindowArgs(
            day_of_week="Sunday", time_of_day_utc="02:00"
        ),
    )


def test_managed_lustre_subnet_whose_nsg_denies_ssh_inside_is_refused() -> None:
    with pytest.raises(StrictViolationError) as err:
        run(lambda: _amlfs_program(deny_ssh_inside=True), region="eastus")
    v = one(err.value.violations, "filesystemSubnet")
    assert "priority 4096" in v.rule and "TCP port 22 (SSH)" in v.source


def test_managed_lustre_subnet_with_azures_default_rules_passes() -> None:
    mocks = run(lambda: _amlfs_program(deny_ssh_inside=False), region="eastus")
    assert any(r.type == "azure-native:storagecache:AmlFilesystem" for r in mocks.ledger)


def test_tag_names_and_values_follow_the_naming_rules() -> None:
    inputs = {**BASE, "resourceGroupName": "rg", "tags": {"a/b": "1", "team": "x" * 257}}
    found = violations_of("azure-native:resources:ResourceGroup", "rg", inputs)
    assert {v.field for v in found} == {"tags.a/b", "tags.team"}


def test_service_tags_cannot_be_listed_with_prefixes() -> None:
    rule = {
        "name": "ssh",
        "priority": 100,
        "direction": "Inbound",
        "access": "Deny",
        "protocol": "Tcp",
        "sourceAddressPrefixes": ["*", "10.0.0.0/16"],
        "destinationPortRange": "22",
    }
    inputs = {**BASE, "networkSecurityGroupName": "x", "securityRules": [rule]}
    v = one(violations_of(NSG, "x-nsg", inputs), "securityRules[0].sourceAddressPrefixes")
    assert "SecurityRuleParameterContainsUnsupportedValue" in v.source
