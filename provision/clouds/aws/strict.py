"""Strict AWS: every input checked against botocore's service models and AWS's documented rules.

* **Model rules** (enums, min/max, patterns, required members of nested structures) are read from
  botocore's service models at check time (botocore ships with ``provision[aws]``): ec2 2016-11-15,
  fsx 2018-03-01, iam 2010-05-08, autoscaling 2011-01-01, resource-groups 2017-11-27. A Pulumi input
  path maps to the API member path by PascalCase, with the aliases in :data:`APIS` where the names
  differ.
* **Documented rules** that the models state only in prose are parsed from that prose at check time
  (security-group name and description characters, FSx throughput and Lustre versions), or quoted
  verbatim where they are tables (FSx capacity steps); ``tests/test_strict_aws.py`` checks each quote
  is still in the installed model.
* **Mocks never model**: autonamed physical names (logical name + ``-`` + 7 hex), the file system
  created before the security-group rules it needs, and an instant fleet launched seconds after a new
  instance profile.
"""

from __future__ import annotations

import html
import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

from provision.clouds.strict import (
    Resource,
    Violation,
    check_enum,
    check_range,
    go_duration_seconds,
    values_at,
)

if TYPE_CHECKING:
    from provision.clouds.mocking import MockContext

BOTOCORE = "botocore {service} {version} {shape}.{member}"


@dataclass(frozen=True)
class Api:
    """The API call a resource's create turns into, and how Pulumi input names map onto it.

    Attributes:
        service: botocore service name.
        operation: the create operation.
        roots: member paths under the input shape whose members Pulumi flattens into the resource's
            top level (``LustreConfiguration`` for FSx); ``""`` is the input shape itself.
        aliases: Pulumi input path (camelCase, ``[]`` for list items) -> API member path where the
            PascalCase of the Pulumi name is not the API's name.
        autoname: the Pulumi input Pulumi fills by autonaming when absent (checked as the physical name).
    """

    service: str
    operation: str
    roots: tuple[str, ...] = ("",)
    aliases: Mapping[str, str] = field(default_factory=dict)
    autoname: str | None = None
    #: Inputs the provider sends in another call of the same service after the create (operation ->
    #: {Pulumi path: member path}), e.g. the role added to an instance profile.
    more: tuple[tuple[str, Mapping[str, str]], ...] = ()

    def calls(self) -> list[Api]:
        """This create and the follow-up calls, each resolving only the inputs it names."""
        return [self] + [Api(self.service, op, roots=(), aliases=m) for op, m in self.more]


_SG_RULE = {
    "ipProtocol": "IpPermissions[].IpProtocol",
    "fromPort": "IpPermissions[].FromPort",
    "toPort": "IpPermissions[].ToPort",
    "cidrIpv4": "IpPermissions[].IpRanges[].CidrIp",
    "cidrIpv6": "IpPermissions[].Ipv6Ranges[].CidrIpv6",
    "referencedSecurityGroupId": "IpPermissions[].UserIdGroupPairs[].GroupId",
    "description": "IpPermissions[].IpRanges[].Description",
    "securityGroupId": "GroupId",
}

#: Pulumi type token -> the create call it becomes.
APIS: dict[str, Api] = {
    "aws:ec2/vpc:Vpc": Api(
        "ec2",
        "CreateVpc",
        more=(
            (
                "ModifyVpcAttribute",
                {"enableDnsHostnames": "EnableDnsHostnames.Value", "enableDnsSupport": "EnableDnsSupport.Value"},
            ),
        ),
    ),
    "aws:ec2/subnet:Subnet": Api(
        "ec2",
        "CreateSubnet",
        more=(("ModifySubnetAttribute", {"mapPublicIpOnLaunch": "MapPublicIpOnLaunch"}),),
    ),
    "aws:ec2/internetGateway:InternetGateway": Api(
        "ec2", "CreateInternetGateway", more=(("AttachInternetGateway", {"vpcId": "VpcId"}),)
    ),
    "aws:ec2/eip:Eip": Api("ec2", "AllocateAddress"),
    "aws:ec2/natGateway:NatGateway": Api("ec2", "CreateNatGateway"),
    "aws:ec2/routeTable:RouteTable": Api("ec2", "CreateRouteTable"),
    "aws:ec2/route:Route": Api("ec2", "CreateRoute"),
    "aws:ec2/vpcEndpoint:VpcEndpoint": Api("ec2", "CreateVpcEndpoint"),
    # An attached volume's VPC (clouds/aws/volumelink.py): requested, then accepted by the provider (auto_accept).
    "aws:ec2/vpcPeeringConnection:VpcPeeringConnection": Api("ec2", "CreateVpcPeeringConnection"),
    "aws:ec2/securityGroup:SecurityGroup": Api(
        "ec2", "CreateSecurityGroup", aliases={"name": "GroupName"}, autoname="name"
    ),
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": Api(
        "ec2", "AuthorizeSecurityGroupIngress", aliases=_SG_RULE
    ),
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule": Api(
        "ec2", "AuthorizeSecurityGroupEgress", aliases=_SG_RULE
    ),
    "aws:ec2/placementGroup:PlacementGroup": Api(
        "ec2", "CreatePlacementGroup", aliases={"name": "GroupName"}, autoname="name"
    ),
    "aws:ec2/keyPair:KeyPair": Api(
        "ec2", "ImportKeyPair", aliases={"publicKey": "PublicKeyMaterial"}, autoname="keyName"
    ),
    "aws:ec2/launchTemplate:LaunchTemplate": Api(
        "ec2",
        "CreateLaunchTemplate",
        roots=("", "LaunchTemplateData"),
        aliases={
            "name": "LaunchTemplateName",
            "description": "VersionDescription",
            "networkInterfaces[].securityGroups": "LaunchTemplateData.NetworkInterfaces[].Groups",
            "vpcSecurityGroupIds": "LaunchTemplateData.SecurityGroupIds",
        },
        autoname="name",
    ),
    "aws:ec2/fleet:Fleet": Api("ec2", "CreateFleet"),
    # The Slurm controller (clouds/aws/slurm.py): one RunInstances call.
    "aws:ec2/instance:Instance": Api(
        "ec2",
        "RunInstances",
        aliases={
            "ami": "ImageId",
            "vpcSecurityGroupIds": "SecurityGroupIds",
            "associatePublicIpAddress": "NetworkInterfaces[].AssociatePublicIpAddress",
            "iamInstanceProfile": "IamInstanceProfile.Name",
            "userDataBase64": "UserData",
            "rootBlockDevice.volumeSize": "BlockDeviceMappings[].Ebs.VolumeSize",
            "rootBlockDevice.volumeType": "BlockDeviceMappings[].Ebs.VolumeType",
            "rootBlockDevice.encrypted": "BlockDeviceMappings[].Ebs.Encrypted",
            "rootBlockDevice.deleteOnTermination": "BlockDeviceMappings[].Ebs.DeleteOnTermination",
            "volumeTags": "TagSpecifications[].Tags",
        },
    ),
    "aws:fsx/lustreFileSystem:LustreFileSystem": Api("fsx", "CreateFileSystem", roots=("", "LustreConfiguration")),
    "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation": Api("fsx", "CreateDataRepositoryAssociation"),
    "aws:iam/role:Role": Api(
        "iam",
        "CreateRole",
        aliases={"name": "RoleName", "assumeRolePolicy": "AssumeRolePolicyDocument"},
        autoname="name",
    ),
    "aws:iam/instanceProfile:InstanceProfile": Api(
        "iam",
        "CreateInstanceProfile",
        aliases={"name": "InstanceProfileName"},
        autoname="name",
        more=(("AddRoleToInstanceProfile", {"role": "RoleName"}),),
    ),
    "aws:autoscaling/group:Group": Api(
        "autoscaling",
        "CreateAutoScalingGroup",
        aliases={"name": "AutoScalingGroupName", "minSize": "MinSize", "maxSize": "MaxSize"},
        autoname="name",
    ),
    "aws:resourcegroups/group:Group": Api("resource-groups", "CreateGroup", autoname="name"),
    "aws:resourcegroups/resource:Resource": Api(
        "resource-groups", "GroupResources", aliases={"groupArn": "Group", "resourceArn": "ResourceArns[]"}
    ),
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": Api(
        "iam", "AttachRolePolicy", aliases={"role": "RoleName", "policyArn": "PolicyArn"}
    ),
    "aws:iam/rolePolicy:RolePolicy": Api(
        "iam", "PutRolePolicy", aliases={"role": "RoleName", "policy": "PolicyDocument", "name": "PolicyName"}
    ),
    "aws:ssm/parameter:Parameter": Api(
        "ssm",
        "PutParameter",
        aliases={"name": "Name", "type": "Type", "insecureValue": "Value", "description": "Description"},
        autoname="name",
    ),
    "aws:ec2/routeTableAssociation:RouteTableAssociation": Api("ec2", "AssociateRouteTable"),
    "aws:ec2/eipAssociation:EipAssociation": Api("ec2", "AssociateAddress"),
    "aws:autoscaling/schedule:Schedule": Api(
        "autoscaling", "PutScheduledUpdateGroupAction", aliases={"autoscalingGroupName": "AutoScalingGroupName"}
    ),
    # scheduler: kubernetes (EKS, botocore eks 2017-11-01)
    "aws:eks/cluster:Cluster": Api(
        "eks",
        "CreateCluster",
        aliases={
            "vpcConfig": "resourcesVpcConfig",
            "enabledClusterLogTypes[]": "logging.clusterLogging[].types[]",
        },
    ),
    "aws:eks/nodeGroup:NodeGroup": Api(
        "eks",
        "CreateNodegroup",
        aliases={"nodeGroupName": "nodegroupName", "nodeRoleArn": "nodeRole", "subnetIds[]": "subnets[]"},
    ),
    "aws:eks/addon:Addon": Api(
        "eks",
        "CreateAddon",
        aliases={"resolveConflictsOnCreate": "resolveConflicts"},
        more=(("UpdateAddon", {"resolveConflictsOnUpdate": "resolveConflicts"}),),
    ),
    "aws:eks/podIdentityAssociation:PodIdentityAssociation": Api("eks", "CreatePodIdentityAssociation"),
}

#: Every type this module has rules for (the suite checks each type a program registers is here).
KNOWN = frozenset(APIS)

FSX = "aws:fsx/lustreFileSystem:LustreFileSystem"
SG = "aws:ec2/securityGroup:SecurityGroup"
SG_RULES = (
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule",
)
FLEET = "aws:ec2/fleet:Fleet"
PROFILE = "aws:iam/instanceProfile:InstanceProfile"

#: FSx CreateFileSystem ``StorageCapacity`` steps, quoted from its botocore documentation
#: (fsx 2018-03-01); the test suite checks each quote is still in the installed model.
FSX_CAPACITY = {
    ("SCRATCH_2", "SSD"): (
        "For SCRATCH_2 , PERSISTENT_2 , and PERSISTENT_1 deployment types using SSD storage type, the valid "
        "values are 1200 GiB, 2400 GiB, and increments of 2400 GiB.",
        lambda gib: gib in (1200, 2400) or (gib > 0 and gib % 2400 == 0),
    ),
    ("SCRATCH_1", "SSD"): (
        "For SCRATCH_1 deployment type, valid values are 1200 GiB, 2400 GiB, and increments of 3600 GiB.",
        lambda gib: gib in (1200, 2400) or (gib > 0 and gib % 3600 == 0),
    ),
}
FSX_CAPACITY[("PERSISTENT_2", "SSD")] = FSX_CAPACITY[("SCRATCH_2", "SSD")]
FSX_CAPACITY[("PERSISTENT_1", "SSD")] = FSX_CAPACITY[("SCRATCH_2", "SSD")]

#: A new IAM instance profile reaches EC2 with a delay: an instant fleet launched within seconds gets
#: "Invalid IAM Instance Profile" inside its response and launches nothing (hashicorp/terraform#15341,
#: hashicorp/packer#9946, aws-parallelcluster-node#528). The fleet must wait for it: through a
#: ``time:index/sleep:Sleep`` of at least this long, or a resource that takes minutes to create.
PROFILE_WAIT_S = 10.0
PROFILE_WAIT_SOURCE = (
    "EC2 eventual consistency of new IAM instance profiles (hashicorp/terraform#15341, hashicorp/packer#9946; "
    "an instant fleet reports it in its Errors and launches nothing: aws-parallelcluster-node#528)"
)
#: Resources whose create alone takes minutes (the FSx Lustre guide: file system creation takes minutes).
SLOW_CREATES = (FSX,)


@cache
def _pattern(text: str | None) -> re.Pattern[str] | None:
    """A botocore (Java-flavoured) pattern as a Python regex; ``None`` when there is none.

    Java writes characters beyond the BMP as UTF-16 surrogate pairs (``\\uD800\\uDC00-\\uDBFF\\uDFFF``);
    Python matches code points, so such a range becomes ``\\U00010000-\\U0010FFFF``.
    """
    if not text:
        return None
    text = text.replace("\\uD800\\uDC00-\\uDBFF\\uDFFF", "\\U00010000-\\U0010FFFF")
    try:
        return re.compile(text)
    except re.error:  # a construct Python does not share: the length and enum rules still apply
        return None


def _plain(doc: str | None) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", doc or ""))).strip()


def _pascal(name: str) -> str:
    return name[:1].upper() + name[1:]


class _Models:
    """botocore service models (immutable vendor data, loaded once per process)."""

    def service(self, name: str) -> Any:
        return _service_model(name)


@cache
def _service_model(name: str) -> Any:
    try:
        import botocore.session
    except ImportError as e:  # pragma: no cover - boto3 is part of provision[aws]
        raise RuntimeError(
            "the strict mocked AWS reads botocore's service models; install them with pip install 'provision[aws]'"
        ) from e
    return botocore.session.get_session().get_service_model(name)


def _models(ctx: MockContext) -> _Models:
    return _Models()


def charset_rule(doc: str) -> tuple[str, int | None, str] | None:
    """(regex, max length, quote) from prose such as "Valid characters: a-z, A-Z, 0-9, spaces, and ._-:/()"."""
    text = _plain(doc)
    m = re.search(r"(?:Valid characters:|Allowed characters are)\s*(.+?)(?:\s{2,}|$|(?<=\*)\s)", text)
    if m is None:
        return None
    spec = m.group(1).strip()
    chars: list[str] = []
    for token in spec.split(", "):
        token = token.strip()
        token = token[4:] if token.startswith("and ") else token
        if re.fullmatch(r"\w-\w", token):
            chars.append(re.escape(token[0]) + "-" + re.escape(token[2]))
        elif token == "spaces":
            chars.append(" ")
        else:
            chars.extend(re.escape(c) for c in token)
    length = re.search(r"Up to (\d+) characters", text)
    return f"[{''.join(chars)}]*", int(length.group(1)) if length else None, m.group(0).strip()


def _member_path(api: Api, path: str) -> str | None:
    """The API member path for a Pulumi leaf path, or None when the API has no such member."""
    generic = re.sub(r"\[\]", "[]", path)
    for alias, target in api.aliases.items():
        if generic == alias:
            return target
        if generic.startswith(alias + ".") or generic.startswith(alias + "[]"):
            rest = generic[len(alias) :]
            return target + ".".join(_pascal(p) for p in rest.split("."))
    return None


def _member_name(shape: Any, name: str) -> str | None:
    """The member of a structure called ``name``, whatever its case.

    EC2, FSx, IAM and Auto Scaling name members in PascalCase, EKS in camelCase (``scalingConfig``);
    Pulumi's names are camelCase, so a case-insensitive match serves both.
    """
    if shape.type_name != "structure":
        return None
    if name in shape.members:
        return str(name)
    lowered = name.lower()
    return next((str(m) for m in shape.members if m.lower() == lowered), None)


def _resolve(shape: Any, parts: list[str]) -> tuple[Any, Any] | None:
    """(the member shape, its parent structure) at ``parts`` (``Name`` or ``Name[]``) under ``shape``."""
    parent = None
    for part in parts:
        if shape.type_name == "map":  # the rest of the path is the map's key (keys may hold dots)
            return shape.value, shape
        many = part.endswith("[]")
        name = _member_name(shape, part[:-2] if many else part)
        if name is None:
            return None
        parent, shape = shape, shape.members[name]
        if many:
            if shape.type_name != "list":
                return None
            shape = shape.member
    return shape, parent


def _leaf_shapes(api: Api, model: Any, inputs: Mapping[str, Any]) -> list[tuple[str, Any, Any, str]]:
    """(pulumi path, value, member shape, member name) for every input leaf the API has a member for."""
    op = model.operation_model(api.operation)
    out = []
    for path, value in _leaves(inputs):
        mapped = _member_path(api, path)
        candidates = (
            [mapped]
            if mapped
            else [".".join(p for p in (root, ".".join(_pascal(x) for x in path.split("."))) if p) for root in api.roots]
        )
        for member in candidates:
            parts = [p for p in re.split(r"\.", member) if p]
            found = _resolve(op.input_shape, parts)
            if found is not None:
                parent = found[1] if found[1] is not None else op.input_shape
                name = _member_name(parent, parts[-1].removesuffix("[]")) or parts[-1].removesuffix("[]")
                out.append((path, value, found[0], name))
                break
    return out


def _leaves(value: Any, path: str = "") -> list[tuple[str, Any]]:
    if isinstance(value, Mapping):
        return [leaf for k, v in value.items() for leaf in _leaves(v, f"{path}.{k}" if path else str(k))]
    if isinstance(value, (list, tuple)):
        return [leaf for v in value for leaf in _leaves(v, f"{path}[]")]
    return [(path, value)]


def model_rules(res: Resource, api: Api, models: _Models) -> list[Violation]:
    """Enums, min/max, patterns and documented character sets of every input the API models."""
    model = models.service(api.service)
    version = model.api_version
    inputs = dict(res.inputs)
    autonamed = ""
    if api.autoname and not inputs.get(api.autoname):
        inputs[api.autoname], autonamed = res.physical_name(api.autoname)
    out: list[Violation] = []
    for path, value, shape, member in _leaf_shapes(api, model, inputs):
        field_name = autonamed if autonamed and path == api.autoname else path
        src = BOTOCORE.format(service=api.service, version=version, shape=shape.name, member=member)
        meta = shape.metadata
        if isinstance(value, bool) or value is None:
            continue
        if shape.type_name == "string" and isinstance(value, str):
            out += check_enum(res, field_name, value, meta.get("enum") or [], src) if meta.get("enum") else []
            if "min" in meta and len(value) < meta["min"] or "max" in meta and len(value) > meta["max"]:
                out.append(
                    res.violation(field_name, value, f"length must be {meta.get('min', 0)}-{meta.get('max')}", src)
                )
            pattern = _pattern(meta.get("pattern"))
            if pattern is not None and not pattern.fullmatch(value):
                out.append(res.violation(field_name, value, f"must match {meta['pattern']}", src))
        elif shape.type_name in ("integer", "long", "double", "float"):
            out += check_range(res, field_name, value, meta.get("min"), meta.get("max"), src)
    out += _documented_charsets(res, api, model, inputs, autonamed)
    out += _required_members(res, api, model, inputs)
    out += _map_key_rules(res, api, model, inputs)
    return out


def _map_key_rules(res: Resource, api: Api, model: Any, inputs: Mapping[str, Any]) -> list[Violation]:
    """Keys of map members (EKS node-group labels, ...) against the map's key shape (length, pattern)."""
    op = model.operation_model(api.operation)
    out: list[Violation] = []
    for key, value in inputs.items():
        if not isinstance(value, Mapping):
            continue
        mapped = _member_path(api, key)
        if mapped is None and not api.roots:
            continue
        for root in (mapped,) if mapped else api.roots:
            parts = [p for p in (root.split(".") if mapped else [root, _pascal(key)]) if p]
            found = _resolve(op.input_shape, parts)
            if found is None:
                continue
            parent = found[1]
            shape = parent.members[_member_name(parent, parts[-1]) or ""] if parent is not None else None
            if shape is None or shape.type_name != "map":
                break
            meta = shape.key.metadata
            src = BOTOCORE.format(service=api.service, version=model.api_version, shape=shape.key.name, member="key")
            pattern = _pattern(meta.get("pattern"))
            for k in value:
                text = str(k)
                if "min" in meta and len(text) < meta["min"] or "max" in meta and len(text) > meta["max"]:
                    out.append(
                        res.violation(
                            f"{key}.{text}", text, f"key length must be {meta.get('min', 0)}-{meta.get('max')}", src
                        )
                    )
                if pattern is not None and not pattern.fullmatch(text):
                    out.append(res.violation(f"{key}.{text}", text, f"key must match {meta['pattern']}", src))
            break
    return out


def _required_members(res: Resource, api: Api, model: Any, inputs: Mapping[str, Any]) -> list[Violation]:
    """Members a nested structure the program sends must carry (e.g. FSx ``MetadataConfiguration.Mode``).

    Only structures below the top level: the provider fills the request's own required members
    (``ClientToken``, ``FileSystemType``, ...) itself.
    """
    op = model.operation_model(api.operation)
    out: list[Violation] = []

    def visit(value: Any, shape: Any, path: str) -> None:
        if isinstance(value, (list, tuple)) and shape.type_name == "list":
            for item in value:
                visit(item, shape.member, path + "[]")
            return
        if not isinstance(value, Mapping) or shape.type_name != "structure":
            return
        for member in shape.required_members:
            camel = member[:1].lower() + member[1:]
            if camel not in value or value[camel] is None:
                src = BOTOCORE.format(service=api.service, version=model.api_version, shape=shape.name, member=member)
                out.append(res.violation(f"{path}.{camel}", None, "is required", src))
        for key, item in value.items():
            name = _member_name(shape, str(key))
            if name is not None:
                visit(item, shape.members[name], f"{path}.{key}")

    for key, value in inputs.items():
        if not isinstance(value, (Mapping, list, tuple)) or _member_path(api, key):
            continue
        for root in api.roots:
            found = _resolve(op.input_shape, [p for p in (root, _pascal(key)) if p])
            if found is not None:
                visit(value, found[0], key)
                break
    return out


def _documented_charsets(
    res: Resource, api: Api, model: Any, inputs: Mapping[str, Any], autonamed: str
) -> list[Violation]:
    """Character sets and lengths AWS states only in the member's documentation (EC2 security groups)."""
    out: list[Violation] = []
    op = model.operation_model(api.operation)
    for path, value in _leaves(inputs):
        if not isinstance(value, str):
            continue
        mapped = _member_path(api, path)
        if mapped is None and not api.roots:  # a follow-up call: only the inputs it names
            continue
        mapped = mapped or ".".join(_pascal(x) for x in path.split("."))
        parts = [p for p in mapped.split(".") if p]
        found = _resolve(op.input_shape, parts)
        if found is None or found[1] is None or found[1].type_name != "structure":
            continue
        member = _member_name(found[1], parts[-1].removesuffix("[]")) or ""
        doc = found[1].members[member].documentation
        rule = charset_rule(doc)
        if rule is None:
            continue
        regex, max_len, quote = rule
        src = f'botocore {api.service} {model.api_version} {found[1].name}.{member} documentation: "{quote}"'
        field_name = autonamed if autonamed and path == api.autoname else path
        if not re.fullmatch(regex, value):
            bad = sorted({c for c in value if not re.fullmatch(regex, c)})
            out.append(res.violation(field_name, value, f"characters {''.join(bad)!r} are not allowed", src))
        if max_len is not None and len(value) > max_len:
            out.append(res.violation(field_name, value, f"at most {max_len} characters", src))
    return out


def fsx_rules(res: Resource, models: _Models) -> list[Violation]:
    """FSx for Lustre capacity steps, throughput and Lustre version per deployment type."""
    if res.type != FSX:
        return []
    model = models.service("fsx")
    version = model.api_version
    create = model.operation_model("CreateFileSystem").input_shape
    lustre = create.members["LustreConfiguration"]
    inputs = res.inputs
    deployment = str(inputs.get("deploymentType") or "SCRATCH_1")
    storage = str(inputs.get("storageType") or "SSD")
    out: list[Violation] = []
    steps = FSX_CAPACITY.get((deployment, storage))
    cap = inputs.get("storageCapacity")
    if steps is not None and cap is not None:
        quote, ok = steps
        try:
            good = ok(int(cap))
        except (TypeError, ValueError):
            good = False
        if not good:
            src = f'botocore fsx {version} CreateFileSystemRequest.StorageCapacity documentation: "{quote}"'
            out.append(res.violation("storageCapacity", cap, f"not a valid {deployment} {storage} capacity", src))
    doc = _plain(lustre.members["PerUnitStorageThroughput"].documentation)
    allowed = {
        (d, s): [int(x) for x in re.findall(r"\d+", vals)]
        for d, s, vals in re.findall(r"For (\w+) (SSD|HDD) storage: ([\d, ]+) MB/s/TiB", doc)
    }
    tput = inputs.get("perUnitStorageThroughput")
    if tput is not None and (deployment, storage) in allowed and int(tput) not in allowed[(deployment, storage)]:
        values = ", ".join(map(str, allowed[(deployment, storage)]))
        src = (
            f"botocore fsx {version} CreateFileSystemLustreConfiguration.PerUnitStorageThroughput documentation: "
            f'"For {deployment} {storage} storage: {values} MB/s/TiB."'
        )
        out.append(res.violation("perUnitStorageThroughput", tput, f"must be one of {values}", src))
    vdoc = _plain(create.members["FileSystemTypeVersion"].documentation)
    m = re.search(r"Valid values are ([\d., and]+?)\s*:", vdoc)
    lustre_version = inputs.get("fileSystemTypeVersion")
    if m and lustre_version is not None:
        versions = re.findall(r"\d+\.\d+", m.group(1))
        if str(lustre_version) not in versions:
            src = f'botocore fsx {version} CreateFileSystemRequest.FileSystemTypeVersion documentation: "{m.group(0)}"'
            out.append(
                res.violation("fileSystemTypeVersion", lustre_version, f"must be one of {', '.join(versions)}", src)
            )
    return out


def _sg_ids(value: Any) -> set[str]:
    items = value if isinstance(value, (list, tuple)) else [value]
    return {str(v) for v in items if v}


def fsx_dependency_rules(res: Resource, ctx: MockContext) -> list[Violation]:
    """FSx validates its security groups' rules when it is created: it must be created after all of them.

    Checked both ways: when the file system registers (its groups' rules registered so far must be
    among its dependencies) and when a rule of its group registers after it (it cannot depend on it).
    """
    src = (
        'FSx for Lustre guide, "Creating an FSx for Lustre file system fails" (InvalidNetworkSettings when the '
        "group lacks the Lustre/EFA rules at create); aws/aws-parallelcluster#6181, fixed by DependsOn in #6342"
    )
    out: list[Violation] = []
    if not res.urn:  # installed without provision.clouds.mocking.install: dependencies unknown
        return out
    if res.type == FSX:
        groups = _sg_ids(res.inputs.get("securityGroupIds"))
        ancestors = ctx.ancestors(res.urn, res.dependencies)
        missing = [
            r.name
            for r in ctx.ledger
            if r.type in SG_RULES and str(r.inputs.get("securityGroupId")) in groups and r.urn not in ancestors
        ]
        if missing:
            out.append(
                res.violation(
                    "dependsOn",
                    sorted(missing),
                    "must depend on every rule of its security groups "
                    "(depends_on=[...]); otherwise it is created in parallel with them",
                    src,
                )
            )
    elif res.type in SG_RULES:
        group = str(res.inputs.get("securityGroupId"))
        for fs in ctx.find(FSX):
            # An imported file system exists already (provision.clouds.adopt): its create is not this program's.
            if not fs.imported and group in _sg_ids(fs.inputs.get("securityGroupIds")):
                out.append(
                    Violation(
                        FSX,
                        fs.name,
                        "dependsOn",
                        [res.name],
                        "must depend on every rule of its security "
                        "groups (depends_on=[...]); this rule was created after the file system",
                        src,
                    )
                )
    return out


def _sleep_seconds(value: Any) -> float:
    """Seconds of a ``time.Sleep`` duration (Go syntax, ``15s`` or ``1m30s``); 0 when unreadable."""
    return go_duration_seconds(str(value or "")) or 0.0


def profile_propagation_rules(res: Resource, ctx: MockContext) -> list[Violation]:
    """An instant fleet must not launch seconds after the instance profile its nodes use was created."""
    if res.type != FLEET or res.inputs.get("type") != "instant" or not res.urn:
        return []
    ancestors = ctx.ancestors(res.urn, res.dependencies)
    profiles = [r for r in ctx.find(PROFILE) if r.urn in ancestors]
    if not profiles:
        return []
    out: list[Violation] = []
    for profile in profiles:
        waits = [
            r
            for r in ctx.ledger
            if r.urn in ancestors
            and (
                (
                    r.type == "time:index/sleep:Sleep"
                    and _sleep_seconds(r.inputs.get("createDuration")) >= PROFILE_WAIT_S
                    and profile.urn in ctx.ancestors(r.urn)
                )
                or r.type in SLOW_CREATES
            )
        ]
        if not waits:
            out.append(
                res.violation(
                    "dependsOn",
                    profile.name,
                    f"the instance profile is created in this deployment: wait at least "
                    f"{PROFILE_WAIT_S:g}s for it to reach EC2 (a time.Sleep that depends on it) before the fleet",
                    PROFILE_WAIT_SOURCE,
                )
            )
    return out


#: The provider's own check of a security-group rule's address range, run before any API call.
CIDR_SOURCE = (
    "terraform-provider-aws internal/service/ec2/vpc_security_group_ingress_rule.go cidr_ipv4/cidr_ipv6 "
    "validators -> internal/verify/validate.go ValidateIPv4CIDRBlock/ValidateIPv6CIDRBlock: net.ParseCIDR, "
    "and the network address must equal the value (no host bits)"
)


def cidr_rules(res: Resource) -> list[Violation]:
    """``cidrIpv4``/``cidrIpv6`` of a security-group rule: a network in CIDR form, host bits clear."""
    if res.type not in SG_RULES:
        return []
    out: list[Violation] = []
    for key, version in (("cidrIpv4", 4), ("cidrIpv6", 6)):
        value = res.inputs.get(key)
        if value is None or not isinstance(value, str):
            continue
        try:
            net = ipaddress.ip_network(value, strict=True)
            ok = "/" in value and net.version == version
        except ValueError:
            ok = False
        if not ok:
            out.append(
                res.violation(key, value, f"an IPv{version} network in CIDR form, e.g. 203.0.113.5/32", CIDR_SOURCE)
            )
    return out


PEERING = "aws:ec2/vpcPeeringConnection:VpcPeeringConnection"
AUTO_ACCEPT_SOURCE = (
    "pulumi-aws ec2.VpcPeeringConnection auto_accept: 'Accept the peering (both VPCs need to be in the same AWS "
    "account and region)'; terraform-provider-aws internal/service/ec2/vpc_peering_connection.go"
)


def peering_rules(res: Resource) -> list[Violation]:
    """``autoAccept`` only within one account and region: no ``peerOwnerId``/``peerRegion`` beside it."""
    if res.type != PEERING or not res.inputs.get("autoAccept"):
        return []
    return [
        res.violation(key, res.inputs[key], "unset with autoAccept (same account and region only)", AUTO_ACCEPT_SOURCE)
        for key in ("peerOwnerId", "peerRegion")
        if res.inputs.get(key)
    ]


def tag_rules(res: Resource, models: _Models) -> list[Violation]:
    """Tag keys and values within the limits EC2 documents for its ``Tag`` shape (parsed from the model)."""
    tag = models.service("ec2").shape_for("Tag")
    key_doc, value_doc = _plain(tag.members["Key"].documentation), _plain(tag.members["Value"].documentation)
    key_max = int(re.search(r"maximum of (\d+)", key_doc).group(1))  # type: ignore[union-attr]
    value_max = int(re.search(r"maximum of (\d+)", value_doc).group(1))  # type: ignore[union-attr]
    reserved = "aws:" if "May not begin with aws:" in key_doc else None
    src = f'botocore ec2 {models.service("ec2").api_version} Tag.Key/Tag.Value documentation: "{key_doc[-90:]}"'
    out: list[Violation] = []
    for path in ("tags", "tagSpecifications[].tags", "volumeTags"):
        for tags in values_at(res.inputs, path):
            if not isinstance(tags, Mapping):
                continue
            for key, value in tags.items():
                if len(str(key)) > key_max or (reserved and str(key).lower().startswith(reserved)):
                    out.append(res.violation(f"{path}.{key}", key, f"keys: at most {key_max}, not {reserved}...", src))
                if value is not None and len(str(value)) > value_max:
                    out.append(res.violation(f"{path}.{key}", value, f"values: at most {value_max} characters", src))
    return out


def check(res: Resource, ctx: MockContext) -> list[Violation]:
    """Every rule this cloud knows for one registration."""
    models = _models(ctx)
    api = APIS.get(res.type)
    out = [v for call in api.calls() for v in model_rules(res, call, models)] if api else []
    out += tag_rules(res, models) + fsx_rules(res, models) + cidr_rules(res) + peering_rules(res)
    return out + fsx_dependency_rules(res, ctx) + profile_propagation_rules(res, ctx)


def model_paths(res: Resource, models: _Models | None = None) -> dict[str, str]:
    """Input leaf path -> the botocore member whose rules checked it (the leaves the API model resolves)."""
    api = APIS.get(res.type)
    if api is None:
        return {}
    model = (models or _Models()).service(api.service)
    inputs = dict(res.inputs)
    if api.autoname and not inputs.get(api.autoname):
        inputs[api.autoname] = res.physical_name(api.autoname)[0]
    out: dict[str, str] = {}
    for call in api.calls():
        for path, _value, shape, member in _leaf_shapes(call, model, inputs):
            op = f"{call.operation} " if call is not api else ""
            source = BOTOCORE.format(
                service=api.service, version=model.api_version, shape=op + shape.name, member=member
            )
            out.setdefault(path, source)
    return out
