"""FSx for Lustre linked to S3: a data repository association (Pulumi only).

``storage.shared.object_store`` becomes one ``aws.fsx.DataRepositoryAssociation``: the bucket prefix appears
at ``import_path`` (metadata imported at creation, file contents on first access, later bucket changes
imported automatically); with ``export_path`` new, changed and deleted files are exported back
(AWS: https://docs.aws.amazon.com/fsx/latest/LustreGuide/create-dra-linked-data-repo.html and
https://docs.aws.amazon.com/fsx/latest/LustreGuide/autoexport-data-repo-dra.html).

Access: FSx reaches the bucket through the service-linked role it creates for this one file system when the
association is created, ``AWSServiceRoleForFSxS3Access_<file system id>`` (path
``aws-service-role/s3.data-source.lustre.fsx.amazonaws.com/``), whose policy FSx scopes to the linked bucket; no
node role and no other principal is given the bucket ("this service-linked role is created for each Amazon FSx for
Lustre file system you create that is linked to an S3 bucket":
https://docs.aws.amazon.com/fsx/latest/LustreGuide/using-service-linked-roles.html; the deployer's permissions:
https://docs.aws.amazon.com/fsx/latest/LustreGuide/setting-up.html#fsx-adding-permissions-s3). So the grant in the
graph is the association itself, and :func:`link_output` records its principal and scope as the ``object_store``
stack output. No bucket policy is written: a bucket in the cluster's account needs none (the role's own policy
grants the access), and ``PutBucketPolicy`` replaces the bucket owner's whole policy, which a cluster must not
own or delete at ``down``. A bucket in another account, or one encrypted with a customer-managed KMS key, needs
its owner to allow that role ("Using data repositories with Amazon FSx for Lustre", cross-account and SSE-KMS
buckets: https://docs.aws.amazon.com/fsx/latest/LustreGuide/s3-server-side-encryption-support.html).
"""

from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING, Any

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


#: The per-file-system service-linked role's path and name prefix (FSxDeleteServiceLinkedRoleAccess policy:
#: ``role/aws-service-role/s3.data-source.lustre.fsx.amazonaws.com/AWSServiceRoleForFSxS3Access_*``,
#: https://docs.aws.amazon.com/aws-managed-policy/latest/reference/FSxDeleteServiceLinkedRoleAccess.html).
ROLE_PATH = "aws-service-role/s3.data-source.lustre.fsx.amazonaws.com/AWSServiceRoleForFSxS3Access_"


def link_output(
    plan: ClusterPlan[AwsPlan], fs: aws.fsx.LustreFileSystem, dra: aws.fsx.DataRepositoryAssociation
) -> Any:
    """The ``object_store`` stack output: the link and its grant (the file system's own role, on the bucket)."""
    shared = plan.spec.storage.shared
    assert shared is not None and shared.object_store is not None  # noqa: S101
    link = shared.object_store
    bucket = link.uri.removeprefix("s3://").split("/", 1)[0]
    return pulumi.Output.all(fs.arn, fs.id, dra.id).apply(
        lambda a: {
            "kind": "fsx-lustre",
            "association": a[2],
            "uri": link.uri,
            "import_path": link.import_path,
            "export_path": link.export_path,
            "grant": {
                "principal": f"arn:aws:iam::{a[0].split(':')[4]}:role/{ROLE_PATH}{a[1]}",
                "scope": f"bucket {bucket}",
            },
        }
    )
