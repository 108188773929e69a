"""Shared filesystems: Azure Managed Lustre, or Azure NetApp Files over NFS (Pulumi only, no decisions).

Both return the ``shared_fs`` output (the Lustre MGS address and the NFS mount IP are known only after creation)
and the filesystem resource, to which the nodes' identity gets read access: nodes look the address up at boot
(``fslookup.py``), so no scale set waits for the filesystem.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi_azure_native import authorization, netapp, network, storagecache

from provision.clouds.azure.expiry import role_guid
from provision.clouds.azure.fslookup import LUSTRE_FSNAME, LUSTRE_OPTIONS, NFS_OPTIONS
from provision.clouds.azure.plan import Amlfs, AzurePlan, NetApp
from provision.planning.outputs import shared_fs_summary
from provision.planning.plan import ClusterPlan


@dataclass
class SharedFs:
    summary: pulumi.Output[dict[str, Any]]
    #: The resource the nodes read their mount address from (the AMLFS, or the NetApp volume); ``None`` for an
    #: attached volume, whose address is known before the cluster exists and goes into the custom data.
    resource: pulumi.CustomResource | None
    #: An attached volume's mount source (``Output[str]``), else ``None``.
    source: pulumi.Output[str] | None = None


def _outputs(
    plan: ClusterPlan[AzurePlan],
    source: pulumi.Output[str],
    fs_type: str,
    options: str,
    resource: pulumi.CustomResource | None,
) -> SharedFs:
    return SharedFs(summary=source.apply(lambda s: shared_fs_summary(plan, s, fs_type, options)), resource=resource)


def attached_filesystem(plan: ClusterPlan[AzurePlan], source: pulumi.Output[str], volume: str) -> SharedFs:
    """An attached volume's filesystem (its own stack holds it): mounted as a cluster-owned one of its kind."""
    fs_type, options = (
        ("nfs", NFS_OPTIONS) if plan.storage and plan.storage.kind == "netapp" else ("lustre", LUSTRE_OPTIONS)
    )
    own = _outputs(plan, source, fs_type, options, None)
    return SharedFs(
        summary=own.summary.apply(lambda s: {**s, "volume": volume, "retain": True}), resource=None, source=source
    )


def build_filesystem(
    plan: ClusterPlan[AzurePlan],
    rg_name: pulumi.Input[str],
    subnet: network.Subnet,
    tags: dict[str, str],
    opts: pulumi.ResourceOptions,
) -> SharedFs:
    """Create the planned filesystem in ``rg_name`` on ``subnet``."""
    fs = plan.extra.filesystem
    assert fs is not None  # noqa: S101 - called only when the plan has a filesystem
    if isinstance(fs, Amlfs):
        return _amlfs(plan, fs, rg_name, subnet, tags, opts)
    return _netapp(plan, fs, rg_name, subnet, tags, opts)


def _amlfs(
    plan: ClusterPlan[AzurePlan],
    fs: Amlfs,
    rg_name: pulumi.Input[str],
    subnet: network.Subnet,
    tags: dict[str, str],
    opts: pulumi.ResourceOptions,
) -> SharedFs:
    grants = blob_grants(fs, opts)
    if grants:  # "If the file system can't access your blob container, file system creation fails"
        opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=grants))
    lustre, source = amlfs_resource(fs, plan.region, rg_name, subnet.id, tags, opts)
    return _outputs(plan, source, "lustre", LUSTRE_OPTIONS, lustre)


def amlfs_resource(
    fs: Amlfs,
    location: str,
    rg_name: pulumi.Input[str],
    subnet_id: pulumi.Input[str],
    tags: dict[str, str],
    opts: pulumi.ResourceOptions,
) -> tuple[storagecache.AmlFilesystem, pulumi.Output[str]]:
    """The Managed Lustre file system ``fs`` on ``subnet_id`` and its mount source (a cluster's, or a volume's)."""
    lustre = storagecache.AmlFilesystem(
        fs.name,
        aml_filesystem_name=fs.name,
        resource_group_name=rg_name,
        location=location,
        sku=storagecache.SkuNameArgs(name=fs.sku),
        storage_capacity_ti_b=fs.capacity_tib,
        filesystem_subnet=subnet_id,
        zones=[fs.zone] if fs.zone else None,
        maintenance_window=storagecache.AmlFilesystemMaintenanceWindowArgs(
            day_of_week=storagecache.MaintenanceDayOfWeekType(fs.maintenance.day_of_week),
            time_of_day_utc=fs.maintenance.time_of_day_utc,
        ),
        # storage.shared.object_store: the Blob container link (spec/objectstore.py checks it; strict.py too).
        hsm=storagecache.AmlFilesystemHsmArgs(
            settings=storagecache.AmlFilesystemHsmSettingsArgs(
                container=fs.hsm.container,
                logging_container=fs.hsm.logging_container,
                import_prefix=fs.hsm.import_prefix,
            )
        )
        if fs.hsm is not None
        else None,
        tags=tags,
        opts=opts,
    )
    return lustre, lustre.client_info.apply(lambda c: f"{c.mgs_address}@tcp:/{LUSTRE_FSNAME}")


#: The built-in roles Managed Lustre's blob integration needs on the storage account, granted to the "HPC Cache
#: Resource Provider" service principal (https://learn.microsoft.com/azure/azure-managed-lustre/amlfs-prerequisites
#: #access-roles-for-blob-integration; role ids: https://learn.microsoft.com/azure/role-based-access-control/
#: built-in-roles, Storage Account Contributor and Storage Blob Data Contributor).
BLOB_ROLES = {
    "storage-account-contributor": "17d1049b-9a84-46fb-8f53-869881c3d3ab",
    "storage-blob-data-contributor": "ba92f5b4-2d11-453d-a403-e96b0029c9fe",
}


def blob_grants(fs: Amlfs, opts: pulumi.ResourceOptions) -> list[authorization.RoleAssignment]:
    """The two role assignments of the HSM link, scoped to the linked storage account only (empty without a link).

    Scope: the account (the prerequisites page adds them in the account's "Access control (IAM)"), never its
    resource group or subscription. The assignment names are GUIDs seeded with the file system's name and the
    account, stable across runs. They go with the file system at ``down``.
    """
    hsm = fs.hsm
    if hsm is None or hsm.account_id is None or hsm.principal_id is None:
        return []
    subscription = "/".join(hsm.account_id.split("/")[:3])  # /subscriptions/{id}: where built-in roles are named
    out = []
    for key, role in BLOB_ROLES.items():
        out.append(
            authorization.RoleAssignment(
                f"{fs.name}-{key}",
                role_assignment_name=role_guid(f"{hsm.account_id}/{fs.name}", key),
                principal_id=hsm.principal_id,
                principal_type=authorization.PrincipalType.SERVICE_PRINCIPAL,
                role_definition_id=f"{subscription}/providers/Microsoft.Authorization/roleDefinitions/{role}",
                scope=hsm.account_id,
                description=f"provision: Managed Lustre {fs.name} reads and archives the linked blob container",
                opts=opts,
            )
        )
    return out


def link_output(plan: ClusterPlan[AzurePlan]) -> dict[str, Any] | None:
    """The ``object_store`` stack output (the HSM link and its grant), or ``None`` without a link."""
    fs, shared = plan.extra.filesystem, plan.spec.storage.shared
    if not isinstance(fs, Amlfs) or fs.hsm is None or shared is None or shared.object_store is None:
        return None
    return {
        "kind": "amlfs",
        "uri": shared.object_store.uri,
        "import_path": fs.hsm.import_prefix,
        "export_path": None,
        "grant": {
            "principal": fs.hsm.principal_id,
            "roles": ["Storage Account Contributor", "Storage Blob Data Contributor"],
            "scope": f"storage account {fs.hsm.account_id}",
        },
    }


def _netapp(
    plan: ClusterPlan[AzurePlan],
    fs: NetApp,
    rg_name: pulumi.Input[str],
    subnet: network.Subnet,
    tags: dict[str, str],
    opts: pulumi.ResourceOptions,
) -> SharedFs:
    volume, source = netapp_resources(fs, plan.region, rg_name, subnet.id, tags, opts)
    return _outputs(plan, source, "nfs", NFS_OPTIONS, volume)


def netapp_resources(
    fs: NetApp,
    location: str,
    rg_name: pulumi.Input[str],
    subnet_id: pulumi.Input[str],
    tags: dict[str, str],
    opts: pulumi.ResourceOptions,
) -> tuple[netapp.CapacityPoolVolume, pulumi.Output[str]]:
    """The NetApp account, pool and NFS volume ``fs`` on ``subnet_id``, and its mount source (cluster or volume)."""
    account = netapp.Account(
        fs.account,
        account_name=fs.account,
        resource_group_name=rg_name,
        location=location,
        tags=tags,
        opts=opts,
    )
    pool = netapp.CapacityPool(
        fs.pool,
        account_name=account.name,
        pool_name=fs.pool,
        resource_group_name=rg_name,
        location=location,
        service_level=fs.service_level,
        size=fs.pool_bytes,
        qos_type="Auto",
        tags=tags,
        opts=opts,
    )
    volume = netapp.CapacityPoolVolume(
        fs.volume,
        account_name=account.name,
        pool_name=pool.name.apply(lambda n: n.split("/")[-1]),
        volume_name=fs.volume,
        resource_group_name=rg_name,
        location=location,
        creation_token=fs.creation_token,
        service_level=fs.service_level,
        subnet_id=subnet_id,
        usage_threshold=fs.volume_bytes,
        is_large_volume=fs.large_volume or None,
        protocol_types=["NFSv3"],
        network_features="Standard",
        security_style="unix",
        # Owner-writable only (ANF "Configure Unix permissions and change ownership mode": the setting applies to
        # the mount path); each node's bootstrap hands the share root to the login user.
        unix_permissions="0755",
        snapshot_directory_visible=False,
        export_policy=netapp.VolumePropertiesExportPolicyArgs(
            rules=[
                netapp.ExportPolicyRuleArgs(
                    rule_index=1,
                    allowed_clients=fs.allowed_clients,
                    nfsv3=True,
                    nfsv41=False,
                    cifs=False,
                    unix_read_only=False,
                    unix_read_write=True,
                    # Root access stays on, on purpose (re-examined for issue 12.6). With "Root access: off" ANF
                    # squashes root to uid 65534, which gets only the "Everyone" mode bits ("Understand NAS
                    # permissions in Azure NetApp Files", Root squashing). ANF sets nothing on the volume but the
                    # mount path's mode (unix_permissions; "does not apply to the files under the mount path") and
                    # chown_mode: no owner, no group, no anonymous uid. The mount path is root-owned, so a squashed
                    # export leaves exactly two ways for the login user to write: mode bits for "other" (a
                    # world-writable /shared) or membership of the root group. Both are worse than a trusted root,
                    # and a third way (a root-enabled rule for one admin client ahead of a squashed subnet rule)
                    # needs a fixed client address, which VMSS instances do not have. Root on these nodes is the
                    # login user's passwordless sudo anyway, and only the node subnet is a client.
                    has_root_access=True,
                    # Only root may give files away (ANF "Configure Unix permissions and change ownership mode").
                    chown_mode="Restricted",
                )
            ]
        ),
        tags=tags,
        opts=opts,
    )
    return volume, volume.mount_targets.apply(lambda targets: f"{targets[0].ip_address}:/{fs.creation_token}")
