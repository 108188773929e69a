"""Azure ``scheduler: slurm``: the controller VM (``slurmctld``, and ``slurmdbd`` when accounting is asked).

:func:`slurm_controller_plan` is the adapter's decision (pure data, no SDK); :func:`build_controller` creates one
``network.NetworkInterface`` in the node subnet (the node NSG admits any port between the cluster's nodes, so
slurmd and slurmctld talk; no public IP configuration) and one ``compute.VirtualMachine`` in the cluster's resource
group and zone, reached the way the nodes are (Azure Bastion by private IP, or the networks of
``access.allowed_cidrs``). Its OS disk is a managed disk, which Azure encrypts at rest ("Server-side encryption of
Azure Disk Storage", https://learn.microsoft.com/azure/virtual-machines/disk-encryption: "All managed disks ... are
encrypted by default"), plus encryption at host when the nodes have it (``azure.encryption_at_host``).

Lifetime: Azure has no VM lifetime and an in-guest shutdown leaves the VM allocated and billed, so with
``azure.delete_at_expiry`` the controller carries the nodes' identity and its timer deletes the controller VM
(``clouds/azure/expiry.py``: the role gains ``Microsoft.Compute/virtualMachines/delete``); its OS disk and NIC go
with it (``deleteOption: Delete``). Without it, the tags and the reaper end it like the nodes. Topology: one
block or leaf switch per scale set (``plan.islands``: an ND InfiniBand island is one single-placement-group scale
set). The rendered Slurm files are the ``slurm`` stack output; ``provision up`` sends them with the munge key over
SSH (:mod:`provision.ops.slurm`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from provision.clouds.azure.plan import SlurmController

if TYPE_CHECKING:
    import pulumi

    from provision.clouds.azure.plan import AzurePlan
    from provision.planning.plan import ClusterPlan
    from provision.spec import ClusterSpec

#: 4 vCPU, 16 GiB, general purpose with premium storage (Dsv5 series,
#: https://learn.microsoft.com/azure/virtual-machines/dv5-dsv5-series); slurmctld and slurmdbd of a few hundred
#: nodes fit.
DEFAULT_INSTANCE_TYPE = "Standard_D4s_v5"
#: Premium SSD: supported by the Dsv5 series ("Premium Storage: Supported", same page).
DISK_TYPE = "Premium_LRS"
#: The ubuntu-hpc image's OS (images/azure.yaml ``os``): picks the Slurm pin in images/compat.yaml.
DEFAULT_OS = "ubuntu-22.04"


def slurm_controller_plan(spec: ClusterSpec) -> SlurmController | None:
    """The controller of a ``scheduler.kind: slurm`` cluster (``None`` for other kinds)."""
    from provision.planning.slurm import controller_plan

    return controller_plan(spec, DEFAULT_INSTANCE_TYPE, SlurmController, disk_type=DISK_TYPE)  # type: ignore[no-any-return]


def _os(plan: ClusterPlan[AzurePlan]) -> str:
    return plan.image.versions.get("os", DEFAULT_OS)


def rendered_files(plan: ClusterPlan[AzurePlan], controller_addr: str | None, node_addrs: list[str]) -> dict[str, str]:
    """slurm.conf, gres.conf, topology.conf, cgroup.conf, plugstack.conf of the plan with these addresses
    (the nodes' addresses are their scale-set host names, which Azure DNS resolves inside the VNet)."""
    from provision.planning.slurm import plan_files

    return plan_files(plan, _os(plan), controller_addr, node_addrs)


def controller_custom_data(plan: ClusterPlan[AzurePlan]) -> str:
    """The controller's base64 custom data: the shared controller cloud-config with Azure's lifetime (the VM deletes
    itself at the expiry through the nodes' role) instead of a shutdown, which on Azure keeps billing."""
    import base64

    from provision.clouds.azure.expiry import expiry_files
    from provision.clouds.azure.userdata import MAX_CUSTOM_DATA_BYTES
    from provision.planning.slurm import controller_user_data, slurm_pins

    lifetime = expiry_files(plan, target="vm") if plan.extra.lifetime == "node-timer" else []
    # The admin user and its keys come from osProfile (as on the nodes): no keys in the custom data.
    text = controller_user_data(plan, slurm_pins(_os(plan)), lifetime=lifetime)
    if len(text.encode()) > MAX_CUSTOM_DATA_BYTES:
        raise ValueError(f"custom data is {len(text.encode())} bytes, over Azure's limit of {MAX_CUSTOM_DATA_BYTES}")
    return base64.b64encode(text.encode()).decode()


def build_controller(
    plan: ClusterPlan[AzurePlan],
    *,
    resource_group_name: Any,
    subnet_id: Any,
    identity_id: Any,
    parent: pulumi.Resource,
    depends_on: list[pulumi.Resource],
    security: Any = None,
) -> dict[str, Any]:
    """Create the controller; returns the ``slurm`` stack output (name, address, VM name, rendered files).

    ``identity_id``: the nodes' user-assigned identity (``None`` without a node timer). ``security``: its
    ``securityProfile`` (components.security_profile for the controller's size: Trusted Launch where it has it)."""
    import pulumi
    from pulumi_azure_native import compute, network

    from provision.clouds.azure.osprofile import linux_configuration

    extra = plan.extra
    ctl = extra.slurm
    assert ctl is not None  # noqa: S101
    opts = pulumi.ResourceOptions(parent=parent)
    nic = network.NetworkInterface(
        f"{ctl.name}-nic",
        network_interface_name=f"{ctl.name}-nic",
        resource_group_name=resource_group_name,
        location=plan.region,
        ip_configurations=[
            network.NetworkInterfaceIPConfigurationArgs(
                name="ipconfig1",
                primary=True,
                private_ip_allocation_method="Dynamic",
                subnet=network.SubnetArgs(id=subnet_id),
            )  # no public_ip_address: no public IP
        ],
        tags=plan.tags,
        opts=opts,
    )
    vm = compute.VirtualMachine(
        ctl.name,
        vm_name=ctl.name,
        resource_group_name=resource_group_name,
        location=plan.region,
        zones=[plan.zone] if plan.zone else None,
        hardware_profile=compute.HardwareProfileArgs(vm_size=ctl.instance_type),
        os_profile=compute.OSProfileArgs(
            computer_name=ctl.name,
            admin_username=plan.access.ssh_user,
            custom_data=controller_custom_data(plan),
            linux_configuration=linux_configuration(plan.access),
        ),
        storage_profile=compute.StorageProfileArgs(
            image_reference=compute.ImageReferenceArgs(**extra.image.model_dump(exclude_none=True)),
            os_disk=compute.OSDiskArgs(
                create_option=compute.DiskCreateOptionTypes.FROM_IMAGE,
                caching=compute.CachingTypes.READ_WRITE,
                delete_option=compute.DiskDeleteOptionTypes.DELETE,
                disk_size_gb=ctl.disk_gib,
                managed_disk=compute.ManagedDiskParametersArgs(storage_account_type=ctl.disk_type),
            ),
        ),
        network_profile=compute.NetworkProfileArgs(
            network_interfaces=[
                compute.NetworkInterfaceReferenceArgs(
                    id=nic.id, primary=True, delete_option=compute.DeleteOptions.DELETE
                )
            ]
        ),
        security_profile=security,
        diagnostics_profile=compute.DiagnosticsProfileArgs(boot_diagnostics=compute.BootDiagnosticsArgs(enabled=True)),
        identity=compute.VirtualMachineIdentityArgs(
            type=compute.ResourceIdentityType.USER_ASSIGNED, user_assigned_identities=[identity_id]
        )
        if identity_id is not None
        else None,
        tags=plan.tags,
        opts=pulumi.ResourceOptions(parent=parent, depends_on=depends_on),
    )
    addr = nic.ip_configurations.apply(_private_ip)
    hosts = [h for isl in extra.islands for h in _hostnames(isl)]
    return {
        "controller": ctl.name,
        "address": addr,
        "instance_id": vm.name,
        "files": pulumi.Output.all(addr, vm.id).apply(lambda a: rendered_files(plan, a[0], hosts)),
    }


def _private_ip(configs: Any) -> str | None:
    """The primary IP configuration's private address (the Output's items are response objects or mappings)."""
    for cfg in configs or []:
        if isinstance(cfg, dict):
            ip = cfg.get("private_ip_address") or cfg.get("privateIPAddress")
        else:
            ip = getattr(cfg, "private_ip_address", None)
        if ip:
            return str(ip)
    return None


def _hostnames(island: Any) -> list[str]:
    from provision.clouds.azure.rules import vmss_hostnames

    return vmss_hostnames(island.computer_name_prefix, island.nodes)
