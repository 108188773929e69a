"""The strict Alibaba cloud's rules for the CPFS-to-OSS link: ``nas.Fileset`` and ``nas.DataFlow``."""

from __future__ import annotations

import re

from provision.clouds.strict import Resource, Violation

FILESET = "alicloud:nas/fileset:Fileset"
DATAFLOW = "alicloud:nas/dataFlow:DataFlow"
_ROS = "Alibaba ROS ALIYUN::NAS::DataFlow (https://www.alibabacloud.com/help/en/ros/developer-reference/aliyun-nas-dataflow)"
_EXAMPLE = "alicloud_nas_data_flow example (https://help.aliyun.com/document_detail/2588524.html)"
_REF = "the id of a resource this program created (an output of the mocked cloud), not a value it writes"
_DESCRIPTION = re.compile(r"^[A-Za-z][A-Za-z0-9:_-]{1,127}$")
_SOURCE = re.compile(r"^oss://[a-z0-9][a-z0-9-]{6,126}[a-z0-9]$")
_PATH = re.compile(r"^/([A-Za-z0-9._-]+/)+$")

#: Input path -> source, per type (coverage.py counts these leaves checked).
CHECKED: dict[str, dict[str, str]] = {
    DATAFLOW: {
        "sourceStorage": f"{_ROS} SourceStorage",
        "throughput": f"{_ROS} Throughput",
        "description": f"{_ROS} Description",
    },
    FILESET: {"fileSystemPath": f"{_EXAMPLE} file_system_path", "description": f"{_ROS} Description"},
}
WAIVED: dict[str, dict[str, str]] = {
    DATAFLOW: {"fileSystemId": _REF, "fsetId": _REF},
    FILESET: {"fileSystemId": _REF},
}


def datalink_rules(res: Resource) -> list[Violation]:
    """What CreateDataFlow and CreateFileset refuse that the program could send."""
    if res.type not in CHECKED:
        return []
    out: list[Violation] = []
    src = CHECKED[res.type]
    desc = res.inputs.get("description")
    if isinstance(desc, str) and not _DESCRIPTION.match(desc):
        out.append(
            res.violation(
                "description",
                desc,
                "2-128 characters, starting with a letter; letters, digits, :_-",
                src["description"],
            )
        )
    if res.type == DATAFLOW:
        source = res.inputs.get("sourceStorage")
        if source is not None and not (isinstance(source, str) and _SOURCE.match(source)):
            out.append(
                res.violation(
                    "sourceStorage",
                    source,
                    "oss://BUCKET: a bucket name of 8-128 lowercase letters, digits and '-' (no prefix)",
                    src["sourceStorage"],
                )
            )
        tput = res.inputs.get("throughput")
        if tput is not None and (tput not in (600, 1200, 1500) or isinstance(tput, bool)):
            out.append(res.violation("throughput", tput, "must be one of 600, 1200, 1500 (MB/s)", src["throughput"]))
    if res.type == FILESET:
        path = res.inputs.get("fileSystemPath")
        if path is not None and not (isinstance(path, str) and _PATH.match(path) and 2 <= len(path) <= 1024):
            out.append(
                res.violation(
                    "fileSystemPath",
                    path,
                    "a folder that starts and ends with '/', not '/' itself",
                    src["fileSystemPath"],
                )
            )
    return out
