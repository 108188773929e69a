"""FSx for Lustre: the cluster's shared file system (Pulumi only; settings from ``plan.extra.fsx``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pulumi
import pulumi_aws as aws

from provision.clouds.aws.network import Network, SecurityGroups, tags

if TYPE_CHECKING:
    from provision.clouds.aws.plan import AwsPlan
    from provision.planning.plan import ClusterPlan


def build_fsx(
    plan: ClusterPlan[AwsPlan], net: Network, sgs: SecurityGroups, parent: pulumi.Resource
) -> aws.fsx.LustreFileSystem | None:
    """The file system in the node subnet (same AZ and /16 as the EFA clients), or ``None``."""
    spec = plan.extra.fsx
    if spec is None or sgs.fsx is None:
        return None
    metadata = (
        aws.fsx.LustreFileSystemMetadataConfigurationArgs(mode=spec.metadata_mode) if spec.metadata_mode else None
    )
    return aws.fsx.LustreFileSystem(
        f"{plan.name}-fsx",
        # pulumi-aws 7 takes ONE subnet id here (a list fails input serialization).
        subnet_ids=net.subnet_id,
        security_group_ids=[sgs.fsx.id],
        storage_capacity=spec.storage_capacity,
        storage_type="SSD",
        deployment_type=spec.deployment_type,
        per_unit_storage_throughput=spec.per_unit_storage_throughput,
        file_system_type_version=spec.lustre_version,
        metadata_configuration=metadata,
        efa_enabled=True if spec.efa else None,
        # Deleting never leaves a paid final backup behind; a retained file system is not deleted at all.
        skip_final_backup=True if spec.deployment_type.startswith("PERSISTENT") else None,
        tags=tags(plan, "fsx"),
        opts=pulumi.ResourceOptions(
            parent=parent,
            # FSx validates its security groups at CreateFileSystem: every rule must exist first (see
            # SecurityGroups.fsx_rules).
            depends_on=list(sgs.fsx_rules),
            retain_on_delete=bool(spec.retain),
            custom_timeouts=pulumi.CustomTimeouts(create="60m", update="60m", delete="60m"),
        ),
    )
