"""CPFS linked to OSS: a fileset and a data flow (Pulumi only).

``storage.shared.object_store`` on a general-purpose CPFS becomes an ``alicloud.nas.Fileset`` at
``import_path`` and an ``alicloud.nas.DataFlow`` from it to the bucket (Alibaba: ALIYUN::NAS::DataFlow,
https://www.alibabacloud.com/help/en/ros/developer-reference/aliyun-nas-dataflow; the provider's example,
https://help.aliyun.com/document_detail/2588524.html). Files are imported and exported by data flow tasks on
that link. CPFS reads the bucket through its own service role; the bucket must carry the tag
``cpfs-dataflow: true`` (same example), which is how the bucket's owner grants it to CPFS data flows only.
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
