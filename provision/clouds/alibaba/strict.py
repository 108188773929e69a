"""Strict Alibaba Cloud: the validation lists of the provider pulumi-alicloud wraps, and the API's rules.

Alibaba publishes no machine-readable model that pulumi-alicloud's inputs map onto, so the rules
are the Terraform provider's own ``ValidateFunc`` lists (aliyun/terraform-provider-alicloud,
``alicloud/resource_alicloud_*.go``; each rule names its file and field), plus what the ECS and NAS
API references state and the provider does not check: jumbo-frame support, CPFS create time, RAM names and
policy documents, and that a node's RAM role (and an attachment's role and policy) exists and trusts ECS.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from provision.clouds.alibaba import ramrole
from provision.clouds.alibaba.strict_ack import CHECKED as ACK_CHECKED
from provision.clouds.alibaba.strict_ack import ack_rules
from provision.clouds.alibaba.strict_api import api_rules
from provision.clouds.alibaba.strict_datalink import CHECKED as DATALINK_CHECKED
from provision.clouds.alibaba.strict_datalink import datalink_rules
from provision.clouds.strict import Resource, Violation, check_enum, check_range, timeout_rule

if TYPE_CHECKING:
    from provision.clouds.mocking import MockContext

PROVIDER = "aliyun/terraform-provider-alicloud alicloud/{file} schema {field}"


@dataclass(frozen=True)
class Enum:
    field: str
    values: tuple[str, ...]
    file: str
    tf_field: str


@dataclass(frozen=True)
class Range:
    field: str
    lo: int
    hi: int
    file: str
    tf_field: str
    what: str = "value"


_INSTANCE = "resource_alicloud_instance.go"
_SG = "resource_alicloud_security_group.go"
_SG_RULE = "resource_alicloud_security_group_rule.go"
_NAS = "resource_alicloud_nas_file_system.go"

#: Pulumi type token -> the provider's validation lists for its inputs.
RULES: dict[str, tuple[Enum | Range, ...]] = {
    "alicloud:ecs/instance:Instance": (
        Enum("instanceChargeType", ("PrePaid", "PostPaid"), _INSTANCE, "instance_charge_type"),
        Enum("periodUnit", ("Week", "Month"), _INSTANCE, "period_unit"),
        Enum("spotStrategy", ("NoSpot", "SpotAsPriceGo", "SpotWithPriceLimit"), _INSTANCE, "spot_strategy"),
        Enum("internetChargeType", ("PayByBandwidth", "PayByTraffic"), _INSTANCE, "internet_charge_type"),
        Enum(
            "systemDiskCategory",
            (
                "all",
                "cloud",
                "ephemeral_ssd",
                "cloud_essd",
                "cloud_efficiency",
                "cloud_ssd",
                "local_disk",
                "cloud_auto",
                "cloud_essd_entry",
            ),
            _INSTANCE,
            "system_disk_category",
        ),
        Enum("systemDiskPerformanceLevel", ("PL0", "PL1", "PL2", "PL3"), _INSTANCE, "system_disk_performance_level"),
        Range("instanceName", 2, 128, _INSTANCE, "instance_name", "length"),
        Range("description", 2, 256, _INSTANCE, "description", "length"),
    ),
    "alicloud:ecs/securityGroupRule:SecurityGroupRule": (
        Enum("type", ("ingress", "egress"), _SG_RULE, "type"),
        Enum("ipProtocol", ("tcp", "udp", "icmp", "gre", "all", "icmpv6"), _SG_RULE, "ip_protocol"),
        Enum("policy", ("accept", "drop"), _SG_RULE, "policy"),
        Enum("nicType", ("internet", "intranet"), _SG_RULE, "nic_type"),
        Range("priority", 1, 100, _SG_RULE, "priority"),
    ),
    "alicloud:ecs/securityGroup:SecurityGroup": (
        Enum("innerAccessPolicy", ("Accept", "Drop"), _SG, "inner_access_policy"),
        Enum("securityGroupType", ("normal", "enterprise"), _SG, "security_group_type"),
    ),
    "alicloud:ecs/ecsDeploymentSet:EcsDeploymentSet": (
        Enum(
            "strategy",
            ("Availability", "AvailabilityGroup", "LowLatency"),
            "resource_alicloud_ecs_deployment_set.go",
            "strategy",
        ),
    ),
    "alicloud:nas/fileSystem:FileSystem": (
        Enum("fileSystemType", ("standard", "extreme", "cpfs"), _NAS, "file_system_type"),
        Enum("protocolType", ("NFS", "SMB", "cpfs"), _NAS, "protocol_type"),
        Enum(
            "storageType",
            ("Performance", "Capacity", "standard", "advance", "advance_100", "advance_200", "Premium"),
            _NAS,
            "storage_type",
        ),
    ),
    "alicloud:nas/protocolService:ProtocolService": (
        Enum("protocolSpec", ("General", "CL1", "CL2"), "resource_alicloud_nas_protocol_service.go", "protocol_spec"),
        Enum("protocolType", ("NFS",), "resource_alicloud_nas_protocol_service.go", "protocol_type"),
    ),
    "alicloud:nas/accessRule:AccessRule": (
        Enum("rwAccessType", ("RDWR", "RDONLY"), "resource_alicloud_nas_access_rule.go", "rw_access_type"),
        Enum(
            "userAccessType",
            ("no_squash", "root_squash", "all_squash"),
            "resource_alicloud_nas_access_rule.go",
            "user_access_type",
        ),
        Range("priority", 1, 100, "resource_alicloud_nas_access_rule.go", "priority"),
    ),
    "alicloud:vpc/natGateway:NatGateway": (
        Enum("natType", ("Enhanced",), "resource_alicloud_nat_gateway.go", "nat_type"),
        Enum("paymentType", ("PayAsYouGo", "Subscription"), "resource_alicloud_nat_gateway.go", "payment_type"),
        Enum(
            "internetChargeType", ("PayBySpec", "PayByLcu"), "resource_alicloud_nat_gateway.go", "internet_charge_type"
        ),
        Enum("networkType", ("internet", "intranet"), "resource_alicloud_nat_gateway.go", "network_type"),
    ),
    "alicloud:ram/rolePolicyAttachment:RolePolicyAttachment": (
        Enum("policyType", ("System", "Custom"), "resource_alicloud_ram_role_policy_attachment.go", "policy_type"),
    ),
    "alicloud:ecs/eipAddress:EipAddress": (
        Enum(
            "internetChargeType",
            ("PayByBandwidth", "PayByTraffic", "PayByDominantTraffic"),
            "resource_alicloud_eip_address.go",
            "internet_charge_type",
        ),
        Enum("paymentType", ("PayAsYouGo", "Subscription"), "resource_alicloud_eip_address.go", "payment_type"),
    ),
}

#: Types registered without a transcribed validation list yet (their inputs are ids, names and paths the
#: provider passes through); listed so a new type is a conscious choice. See docs/fidelity.md.
UNCHECKED = frozenset(
    {
        "alicloud:ecs/eipAssociation:EipAssociation",
        "alicloud:nas/accessGroup:AccessGroup",
        "alicloud:nas/mountTarget:MountTarget",
        "alicloud:nas/protocolMountTarget:ProtocolMountTarget",
        "alicloud:vpc/snatEntry:SnatEntry",
        "alicloud:ecs/ecsKeyPair:EcsKeyPair",
    }
)

#: ECS ``period`` with ``period_unit = Month``: ``validation.Any(IntBetween(1, 9), IntInSlice(12, 24, 36, 48, 60))``
#: (resource_alicloud_instance.go ``period``, v1.284.0 to HEAD; the pulumi-alicloud docstring agrees).
PERIODS = (*range(1, 10), 12, 24, 36, 48, 60)

#: RunInstances ``NetworkOptions.EnableJumboFrame``: "supported only by specific eighth-generation and later
#: instance types" (alibabacloud_ecs20140526 RunInstancesRequestNetworkOptions). The ECS instance-family page
#: states jumbo frames for gn8v ("These instances support jumbo frames"); its ebmgn8v and 7th-generation
#: sections do not. Other types are refused until a source (DescribeInstanceTypes.JumboFrameSupport) says so.
JUMBO_FAMILIES = ("ecs.gn8v",)
JUMBO_SOURCE = (
    "ECS RunInstances NetworkOptions.EnableJumboFrame (alibabacloud_ecs20140526 RunInstancesRequestNetworkOptions) "
    "and help.aliyun.com/en/ecs/user-guide/jumbo-frame (support per type: DescribeInstanceTypes.JumboFrameSupport)"
)

#: NAS file system create: the provider waits for Running for its default create timeout
#: (resource_alicloud_nas_file_system.go ``Timeouts.Create``: 10 minutes in v1.284.0 to HEAD, 20 in some older
#: versions), and CPFS "takes about 20 to 40 minutes to reach the Running state" (NAS API reference,
#: alibabacloud_nas20170626 CreateProtocolMountTarget).
NAS_DEFAULT_CREATE_S = 10 * 60
CPFS_CREATE_S = 40 * 60
CPFS_SOURCE = (
    "NAS API reference (alibabacloud_nas20170626 CreateProtocolMountTarget: CPFS takes about 20 to 40 minutes to "
    "reach Running); aliyun/terraform-provider-alicloud alicloud/resource_alicloud_nas_file_system.go Timeouts.Create"
)

#: Names: 2-128 characters, starting with a letter (or a Chinese character), then letters, digits, ``.``,
#: ``_``, ``-``, ``:``; not starting with http:// or https:// (ECS/VPC API references: InstanceName,
#: SecurityGroupName, VpcName, VSwitchName, NatGatewayName).
NAME = r"(?!https?://)[A-Za-z\u4e00-\u9fa5][A-Za-z0-9\u4e00-\u9fa5._:-]{1,127}"
NAME_FIELDS = {
    "alicloud:vpc/network:Network": "vpcName",
    "alicloud:vpc/switch:Switch": "vswitchName",
    "alicloud:ecs/securityGroup:SecurityGroup": "securityGroupName",
    "alicloud:vpc/natGateway:NatGateway": "natGatewayName",
    "alicloud:ecs/instance:Instance": "instanceName",
    "alicloud:ecs/eipAddress:EipAddress": "addressName",
    "alicloud:vpc/snatEntry:SnatEntry": "snatEntryName",
    "alicloud:ecs/ecsKeyPair:EcsKeyPair": "keyPairName",
}
NAME_SOURCE = (
    "Alibaba Cloud ECS/VPC API references (InstanceName, VpcName, VSwitchName, SecurityGroupName, NatGatewayName, "
    "AllocateEipAddress Name, CreateSnatEntry SnatEntryName, ImportKeyPair KeyPairName)"
)

#: Linux host names: 2-64 characters; periods and hyphens are neither first, last nor consecutive
#: (ECS RunInstances ``HostName``).
HOST_NAME = r"(?![.-])(?!.*[.-]{2})[A-Za-z0-9.-]{2,64}(?<![.-])"


def _known() -> frozenset[str]:
    return (
        frozenset(RULES)
        | frozenset(NAME_FIELDS)
        | UNCHECKED
        | {ROLE, POLICY}
        | frozenset(DATALINK_CHECKED)
        | frozenset(ACK_CHECKED)
    )


def _provider(file: str, tf_field: str) -> str:
    return PROVIDER.format(file=file, field=tf_field)


def list_rules(res: Resource) -> list[Violation]:
    out: list[Violation] = []
    for rule in RULES.get(res.type, ()):
        value = res.inputs.get(rule.field)
        if value is None:
            continue
        src = _provider(rule.file, rule.tf_field)
        if isinstance(rule, Enum):
            out += check_enum(res, rule.field, value, rule.values, src)
        elif rule.what == "length":
            if isinstance(value, str) and not rule.lo <= len(value) <= rule.hi:
                out.append(res.violation(rule.field, value, f"length must be {rule.lo}-{rule.hi}", src))
        else:
            out += check_range(res, rule.field, value, rule.lo, rule.hi, src)
    return out


def instance_rules(res: Resource) -> list[Violation]:
    if res.type != "alicloud:ecs/instance:Instance":
        return []
    inputs = res.inputs
    out: list[Violation] = []
    period = inputs.get("period")
    if (
        period is not None
        and inputs.get("instanceChargeType") == "PrePaid"
        and inputs.get("periodUnit", "Month") == "Month"
    ):
        try:
            ok = int(period) in PERIODS
        except (TypeError, ValueError):
            ok = False
        if not ok:
            out.append(
                res.violation(
                    "period", period, "with periodUnit Month: 1-9, 12, 24, 36, 48 or 60", _provider(_INSTANCE, "period")
                )
            )
    itype = str(inputs.get("instanceType") or "")
    if itype and not itype.startswith("ecs."):
        out.append(
            res.violation("instanceType", itype, "must start with 'ecs.'", _provider(_INSTANCE, "instance_type"))
        )
    if inputs.get("enableJumboFrame") is True and not itype.startswith(JUMBO_FAMILIES):
        out.append(
            res.violation(
                "enableJumboFrame",
                True,
                f"{itype} is not a type documented with jumbo-frame support ({', '.join(JUMBO_FAMILIES)})",
                JUMBO_SOURCE,
            )
        )
    host = inputs.get("hostName")
    if isinstance(host, str) and not re.fullmatch(HOST_NAME, host):
        out.append(
            res.violation(
                "hostName",
                host,
                "2-64 letters, digits, '.' and '-'; '.' and '-' not first, last or doubled",
                "ECS RunInstances HostName (Linux)",
            )
        )
    return out


def sg_rule_rules(res: Resource) -> list[Violation]:
    if res.type != "alicloud:ecs/securityGroupRule:SecurityGroupRule":
        return []
    protocol, ports = res.inputs.get("ipProtocol"), res.inputs.get("portRange", "-1/-1")
    src = _provider(_SG_RULE, "port_range")
    if protocol in ("tcp", "udp") and ports == "-1/-1":
        return [res.violation("portRange", ports, "tcp and udp take a port range within 1/65535", src)]
    if protocol in ("icmp", "gre", "all") and ports != "-1/-1":
        return [res.violation("portRange", ports, "icmp, gre and all take only -1/-1", src)]
    if res.inputs.get("nicType") not in (None, "intranet") and res.inputs.get("sourceSecurityGroupId"):
        return [res.violation("nicType", res.inputs["nicType"], "must be intranet with a source group", src)]
    return []


def name_rules(res: Resource) -> list[Violation]:
    key = NAME_FIELDS.get(res.type)
    value = res.inputs.get(key) if key else None
    if key is not None and isinstance(value, str) and not re.fullmatch(NAME, value):
        return [
            res.violation(
                key,
                value,
                "2-128 characters: start with a letter; letters, digits, '.', '_', '-', ':'; not http:// or https://",
                NAME_SOURCE,
            )
        ]
    return []


def storage_rules(res: Resource) -> list[Violation]:
    if res.type != "alicloud:nas/fileSystem:FileSystem" or res.inputs.get("fileSystemType") != "cpfs":
        return []
    return timeout_rule(res, "create", NAS_DEFAULT_CREATE_S, CPFS_CREATE_S, CPFS_SOURCE)


ROLE = "alicloud:ram/role:Role"
POLICY = "alicloud:ram/policy:Policy"
ROLE_ATTACHMENT = "alicloud:ram/rolePolicyAttachment:RolePolicyAttachment"


def ram_rules(res: Resource) -> list[Violation]:
    """RAM role and policy names (CreateRole / CreatePolicy) and the policy language of their documents."""
    out: list[Violation] = []
    if res.type in (ROLE, POLICY):
        text = res.inputs.get("description")
        if isinstance(text, str) and not 1 <= len(text) <= ramrole.DESCRIPTION_MAX:
            src = ramrole.ROLE_NAME_SOURCE if res.type == ROLE else ramrole.POLICY_SOURCE
            out.append(res.violation("description", text, f"must be 1-{ramrole.DESCRIPTION_MAX} characters", src))
    if res.type == ROLE:
        name = res.inputs.get("roleName")
        if isinstance(name, str) and not re.fullmatch(ramrole.ROLE_NAME, name):
            out.append(res.violation("roleName", name, ramrole.ROLE_NAME_RULE, ramrole.ROLE_NAME_SOURCE))
        doc = res.inputs.get("assumeRolePolicyDocument")
        if doc is None:
            out.append(res.violation("assumeRolePolicyDocument", None, "is required", ramrole.TRUST_SOURCE))
        out += [
            res.violation("assumeRolePolicyDocument", doc, rule, ramrole.POLICY_SYNTAX_SOURCE)
            for rule in ramrole.policy_shape_problems(doc, trust=True)
        ]
    elif res.type == POLICY:
        name = res.inputs.get("policyName")
        if isinstance(name, str) and not re.fullmatch(ramrole.POLICY_NAME, name):
            out.append(res.violation("policyName", name, ramrole.POLICY_NAME_RULE, ramrole.POLICY_SOURCE))
        doc = res.inputs.get("policyDocument")
        out += [
            res.violation("policyDocument", doc, rule, f"{ramrole.POLICY_SOURCE}; {ramrole.POLICY_SYNTAX_SOURCE}")
            for rule in ramrole.policy_shape_problems(doc, trust=False)
        ]
    return out


def _registered(ctx: MockContext, type_token: str, key: str, value: Any) -> Any:
    return next((r for r in ctx.find(type_token) if r.inputs.get(key) == value), None)


def role_reference_rules(res: Resource, ctx: MockContext) -> list[Violation]:
    """A node's RAM role and an attachment's role (and custom policy) must exist: in a stack, registered before."""
    out: list[Violation] = []
    if res.type == "alicloud:ecs/instance:Instance" and isinstance(res.inputs.get("roleName"), str):
        name = res.inputs["roleName"]
        role = _registered(ctx, ROLE, "roleName", name)
        if role is None:
            out.append(res.violation("roleName", name, "names no RAM role created in this stack", ramrole.TRUST_SOURCE))
        elif not ramrole.trusts_ecs(role.inputs.get("assumeRolePolicyDocument")):
            out.append(
                res.violation(
                    "roleName", name, f"role {name} does not trust {ramrole.TRUSTED_SERVICE}", ramrole.TRUST_SOURCE
                )
            )
    elif res.type == ROLE_ATTACHMENT:
        src = "RAM API reference, AttachPolicyToRole (EntityNotExist.Role / EntityNotExist.Policy)"
        role = res.inputs.get("roleName")
        if isinstance(role, str) and _registered(ctx, ROLE, "roleName", role) is None:
            out.append(res.violation("roleName", role, "names no RAM role created in this stack", src))
        policy = res.inputs.get("policyName")
        custom = res.inputs.get("policyType") == "Custom"
        if custom and isinstance(policy, str) and _registered(ctx, POLICY, "policyName", policy) is None:
            out.append(res.violation("policyName", policy, "names no custom policy created in this stack", src))
    return out


def check(res: Resource, ctx: MockContext) -> list[Violation]:
    """Every rule this cloud knows for one registration."""
    return (
        list_rules(res)
        + instance_rules(res)
        + sg_rule_rules(res)
        + name_rules(res)
        + storage_rules(res)
        + ram_rules(res)
        + role_reference_rules(res, ctx)
        + api_rules(res, ctx)
        + datalink_rules(res)
        + ack_rules(res, ctx)
    )


def rule_paths(res: Resource) -> dict[str, str]:
    """Input path -> source of every input a rule of this module checks for ``res``'s type."""
    out = {r.field: _provider(r.file, r.tf_field) for r in RULES.get(res.type, ())}
    if res.type in NAME_FIELDS:
        out[NAME_FIELDS[res.type]] = NAME_SOURCE
    if res.type == "alicloud:ecs/instance:Instance":
        out |= {
            "period": _provider(_INSTANCE, "period"),
            "instanceType": _provider(_INSTANCE, "instance_type"),
            "enableJumboFrame": JUMBO_SOURCE,
            "hostName": "ECS RunInstances HostName (Linux)",
        }
    if res.type == "alicloud:ecs/securityGroupRule:SecurityGroupRule":
        out |= {"portRange": _provider(_SG_RULE, "port_range"), "nicType": _provider(_SG_RULE, "port_range")}
    if res.type == ROLE:
        out |= {
            "roleName": ramrole.ROLE_NAME_SOURCE,
            "description": ramrole.ROLE_NAME_SOURCE,
            "assumeRolePolicyDocument": ramrole.POLICY_SYNTAX_SOURCE,
        }
    if res.type == POLICY:
        out |= {
            "policyName": ramrole.POLICY_SOURCE,
            "description": ramrole.POLICY_SOURCE,
            "policyDocument": ramrole.POLICY_SYNTAX_SOURCE,
        }
    if res.type == ROLE_ATTACHMENT:
        src = "RAM API reference, AttachPolicyToRole (EntityNotExist.Role / EntityNotExist.Policy)"
        out |= {"roleName": src, "policyName": src}
    return out | DATALINK_CHECKED.get(res.type, {}) | ACK_CHECKED.get(res.type, {})


#: Every type this module knows (rules, or deliberately unchecked).
KNOWN = _known()
