"""CPFS linked to OSS: a fileset and a data flow (Pulumi only).

``storage.shared.object_store`` on a general-purpose CPFS becomes an ``alicloud.nas.Fileset`` at
``import_path`` and an ``alicloud.nas.DataFlow`` from it to the bucket (Alibaba: ALIYUN::NAS::DataFlow,
https://www.alibabacloud.com/help/en/ros/developer-reference/aliyun-nas-dataflow; the provider's example,
https://help.aliyun.com/document_detail/2588524.html). Files are imported and exported by data flow tasks on
that link.

Access: CPFS reads and writes the bucket through its data-flow service role, whose system policy allows the OSS
object actions only on buckets tagged ``cpfs-dataflow: true`` (policy condition ``oss:tag/cpfs-dataflow``:
https://help.aliyun.com/zh/ram/developer-reference/aliyunnascrossaccountdataflowdefaultrolepolicy; the provider's
example tags its bucket so). That tag on the one bucket is the narrowest grant Alibaba offers: the role is
Alibaba's (created and scoped by NAS, no policy of ours), and the bucket's tags are its owner's (OSS PutBucketTags
replaces them all), so provision writes neither and records the grant as the ``object_store`` stack output
(:func:`link_output`). The strict cloud checks the data flow's bucket name (strict_datalink.py).
"""

from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING, Any

import pulumi
from pulumi_alicloud import nas

if TYPE_CHECKING:
    from provision.clouds.alibaba.plan import AlibabaPlan
    from provision.planning.plan import ClusterPlan

#: The lowest data-flow bandwidth Alibaba sells, MB/s (600, 1200 or 1500: ALIYUN::NAS::DataFlow Throughput).
THROUGHPUT_MBPS = 600


def fileset_path(import_path: str) -> str:
    """A fileset path: starts and ends with '/' (the provider's example ``/example_path/``)."""
    return posixpath.normpath(import_path).rstrip("/") + "/"


def build_oss_link(plan: ClusterPlan[AlibabaPlan], fs: Any, parent: pulumi.Resource) -> nas.DataFlow | None:
    """The data flow of the spec's bucket into ``fs`` (a CPFS), or ``None`` without ``object_store``."""
    shared = plan.spec.storage.shared
    link = shared.object_store if shared is not None else None
    if fs is None or link is None:
        return None
    opts = pulumi.ResourceOptions(parent=parent)
    fileset = nas.Fileset(
        f"{plan.name}-fileset",
        file_system_id=fs.id,
        file_system_path=fileset_path(link.import_path),
        description=f"provision-{plan.name}-oss",
        opts=opts,
    )
    bucket = link.uri[len("oss://") :].split("/", 1)[0]
    return nas.DataFlow(
        f"{plan.name}-dataflow",
        file_system_id=fs.id,
        fset_id=fileset.fileset_id,
        source_storage=f"oss://{bucket}",
        throughput=THROUGHPUT_MBPS,
        description=f"provision-{plan.name}-oss",
        opts=pulumi.ResourceOptions(parent=parent, custom_timeouts=pulumi.CustomTimeouts(create="30m")),
    )


#: The tag the data-flow role's policy requires on the bucket (module docs).
GRANT_TAG = "cpfs-dataflow=true"


def link_output(plan: ClusterPlan[AlibabaPlan], flow: nas.DataFlow) -> Any:
    """The ``object_store`` stack output: the data flow and its grant (the bucket tag the role's policy needs)."""
    shared = plan.spec.storage.shared
    assert shared is not None and shared.object_store is not None  # noqa: S101
    link = shared.object_store
    bucket = link.uri[len("oss://") :].split("/", 1)[0]
    return flow.id.apply(
        lambda fid: {
            "kind": "cpfs",
            "data_flow": fid,
            "uri": link.uri,
            "import_path": link.import_path,
            "export_path": None,
            "grant": {
                "principal": "the CPFS data-flow service role",
                "scope": f"bucket {bucket}, which must carry the tag {GRANT_TAG}",
            },
        }
    )
