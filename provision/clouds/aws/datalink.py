"""FSx for Lustre linked to S3: a data repository association (Pulumi only).

``storage.shared.object_store`` becomes one ``aws.fsx.DataRepositoryAssociation``: the bucket prefix appears
at ``import_path`` (metadata imported at creation, file contents on first access, later bucket changes
imported automatically); with ``export_path`` new, changed and deleted files are exported back
(AWS: https://docs.aws.amazon.com/fsx/latest/LustreGuide/create-dra-linked-data-repo.html and
https://docs.aws.amazon.com/fsx/latest/LustreGuide/autoexport-data-repo-dra.html).

Access: FSx reaches the bucket through the service-linked role it creates for this one file system,
``AWSServiceRoleForFSxS3Access_<file system id>``; no node role and no other principal is given the bucket
(https://docs.aws.amazon.com/fsx/latest/LustreGuide/setting-up.html#fsx-adding-permissions-s3).
"""

from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING

import pulumi
import pulumi_aws as aws

from provision.clouds.aws.network import tags

if TYPE_CHECKING:
    from provision.clouds.aws.plan import AwsPlan
    from provision.planning.plan import ClusterPlan

#: Every change in the bucket (or the linked folder) is carried over.
EVENTS = ["NEW", "CHANGED", "DELETED"]


def build_s3_link(
    plan: ClusterPlan[AwsPlan], fs: aws.fsx.LustreFileSystem | None, parent: pulumi.Resource
) -> aws.fsx.DataRepositoryAssociation | None:
    """The association of ``fs`` with the spec's bucket, or ``None`` without ``object_store``."""
    shared = plan.spec.storage.shared
    link = shared.object_store if shared is not None else None
    if fs is None or link is None:
        return None
    uri = link.uri if link.uri.endswith("/") else link.uri + "/"
    export = None
    if link.export_path is not None:
        export = aws.fsx.DataRepositoryAssociationS3AutoExportPolicyArgs(events=EVENTS)
    return aws.fsx.DataRepositoryAssociation(
        f"{plan.name}-fsx-s3",
        file_system_id=fs.id,
        file_system_path=posixpath.normpath(link.import_path),
        data_repository_path=uri,
        batch_import_meta_data_on_create=True,
        s3=aws.fsx.DataRepositoryAssociationS3Args(
            auto_import_policy=aws.fsx.DataRepositoryAssociationS3AutoImportPolicyArgs(events=EVENTS),
            auto_export_policy=export,
        ),
        tags=tags(plan, "fsx-s3"),
        opts=pulumi.ResourceOptions(parent=parent, custom_timeouts=pulumi.CustomTimeouts(create="30m", delete="30m")),
    )
