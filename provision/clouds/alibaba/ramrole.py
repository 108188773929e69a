"""The nodes' RAM role for the shared file system lookup: names, documents and vendor rules (pure: no Pulumi).

The nodes of a cluster with a shared file system are created without waiting for it (a CPFS file system takes
20-40 minutes to create, and every out-of-stock node would pay for that first), so they look up its NFS domain at
boot: they find the file system by its description (:func:`fs_description`, unique like the role name) and read
its mount target (NAS) or export (CPFS, whose domain pulumi-alicloud 4.0 does not return). The RAM role may call
only the two read-only NAS actions that needs.
:mod:`provision.clouds.alibaba.storage` creates the role, the policy and the attachment from these pieces;
:mod:`provision.clouds.alibaba.strict` checks the same rules on what the program registers.

RAM is account-wide (not regional), so the names carry the cluster name and the region: two clusters in one
account (or one cluster name in two regions) never share a role.
"""

from __future__ import annotations

import json
import re
from typing import Any

#: RAM CreateRole ``RoleName``: "1 to 64 characters in length, and can contain letters, digits, periods (.), and
#: hyphens (-)" (Resource Management / RAM API reference, CreateRole; read 2026-12-01).
ROLE_NAME = r"[A-Za-z0-9.-]{1,64}"
ROLE_NAME_RULE = "1-64 characters: letters, digits, '.' and '-'"
ROLE_NAME_SOURCE = "RAM API reference, CreateRole RoleName (help/en/resource-management/api-createrole)"
#: RAM CreatePolicy ``PolicyName``: "1 to 128 characters in length and can contain letters, digits, and hyphens
#: (-)"; ``PolicyDocument``: "1 to 6,144 characters" (RAM API reference, CreatePolicy; read 2026-12-01).
POLICY_NAME = r"[A-Za-z0-9-]{1,128}"
#: CreateRole and CreatePolicy ``Description``: "1 to 1,024 characters in length".
DESCRIPTION_MAX = 1024
POLICY_NAME_RULE = "1-128 characters: letters, digits and '-'"
POLICY_DOCUMENT_MAX = 6144
POLICY_SOURCE = "RAM API reference, CreatePolicy PolicyName/PolicyDocument (resource-management/api-createpolicy)"
#: Policy language: ``Version`` is fixed at "1"; each statement has ``Effect`` (Allow/Deny), ``Action`` and, in a
#: permission policy, ``Resource`` (RAM "Policy structure and syntax"; NAS "RAM authorization": "Version:
#: Specifies the policy version number. It is fixed at 1").
POLICY_VERSION = "1"
POLICY_SYNTAX_SOURCE = "RAM docs, Policy structure and syntax (Version fixed at 1; Effect, Action, Resource)"
#: An instance RAM role trusts the ECS service: the trust policy's principal is ``{"Service": ["ecs.aliyuncs.com"]}``
#: and its action ``sts:AssumeRole`` (ECS "Instance RAM roles": create a role whose trusted entity is Alibaba Cloud
#: Service, ECS; AttachInstanceRamRole refuses other roles).
TRUSTED_SERVICE = "ecs.aliyuncs.com"
TRUST_SOURCE = "ECS docs, Instance RAM roles (trusted entity: Alibaba Cloud service ECS, action sts:AssumeRole)"
#: The one action the nodes need. NAS supports resource-level authorization for it: resource type FileSystem,
#: ``acs:nas:{#regionId}:{#accountId}:filesystem/{#FileSystemId}`` (CPFS API reference,
#: DescribeProtocolMountTarget, "Authorization information"). The account is ``*``: the program does not know the
#: account id without another lookup, and the file system id names one file system whatever the account.
LOOKUP_ACTION = "nas:DescribeProtocolMountTarget"
#: Finding the file system: DescribeFileSystems lists the region's file systems (NAS API reference,
#: DescribeFileSystems, "Authorization information": resource ``acs:nas:{#regionId}:{#accountId}:filesystem/*``).
#: The policy names ``filesystem/*`` for both actions, so it is fixed at plan time and the nodes never wait for the
#: file system in the graph; the role can read file system descriptions and domains, never data or settings.
LIST_ACTION = "nas:DescribeFileSystems"
#: NAS API endpoint a VPC node calls: the VPC endpoint ``nas-vpc.<region>.aliyuncs.com`` (NAS / CPFS API reference,
#: "Endpoints": public nas.<region>.aliyuncs.com, VPC nas-vpc.<region>.aliyuncs.com), reached without the NAT.
NAS_VPC_ENDPOINT = "https://nas-vpc.{region}.aliyuncs.com"
#: Not every region has a NAS VPC endpoint: Alibaba's own CSI driver uses nas-vpc only in these and the public
#: endpoint elsewhere (kubernetes-sigs/alibaba-cloud-csi-driver pkg/cloud/utils.go ``regionsCanUseVpcEndpoint`` @
#: a20c3240ff57). Elsewhere the nodes call the public endpoint through the cluster's NAT gateway (SNAT).
NAS_VPC_REGIONS = frozenset(
    [
        "cn-hangzhou",
        "cn-zhangjiakou",
        "cn-shanghai",
        "cn-hongkong",
        "us-west-1",
        "eu-west-1",
        "ap-southeast-5",
        "cn-huhehaote",
        "cn-beijing",
        "cn-shenzhen",
        "eu-central-1",
        "ap-southeast-3",
        "ap-south-1",
        "ap-southeast-2",
        "cn-north-2-gov-1",
        "ap-southeast-1",
        "us-east-1",
        "cn-chengdu",
        "cn-wulanchabu",
        "cn-guangzhou",
        "ap-northeast-1",
        "cn-heyuan-acdr-1",
        "cn-beijing-finance-1",
        "ap-southeast-7",
        "cn-heyuan",
        "me-central-1",
        "ap-northeast-2",
        "cn-hangzhou-finance",
        "cn-qingdao",
        "cn-shanghai-finance-1",
        "cn-shenzhen-finance-1",
        "ap-southeast-6",
    ]
)
NAS_PUBLIC_ENDPOINT = "https://nas.{region}.aliyuncs.com"
#: Where the lookup step writes the domain for the shared-mount step (on the node).
DOMAIN_FILE = "/var/lib/provision/shared-fs-domain"


def role_name(cluster: str, region: str) -> str:
    return f"{cluster}-{region}-nodes"


def policy_name(cluster: str, region: str) -> str:
    return f"{cluster}-{region}-cpfs-lookup"


def nas_endpoint(region: str) -> str:
    """The VPC endpoint where the region has one, else the public endpoint (see :data:`NAS_VPC_REGIONS`)."""
    return (NAS_VPC_ENDPOINT if region in NAS_VPC_REGIONS else NAS_PUBLIC_ENDPOINT).format(region=region)


def trust_policy() -> str:
    """The role's trust policy: only ECS instances may assume it."""
    statement = {"Action": "sts:AssumeRole", "Effect": "Allow", "Principal": {"Service": [TRUSTED_SERVICE]}}
    return json.dumps({"Statement": [statement], "Version": POLICY_VERSION}, sort_keys=True)


def fs_description(cluster: str) -> str:
    """The shared file system's Description, by which the nodes find it (NAS rule: starts with a letter)."""
    return f"provision-{cluster}-shared"


def export_description(cluster: str) -> str:
    """The CPFS export's Description, by which the nodes find it among the file system's exports."""
    return f"provision-{cluster}-root"


def lookup_policy(region: str) -> str:
    """The permission policy: list file systems and read exports in the region, nothing else (fixed at plan time)."""
    resource = f"acs:nas:{region}:*:filesystem/*"
    statement = {"Action": [LIST_ACTION, LOOKUP_ACTION], "Effect": "Allow", "Resource": [resource]}
    return json.dumps({"Statement": [statement], "Version": POLICY_VERSION}, sort_keys=True)


def name_problems(cluster: str, region: str) -> list[tuple[str, str, str, str]]:
    """``(field, value, rule, fix)`` for each RAM name derived from ``cluster`` and ``region`` that breaks a rule."""
    out = []
    for made, pattern, rule, source in (
        (role_name(cluster, region), ROLE_NAME, ROLE_NAME_RULE, ROLE_NAME_SOURCE),
        (policy_name(cluster, region), POLICY_NAME, POLICY_NAME_RULE, POLICY_SOURCE),
    ):
        if not re.fullmatch(pattern, made):
            out.append(
                (
                    "name",
                    cluster,
                    f"makes the nodes' RAM name {made!r} ({len(made)} characters), which must be {rule} ({source})",
                    f"shorten the cluster name by {max(1, len(made) - _max_len(pattern))} characters",
                )
            )
    return out


def _max_len(pattern: str) -> int:
    return int(re.search(r",(\d+)\}$", pattern).group(1))  # type: ignore[union-attr]


def policy_shape_problems(document: Any, *, trust: bool) -> list[str]:
    """What breaks the policy language in ``document`` (a JSON string), as rule texts; [] when it is well formed."""
    if not isinstance(document, str):
        return []  # unknown at preview
    if not 1 <= len(document) <= POLICY_DOCUMENT_MAX:
        return [f"must be 1-{POLICY_DOCUMENT_MAX} characters (is {len(document)})"]
    try:
        doc = json.loads(document)
    except ValueError:
        return ["is not JSON"]
    if not isinstance(doc, dict):
        return ["must be a JSON object"]
    out = []
    if doc.get("Version") != POLICY_VERSION:
        out.append(f"Version must be {POLICY_VERSION!r} (is {doc.get('Version')!r})")
    statements = doc.get("Statement")
    if not isinstance(statements, list) or not statements:
        return [*out, "Statement must be a non-empty list"]
    for i, s in enumerate(statements):
        if not isinstance(s, dict):
            out.append(f"Statement[{i}] must be an object")
            continue
        if s.get("Effect") not in ("Allow", "Deny"):
            out.append(f"Statement[{i}].Effect must be Allow or Deny")
        if not s.get("Action"):
            out.append(f"Statement[{i}].Action is required")
        if trust and not isinstance(s.get("Principal"), dict):
            out.append(f"Statement[{i}].Principal is required in a trust policy")
        if trust and s.get("Action") not in ("sts:AssumeRole", ["sts:AssumeRole"]):
            out.append(f"Statement[{i}].Action of a trust policy must be sts:AssumeRole")
        if not trust and not s.get("Resource"):
            out.append(f"Statement[{i}].Resource is required in a permission policy")
    return out


def trusts_ecs(document: Any) -> bool:
    """Whether a trust policy lets ECS assume the role (what an instance RAM role needs)."""
    try:
        doc = json.loads(document)
        statements = doc["Statement"]
    except (TypeError, ValueError, KeyError):
        return False
    for s in statements if isinstance(statements, list) else []:
        service = (s.get("Principal") or {}).get("Service") if isinstance(s, dict) else None
        services = service if isinstance(service, list) else [service]
        if s.get("Effect") == "Allow" and TRUSTED_SERVICE in services:
            return True
    return False
