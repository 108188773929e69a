"""The rules of ``provision check`` and of the Pulumi policy pack, one function per rule.

Each rule looks at one resource (its Pulumi type token and the inputs the engine sends, with
the engine's camelCase names) plus the spec's opt-ins (:class:`Context`), and returns what is
wrong with it as short messages. Working one resource at a time lets the same functions run as
``ResourceValidationPolicy`` s, which Pulumi evaluates *before* a resource is created.

IDs are stable: they are printed, documented and matched by users' suppressions. The anchors
are the matching checkov (``CKV_*``), tfsec/trivy (``AVD-*``) and KICS query ids; those tools
scan Terraform and CloudFormation, not Pulumi programs, so the checks are re-implemented here.
Sources of the anchors: bridgecrewio/checkov ``checkov/terraform/checks``, aquasecurity/trivy-checks
``checks/cloud``, Checkmarx/kics ``assets/queries/terraform`` (see shared research
reliability-security.md, section 1).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from provision.catalog import cloud_facts, cloud_of_package
from provision.catalog.models import CLOUDS
from provision.clouds.base import TAG_CLUSTER, TAG_EXPIRES, TAG_OWNER
from provision.spec.secrets import decoded, find_in_data

REQUIRED_TAGS = (TAG_CLUSTER, TAG_OWNER, TAG_EXPIRES)


@dataclass(frozen=True)
class Resource:
    """One resource of the graph: Pulumi type token, logical name, inputs (engine names).

    ``outputs`` and ``id`` are what the cloud reported (empty before creation, and in the
    per-resource policies); only graph rules read them.
    """

    type: str
    name: str
    inputs: Mapping[str, Any]
    outputs: Mapping[str, Any] = field(default_factory=dict)
    id: str = ""

    @property
    def cloud(self) -> str:
        return cloud_of_package(self.type.split(":", 1)[0]) or ""

    @property
    def kind(self) -> str:
        """The class part of the token: ``aws:ec2/launchTemplate:LaunchTemplate`` -> ``LaunchTemplate``."""
        return self.type.rsplit(":", 1)[-1]

    def get(self, *path: Any, default: Any = None) -> Any:
        value: Any = self.inputs
        for part in path:
            if (
                isinstance(value, Mapping)
                and part in value
                or isinstance(value, (list, tuple))
                and isinstance(part, int)
                and -len(value) <= part < len(value)
            ):
                value = value[part]
            else:
                return default
        return value


@dataclass(frozen=True)
class Context:
    """What the spec opted into; a rule allows these only when the user asked for them."""

    allow_world_ssh: bool = False
    public_head_node: bool = False
    gcp_os_login: bool = True


@dataclass(frozen=True)
class Rule:
    """One policy rule.

    Attributes:
        id: stable identifier, e.g. ``PRV-IMDS-001``.
        title: what must hold, in one line.
        rationale: why, in one line.
        anchors: the matching checkov / tfsec (trivy) / KICS ids, where one exists.
        check: ``(resource, context) -> [message]``; empty when the resource passes.
        graph: for a rule that needs the whole graph (a resource passes because of another one):
            ``(resources, context) -> [(resource, message)]``; used instead of ``check``, and served
            by the policy pack as a stack policy.
    """

    id: str
    title: str
    rationale: str
    anchors: tuple[str, ...]
    check: Callable[[Resource, Context], list[str]]
    graph: Callable[[Sequence[Resource], Context], list[tuple[Resource, str]]] | None = None


def truthy(value: Any) -> bool:
    """Pulumi sends some booleans as strings ("true") and some as bools."""
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def _items(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


# ---------------------------------------------------------------------- PRV-IMDS-001

_AWS_VM = ("aws:ec2/launchTemplate:LaunchTemplate", "aws:ec2/instance:Instance")
_ALI_VM = ("alicloud:ecs/instance:Instance", "alicloud:ecs/ecsLaunchTemplate:EcsLaunchTemplate")


def check_imds(r: Resource, ctx: Context) -> list[str]:
    if r.type in _AWS_VM:
        out = []
        if r.get("metadataOptions", "httpTokens") != "required":
            tokens = r.get("metadataOptions", "httpTokens")
            out.append(f"metadataOptions.httpTokens is {tokens!r}, not 'required' (IMDSv1 open)")
        hops = r.get("metadataOptions", "httpPutResponseHopLimit")
        if isinstance(hops, (int, float)) and hops > 2:
            out.append(f"metadataOptions.httpPutResponseHopLimit is {hops:g}; containers need at most 2")
        return out
    if r.type in _ALI_VM and r.get("httpTokens") != "required":
        return [f"httpTokens is {r.get('httpTokens')!r}, not 'required' (metadata readable without a token)"]
    return []


# ---------------------------------------------------------------------- PRV-NET-001


def check_public_ip(r: Resource, ctx: Context) -> list[str]:
    out: list[str] = []
    if r.type == "aws:ec2/launchTemplate:LaunchTemplate":
        for i, nic in enumerate(_items(r.get("networkInterfaces"))):
            if isinstance(nic, Mapping) and truthy(nic.get("associatePublicIpAddress")):
                out.append(f"networkInterfaces[{i}].associatePublicIpAddress is true")
    elif r.type == "aws:ec2/instance:Instance" and truthy(r.get("associatePublicIpAddress")):
        out.append("associatePublicIpAddress is true")
    elif r.type == "aws:ec2/subnet:Subnet" and truthy(r.get("mapPublicIpOnLaunch")):
        out.append("mapPublicIpOnLaunch is true: every node launched here gets a public IP")
    elif r.type in ("aws:ec2/eipAssociation:EipAssociation", "aws:ec2/eip:Eip"):
        if (r.get("instance") or r.get("instanceId") or r.get("networkInterface") or r.get("networkInterfaceId")) and (
            not ctx.public_head_node
        ):
            out.append("an Elastic IP is attached to a node without access.public_head_node")
    elif r.type in (
        "gcp:compute/instanceTemplate:InstanceTemplate",
        "gcp:compute/regionInstanceTemplate:RegionInstanceTemplate",
        "gcp:compute/instance:Instance",
    ):
        for i, nic in enumerate(_items(r.get("networkInterfaces"))):
            if isinstance(nic, Mapping) and (nic.get("accessConfigs") or nic.get("ipv6AccessConfigs")):
                out.append(f"networkInterfaces[{i}] has an access config (an external IP)")
    elif r.type in ("azure-native:compute:VirtualMachineScaleSet",):
        nics = _items(r.get("virtualMachineProfile", "networkProfile", "networkInterfaceConfigurations"))
        for i, nic in enumerate(nics):
            for j, ipc in enumerate(_items(nic.get("ipConfigurations") if isinstance(nic, Mapping) else None)):
                if isinstance(ipc, Mapping) and ipc.get("publicIPAddressConfiguration"):
                    out.append(f"networkInterfaceConfigurations[{i}].ipConfigurations[{j}] has a public IP")
    elif r.type == "azure-native:network:NetworkInterface":  # a standalone VM's NIC (the Slurm controller)
        for j, ipc in enumerate(_items(r.get("ipConfigurations"))):
            if isinstance(ipc, Mapping) and ipc.get("publicIPAddress"):
                out.append(f"ipConfigurations[{j}] has a public IP")
    elif r.type == "alicloud:ecs/instance:Instance":
        bw = r.get("internetMaxBandwidthOut")
        if isinstance(bw, (int, float)) and bw > 0:
            out.append(f"internetMaxBandwidthOut is {bw:g}: the instance gets a public IP")
    elif (
        r.type == "alicloud:ecs/eipAssociation:EipAssociation"
        and r.get("instanceType") != "Nat"
        and not ctx.public_head_node
    ):
        out.append("an EIP is attached to a node without access.public_head_node")
    return out


# ---------------------------------------------------------------------- PRV-NET-002


def is_world(source: Any) -> bool:
    """An ingress source that means "anyone on the internet": judged by the public addresses it
    holds (``0.0.0.0/1`` is half the internet), see :mod:`provision.spec.cidrs`."""
    from provision.spec.cidrs import world_wide

    return isinstance(source, str) and world_wide([source])


def any_world(sources: list[Any]) -> bool:
    """Whether ``sources`` (one rule's list) together admit the internet, e.g. 32 CIDRs covering all but one address."""
    from provision.spec.cidrs import world_wide

    return world_wide([s for s in sources if isinstance(s, str)])


def _ports(low: Any, high: Any) -> tuple[int, int]:
    lo = int(low) if isinstance(low, (int, float)) else 0
    hi = int(high) if isinstance(high, (int, float)) else 65535
    if lo < 0 or hi < 0:  # -1 means every port
        return 0, 65535
    return lo, hi


def _port_range_text(text: Any) -> tuple[int, int]:
    """Azure "22", "20-30", "*"; Alibaba "22/22", "-1/-1"."""
    if not isinstance(text, str) or text.strip() in ("*", "", "-1/-1"):
        return 0, 65535
    parts = re.split(r"[-/]", text.strip(), maxsplit=1)
    try:
        lo = int(parts[0])
        hi = int(parts[1]) if len(parts) > 1 else lo
    except ValueError:
        return 0, 65535
    return _ports(lo, hi)


def _exposure(protocol: Any, lo: int, hi: int, ctx: Context, where: str) -> list[str]:
    proto = str(protocol).strip().lower() if protocol is not None else "all"
    every_protocol = proto in ("-1", "all", "*", "any")
    if every_protocol or (lo == 0 and hi >= 65535):
        return [f"{where} admits all ports from the internet"]
    if lo <= 22 <= hi and proto in ("tcp", "6") and not ctx.allow_world_ssh:
        return [f"{where} admits SSH (22) from the internet without access.allow_world_ssh"]
    return []


def check_world_ingress(r: Resource, ctx: Context) -> list[str]:
    out: list[str] = []
    if r.type == "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule":
        if is_world(r.get("cidrIpv4")) or is_world(r.get("cidrIpv6")):
            out += _exposure(r.get("ipProtocol"), *_ports(r.get("fromPort"), r.get("toPort")), ctx, "the rule")
    elif r.type == "aws:ec2/securityGroupRule:SecurityGroupRule":
        sources = _items(r.get("cidrBlocks")) + _items(r.get("ipv6CidrBlocks"))
        if r.get("type") == "ingress" and any_world(sources):
            out += _exposure(r.get("protocol"), *_ports(r.get("fromPort"), r.get("toPort")), ctx, "the rule")
    elif r.type == "aws:ec2/securityGroup:SecurityGroup":
        for i, rule in enumerate(_items(r.get("ingress"))):
            if isinstance(rule, Mapping):
                sources = _items(rule.get("cidrBlocks")) + _items(rule.get("ipv6CidrBlocks"))
                if any_world(sources):
                    lo, hi = _ports(rule.get("fromPort"), rule.get("toPort"))
                    out += _exposure(rule.get("protocol"), lo, hi, ctx, f"ingress[{i}]")
    elif r.type == "gcp:compute/firewall:Firewall":
        ingress = str(r.get("direction") or "INGRESS").upper() == "INGRESS" and not truthy(r.get("disabled"))
        if ingress and any_world(_items(r.get("sourceRanges"))):
            for i, allow in enumerate(_items(r.get("allows"))):
                if not isinstance(allow, Mapping):
                    continue
                for p in _items(allow.get("ports")) or ["0-65535"]:
                    out += _exposure(allow.get("protocol"), *_port_range_text(str(p)), ctx, f"allows[{i}]")
    elif r.type in ("azure-native:network:NetworkSecurityGroup", "azure-native:network:SecurityRule"):
        rules = _items(r.get("securityRules")) if r.kind == "NetworkSecurityGroup" else [dict(r.inputs)]
        for i, rule in enumerate(rules):
            if not isinstance(rule, Mapping):
                continue
            if str(rule.get("direction", "")).lower() != "inbound" or str(rule.get("access", "")).lower() != "allow":
                continue
            sources = _items(rule.get("sourceAddressPrefix")) + _items(rule.get("sourceAddressPrefixes"))
            if any_world(sources):
                ranges = _items(rule.get("destinationPortRange")) + _items(rule.get("destinationPortRanges"))
                for p in ranges or ["*"]:
                    out += _exposure(rule.get("protocol"), *_port_range_text(p), ctx, f"securityRules[{i}]")
    elif r.type == "alicloud:ecs/securityGroupRule:SecurityGroupRule":
        accepts = r.get("type") == "ingress" and str(r.get("policy") or "accept") == "accept"
        if accepts and (is_world(r.get("cidrIp")) or is_world(r.get("ipv6CidrIp"))):
            out += _exposure(r.get("ipProtocol"), *_port_range_text(r.get("portRange")), ctx, "the rule")
    return sorted(set(out))


# ---------------------------------------------------------------------- PRV-NET-003


def check_azure_inbound_default(r: Resource, ctx: Context) -> list[str]:
    if r.type != "azure-native:network:NetworkSecurityGroup":
        return []
    for rule in _items(r.get("securityRules")):
        if not isinstance(rule, Mapping):
            continue
        sources = [
            str(s).lower() for s in _items(rule.get("sourceAddressPrefix")) + _items(rule.get("sourceAddressPrefixes"))
        ]
        ports = _items(rule.get("destinationPortRange")) + _items(rule.get("destinationPortRanges"))
        if (
            str(rule.get("direction", "")).lower() == "inbound"
            and str(rule.get("access", "")).lower() == "deny"
            and str(rule.get("protocol", "*")) == "*"
            and any(s in ("*", "virtualnetwork") for s in sources)
            and "*" in [str(p) for p in ports]
        ):
            return []
    return ["no inbound deny-all rule: Azure's default AllowVnetInBound admits every port from peered and VPN networks"]


# ---------------------------------------------------------------------- PRV-ENC-001


def _unencrypted_nas(r: Resource) -> bool:
    # encrypt_type exists for standard and extreme NAS only (pulumi_alicloud nas.FileSystem docs);
    # CPFS has no such setting.
    nas = str(r.get("fileSystemType") or "standard") in ("standard", "extreme")
    return nas and r.get("encryptType") not in (1, 2, 1.0, 2.0)


def check_encryption(r: Resource, ctx: Context) -> list[str]:
    out: list[str] = []
    if r.type == "aws:ec2/launchTemplate:LaunchTemplate":
        mappings = [m for m in _items(r.get("blockDeviceMappings")) if isinstance(m, Mapping) and m.get("ebs")]
        if not mappings:
            out.append("blockDeviceMappings sets no EBS encryption: the root volume follows the account default")
        for i, m in enumerate(mappings):
            if not truthy(m["ebs"].get("encrypted")):
                out.append(f"blockDeviceMappings[{i}].ebs.encrypted is not true")
    elif r.type == "aws:ec2/instance:Instance":
        if not truthy(r.get("rootBlockDevice", "encrypted")):
            out.append("rootBlockDevice.encrypted is not true")
        for i, d in enumerate(_items(r.get("ebsBlockDevices"))):
            if isinstance(d, Mapping) and not truthy(d.get("encrypted")):
                out.append(f"ebsBlockDevices[{i}].encrypted is not true")
    elif r.type in ("aws:ebs/volume:Volume", "aws:efs/fileSystem:FileSystem"):
        if not truthy(r.get("encrypted")):
            out.append("encrypted is not true")
    elif r.type == "alicloud:ecs/instance:Instance":
        if not truthy(r.get("systemDiskEncrypted")):
            out.append("systemDiskEncrypted is not true")
        for i, d in enumerate(_items(r.get("dataDisks"))):
            if isinstance(d, Mapping) and not truthy(d.get("encrypted")):
                out.append(f"dataDisks[{i}].encrypted is not true")
    elif r.type == "alicloud:nas/fileSystem:FileSystem" and _unencrypted_nas(r):
        out.append(f"encryptType is {r.get('encryptType')!r}, not 1 or 2 (unencrypted NAS)")
    # FSx for Lustre is always encrypted at rest; GCP and Azure encrypt every disk with platform keys.
    return out


# ---------------------------------------------------------------------- PRV-IAM-001

_AWS_BROAD_POLICY = re.compile(r":policy/(AdministratorAccess|PowerUserAccess|IAMFullAccess|\w*FullAccess)$")
# Azure built-in role definition ids: https://learn.microsoft.com/azure/role-based-access-control/built-in-roles
_AZURE_BROAD_ROLES = {
    "8e3af657-a8ff-443c-a75c-2fe8c4bcb635": "Owner",
    "b24988ac-6180-42a0-ab88-20f7382dd24c": "Contributor",
    "18d7d88d-d35e-4fb5-a5c3-7773c20a72d9": "User Access Administrator",
    "f58310d9-a9f6-439a-9e8d-f62e7b41a168": "Role Based Access Control Administrator",
}
_GCP_BROAD_ROLE = re.compile(
    r"^roles/(owner|editor|[\w.]*[Aa]dmin|iam\.serviceAccountUser|iam\.serviceAccountTokenCreator)$"
)
_GCP_FULL_SCOPE = re.compile(r"(^|/)cloud-platform$")


def _wildcard_statements(document: Any) -> bool:
    doc = document
    if isinstance(doc, str):
        try:
            doc = json.loads(doc)
        except ValueError:
            return False
    if not isinstance(doc, Mapping):
        return False
    for st in _items(doc.get("Statement")):
        if not isinstance(st, Mapping) or st.get("Effect", "Allow") != "Allow":
            continue
        actions = [str(a) for a in _items(st.get("Action"))]
        if any(a in ("*", "*:*") or a.endswith(":*") and a.startswith("iam") for a in actions):
            return True
    return False


def check_identity(r: Resource, ctx: Context) -> list[str]:
    out: list[str] = []
    if r.type == "aws:iam/rolePolicyAttachment:RolePolicyAttachment":
        arn = str(r.get("policyArn") or "")
        if _AWS_BROAD_POLICY.search(arn):
            out.append(f"attaches {arn.rsplit('/', 1)[-1]} to the node role")
    elif r.type == "aws:iam/role:Role":
        for arn in _items(r.get("managedPolicyArns")):
            if _AWS_BROAD_POLICY.search(str(arn)):
                out.append(f"managedPolicyArns has {str(arn).rsplit('/', 1)[-1]}")
        for p in _items(r.get("inlinePolicies")):
            if isinstance(p, Mapping) and _wildcard_statements(p.get("policy")):
                out.append("an inline policy allows '*' actions")
    elif r.type in ("aws:iam/rolePolicy:RolePolicy", "aws:iam/policy:Policy"):
        if _wildcard_statements(r.get("policy")):
            out.append("the policy allows '*' actions")
    elif r.type in ("gcp:projects/iAMMember:IAMMember", "gcp:projects/iAMBinding:IAMBinding"):
        role = str(r.get("role") or "")
        if _GCP_BROAD_ROLE.match(role):
            out.append(f"grants {role}")
    elif r.type in (
        "gcp:compute/instanceTemplate:InstanceTemplate",
        "gcp:compute/regionInstanceTemplate:RegionInstanceTemplate",
        "gcp:compute/instance:Instance",
    ):
        email = str(r.get("serviceAccount", "email") or "")
        if email.endswith("-compute@developer.gserviceaccount.com") or email == "default":
            out.append("runs as the default compute service account (Editor on the project)")
        if any(_GCP_FULL_SCOPE.search(str(s)) for s in _items(r.get("serviceAccount", "scopes"))):
            out.append("has the cloud-platform scope (every API the account may use)")
    elif r.type == "azure-native:authorization:RoleAssignment":
        role_id = str(r.get("roleDefinitionId") or "").lower().rsplit("/", 1)[-1]
        if role_id in _AZURE_BROAD_ROLES:
            out.append(f"assigns {_AZURE_BROAD_ROLES[role_id]}")
    elif r.type == "alicloud:ram/rolePolicyAttachment:RolePolicyAttachment":
        name = str(r.get("policyName") or "")
        if name == "AdministratorAccess" or name.endswith("FullAccess"):
            out.append(f"attaches {name}")
    elif r.type == "alicloud:ram/policy:Policy" and _wildcard_statements(r.get("policyDocument") or r.get("document")):
        out.append("the policy allows '*' actions")
    return out


# ---------------------------------------------------------------------- PRV-GCP-001

_GCP_VM = (
    "gcp:compute/instanceTemplate:InstanceTemplate",
    "gcp:compute/regionInstanceTemplate:RegionInstanceTemplate",
    "gcp:compute/instance:Instance",
)


def check_os_login(r: Resource, ctx: Context) -> list[str]:
    if r.type not in _GCP_VM or not ctx.gcp_os_login:
        return []
    meta = r.get("metadata") or {}
    meta = meta if isinstance(meta, Mapping) else {}
    out = []
    if str(meta.get("enable-oslogin", "")).upper() != "TRUE":
        out.append("metadata enable-oslogin is not TRUE")
    if str(meta.get("block-project-ssh-keys", "")).upper() != "TRUE":
        out.append("metadata block-project-ssh-keys is not TRUE")
    if meta.get("ssh-keys") or meta.get("sshKeys"):
        out.append("metadata ssh-keys installs static keys beside OS Login")
    script = "\n".join(decoded(str(meta.get(k, ""))) for k in ("user-data", "startup-script"))
    script += decoded(str(r.get("metadataStartupScript") or ""))
    if "authorized_keys" in script:
        out.append("the node script writes a local authorized_keys, which bypasses OS Login")
    return out


# ---------------------------------------------------------------------- PRV-SSH-001


def check_ssh_keys_only(r: Resource, ctx: Context) -> list[str]:
    out: list[str] = []
    if r.type in ("azure-native:compute:VirtualMachineScaleSet", "azure-native:compute:VirtualMachine"):
        profile = (
            r.get("virtualMachineProfile", "osProfile") if r.kind == "VirtualMachineScaleSet" else r.get("osProfile")
        )
        profile = profile if isinstance(profile, Mapping) else {}
        linux = profile.get("linuxConfiguration")
        linux = linux if isinstance(linux, Mapping) else {}
        if not truthy(linux.get("disablePasswordAuthentication")):
            out.append("linuxConfiguration.disablePasswordAuthentication is not true")
        if profile.get("adminPassword"):
            out.append("osProfile sets an adminPassword")
        ssh = linux.get("ssh")
        keys = ssh.get("publicKeys") if isinstance(ssh, Mapping) else None
        if not keys:
            out.append("linuxConfiguration.ssh.publicKeys is empty")
    elif r.type in _ALI_VM:
        if r.get("password") or r.get("kmsEncryptedPassword"):
            out.append("sets a login password")
        if truthy(r.get("passwordInherit")):
            out.append("passwordInherit is true (the image's password stays usable)")
    return out


# ---------------------------------------------------------------------- PRV-SEC-001


def check_secrets(r: Resource, ctx: Context) -> list[str]:
    return [f"{path} holds a {kind}" for path, kind in find_in_data(dict(r.inputs))]


# ---------------------------------------------------------------------- PRV-TAG-001


def tag_field(cloud: str) -> str | None:
    """The input that holds provision's tags on ``cloud`` (``facts.tag_field``: ``labels`` on GCP); None: no cloud."""
    return cloud_facts(cloud).tag_field if cloud in CLOUDS else None


def taggable(type_token: str) -> bool | None:
    """Whether the provider SDK's Args class of ``type_token`` takes tags (labels on GCP); ``None``: unknown.

    Read from the installed SDK, so the answer follows the provider's own schema.
    """
    import importlib
    import inspect

    package, _, rest = type_token.partition(":")
    cloud = cloud_of_package(package)
    module_path, _, cls = rest.partition(":")
    if cloud is None or not cls:
        return None
    module = module_path.split("/", 1)[0]
    sdk = cloud_facts(cloud).pulumi_module
    try:
        mod = importlib.import_module(f"{sdk}.{module}" if module != "index" else sdk)
        args = getattr(mod, f"{cls}Args")
    except (ImportError, AttributeError):
        return None
    params = inspect.signature(args.__init__).parameters
    return tag_field(cloud) in params


def _missing_tags(tags: Any) -> list[str]:
    tags = tags if isinstance(tags, Mapping) else {}
    return [k for k in REQUIRED_TAGS if not tags.get(k)]


def check_tags(r: Resource, ctx: Context) -> list[str]:
    key = tag_field(r.cloud)
    if key is None:
        return []
    known = taggable(r.type)
    if known is False or (known is None and key not in r.inputs):
        return []
    out = []
    missing = _missing_tags(r.get(key))
    if missing:
        out.append(f"{key} lacks {', '.join(missing)}")
    if r.type == "aws:ec2/launchTemplate:LaunchTemplate":
        for spec in _items(r.get("tagSpecifications")):
            if isinstance(spec, Mapping) and spec.get("resourceType") in ("instance", "volume"):
                gone = _missing_tags(spec.get("tags"))
                if gone:
                    out.append(f"tagSpecifications[{spec.get('resourceType')}] lacks {', '.join(gone)}")
        kinds = {s.get("resourceType") for s in _items(r.get("tagSpecifications")) if isinstance(s, Mapping)}
        if "instance" not in kinds:
            out.append("tagSpecifications does not tag the instances it launches")
    return out
