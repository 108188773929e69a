"""Azure adapter, build half: the plan as Pulumi resources (no decisions; they are all in ``plan.extra``).

Resources grow with InfiniBand islands, not nodes: per island one proximity placement group and
one Uniform scale set (``singlePlacementGroup``, no overprovisioning, ``platformFaultDomainCount`` 1,
i.e. max spreading, manual upgrades). Everything else is per cluster: resource group(s), VNet with a
node and a filesystem subnet, one NSG for each, NAT gateway, and the shared filesystem.

The hostfile holds the nodes' hostnames, which Azure-provided DNS resolves inside the VNet: a Uniform
scale set names instance ``i`` ``<computer name prefix><i in six base-36 digits>`` (see
:func:`provision.clouds.azure.rules.vmss_hostnames`), so no read per node is needed (azure-native 3.29 has
no invoke that lists a scale set's VMs or NICs; the per-NIC ``resources:getResource`` read it replaces cost
one call per node on every preview and went out with an api-version the program could not choose).
Instances are numbered 0..n-1 when a scale set with ``overprovision: false`` is created and never scaled
(Microsoft does not promise this order, "Understand names and instance IDs"); a node deleted later (Spot
eviction with policy Delete, a manual delete) leaves a name that no longer resolves.
"""

from __future__ import annotations

from typing import Any

import pulumi
from pulumi_azure_native import authorization, compute, managedidentity, resources

from provision.clouds.azure.expiry import ROLE_PROPAGATION, identity_name, role_actions, role_guid, role_name
from provision.clouds.azure.fslookup import READER_ROLE, needs_identity
from provision.clouds.azure.network import Network, build_bastion, build_network
from provision.clouds.azure.osprofile import linux_configuration
from provision.clouds.azure.plan import AzurePlan, Island
from provision.clouds.azure.rules import vmss_hostnames
from provision.clouds.azure.storage import SharedFs, attached_filesystem, build_filesystem, link_output
from provision.clouds.azure.trustedlaunch import security_settings
from provision.clouds.azure.userdata import custom_data
from provision.clouds.azure.volumelink import build_volume_peering
from provision.clouds.base import TAG_EXPIRES, TAG_RETAIN
from provision.clouds.outputs import stack_outputs
from provision.clouds.volumeref import volume_reference
from provision.planning.plan import ClusterPlan

TYPE_TOKEN = "provision:azure:Cluster"
ROLE_DEFINITIONS = "providers/Microsoft.Authorization/roleDefinitions"


def retained_tags(plan: ClusterPlan[AzurePlan]) -> dict[str, str]:
    """Tags of resources kept past the cluster: never expire, and say so for the reaper."""
    return {**plan.tags, TAG_EXPIRES: "never", TAG_RETAIN: "true"}


class AzureCluster(pulumi.ComponentResource):
    """One cluster: networking, shared filesystem and one scale set per InfiniBand island."""

    def __init__(self, plan: ClusterPlan[AzurePlan], opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE_TOKEN, plan.name, None, opts)
        self.plan = plan
        extra = plan.extra
        child = pulumi.ResourceOptions(parent=self)
        self.resource_group = resources.ResourceGroup(
            extra.resource_group,
            resource_group_name=extra.resource_group,
            location=plan.region,
            tags=plan.tags,
            opts=child,
        )
        net_rg: pulumi.Output[str] = self.resource_group.name
        net_tags, net_opts = plan.tags, child
        self.data_resource_group: resources.ResourceGroup | None = None
        if extra.retain_network:
            # The filesystem outlives the cluster, so it and the network it cannot leave go in their own
            # resource group that neither `pulumi destroy` (retain_on_delete) nor the reaper removes.
            net_tags = retained_tags(plan)
            net_opts = pulumi.ResourceOptions(parent=self, retain_on_delete=True)
            self.data_resource_group = resources.ResourceGroup(
                extra.network_resource_group,
                resource_group_name=extra.network_resource_group,
                location=plan.region,
                tags=net_tags,
                opts=net_opts,
            )
            net_rg = self.data_resource_group.name
        # The nodes carry an identity only for stated purposes: the expiry timer's delete-only role (expiry.py) and
        # read access to the shared filesystem, whose address they look up at boot (fslookup.py). An identity with no
        # role would serve nothing, and any process could use it once someone granted it a role.
        self.identity: managedidentity.UserAssignedIdentity | None = None
        self.expiry_definition: authorization.RoleDefinition | None = None
        self.expiry_assignment: authorization.RoleAssignment | None = None
        if needs_identity(plan):
            self.identity = managedidentity.UserAssignedIdentity(
                identity_name(plan),
                resource_name_=identity_name(plan),
                resource_group_name=self.resource_group.name,
                location=plan.region,
                tags=plan.tags,
                opts=child,
            )
        if extra.lifetime == "node-timer" and self.identity is not None:
            self.expiry_definition, self.expiry_assignment = self._expiry_role(self.identity, child)
        volume = volume_reference(plan, self)  # an attached volume: its filesystem lives in its own stack
        volume_cidr = volume.network_field("cidr") if volume is not None else None
        self.network: Network = build_network(plan, net_rg, net_tags, net_opts, volume_cidr)
        if extra.bastion:
            build_bastion(plan, net_rg, self.network, net_tags, net_opts)
        self.shared_fs: SharedFs | None = None
        self.fs_reader: authorization.RoleAssignment | None = None
        if volume is not None:
            self.shared_fs = attached_filesystem(plan, volume.mount_source, volume.name)
            build_volume_peering(plan, net_rg, self.network, volume, net_opts)
        elif extra.filesystem is not None and self.network.filesystem is not None:
            self.shared_fs = build_filesystem(plan, net_rg, self.network.filesystem, net_tags, net_opts)
            if self.identity is not None and self.shared_fs.resource is not None:
                self.fs_reader = self._fs_reader(self.identity, self.shared_fs.resource, child)
        # GPUs first: the custom data holds nothing the filesystem creates (the nodes look its address up at boot),
        # so the scale sets are requested in parallel with it and a stock-out costs no filesystem creation.
        attached = self.shared_fs.source if self.shared_fs is not None else None
        boot = (
            attached.apply(lambda s: custom_data(plan, s))
            if attached is not None
            else pulumi.Output.from_input(custom_data(plan))
        )
        self.scale_sets: list[compute.VirtualMachineScaleSet] = []
        groups: dict[str, compute.ProximityPlacementGroup] = {}
        for island in extra.islands:
            ppg = groups.get(island.ppg) if island.ppg else None
            if island.ppg and ppg is None:
                ppg = groups[island.ppg] = compute.ProximityPlacementGroup(
                    island.ppg,
                    proximity_placement_group_name=island.ppg,
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
        # Known from the plan; the Output only waits for every scale set to exist.
        names = [h for isl in extra.islands for h in vmss_hostnames(isl.computer_name_prefix, isl.nodes)]
        hosts = pulumi.Output.all(*[vmss.id for vmss in self.scale_sets]).apply(lambda _: names)
        self.outputs = stack_outputs(plan, hosts, None, self.shared_fs.summary if self.shared_fs else None)
        link = link_output(plan) if volume is None else None
        if link is not None:
            self.outputs["object_store"] = link
        # What the host key reader needs (provision.clouds.azure.hostkeys.read_scale_sets): the group's id (it names
        # the subscription) and the scale sets, whose VMs it lists (their instance ids are only known once they exist).
        self.outputs["scale_sets"] = pulumi.Output.all(
            self.resource_group.id, *[vmss.name for vmss in self.scale_sets]
        ).apply(lambda a: {"resource_group": extra.resource_group, "resource_group_id": a[0], "names": list(a[1:])})
        if extra.slurm is not None:  # scheduler: slurm
            from provision.clouds.azure.slurm import build_controller

            self.outputs["slurm"] = build_controller(
                plan,
                security=security_profile(extra.slurm.instance_type, extra.encryption_at_host),
                resource_group_name=self.resource_group.name,
                subnet_id=self.network.nodes.id,
                identity_id=self.identity.id if self.identity is not None else None,
                parent=self,
                # Like the scale sets: its expiry timer needs its role before it runs.
                depends_on=[self.expiry_assignment] if self.expiry_assignment else [],
            )
        self.register_outputs({"hostfile": self.outputs["hostfile"]})

    def _expiry_role(
        self, identity: managedidentity.UserAssignedIdentity, opts: pulumi.ResourceOptions
    ) -> tuple[authorization.RoleDefinition, authorization.RoleAssignment]:
        """The custom role (only scale-set delete, scoped to the cluster's resource group) the expiry timer uses.

        See ``expiry.py``. The role definition lives at the subscription (Azure keeps custom roles
        there) but can only be assigned inside the cluster's group; the assignment goes to the
        identity the scale sets carry. ``principal_type`` avoids the replication-delay failure of a
        brand-new identity (learn.microsoft.com/azure/role-based-access-control/role-assignments-template
        "New service principal"). A brand-new custom role is not at once visible to the assignment API
        (``RoleDefinitionDoesNotExist``, "a transient error which may occur when the Resource Provider in ARM is yet
        to complete replication of the newly created Role Definition": Azure/terraform-azurerm-caf-enterprise-scale
        wiki, Troubleshooting), and Azure Resource Manager's caches take "up to 10 minutes" to show RBAC changes
        (MicrosoftDocs/azure-docs role-based-access-control/troubleshooting.md): the assignment waits
        :data:`~provision.clouds.azure.expiry.ROLE_PROPAGATION` after the definition. The scale sets wait only for
        the definition (a deployer who may not write roles stops there, before any GPU bills; the preflight checks
        the assignment right), so the wait costs the GPUs nothing; the timer fires hours later.
        """
        import pulumiverse_time  # the azure extra; imported here so `import provision` stays light

        plan = self.plan
        rg_id = self.resource_group.id
        definition = authorization.RoleDefinition(
            f"{plan.name}-expiry-role",
            # Seeded with the group's id (subscription and group): tenant-unique, stable (expiry.role_guid).
            role_definition_id=rg_id.apply(lambda i: role_guid(i, "definition")),
            role_name=rg_id.apply(lambda i: role_name(plan.name, i)),
            description=f"provision: lets the nodes of cluster {plan.name} delete its resource group at expiry",
            role_type="CustomRole",
            scope=rg_id.apply(lambda i: "/".join(i.split("/")[:3])),
            assignable_scopes=[rg_id],
            permissions=[authorization.PermissionArgs(actions=list(role_actions(plan)))],
            opts=opts,
        )
        replicated = pulumiverse_time.Sleep(
            f"{plan.name}-expiry-role-propagation",
            create_duration=ROLE_PROPAGATION,
            # A replaced definition is a new definition: the wait runs again.
            triggers={"definition": definition.id},
            opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[definition])),
        )
        assignment = authorization.RoleAssignment(
            f"{plan.name}-expiry-assignment",
            role_assignment_name=rg_id.apply(lambda i: role_guid(i, "assignment")),
            principal_id=identity.principal_id,
            principal_type=authorization.PrincipalType.SERVICE_PRINCIPAL,
            role_definition_id=definition.id,
            scope=rg_id,
            description="provision: the cluster's nodes delete its resource group at expiry",
            opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[replicated])),
        )
        return definition, assignment

    def _fs_reader(
        self,
        identity: managedidentity.UserAssignedIdentity,
        filesystem: pulumi.CustomResource,
        opts: pulumi.ResourceOptions,
    ) -> authorization.RoleAssignment:
        """The built-in Reader role on the one filesystem resource, for the nodes' boot-time lookup (fslookup.py).

        A built-in role needs no definition of ours (nothing to replicate, no tenant-unique name); the deployer needs
        ``Microsoft.Authorization/roleAssignments/write``, which the preflight checks. No scale set waits for it.
        """
        return authorization.RoleAssignment(
            f"{self.plan.name}-fs-reader",
            role_assignment_name=filesystem.id.apply(lambda i: role_guid(i, "fs-reader")),
            principal_id=identity.principal_id,
            principal_type=authorization.PrincipalType.SERVICE_PRINCIPAL,
            # Built-in roles are named below the subscription: /subscriptions/{id}/providers/Microsoft.Authorization/...
            role_definition_id=self.resource_group.id.apply(
                lambda i: "/".join([*i.split("/")[:3], ROLE_DEFINITIONS, READER_ROLE])
            ),
            scope=filesystem.id,
            description="provision: the cluster's nodes read the shared filesystem's address at boot",
            opts=opts,
        )

    def _scale_set(
        self,
        island: Island,
        ppg: compute.ProximityPlacementGroup | None,
        boot: pulumi.Output[str],
        opts: pulumi.ResourceOptions,
    ) -> compute.VirtualMachineScaleSet:
        plan, extra = self.plan, self.plan.extra
        spot = extra.priority == "Spot"
        profile = compute.VirtualMachineScaleSetVMProfileArgs(
            os_profile=compute.VirtualMachineScaleSetOSProfileArgs(
                computer_name_prefix=island.computer_name_prefix,
                admin_username=plan.access.ssh_user,
                custom_data=boot,
                linux_configuration=linux_configuration(plan.access),
            ),
            storage_profile=compute.VirtualMachineScaleSetStorageProfileArgs(
                image_reference=compute.ImageReferenceArgs(**extra.image.model_dump(exclude_none=True)),
                os_disk=compute.VirtualMachineScaleSetOSDiskArgs(
                    create_option="FromImage",
                    caching=compute.CachingTypes.READ_WRITE,
                    disk_size_gb=extra.os_disk_gib,
                    managed_disk=compute.VirtualMachineScaleSetManagedDiskParametersArgs(
                        storage_account_type="Premium_LRS"
                    ),
                ),
            ),
            network_profile=compute.VirtualMachineScaleSetNetworkProfileArgs(
                network_interface_configurations=[
                    compute.VirtualMachineScaleSetNetworkConfigurationArgs(
                        name=extra.nic,
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
            security_profile=security_profile(plan.instance_type, extra.encryption_at_host),
            # Managed boot diagnostics: no storage account (and no public blob endpoint) of ours.
            diagnostics_profile=compute.DiagnosticsProfileArgs(
                boot_diagnostics=compute.BootDiagnosticsArgs(enabled=True)
            ),
            priority=extra.priority,
            eviction_policy=extra.eviction_policy if spot else None,
            billing_profile=compute.BillingProfileArgs(max_price=extra.max_price) if spot else None,
            capacity_reservation=compute.CapacityReservationProfileArgs(
                capacity_reservation_group=compute.SubResourceArgs(id=extra.capacity_reservation_group)
            )
            if extra.capacity_reservation_group
            else None,
        )
        return compute.VirtualMachineScaleSet(
            island.vmss,
            vm_scale_set_name=island.vmss,
            resource_group_name=self.resource_group.name,
            location=plan.region,
            sku=compute.SkuArgs(name=plan.instance_type, tier="Standard", capacity=island.nodes),
            orchestration_mode="Uniform",
            single_placement_group=extra.single_placement_group,
            overprovision=False,
            platform_fault_domain_count=1,
            proximity_placement_group=compute.SubResourceArgs(id=ppg.id) if ppg else None,
            upgrade_policy=compute.UpgradePolicyArgs(mode=compute.UpgradeMode.MANUAL),
            zones=[plan.zone] if plan.zone else None,
            identity=compute.VirtualMachineScaleSetIdentityArgs(
                type=compute.ResourceIdentityType.USER_ASSIGNED, user_assigned_identities=[self.identity.id]
            )
            if self.identity is not None
            else None,
            virtual_machine_profile=profile,
            tags=plan.tags,
            opts=pulumi.ResourceOptions.merge(
                opts, pulumi.ResourceOptions(depends_on=[self.expiry_definition] if self.expiry_definition else [])
            ),
        )


def security_profile(size: str, encryption_at_host: bool) -> compute.SecurityProfileArgs | None:
    """The VM or scale-set ``securityProfile``: Trusted Launch where the size has it (trustedlaunch.py)."""
    fields = security_settings(size, encryption_at_host)
    if fields is None:
        return None
    uefi = fields.pop("uefi_settings", None)
    return compute.SecurityProfileArgs(
        **fields,  # type: ignore[arg-type]
        uefi_settings=compute.UefiSettingsArgs(**uefi) if isinstance(uefi, dict) else None,
    )


def build(plan: ClusterPlan[AzurePlan]) -> dict[str, Any]:
    """Create the cluster described by ``plan``; returns the stack outputs (docs/contracts.md)."""
    return AzureCluster(plan).outputs
