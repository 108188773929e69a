"""The AWS sweeper of ``provision reap --aws-region``: expired clusters by their tags, without Pulumi state.

Every resource carries ``provision-cluster`` and ``provision-expires-at`` (a label-safe UTC timestamp such as
``20261129t1955z``). The sweeper lists resources whose expiry has passed and deletes them in dependency order
(:data:`AWS_KINDS`, one row per kind with its delete call). It is the backstop for runners that died mid-run:
the node timers stop the GPU bill, and the sweeper removes what timers do not cover (filesystems, networks).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from types import MappingProxyType
from typing import Any

from provision.clouds.base import TAG_CLUSTER, TAG_EXPIRES, TAG_RETAIN, parse_label_time
from provision.clouds.sweep import ExpiredCluster


def _tags(items: list[dict[str, str]] | None) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in items or []}


#: Deletes one resource of a kind: ``(sweeper, id)``.
Deleter = Callable[["AwsSweeper", str], None]


def _ec2_delete(method: str, param: str, listed: bool = False) -> Deleter:
    """A deleter calling ``ec2.<method>(<param>=id)`` (``[id]`` when the call takes a list of ids)."""

    def delete(sweeper: AwsSweeper, rid: str) -> None:
        getattr(sweeper._ec2(), method)(**{param: [rid] if listed else rid})  # noqa: SLF001

    return delete


def _delete_file_system(sweeper: AwsSweeper, rid: str) -> None:
    sweeper._client("fsx", sweeper.region).delete_file_system(FileSystemId=rid)  # noqa: SLF001


def _delete_parameter(sweeper: AwsSweeper, rid: str) -> None:
    """An SSM parameter; its tagging-API id is the name without the leading ``/`` (``parameter/<name>``)."""
    try:
        sweeper._client("ssm", sweeper.region).delete_parameter(Name="/" + rid.lstrip("/"))  # noqa: SLF001
    except Exception as e:  # noqa: BLE001
        if not _gone(e):
            raise


def _delete_internet_gateway(sweeper: AwsSweeper, rid: str) -> None:
    """A gateway still attached to its VPC cannot be deleted: detach it first."""
    ec2 = sweeper._ec2()  # noqa: SLF001
    for att in ec2.describe_internet_gateways(InternetGatewayIds=[rid])["InternetGateways"][0].get("Attachments", []):
        ec2.detach_internet_gateway(InternetGatewayId=rid, VpcId=att["VpcId"])
    ec2.delete_internet_gateway(InternetGatewayId=rid)


def _delete_instance_profile(sweeper: AwsSweeper, name: str) -> None:
    """A profile can only be deleted once it holds no role."""
    iam = sweeper._client("iam", sweeper.region)  # noqa: SLF001
    try:
        profile = iam.get_instance_profile(InstanceProfileName=name)["InstanceProfile"]
        for role in profile.get("Roles", []):
            iam.remove_role_from_instance_profile(InstanceProfileName=name, RoleName=role["RoleName"])
        iam.delete_instance_profile(InstanceProfileName=name)
    except Exception as e:  # noqa: BLE001
        if not _gone(e):
            raise


def _delete_role(sweeper: AwsSweeper, name: str) -> None:
    """A role can only be deleted once no profile holds it and no policy is attached to it."""
    iam = sweeper._client("iam", sweeper.region)  # noqa: SLF001
    try:
        for p in iam.list_instance_profiles_for_role(RoleName=name).get("InstanceProfiles", []):
            iam.remove_role_from_instance_profile(InstanceProfileName=p["InstanceProfileName"], RoleName=name)
        for p in iam.list_attached_role_policies(RoleName=name).get("AttachedPolicies", []):
            iam.detach_role_policy(RoleName=name, PolicyArn=p["PolicyArn"])
        for policy in iam.list_role_policies(RoleName=name).get("PolicyNames", []):
            iam.delete_role_policy(RoleName=name, PolicyName=policy)
        iam.delete_role(RoleName=name)
    except Exception as e:  # noqa: BLE001
        if not _gone(e):
            raise


def _eks_delete(method: str, *params: str) -> Deleter:
    """A deleter calling ``eks.<method>(clusterName=..., <param>=...)`` with the parts of an EKS resource id.

    The Tagging API names EKS children ``<cluster>/<name>[/<uuid>]`` (``nodegroup/c/ng/uuid`` in the ARN), and
    the cluster itself ``<name>`` (https://docs.aws.amazon.com/eks/latest/userguide/eks-using-tags.html).
    """

    def delete(sweeper: AwsSweeper, rid: str) -> None:
        parts = rid.split("/")
        args = dict(zip(params, parts, strict=False))
        getattr(sweeper._client("eks", sweeper.region), method)(**args)  # noqa: SLF001

    return delete


#: Acts on every resource of a kind at once: ``(sweeper, ids)`` (a step before the deletes, or a wait after).
Step = Callable[["AwsSweeper", list[str]], None]
#: How long a wait for an asynchronous delete may take (FSx for Lustre and EKS take minutes; NAT gateways ~1).
WAIT_SECONDS = 30 * 60
WAIT_DELAY = 15


def _ec2_wait(waiter: str, param: str) -> Step:
    """Wait with botocore's EC2 waiter ``waiter`` (``instance_terminated``, ``nat_gateway_deleted``)."""

    def wait(sweeper: AwsSweeper, ids: list[str]) -> None:
        config = {"Delay": WAIT_DELAY, "MaxAttempts": WAIT_SECONDS // WAIT_DELAY}
        sweeper._ec2().get_waiter(waiter).wait(**{param: ids}, WaiterConfig=config)  # noqa: SLF001

    return wait


def _eks_wait(waiter: str, *params: str) -> Step:
    """Wait with botocore's EKS waiter for each ``<cluster>/<name>`` id (``nodegroup_deleted``, ...)."""

    def wait(sweeper: AwsSweeper, ids: list[str]) -> None:
        eks = sweeper._client("eks", sweeper.region)  # noqa: SLF001
        config = {"Delay": WAIT_DELAY, "MaxAttempts": WAIT_SECONDS // WAIT_DELAY}
        for rid in ids:
            eks.get_waiter(waiter).wait(**dict(zip(params, rid.split("/"), strict=False)), WaiterConfig=config)

    return wait


def _wait_file_systems(sweeper: AwsSweeper, ids: list[str]) -> None:
    """FSx has no waiter: poll DescribeFileSystems until the file systems are gone (their ENIs hold the subnet)."""
    fsx = sweeper._client("fsx", sweeper.region)  # noqa: SLF001
    for _ in range(WAIT_SECONDS // WAIT_DELAY):
        try:
            if not fsx.describe_file_systems(FileSystemIds=ids).get("FileSystems"):
                return
        except Exception as e:  # noqa: BLE001
            if not _gone(e):
                raise
            return  # FileSystemNotFound: all gone
        sweeper._sleep(WAIT_DELAY)  # noqa: SLF001
    raise TimeoutError(f"FSx file systems {', '.join(ids)} were still deleting after {WAIT_SECONDS} s")


def _revoke_group_rules(sweeper: AwsSweeper, ids: list[str]) -> None:
    """Revoke every rule of the cluster's security groups before deleting any: the node and FSx groups reference
    each other, and DeleteSecurityGroup fails with DependencyViolation while another group references the one
    being deleted (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DeleteSecurityGroup.html)."""
    ec2 = sweeper._ec2()  # noqa: SLF001
    for group in ec2.describe_security_groups(GroupIds=ids)["SecurityGroups"]:
        if group.get("IpPermissions"):
            ec2.revoke_security_group_ingress(GroupId=group["GroupId"], IpPermissions=group["IpPermissions"])
        if group.get("IpPermissionsEgress"):
            ec2.revoke_security_group_egress(GroupId=group["GroupId"], IpPermissions=group["IpPermissionsEgress"])


@dataclass(frozen=True)
class AwsKind:
    """One resource kind the AWS sweeper finds and deletes.

    Attributes:
        kind: the name in ``<kind>:<id>`` listings.
        delete: how one resource of the kind is deleted.
        arn: its Resource Groups Tagging API ``service:type`` (``None``: RGTA does not list it).
        describe: ``(ec2 call, list key, id key)`` that lists it by tag filter, for the kinds found
            through a plain EC2 describe call (instances, FSx and IAM have their own lookups).
        types: the Pulumi type tokens this kind removes.
        before, after: steps on all the kind's resources before the deletes, and the wait after them.
    """

    kind: str
    delete: Deleter
    arn: str | None = None
    describe: tuple[str, str, str] | None = None
    #: The Pulumi types of provision's graphs whose resources this kind deletes (checked against the goldens).
    types: tuple[str, ...] = ()
    #: Run on all the kind's resources before any is deleted (e.g. revoke the rules that tie groups together).
    before: Step | None = None
    #: Wait until the kind's deleted resources are gone, for deletes that finish asynchronously.
    after: Step | None = None


#: Every kind, in deletion order: what holds ENIs or IPs first (instances, file systems, NAT
#: gateways), the network after them, and IAM (global) last: instance profiles hold roles, running
#: instances hold profiles. Each delete call is the EC2/FSx/IAM API action of that name
#: (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/OperationList-query-vpc.html).
AWS_KINDS: tuple[AwsKind, ...] = (
    AwsKind(
        "instance",
        _ec2_delete("terminate_instances", "InstanceIds", listed=True),
        "ec2:instance",
        types=("aws:ec2/fleet:Fleet", "aws:ec2/instance:Instance"),  # fleet nodes, the Slurm controller
        after=_ec2_wait("instance_terminated", "InstanceIds"),
    ),
    # EKS before the network: node groups hold instances and ENIs, the cluster its ENIs and security group. Node
    # groups and add-ons delete asynchronously; DeleteCluster answers ResourceInUseException until they are gone
    # (https://docs.aws.amazon.com/eks/latest/APIReference/API_DeleteCluster.html), retried like a dependency.
    AwsKind(
        "eks-pod-identity",
        _eks_delete("delete_pod_identity_association", "clusterName", "associationId"),
        "eks:podidentityassociation",
        types=("aws:eks/podIdentityAssociation:PodIdentityAssociation",),
    ),
    AwsKind(
        "eks-addon",
        _eks_delete("delete_addon", "clusterName", "addonName"),
        "eks:addon",
        types=("aws:eks/addon:Addon",),
        after=_eks_wait("addon_deleted", "clusterName", "addonName"),
    ),
    AwsKind(
        "eks-nodegroup",
        _eks_delete("delete_nodegroup", "clusterName", "nodegroupName"),
        "eks:nodegroup",
        types=("aws:eks/nodeGroup:NodeGroup",),
        after=_eks_wait("nodegroup_deleted", "clusterName", "nodegroupName"),
    ),
    AwsKind(
        "eks-cluster",
        _eks_delete("delete_cluster", "name"),
        "eks:cluster",
        types=("aws:eks/cluster:Cluster",),
        after=_eks_wait("cluster_deleted", "name"),
    ),
    AwsKind(
        "fsx",
        _delete_file_system,
        "fsx:file-system",
        types=("aws:fsx/lustreFileSystem:LustreFileSystem",),
        after=_wait_file_systems,
    ),
    AwsKind(
        "launch-template",
        _ec2_delete("delete_launch_template", "LaunchTemplateId"),
        "ec2:launch-template",
        ("describe_launch_templates", "LaunchTemplates", "LaunchTemplateId"),
        types=("aws:ec2/launchTemplate:LaunchTemplate",),
    ),
    AwsKind(
        "placement-group",
        _ec2_delete("delete_placement_group", "GroupName"),
        "ec2:placement-group",
        ("describe_placement_groups", "PlacementGroups", "GroupName"),
        types=("aws:ec2/placementGroup:PlacementGroup",),
    ),
    AwsKind(
        "nat-gateway",
        _ec2_delete("delete_nat_gateway", "NatGatewayId"),
        "ec2:natgateway",
        ("describe_nat_gateways", "NatGateways", "NatGatewayId"),
        types=("aws:ec2/natGateway:NatGateway",),
        after=_ec2_wait("nat_gateway_deleted", "NatGatewayIds"),
    ),
    AwsKind(
        "elastic-ip",
        _ec2_delete("release_address", "AllocationId"),
        "ec2:elastic-ip",
        ("describe_addresses", "Addresses", "AllocationId"),
        types=("aws:ec2/eip:Eip",),
    ),
    AwsKind(
        "vpc-endpoint",
        _ec2_delete("delete_vpc_endpoints", "VpcEndpointIds", listed=True),
        "ec2:vpc-endpoint",
        ("describe_vpc_endpoints", "VpcEndpoints", "VpcEndpointId"),
        types=("aws:ec2/vpcEndpoint:VpcEndpoint",),
    ),
    AwsKind(
        "security-group",
        _ec2_delete("delete_security_group", "GroupId"),
        "ec2:security-group",
        ("describe_security_groups", "SecurityGroups", "GroupId"),
        types=("aws:ec2/securityGroup:SecurityGroup",),
        before=_revoke_group_rules,
    ),
    AwsKind(
        "subnet",
        _ec2_delete("delete_subnet", "SubnetId"),
        "ec2:subnet",
        ("describe_subnets", "Subnets", "SubnetId"),
        types=("aws:ec2/subnet:Subnet",),
    ),
    AwsKind(
        "route-table",
        _ec2_delete("delete_route_table", "RouteTableId"),
        "ec2:route-table",
        ("describe_route_tables", "RouteTables", "RouteTableId"),
        types=("aws:ec2/routeTable:RouteTable",),
    ),
    AwsKind(
        "internet-gateway",
        _delete_internet_gateway,
        "ec2:internet-gateway",
        ("describe_internet_gateways", "InternetGateways", "InternetGatewayId"),
        types=("aws:ec2/internetGateway:InternetGateway",),
    ),
    AwsKind(
        "vpc",
        _ec2_delete("delete_vpc", "VpcId"),
        "ec2:vpc",
        ("describe_vpcs", "Vpcs", "VpcId"),
        types=("aws:ec2/vpc:Vpc",),
    ),
    AwsKind(
        "key-pair",
        _ec2_delete("delete_key_pair", "KeyPairId"),
        "ec2:key-pair",
        ("describe_key_pairs", "KeyPairs", "KeyPairId"),
        types=("aws:ec2/keyPair:KeyPair",),
    ),
    # The FSx mount source the nodes read at boot (provision/clouds/aws/nodes.py shared_source_parameter).
    AwsKind("ssm-parameter", _delete_parameter, "ssm:parameter", types=("aws:ssm/parameter:Parameter",)),
    AwsKind("instance-profile", _delete_instance_profile, types=("aws:iam/instanceProfile:InstanceProfile",)),
    AwsKind("iam-role", _delete_role, types=("aws:iam/role:Role",)),
)
#: Pulumi types of provision's graphs that no row deletes on its own: each goes with the resource named here.
DELETED_WITH: Mapping[str, str] = MappingProxyType(
    {
        "aws:ec2/route:Route": "route-table",
        "aws:ec2/routeTableAssociation:RouteTableAssociation": "route-table",
        "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": "security-group",
        "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule": "security-group",
        "aws:iam/rolePolicyAttachment:RolePolicyAttachment": "iam-role",
        "aws:iam/rolePolicy:RolePolicy": "iam-role",  # an inline policy: _delete_role deletes it first
        # The scale-to-zero schedule of an EKS node group's own Auto Scaling group, which EKS deletes with it.
        "aws:autoscaling/schedule:Schedule": "eks-nodegroup",
        # A Pulumi-only timer (pulumiverse_time): nothing exists in the cloud.
        "time:index/sleep:Sleep": "nothing",
    }
)
#: Describe states of resources already gone or going: NatGateway.State (deleting | deleted) and
#: VpcEndpoint.State (Deleting | Deleted), https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_NatGateway.html
#: and https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_VpcEndpoint.html.
_GONE_STATES = ("deleting", "deleted")
_DELETERS = MappingProxyType({row.kind: row.delete for row in AWS_KINDS})


class AwsSweeper:
    """Tag-based discovery and deletion of expired clusters in one AWS region.

    Args:
        region: the AWS region.
        client: ``boto3.client``-like factory ``(service, region) -> client`` (tests pass moto's). It is asked once
            per service and region: the sweeper keeps each client, because making one costs tens of milliseconds
            of CPU (boto3 builds the client class from the service model every time) and a sweep calls EC2 once or
            more per resource.
        sleep: waits between retries of a deletion blocked by a dependency.
    """

    #: Deletion order: what holds ENIs or IPs first, the network last, global IAM at the very end.
    KINDS = tuple(row.kind for row in AWS_KINDS)
    #: Resource Groups Tagging API ARN ``service:type`` -> the kind this sweeper deletes.
    ARN_KINDS = {row.arn: row.kind for row in AWS_KINDS if row.arn}
    #: Kinds whose live state only their describe call tells (RGTA also lists terminated instances
    #: and deleted NAT gateways for a while), and EKS kinds (listed through EKS, with ``<cluster>/<name>`` ids),
    #: so RGTA hits of these kinds are not trusted alone.
    STATEFUL = ("instance", "nat-gateway", "fsx", "eks-cluster", "eks-nodegroup", "eks-addon", "eks-pod-identity")

    def __init__(
        self, region: str, client: Callable[[str, str], Any] | None = None, sleep: Callable[[float], None] = time.sleep
    ) -> None:
        if client is None:
            import boto3

            client = lambda service, reg: boto3.client(service, region_name=reg)  # noqa: E731
        self.region = region
        self._factory = client
        self._clients: dict[tuple[str, str], Any] = {}
        self._sleep = sleep

    def _client(self, service: str, region: str) -> Any:
        """The client of ``service`` in ``region``, made on first use and kept (boto3 clients are reusable)."""
        key = (service, region)
        if key not in self._clients:
            self._clients[key] = self._factory(service, region)
        return self._clients[key]

    def _ec2(self) -> Any:
        return self._client("ec2", self.region)

    def _tagged(self, now: datetime) -> dict[str, list[tuple[str, str, dict[str, str]]]]:
        """cluster -> [(kind, id, tags)] for every resource whose cluster is expired."""
        ec2 = self._ec2()
        found: list[tuple[str, str, dict[str, str]]] = []
        for page in ec2.get_paginator("describe_instances").paginate(
            Filters=[
                {"Name": "tag-key", "Values": [TAG_EXPIRES]},
                {"Name": "instance-state-name", "Values": ["pending", "running", "stopping", "stopped"]},
            ]
        ):
            for res in page["Reservations"]:
                for inst in res["Instances"]:
                    found.append(("instance", inst["InstanceId"], _tags(inst.get("Tags"))))
        tag_filter = [{"Name": "tag-key", "Values": [TAG_EXPIRES]}]
        for kind, (call, key, id_key) in ((row.kind, row.describe) for row in AWS_KINDS if row.describe):
            try:
                items = getattr(ec2, call)(Filters=tag_filter)[key]
            except Exception as e:  # noqa: BLE001  # moto lacks some calls; a real cloud has them all
                if type(e).__name__ in ("NotImplementedError", "ClientError") and "NotImplemented" in repr(e):
                    continue
                raise
            for item in items:
                if str(item.get("State", "")).lower() in _GONE_STATES:
                    continue  # NAT gateways and VPC endpoints stay listed for a while after deletion
                found.append((kind, item[id_key], _tags(item.get("Tags"))))
        fsx = self._client("fsx", self.region)
        for fs in fsx.describe_file_systems().get("FileSystems", []):
            if fs.get("Lifecycle") in ("DELETING",):
                continue
            found.append(("fsx", fs["FileSystemId"], _tags(fs.get("Tags"))))
        found += self._eks()
        seen = {(kind, rid) for kind, rid, _ in found}
        found += [item for item in self._tagging_api() if (item[0], item[1]) not in seen]
        found += self._iam()
        by_cluster: dict[str, list[tuple[str, str, dict[str, str]]]] = {}
        for kind, rid, tags in found:
            expires = parse_label_time(tags.get(TAG_EXPIRES, ""))
            cluster = tags.get(TAG_CLUSTER)
            if cluster and expires is not None and expires <= now:
                by_cluster.setdefault(cluster, []).append((kind, rid, tags))
        return by_cluster

    def _tagging_api(self) -> list[tuple[str, str, dict[str, str]]]:
        """Every resource of the region tagged with an expiry, through the Resource Groups Tagging API.

        It sees every service that supports tags, so a resource kind this sweeper cannot delete
        still shows up (as ``other:<arn>``) instead of staying unnoticed.
        https://docs.aws.amazon.com/resourcegroupstagging/latest/APIReference/API_GetResources.html
        """
        api = self._client("resourcegroupstaggingapi", self.region)
        out = []
        for page in api.get_paginator("get_resources").paginate(TagFilters=[{"Key": TAG_EXPIRES}]):
            for item in page.get("ResourceTagMappingList", []):
                arn = item["ResourceARN"]
                parts = arn.split(":", 5)
                if len(parts) < 6:
                    continue
                rtype, _, rid = parts[5].partition("/")
                kind = self.ARN_KINDS.get(f"{parts[2]}:{rtype}")
                if kind in self.STATEFUL:
                    continue  # found (or known gone) through its describe call
                out.append((kind or "other", rid if kind else arn, _tags(item.get("Tags"))))
        return out

    def _eks(self) -> list[tuple[str, str, dict[str, str]]]:
        """EKS clusters with their node groups, add-ons and pod identity associations (ids ``<cluster>/<name>``).

        Listed through EKS itself (ListClusters, ListNodegroups, ListAddons, ListPodIdentityAssociations and the
        Describe calls, whose answers carry the tags): https://docs.aws.amazon.com/eks/latest/APIReference/.
        """
        eks = self._client("eks", self.region)
        out = []
        for page in eks.get_paginator("list_clusters").paginate():
            for name in page.get("clusters", []):
                out.append(("eks-cluster", name, eks.describe_cluster(name=name)["cluster"].get("tags") or {}))
                for ng in eks.list_nodegroups(clusterName=name).get("nodegroups", []):
                    tags = eks.describe_nodegroup(clusterName=name, nodegroupName=ng)["nodegroup"].get("tags")
                    out.append(("eks-nodegroup", f"{name}/{ng}", tags or {}))
                for addon in _listed(eks.list_addons, "addons", clusterName=name):
                    tags = eks.describe_addon(clusterName=name, addonName=addon)["addon"].get("tags")
                    out.append(("eks-addon", f"{name}/{addon}", tags or {}))
                associations = _listed(eks.list_pod_identity_associations, "associations", clusterName=name)
                for a in associations:
                    aid = a["associationId"]
                    tags = eks.describe_pod_identity_association(clusterName=name, associationId=aid)["association"]
                    out.append(("eks-pod-identity", f"{name}/{aid}", tags.get("tags") or {}))
        return out

    def _iam(self) -> list[tuple[str, str, dict[str, str]]]:
        """IAM roles and instance profiles tagged with an expiry (IAM lists tags per entity).

        ListRoles and ListInstanceProfiles do not return tags, so each entity's tags are read:
        https://docs.aws.amazon.com/IAM/latest/APIReference/API_ListRoles.html (ListRoleTags) and
        https://docs.aws.amazon.com/IAM/latest/APIReference/API_GetInstanceProfile.html.
        """
        iam = self._client("iam", self.region)
        out = []
        for page in iam.get_paginator("list_roles").paginate():
            for role in page.get("Roles", []):
                tags = _tags(iam.list_role_tags(RoleName=role["RoleName"]).get("Tags"))
                if TAG_EXPIRES in tags:
                    out.append(("iam-role", role["RoleName"], tags))
        for page in iam.get_paginator("list_instance_profiles").paginate():
            for profile in page.get("InstanceProfiles", []):
                name = profile["InstanceProfileName"]
                tags = _tags(iam.get_instance_profile(InstanceProfileName=name)["InstanceProfile"].get("Tags"))
                if TAG_EXPIRES in tags:
                    out.append(("instance-profile", name, tags))
        return out

    def find(self, now: datetime | None = None) -> list[ExpiredCluster]:
        """Expired clusters in this region (read-only)."""
        now = now or datetime.now(timezone.utc)
        out = []
        for cluster, items in sorted(self._tagged(now).items()):
            expiry = min(parse_label_time(t[TAG_EXPIRES]) for _, _, t in items)  # type: ignore[type-var]
            out.append(
                ExpiredCluster(
                    "aws",
                    self.region,
                    cluster,
                    expiry,  # type: ignore[arg-type]
                    [f"{kind}:{rid}" for kind, rid, _ in items],
                )
            )
        return out

    def delete(self, cluster: ExpiredCluster, now: datetime | None = None, attempts: int = 5) -> list[str]:
        """Delete what is left of ``cluster``; returns what was deleted. Idempotent.

        Resources tagged ``provision-retain=true`` are kept. Kinds go in :data:`AWS_KINDS` order; a kind whose
        delete is asynchronous (instances, EKS, FSx, NAT gateways) is waited for before the next kind, and a
        deletion still blocked by a dependency (an ENI detaching, an address in use) is retried ``attempts``
        times with backoff.
        """
        items = self._tagged(now or datetime.now(timezone.utc)).get(cluster.cluster, [])
        deleted = []
        for row in AWS_KINDS:  # kind by kind, in deletion order; asynchronous deletes are waited for
            ids = [rid for kind, rid, tags in items if kind == row.kind and tags.get(TAG_RETAIN) != "true"]
            if not ids:
                continue  # nothing of this kind, or only what is kept on purpose
            if row.before is not None:
                row.before(self, ids)
            for rid in ids:
                for attempt in range(attempts):
                    try:
                        self._delete_one(row.kind, rid)
                        deleted.append(f"{row.kind}:{rid}")
                        break
                    except Exception as e:  # noqa: BLE001
                        if not _busy(e) or attempt == attempts - 1:
                            raise
                        self._sleep(min(60.0, 2.0**attempt))
            if row.after is not None:
                row.after(self, ids)
        return deleted  # "other" kinds are only reported

    def _delete_one(self, kind: str, rid: str) -> None:
        deleter = _DELETERS.get(kind)
        if deleter is None:  # pragma: no cover - find() only yields kinds of AWS_KINDS (and "other", skipped)
            raise ValueError(f"the AWS sweeper cannot delete {kind!r} resources")
        deleter(self, rid)


def _listed(call: Callable[..., Any], key: str, **kwargs: Any) -> list[Any]:
    """``call(**kwargs)[key]``, or ``[]`` where the API is not implemented (moto lacks some EKS calls)."""
    try:
        return list(call(**kwargs).get(key, []))
    except Exception as e:  # noqa: BLE001  # a real cloud has every call; other errors go on up
        if "not yet implemented" not in str(e).lower() and "NotImplemented" not in repr(e):
            raise
        return []


def _busy(e: Exception) -> bool:
    """A deletion refused until another one finishes: an ENI detaching (DependencyViolation), EKS node groups
    still deleting (ResourceInUseException), an address or placement group in use (InvalidIPAddress.InUse,
    InvalidPlacementGroup.InUse)."""
    text = repr(e)
    return any(code in text for code in ("DependencyViolation", "ResourceInUseException", ".InUse"))


def _gone(e: Exception) -> bool:
    """An IAM or EC2 error that means "already deleted" (deletion is idempotent)."""
    return "NoSuchEntity" in repr(e) or "NotFound" in repr(e)


def coverage(type_token: str) -> str | None:
    """How the sweep removes a resource of ``type_token`` (its kind, or the parent it goes with); None: unknown."""
    kind = next((row.kind for row in AWS_KINDS if type_token in row.types), None)
    return kind or (f"with its {DELETED_WITH[type_token]}" if type_token in DELETED_WITH else None)


def sweep(region: str, delete: bool, client: Any = None) -> list[dict[str, Any]]:
    """The sweeper hook: expired clusters in one region by tag (deleted with ``delete``), as report rows.

    Raises:
        UnsupportedError: boto3 is not installed. CloudError: AWS refused (no credentials, access denied, ...).
    """
    from provision.spec.errors import CloudError, UnsupportedError

    try:
        from botocore.exceptions import BotoCoreError, ClientError
    except ImportError:
        raise UnsupportedError(
            "--aws-region needs boto3, which is not installed. To fix: pip install 'provision[aws]'"
        ) from None
    rows = []
    try:
        sweeper = AwsSweeper(region, client=client)
        for c in sweeper.find():
            row = {**c.as_dict(), "source": "aws-tags"}
            if delete:
                row["deleted"] = sweeper.delete(c)
            rows.append(row)
    except (BotoCoreError, ClientError) as e:
        code = e.response.get("Error", {}).get("Code", "") if isinstance(e, ClientError) else type(e).__name__
        raise CloudError(f"sweeping AWS region {region} failed: {e}", code=code) from None
    return rows
