"""Azure adapter, build half: the plan as Pulumi resources (no decisions; they are all in ``plan.extra``).

Resources grow with InfiniBand islands, not nodes: per island one proximity placement group and
one Uniform scale set (``singlePlacementGroup``, no overprovisioning, one fault domain, manual
upgrades). Everything else is per cluster: resource group(s), user-assigned identity, VNet with a
node and a filesystem subnet, NSG, NAT gateway, and the shared filesystem.

The hostfile comes from one ``azure-native:resources:getResource`` invoke per node: azure-native
3.29 has no invoke for the VMSS network-interface list, so each VMSS VM's primary NIC is read at
``Microsoft.Compute/virtualMachineScaleSets/<vmss>/virtualMachines/<i>/networkInterfaces/<nic>``
(see ``VMSS_NIC_API_VERSION`` for which api-version actually goes on the wire). Instance ids are
0..n-1 for a scale set created with ``overprovision: false`` and never scaled; once an instance is
deleted (a Spot eviction with policy Delete, a manual delete) its read fails and so does the next
``pulumi up``, until the scale set is replaced (``pulumi up --target-replace`` on it).
"""

from __future__ import annotations

from typing import Any

import pulumi
from pulumi_azure_native import compute, managedidentity, resources

from provision.clouds.azure.adapter import VMSS_NIC_API_VERSION
from provision.clouds.azure.network import Network, build_bastion, build_network
from provision.clouds.azure.storage import SharedFs, build_filesystem
from provision.clouds.azure.userdata import custom_data
from provision.clouds.base import TAG_EXPIRES, TAG_RETAIN
from provision.planning.outputs import stack_outputs
from provision.planning.plan import ClusterPlan

TYPE_TOKEN = "provision:azure:Cluster"


def retained_tags(plan: ClusterPlan) -> dict[str, str]:
    """Tags of resources kept past the cluster: never expire, and say so for the reaper."""
    return {**plan.tags, TAG_EXPIRES: "never", TAG_RETAIN: "true"}


def _vm_path(index: int) -> Any:
    """``virtualMachineScaleSets/<name>/virtualMachines/<index>`` from the scale set's name."""
    return lambda name: f"virtualMachineScaleSets/{name}/virtualMachines/{index}"


def _private_ip(properties: Any) -> str:
    return str(properties["ipConfigurations"][0]["properties"]["privateIPAddress"])


class AzureCluster(pulumi.ComponentResource):
    """One cluster: networking, identity, shared filesystem and one scale set per InfiniBand island."""

    def __init__(self, plan: ClusterPlan, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE_TOKEN, plan.name, None, opts)
        self.plan = plan
        extra = plan.extra
        child = pulumi.ResourceOptions(parent=self)
        self.resource_group = resources.ResourceGroup(
            extra["resource_group"],
            resource_group_name=extra["resource_group"],
            location=plan.region,
            tags=plan.tags,
            opts=child,
        )
        net_rg: pulumi.Output[str] = self.resource_group.name
        net_tags, net_opts = plan.tags, child
        self.data_resource_group: resources.ResourceGroup | None = None
        if extra["retain_network"]:
            # The filesystem outlives the cluster, so it and the network it cannot leave go in their own
            # resource group that neither `pulumi destroy` (retain_on_delete) nor the reaper removes.
            net_tags = retained_tags(plan)
            net_opts = pulumi.ResourceOptions(parent=self, retain_on_delete=True)
            self.data_resource_group = resources.ResourceGroup(
                extra["network_resource_group"],
                resource_group_name=extra["network_resource_group"],
                location=plan.region,
                tags=net_tags,
                opts=net_opts,
            )
            net_rg = self.data_resource_group.name
        self.identity = managedidentity.UserAssignedIdentity(
            f"{plan.name}-identity",
            resource_name_=f"{plan.name}-identity",
            resource_group_name=self.resource_group.name,
            location=plan.region,
            tags=plan.tags,
            opts=child,
        )
        self.network: Network = build_network(plan, net_rg, net_tags, net_opts)
        if extra.get("bastion"):
            build_bastion(plan, net_rg, self.network, net_tags, net_opts)
        self.shared_fs: SharedFs | None = None
        if extra["filesystem"] is not None and self.network.filesystem is not None:
            self.shared_fs = build_filesystem(plan, net_rg, self.network.filesystem, net_tags, net_opts)
        boot = (
            self.shared_fs.mount.apply(lambda lines: custom_data(plan, lines))
            if self.shared_fs
            else pulumi.Output.from_input(custom_data(plan))
        )
        self.scale_sets: list[compute.VirtualMachineScaleSet] = []
        for island in extra["islands"]:
            ppg = None
            if island["ppg"]:
                ppg = compute.ProximityPlacementGroup(
                    island["ppg"],
                    proximity_placement_group_name=island["ppg"],
                    resource_group_name=self.resource_group.name,
                    location=plan.region,
                    proximity_placement_group_type="Standard",
                    # A size intent needs a zone; without one the PPG is pinned by its first VM.
                    intent=compute.ProximityPlacementGroupPropertiesIntentArgs(vm_sizes=[plan.instance_type])
                    if plan.zone
                    else None,
                    zones=[plan.zone] if plan.zone else None,
                    tags=plan.tags,
                    opts=child,
                )
            self.scale_sets.append(self._scale_set(island, ppg, boot, child))
        ips = pulumi.Output.all(
            *[ip for vmss, isl in zip(self.scale_sets, extra["islands"], strict=True) for ip in self._ips(vmss, isl)]
        )
        self.outputs = stack_outputs(plan, ips, None, self.shared_fs.summary if self.shared_fs else None)
        self.register_outputs({"hostfile": self.outputs["hostfile"]})

    def _scale_set(
        self,
        island: dict[str, Any],
        ppg: compute.ProximityPlacementGroup | None,
        boot: pulumi.Output[str],
        opts: pulumi.ResourceOptions,
    ) -> compute.VirtualMachineScaleSet:
        plan, extra = self.plan, self.plan.extra
        user = plan.access.ssh_user
        spot = extra["priority"] == "Spot"
        profile = compute.VirtualMachineScaleSetVMProfileArgs(
            os_profile=compute.VirtualMachineScaleSetOSProfileArgs(
                computer_name_prefix=island["computer_name_prefix"],
                admin_username=user,
                custom_data=boot,
                linux_configuration=compute.LinuxConfigurationArgs(
                    disable_password_authentication=True,
                    provision_vm_agent=True,
                    ssh=compute.SshConfigurationArgs(
                        public_keys=[
                            compute.SshPublicKeyArgs(path=f"/home/{user}/.ssh/authorized_keys", key_data=key)
                            for key in plan.access.ssh_public_keys
                        ]
                    ),
                ),
            ),
            storage_profile=compute.VirtualMachineScaleSetStorageProfileArgs(
                image_reference=compute.ImageReferenceArgs(**extra["image"]),
                os_disk=compute.VirtualMachineScaleSetOSDiskArgs(
                    create_option="FromImage",
                    caching=compute.CachingTypes.READ_WRITE,
                    disk_size_gb=extra["os_disk_gib"],
                    managed_disk=compute.VirtualMachineScaleSetManagedDiskParametersArgs(
                        storage_account_type="Premium_LRS"
                    ),
                ),
            ),
            network_profile=compute.VirtualMachineScaleSetNetworkProfileArgs(
                network_interface_configurations=[
                    compute.VirtualMachineScaleSetNetworkConfigurationArgs(
                        name=extra["nic"],
                        primary=True,
                        enable_accelerated_networking=True,
                        ip_configurations=[
                            compute.VirtualMachineScaleSetIPConfigurationArgs(
                                name="ipconfig1",
                                primary=True,
                                subnet=compute.ApiEntityReferenceArgs(id=self.network.nodes.id),
                            )
                        ],
                    )
                ]
            ),
            security_profile=compute.SecurityProfileArgs(encryption_at_host=True)
            if extra["encryption_at_host"]
            else None,
            # Managed boot diagnostics: no storage account (and no public blob endpoint) of ours.
            diagnostics_profile=compute.DiagnosticsProfileArgs(
                boot_diagnostics=compute.BootDiagnosticsArgs(enabled=True)
            ),
            priority=extra["priority"],
            eviction_policy=extra["eviction_policy"] if spot else None,
            billing_profile=compute.BillingProfileArgs(max_price=extra["max_price"]) if spot else None,
            capacity_reservation=compute.CapacityReservationProfileArgs(
                capacity_reservation_group=compute.SubResourceArgs(id=extra["capacity_reservation_group"])
            )
            if extra["capacity_reservation_group"]
            else None,
        )
        return compute.VirtualMachineScaleSet(
            island["vmss"],
            vm_scale_set_name=island["vmss"],
            resource_group_name=self.resource_group.name,
            location=plan.region,
            sku=compute.SkuArgs(name=plan.instance_type, tier="Standard", capacity=island["nodes"]),
            orchestration_mode="Uniform",
            single_placement_group=extra["single_placement_group"],
            overprovision=False,
            platform_fault_domain_count=1,
            proximity_placement_group=compute.SubResourceArgs(id=ppg.id) if ppg else None,
            upgrade_policy=compute.UpgradePolicyArgs(mode=compute.UpgradeMode.MANUAL),
            zones=[plan.zone] if plan.zone else None,
            identity=compute.VirtualMachineScaleSetIdentityArgs(
                type=compute.ResourceIdentityType.USER_ASSIGNED, user_assigned_identities=[self.identity.id]
            ),
            virtual_machine_profile=profile,
            tags=plan.tags,
            opts=opts,
        )

    def _ips(self, vmss: compute.VirtualMachineScaleSet, island: dict[str, Any]) -> list[pulumi.Output[str]]:
        """Private IPs of the island's instances 0..n-1, in rank order."""
        nic = self.plan.extra["nic"]
        invoke_opts = pulumi.InvokeOutputOptions(parent=self)
        out = []
        for index in range(island["nodes"]):
            parent_path = vmss.name.apply(_vm_path(index))
            nic_result = resources.get_resource_output(
                api_version=VMSS_NIC_API_VERSION,
                resource_group_name=self.resource_group.name,
                resource_provider_namespace="Microsoft.Compute",
                parent_resource_path=parent_path,
                resource_type="networkInterfaces",
                resource_name=nic,
                opts=invoke_opts,
            )
            out.append(nic_result.properties.apply(_private_ip))
        return out


def build(plan: ClusterPlan) -> dict[str, Any]:
    """Create the cluster described by ``plan``; returns the stack outputs (DESIGN.md)."""
    return AzureCluster(plan).outputs
