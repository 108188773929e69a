"""Hand-written Pulumi program with the resources provision registers for an Azure cluster (no provision code).

``program(nodes)`` registers what ``spec(nodes)`` makes provision register: a resource group, a
user-assigned identity, an NSG with three SSH rules, a NAT gateway with its public IP, a VNet with a node
and a filesystem subnet, an Azure Managed Lustre file system, and per InfiniBand island (at most 100
nodes each) one proximity placement group and one Uniform scale set; then one VMSS-VM network
interface read (``resources.get_resource``) per node for the hostfile, as provision does. Used by
benchmarks/preview_scale.py.
"""

from __future__ import annotations

import base64
import math
from typing import Any

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHByb3Zpc2lvbi1leGFtcGxlLWtleS1kby1ub3QtdXNl provision-example"
NAME = "bench"
REGION = "eastus"
ISLAND = 100


def spec(nodes: int) -> dict[str, Any]:
    """The provision spec of the same cluster."""
    return {
        "name": NAME,
        "cloud": "azure",
        "region": REGION,
        "instance_type": "Standard_ND96isr_H100_v5",
        "nodes": nodes,
        "fabric": "infiniband",
        "storage": {"shared": {"kind": "amlfs", "tier": "AMLFS-Durable-Premium-250", "size_gib": 8192}},
        "access": {"ssh_user": "azureuser", "ssh_public_keys": [KEY], "allowed_cidrs": ["203.0.113.0/24"]},
        "lifetime": {"ttl": "6h"},
        "owner": "bench",
        "tags": {"team": "bench"},
        "azure": {"split_islands": nodes > ISLAND, "max_island_nodes": ISLAND},
    }


def _islands(nodes: int) -> list[int]:
    count = math.ceil(nodes / ISLAND)
    base, extra = divmod(nodes, count)
    return [base + 1] * extra + [base] * (count - extra)


def _node_prefix(nodes: int) -> int:
    prefix = 24
    while 2 ** (32 - prefix) - 5 < nodes:
        prefix -= 1
    return prefix


def program(nodes: int) -> None:
    """Register the cluster's resources directly with pulumi_azure_native."""
    import pulumi
    from pulumi_azure_native import compute, managedidentity, network, resources, storagecache

    tags = {"provision-cluster": NAME, "provision-owner": "bench", "provision-expires-at": "20261129t1800z"}
    rg = resources.ResourceGroup(f"{NAME}-rg", resource_group_name=f"{NAME}-rg", location=REGION, tags=tags)
    identity = managedidentity.UserAssignedIdentity(
        f"{NAME}-identity", resource_name_=f"{NAME}-identity", resource_group_name=rg.name, location=REGION, tags=tags
    )
    nsg = network.NetworkSecurityGroup(
        f"{NAME}-nsg",
        network_security_group_name=f"{NAME}-nsg",
        resource_group_name=rg.name,
        location=REGION,
        security_rules=[
            network.SecurityRuleArgs(
                name=rule,
                priority=priority,
                direction="Inbound",
                access=access,
                protocol="Tcp",
                source_port_range="*",
                destination_address_prefix="VirtualNetwork",
                destination_port_range="22",
                **source,
            )
            for rule, priority, access, source in (
                ("allow-ssh", 100, "Allow", {"source_address_prefixes": ["203.0.113.0/24"]}),
                (
                    "allow-ssh-between-nodes",
                    110,
                    "Allow",
                    {"source_address_prefixes": [f"10.0.0.0/{_node_prefix(nodes)}"]},
                ),
                ("deny-other-ssh", 4096, "Deny", {"source_address_prefix": "*"}),
            )
        ],
        tags=tags,
    )
    pip = network.PublicIPAddress(
        f"{NAME}-nat-ip",
        public_ip_address_name=f"{NAME}-nat-ip",
        resource_group_name=rg.name,
        location=REGION,
        sku=network.PublicIPAddressSkuArgs(name="Standard"),
        public_ip_allocation_method="Static",
        tags=tags,
    )
    nat = network.NatGateway(
        f"{NAME}-nat",
        nat_gateway_name=f"{NAME}-nat",
        resource_group_name=rg.name,
        location=REGION,
        sku=network.NatGatewaySkuArgs(name="Standard"),
        public_ip_addresses=[network.SubResourceArgs(id=pip.id)],
        tags=tags,
    )
    vnet = network.VirtualNetwork(
        f"{NAME}-vnet",
        virtual_network_name=f"{NAME}-vnet",
        resource_group_name=rg.name,
        location=REGION,
        address_space=network.AddressSpaceArgs(address_prefixes=["10.0.0.0/16"]),
        tags=tags,
    )
    prefix = _node_prefix(nodes)
    nodes_subnet = network.Subnet(
        f"{NAME}-nodes",
        subnet_name="nodes",
        resource_group_name=rg.name,
        virtual_network_name=vnet.name,
        address_prefix=f"10.0.0.0/{prefix}",
        network_security_group=network.NetworkSecurityGroupArgs(id=nsg.id),
        nat_gateway=network.SubResourceArgs(id=nat.id),
        default_outbound_access=False,
    )
    fs_subnet = network.Subnet(
        f"{NAME}-filesystem",
        subnet_name="filesystem",
        resource_group_name=rg.name,
        virtual_network_name=vnet.name,
        address_prefix=f"10.0.{2 ** (32 - prefix) // 256}.0/24",
        network_security_group=network.NetworkSecurityGroupArgs(id=nsg.id),
        nat_gateway=network.SubResourceArgs(id=nat.id),
        default_outbound_access=False,
        opts=pulumi.ResourceOptions(depends_on=[nodes_subnet]),
    )
    storagecache.AmlFilesystem(
        f"{NAME}-lustre",
        aml_filesystem_name=f"{NAME}-lustre",
        resource_group_name=rg.name,
        location=REGION,
        sku=storagecache.SkuNameArgs(name="AMLFS-Durable-Premium-250"),
        storage_capacity_ti_b=8,
        filesystem_subnet=fs_subnet.id,
        zones=["1"],
        maintenance_window=storagecache.AmlFilesystemMaintenanceWindowArgs(
            day_of_week="Sunday", time_of_day_utc="02:00"
        ),
        tags=tags,
    )
    boot = base64.b64encode(b"#!/bin/bash\necho bootstrap\n").decode()
    ips = []
    for i, size in enumerate(_islands(nodes)):
        ppg = compute.ProximityPlacementGroup(
            f"{NAME}-island{i}-ppg",
            proximity_placement_group_name=f"{NAME}-island{i}-ppg",
            resource_group_name=rg.name,
            location=REGION,
            proximity_placement_group_type="Standard",
            tags=tags,
        )
        vmss = compute.VirtualMachineScaleSet(
            f"{NAME}-island{i}",
            vm_scale_set_name=f"{NAME}-island{i}",
            resource_group_name=rg.name,
            location=REGION,
            sku=compute.SkuArgs(name="Standard_ND96isr_H100_v5", tier="Standard", capacity=size),
            orchestration_mode="Uniform",
            single_placement_group=True,
            overprovision=False,
            platform_fault_domain_count=1,
            proximity_placement_group=compute.SubResourceArgs(id=ppg.id),
            upgrade_policy=compute.UpgradePolicyArgs(mode="Manual"),
            identity=compute.VirtualMachineScaleSetIdentityArgs(
                type="UserAssigned", user_assigned_identities=[identity.id]
            ),
            virtual_machine_profile=compute.VirtualMachineScaleSetVMProfileArgs(
                os_profile=compute.VirtualMachineScaleSetOSProfileArgs(
                    # One prefix per island: scale sets all count instance ids from 000000.
                    computer_name_prefix=NAME if len(_islands(nodes)) == 1 else f"{NAME}i{i}",
                    admin_username="azureuser",
                    custom_data=boot,
                    linux_configuration=compute.LinuxConfigurationArgs(
                        disable_password_authentication=True,
                        ssh=compute.SshConfigurationArgs(
                            public_keys=[
                                compute.SshPublicKeyArgs(path="/home/azureuser/.ssh/authorized_keys", key_data=KEY)
                            ]
                        ),
                    ),
                ),
                storage_profile=compute.VirtualMachineScaleSetStorageProfileArgs(
                    image_reference=compute.ImageReferenceArgs(
                        publisher="microsoft-dsvm", offer="ubuntu-hpc", sku="2204", version="22.04.2024102301"
                    ),
                    os_disk=compute.VirtualMachineScaleSetOSDiskArgs(
                        create_option="FromImage",
                        disk_size_gb=256,
                        managed_disk=compute.VirtualMachineScaleSetManagedDiskParametersArgs(
                            storage_account_type="Premium_LRS"
                        ),
                    ),
                ),
                network_profile=compute.VirtualMachineScaleSetNetworkProfileArgs(
                    network_interface_configurations=[
                        compute.VirtualMachineScaleSetNetworkConfigurationArgs(
                            name=f"{NAME}-nic",
                            primary=True,
                            enable_accelerated_networking=True,
                            ip_configurations=[
                                compute.VirtualMachineScaleSetIPConfigurationArgs(
                                    name="ipconfig1",
                                    primary=True,
                                    subnet=compute.ApiEntityReferenceArgs(id=nodes_subnet.id),
                                )
                            ],
                        )
                    ]
                ),
                security_profile=compute.SecurityProfileArgs(encryption_at_host=True),
                diagnostics_profile=compute.DiagnosticsProfileArgs(
                    boot_diagnostics=compute.BootDiagnosticsArgs(enabled=True)
                ),
                priority="Regular",
            ),
            tags=tags,
        )
        for k in range(size):
            nic = resources.get_resource_output(
                api_version="2018-10-01",
                resource_group_name=rg.name,
                resource_provider_namespace="Microsoft.Compute",
                parent_resource_path=vmss.name.apply(lambda n, k=k: f"virtualMachineScaleSets/{n}/virtualMachines/{k}"),
                resource_type="networkInterfaces",
                resource_name=f"{NAME}-nic",
            )
            ips.append(nic.properties.apply(lambda p: p["ipConfigurations"][0]["properties"]["privateIPAddress"]))
    pulumi.Output.all(*ips).apply(len)
