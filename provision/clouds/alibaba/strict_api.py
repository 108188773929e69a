"""Alibaba API rules the provider does not check: what the ECS, VPC and NAS API references state.

Each rule names its API parameter: spot instances outside deployment sets, release times, tag limits,
deployment-set and NAS names, the CPFS storage matrix, EIP bandwidth per billing method, vSwitch and VPC
blocks, ECS enums and ranges, NAS access groups. Called by :func:`provision.clouds.alibaba.strict.check`.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from typing import Any

from provision.clouds.strict import Resource, Violation

INSTANCE = "alicloud:ecs/instance:Instance"
NAS = "alicloud:nas/fileSystem:FileSystem"
_ECS = "Alibaba Cloud ECS API reference, {}"
_NAS = "Alibaba Cloud NAS API reference, CreateFileSystem {}"

SPOT_SET_SOURCE = _ECS.format(
    "RunInstances DeploymentSetId and the deployment-set limits (help doc-detail/91258: preemptible instances "
    "cannot be created in a deployment set)"
)
RELEASE_SOURCE = _ECS.format(
    'RunInstances AutoReleaseTime: "yyyy-MM-ddTHH:mm:ssZ" in UTC; "The earliest release time is half an hour '
    'after the current time. The latest release time cannot be more than three years after the current time"'
)
RELEASE_FORMAT = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2})?Z"
TAG_SOURCE = _ECS.format(
    "RunInstances Tag.N (N: 1 to 20; Key up to 128 characters, not starting with aliyun or acs:, no http:// or "
    "https://; Value up to 128 characters, no http:// or https://)"
)
TAG_MAX, TAG_TEXT_MAX = 20, 128
DS_NAME_SOURCE = _ECS.format(
    "CreateDeploymentSet DeploymentSetName (2-128 characters, starts with a letter; letters, digits, ':', '_', '-', "
    "'.'; not http:// or https://)"
)
NAS_DESCRIPTION_SOURCE = _NAS.format(
    "Description (2-128 characters, starts with a letter; letters, digits, ':', '_', '-'; not http:// or https://)"
)
NAS_DESCRIPTION = r"(?!https?://)[A-Za-z\u4e00-\u9fa5][A-Za-z0-9\u4e00-\u9fa5:_-]{1,127}"
#: CreateFileSystem StorageType per FileSystemType, and where EncryptType and a VPC apply.
STORAGE_TYPES = {
    "standard": ("Performance", "Capacity", "Premium"),
    "extreme": ("standard", "advance"),
    "cpfs": ("advance_100", "advance_200"),
}
STORAGE_SOURCE = _NAS.format(
    "StorageType (per FileSystemType), EncryptType (standard and extreme only), VpcId/VSwitchId (required for cpfs)"
)
#: AllocateEipAddress Bandwidth: 1-500 Mbit/s with PayByBandwidth, 1-200 with PayByTraffic.
EIP_BANDWIDTH = {"PayByBandwidth": 500, "PayByTraffic": 200}
EIP_SOURCE = (
    "Alibaba Cloud VPC API reference, AllocateEipAddress Bandwidth (PayByBandwidth 1-500, PayByTraffic 1-200 Mbit/s)"
)
VSWITCH_SOURCE = "Alibaba Cloud VPC API reference, CreateVSwitch CidrBlock (mask /16 to /29, within the VPC's block)"


_RUN = "Alibaba Cloud ECS API reference, RunInstances "
#: Enums and ranges the API references state: (type, input path) -> (values or (lo, hi), source).
API_ENUMS: dict[tuple[str, str], tuple[tuple[str, ...], str]] = {
    (INSTANCE, "httpTokens"): (("optional", "required"), _RUN + "HttpTokens"),
    (INSTANCE, "networkInterfaceTrafficMode"): (("Standard", "HighPerformance"), _RUN + "NetworkInterfaceTrafficMode"),
    (INSTANCE, "networkInterfaces.networkInterfaceTrafficMode"): (
        ("Standard", "HighPerformance"),
        _RUN + "NetworkInterface.N.NetworkInterfaceTrafficMode",
    ),
    ("alicloud:ecs/eipAddress:EipAddress", "isp"): (
        (
            "BGP",
            "BGP_PRO",
            "ChinaTelecom",
            "ChinaUnicom",
            "ChinaMobile",
            "ChinaTelecom_L2",
            "ChinaUnicom_L2",
            "ChinaMobile_L2",
            "BGP_FinanceCloud",
            "BGP_International",
        ),
        "Alibaba Cloud VPC API reference, AllocateEipAddress ISP",
    ),
    ("alicloud:ecs/eipAssociation:EipAssociation", "instanceType"): (
        ("EcsInstance", "SlbInstance", "Nat", "HaVip", "NetworkInterface", "IpAddress"),
        "Alibaba Cloud VPC API reference, AssociateEipAddress InstanceType",
    ),
}
API_RANGES: dict[tuple[str, str], tuple[int, int, str]] = {
    (INSTANCE, "internetMaxBandwidthOut"): (0, 100, _RUN + "InternetMaxBandwidthOut (0 to 100 Mbit/s)"),
    (INSTANCE, "systemDiskSize"): (20, 2048, _RUN + "SystemDisk.Size (20 to 2048 GiB)"),
    (INSTANCE, "networkCardIndex"): (0, 7, _RUN + "NetworkInterface.N.NetworkCardIndex (the type's card count)"),
    (INSTANCE, "networkInterfaces.networkCardIndex"): (0, 7, _RUN + "NetworkInterface.N.NetworkCardIndex"),
}
NAS_API = "Alibaba Cloud NAS API reference, "
API_ENUMS.update(
    {
        ("alicloud:nas/accessGroup:AccessGroup", "accessGroupType"): (
            ("Vpc", "Classic"),
            NAS_API + "CreateAccessGroup AccessGroupType",
        ),
        ("alicloud:nas/accessGroup:AccessGroup", "fileSystemType"): (
            ("standard", "extreme", "cpfs"),
            NAS_API + "CreateAccessGroup FileSystemType",
        ),
        ("alicloud:nas/accessRule:AccessRule", "fileSystemType"): (
            ("standard", "extreme", "cpfs"),
            NAS_API + "CreateAccessRule FileSystemType",
        ),
        ("alicloud:nas/mountTarget:MountTarget", "networkType"): (
            ("Vpc", "Classic"),
            NAS_API + "CreateMountTarget NetworkType",
        ),
    }
)
ACCESS_GROUP_NAME = r"[A-Za-z][A-Za-z0-9_-]{2,63}"
ACCESS_GROUP_SOURCE = (
    NAS_API + "CreateAccessGroup AccessGroupName (3-64 characters: letters, digits, '_', '-'; starts with a letter)"
)
NAS_CIDR_SOURCE = NAS_API + "CreateAccessRule SourceCidrIp (an IPv4 address or CIDR block)"
SG_CIDR_SOURCE = "Alibaba Cloud ECS API reference, AuthorizeSecurityGroup SourceCidrIp (an IPv4 CIDR block or address)"


def _table_rules(res: Resource) -> list[Violation]:
    from provision.clouds.strict import check_enum, check_range, values_at

    out: list[Violation] = []
    for (type_token, path), (values, source) in API_ENUMS.items():
        if res.type == type_token:
            for value in values_at(res.inputs, path):
                out += check_enum(res, path, value, values, source)
    for (type_token, path), (lo, hi, source) in API_RANGES.items():
        if res.type == type_token:
            for value in values_at(res.inputs, path):
                out += check_range(res, path, value, lo, hi, source)
    name = res.inputs.get("accessGroupName")
    group = res.type == "alicloud:nas/accessGroup:AccessGroup"
    if group and isinstance(name, str) and not re.fullmatch(ACCESS_GROUP_NAME, name):
        out.append(
            res.violation("accessGroupName", name, "3-64 characters starting with a letter", ACCESS_GROUP_SOURCE)
        )
    if res.type == "alicloud:nas/accessRule:AccessRule" and isinstance(res.inputs.get("sourceCidrIp"), str):
        try:
            ipaddress.ip_network(res.inputs["sourceCidrIp"], strict=False)
        except ValueError:
            out.append(
                res.violation("sourceCidrIp", res.inputs["sourceCidrIp"], "must be an IPv4 CIDR block", NAS_CIDR_SOURCE)
            )
    if res.type == "alicloud:ecs/securityGroupRule:SecurityGroupRule" and isinstance(res.inputs.get("cidrIp"), str):
        try:
            ipaddress.ip_network(res.inputs["cidrIp"], strict=False)
        except ValueError:
            out.append(res.violation("cidrIp", res.inputs["cidrIp"], "must be an IPv4 CIDR block", SG_CIDR_SOURCE))
    return out


def _now(ctx: Any) -> datetime:
    return getattr(ctx, "now", None) or datetime.now(timezone.utc)


def api_rules(res: Resource, ctx: Any) -> list[Violation]:
    """What the ECS, VPC and NAS API references refuse and the provider lets through."""
    inputs, out = res.inputs, _table_rules(res)
    if res.type == INSTANCE:
        spot = inputs.get("spotStrategy") not in (None, "NoSpot")
        if spot and inputs.get("deploymentSetId"):
            out.append(
                res.violation(
                    "deploymentSetId",
                    inputs["deploymentSetId"],
                    "spot instances cannot join a deployment set",
                    SPOT_SET_SOURCE,
                )
            )
        release = inputs.get("autoReleaseTime")
        if isinstance(release, str) and release:
            if not re.fullmatch(RELEASE_FORMAT, release):
                out.append(
                    res.violation("autoReleaseTime", release, "must be yyyy-MM-ddTHH:mm:ssZ (UTC)", RELEASE_SOURCE)
                )
            else:
                when = datetime.strptime(
                    release.replace("Z", ""), "%Y-%m-%dT%H:%M" + (":%S" if release.count(":") == 2 else "")
                ).replace(tzinfo=timezone.utc)
                now = _now(ctx)
                if when < now + timedelta(minutes=30) or when > now + timedelta(days=3 * 365):
                    out.append(
                        res.violation(
                            "autoReleaseTime",
                            release,
                            f"must be 30 minutes to 3 years after now ({now:%Y-%m-%dT%H:%MZ})",
                            RELEASE_SOURCE,
                        )
                    )
    for tags_key in ("tags", "volumeTags"):
        out += _tag_rules(res, tags_key)
    if res.type == "alicloud:ecs/ecsDeploymentSet:EcsDeploymentSet":
        name = inputs.get("deploymentSetName")
        if isinstance(name, str) and not re.fullmatch(
            r"(?!https?://)[A-Za-z\u4e00-\u9fa5][A-Za-z0-9\u4e00-\u9fa5.:_-]{1,127}", name
        ):
            out.append(
                res.violation("deploymentSetName", name, "2-128 characters starting with a letter", DS_NAME_SOURCE)
            )
    if res.type == NAS:
        out += _nas_rules(res)
    if res.type == "alicloud:ecs/eipAddress:EipAddress":
        limit = EIP_BANDWIDTH.get(str(inputs.get("internetChargeType") or "PayByBandwidth"))
        try:
            bandwidth = int(str(inputs.get("bandwidth") or 5))
        except ValueError:
            bandwidth = -1
        if limit is not None and not 1 <= bandwidth <= limit:
            out.append(
                res.violation(
                    "bandwidth",
                    inputs.get("bandwidth"),
                    f"must be 1-{limit} Mbit/s with {inputs.get('internetChargeType')}",
                    EIP_SOURCE,
                )
            )
    if res.type == "alicloud:vpc/network:Network" and isinstance(inputs.get("cidrBlock"), str):
        try:
            net = ipaddress.ip_network(inputs["cidrBlock"], strict=False)
            private = [ipaddress.ip_network(b) for b in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")]
            ok = 8 <= net.prefixlen <= 28 and any(net.subnet_of(b) for b in private)  # type: ignore[arg-type]
        except (ValueError, TypeError):
            ok = False
        if not ok:
            out.append(
                res.violation(
                    "cidrBlock",
                    inputs["cidrBlock"],
                    "a /8-/28 block within 10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16",
                    VPC_CIDR_SOURCE,
                )
            )
    if res.type == "alicloud:vpc/switch:Switch" and isinstance(inputs.get("cidrBlock"), str):
        try:
            mask = ipaddress.ip_network(inputs["cidrBlock"], strict=False).prefixlen
        except ValueError:
            mask = -1
        if not 16 <= mask <= 29:
            out.append(res.violation("cidrBlock", inputs["cidrBlock"], "the mask must be /16 to /29", VSWITCH_SOURCE))
    return out


def _tag_rules(res: Resource, field: str) -> list[Violation]:
    tags = res.inputs.get(field)
    out: list[Violation] = []
    if not isinstance(tags, Mapping):
        return out
    if len(tags) > TAG_MAX:
        out.append(res.violation(field, len(tags), f"at most {TAG_MAX} tags", TAG_SOURCE))
    for key, value in tags.items():
        k, v = str(key), "" if value is None else str(value)
        if len(k) > TAG_TEXT_MAX or k.startswith(("aliyun", "acs:")) or "http://" in k or "https://" in k:
            rule = "keys: up to 128 characters, not aliyun/acs: prefixed, no URLs"
            out.append(res.violation(f"{field}.{k}", k, rule, TAG_SOURCE))
        if len(v) > TAG_TEXT_MAX or "http://" in v or "https://" in v:
            out.append(res.violation(f"{field}.{k}", v, "values: up to 128 characters, no URLs", TAG_SOURCE))
    return out


def _nas_rules(res: Resource) -> list[Violation]:
    inputs = res.inputs
    out: list[Violation] = []
    kind = str(inputs.get("fileSystemType") or "standard")
    text = inputs.get("description")
    if isinstance(text, str) and not re.fullmatch(NAS_DESCRIPTION, text):
        out.append(
            res.violation(
                "description",
                text,
                "2-128 characters starting with a letter; letters, digits, ':', '_', '-'",
                NAS_DESCRIPTION_SOURCE,
            )
        )
    storage = inputs.get("storageType")
    known = {t for types in STORAGE_TYPES.values() for t in types}  # unknown values: the provider's list says so
    if storage in known and kind in STORAGE_TYPES and storage not in STORAGE_TYPES[kind]:
        out.append(
            res.violation("storageType", storage, f"{kind} takes {', '.join(STORAGE_TYPES[kind])}", STORAGE_SOURCE)
        )
    if kind == "cpfs":
        if str(inputs.get("encryptType") or "0") != "0":
            out.append(
                res.violation(
                    "encryptType",
                    inputs["encryptType"],
                    "only standard and extreme file systems are encrypted",
                    STORAGE_SOURCE,
                )
            )
        for key in ("vpcId", "vswitchId"):
            if not inputs.get(key):
                out.append(res.violation(key, None, "is required for a cpfs file system", STORAGE_SOURCE))
    return out


VPC_CIDR_SOURCE = (
    "Alibaba Cloud VPC API reference, CreateVpc CidrBlock (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16 or subnets)"
)
