"""Find and delete expired clusters by their tags, even when the Pulumi state is lost.

Every resource carries ``provision-cluster`` and ``provision-expires-at`` (a label-safe UTC
timestamp such as ``20261129t1955z``). The reaper lists resources whose expiry has passed and
deletes them in dependency order. It is the backstop for runners that died mid-run: the
cloud-side timers stop the GPU bill, and the reaper removes what timers do not cover
(filesystems, networks).

Cloud-side sweeping is implemented for AWS (boto3, here) and Azure (``reap_azure``: a cluster is
one resource group, so deleting the group removes it whole). On GCP and Alibaba the same tags drive
``provision reap`` through the stacks' state.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import partial
from types import MappingProxyType
from typing import Any

from provision.clouds.base import TAG_CLUSTER, TAG_EXPIRES, TAG_RETAIN, parse_label_time
from provision.spec.units import format_time, parse_time


@dataclass
class ExpiredCluster:
    """One cluster past its expiry, with what was found of it."""

    cloud: str
    region: str
    cluster: str
    expires_at: datetime
    resources: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "cloud": self.cloud,
            "region": self.region,
            "cluster": self.cluster,
            "expires_at": format_time(self.expires_at),
            "resources": list(self.resources),
        }


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


@dataclass(frozen=True)
class AwsKind:
    """One resource kind the AWS sweeper finds and deletes.

    Attributes:
        kind: the name in ``<kind>:<id>`` listings.
        delete: how one resource of the kind is deleted.
        arn: its Resource Groups Tagging API ``service:type`` (``None``: RGTA does not list it).
        describe: ``(ec2 call, list key, id key)`` that lists it by tag filter, for the kinds found
            through a plain EC2 describe call (instances, FSx and IAM have their own lookups).
    """

    kind: str
    delete: Deleter
    arn: str | None = None
    describe: tuple[str, str, str] | None = None


#: Every kind, in deletion order: what holds ENIs or IPs first (instances, file systems, NAT
#: gateways), the network after them, and IAM (global) last: instance profiles hold roles, running
#: instances hold profiles. Each delete call is the EC2/FSx/IAM API action of that name
#: (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/OperationList-query-vpc.html).
AWS_KINDS: tuple[AwsKind, ...] = (
    AwsKind("instance", _ec2_delete("terminate_instances", "InstanceIds", listed=True), "ec2:instance"),
    AwsKind("fsx", _delete_file_system, "fsx:file-system"),
    AwsKind(
        "launch-template",
        _ec2_delete("delete_launch_template", "LaunchTemplateId"),
        "ec2:launch-template",
        ("describe_launch_templates", "LaunchTemplates", "LaunchTemplateId"),
    ),
    AwsKind(
        "placement-group",
        _ec2_delete("delete_placement_group", "GroupName"),
        "ec2:placement-group",
        ("describe_placement_groups", "PlacementGroups", "GroupName"),
    ),
    AwsKind(
        "nat-gateway",
        _ec2_delete("delete_nat_gateway", "NatGatewayId"),
        "ec2:natgateway",
        ("describe_nat_gateways", "NatGateways", "NatGatewayId"),
    ),
    AwsKind(
        "elastic-ip",
        _ec2_delete("release_address", "AllocationId"),
        "ec2:elastic-ip",
        ("describe_addresses", "Addresses", "AllocationId"),
    ),
    AwsKind(
        "vpc-endpoint",
        _ec2_delete("delete_vpc_endpoints", "VpcEndpointIds", listed=True),
        "ec2:vpc-endpoint",
        ("describe_vpc_endpoints", "VpcEndpoints", "VpcEndpointId"),
    ),
    AwsKind(
        "security-group",
        _ec2_delete("delete_security_group", "GroupId"),
        "ec2:security-group",
        ("describe_security_groups", "SecurityGroups", "GroupId"),
    ),
    AwsKind(
        "subnet", _ec2_delete("delete_subnet", "SubnetId"), "ec2:subnet", ("describe_subnets", "Subnets", "SubnetId")
    ),
    AwsKind(
        "route-table",
        _ec2_delete("delete_route_table", "RouteTableId"),
        "ec2:route-table",
        ("describe_route_tables", "RouteTables", "RouteTableId"),
    ),
    AwsKind(
        "internet-gateway",
        _delete_internet_gateway,
        "ec2:internet-gateway",
        ("describe_internet_gateways", "InternetGateways", "InternetGatewayId"),
    ),
    AwsKind("vpc", _ec2_delete("delete_vpc", "VpcId"), "ec2:vpc", ("describe_vpcs", "Vpcs", "VpcId")),
    AwsKind(
        "key-pair",
        _ec2_delete("delete_key_pair", "KeyPairId"),
        "ec2:key-pair",
        ("describe_key_pairs", "KeyPairs", "KeyPairId"),
    ),
    AwsKind("instance-profile", _delete_instance_profile),
    AwsKind("iam-role", _delete_role),
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
        client: ``boto3.client``-like factory ``(service, region) -> client`` (tests pass moto's).
        sleep: waits between retries of a deletion blocked by a dependency.
    """

    #: Deletion order: what holds ENIs or IPs first, the network last, global IAM at the very end.
    KINDS = tuple(row.kind for row in AWS_KINDS)
    #: Resource Groups Tagging API ARN ``service:type`` -> the kind this sweeper deletes.
    ARN_KINDS = {row.arn: row.kind for row in AWS_KINDS if row.arn}
    #: Kinds whose live state only their describe call tells (RGTA also lists terminated instances
    #: and deleted NAT gateways for a while), so RGTA hits of these kinds are not trusted alone.
    STATEFUL = ("instance", "nat-gateway", "fsx")

    def __init__(
        self, region: str, client: Callable[[str, str], Any] | None = None, sleep: Callable[[float], None] = time.sleep
    ) -> None:
        if client is None:
            import boto3

            client = lambda service, reg: boto3.client(service, region_name=reg)  # noqa: E731
        self.region = region
        self._client = client
        self._sleep = sleep

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

        Resources tagged ``provision-retain=true`` are kept. A deletion blocked by a
        dependency (an ENI still detaching) is retried ``attempts`` times with backoff.
        """
        items = self._tagged(now or datetime.now(timezone.utc)).get(cluster.cluster, [])
        order = {k: i for i, k in enumerate(self.KINDS)}
        deleted = []
        for kind, rid, tags in sorted(items, key=lambda t: order.get(t[0], len(order))):
            if tags.get(TAG_RETAIN) == "true" or kind == "other":
                continue  # kept on purpose, or a kind this sweeper only reports
            for attempt in range(attempts):
                try:
                    self._delete_one(kind, rid)
                    deleted.append(f"{kind}:{rid}")
                    break
                except Exception as e:  # noqa: BLE001
                    if "DependencyViolation" not in str(e) or attempt == attempts - 1:
                        raise
                    self._sleep(min(60.0, 2.0**attempt))
        return deleted

    def _delete_one(self, kind: str, rid: str) -> None:
        deleter = _DELETERS.get(kind)
        if deleter is None:  # pragma: no cover - find() only yields kinds of AWS_KINDS (and "other", skipped)
            raise ValueError(f"the AWS sweeper cannot delete {kind!r} resources")
        deleter(self, rid)


def _gone(e: Exception) -> bool:
    """An IAM or EC2 error that means "already deleted" (deletion is idempotent)."""
    return "NoSuchEntity" in repr(e) or "NotFound" in repr(e)


# ---------------------------------------------------------------------- stacks (mock and Pulumi state)


def _iso_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return parse_time(value)
    except ValueError:
        return None


def expired_mock_stacks(
    now: datetime | None = None, home: Any = None, errors: list[str] | None = None
) -> list[ExpiredCluster]:
    """Mocked clusters (``--mock`` state) whose ``expires_at`` output has passed.

    A damaged state file does not stop the sweep: it is skipped, and its error (naming the
    file and how to recover) is appended to ``errors`` when given.
    """
    from provision.engine.mockstate import MockStore
    from provision.spec.errors import CloudError

    now = now or datetime.now(timezone.utc)
    store = MockStore(home)
    out = []
    for stack in store.stacks():
        try:
            state = store.load(stack)
        except (CloudError, OSError) as e:
            if errors is not None:
                errors.append(f"{stack}: {e}")
            continue
        expires = _iso_time(state.outputs.get("expires_at")) if state else None
        if state is None or expires is None or expires > now:
            continue
        out.append(
            ExpiredCluster(
                cloud=str(state.spec.get("cloud", "")),
                region=str(state.spec.get("region", "")),
                cluster=stack,
                expires_at=expires,
                resources=[f"{r.type}:{r.name}" for r in state.resources if r.custom],
            )
        )
    return out


def reap_mock_stack(stack: str, home: Any = None) -> list[str]:
    """Delete a mocked cluster's state (what ``provision down --mock`` does) under its lock; returns what went.

    Raises:
        StackBusyError: another command holds the stack. DamagedStateError: the file is damaged.
    """
    from provision.engine.locks import stack_lock
    from provision.engine.mockstate import MockStore

    with stack_lock(stack, "reap", mock=True, home=home):
        state = MockStore(home).delete(stack)
    return [f"{r.type}:{r.name}" for r in state.resources if r.custom] if state else []


def _workspace(command: Any = None, root: Any = None) -> Any:
    from pulumi import automation as auto

    from provision.engine import automation

    return auto.LocalWorkspace(**automation.workspace_settings(root or automation.project_root(), command))


def expired_pulumi_stacks(
    now: datetime | None = None, command: Any = None, root: Any = None, errors: list[str] | None = None
) -> list[ExpiredCluster]:
    """Stacks in the state backend whose ``provision-expires-at`` stack tag has passed.

    A stack whose tags or config cannot be read is skipped (its error appended to ``errors``
    when given), so one broken stack never hides the others.

    Raises:
        CloudError: the Pulumi CLI is missing or the backend refused to list the stacks.
    """
    from provision.engine.automation import run_operation
    from provision.spec.errors import CloudError

    now = now or datetime.now(timezone.utc)
    ws = _workspace(command, root)
    out = []
    for summary in run_operation("stack ls", "(every stack)", ws.list_stacks):
        name = summary.name
        try:
            tags = run_operation("stack tag ls", name, partial(ws.list_tags, name))
            expires = parse_label_time(tags.get(TAG_EXPIRES, ""))
            if expires is None or expires > now:
                continue
            stored = run_operation("config", name, partial(ws.get_all_config, name))
        except CloudError as e:
            if errors is not None:
                errors.append(f"{name}: {e}")
            continue
        config = {k: v.value for k, v in stored.items()}
        spec = config.get("provision:cluster", "{}")
        try:
            doc = json.loads(spec) if len(spec) < 1_000_000 else {}
        except (ValueError, RecursionError):
            doc = {}
        doc = doc if isinstance(doc, dict) else {}
        out.append(
            ExpiredCluster(
                cloud=str(doc.get("cloud", "")),
                region=str(doc.get("region", "")),
                cluster=summary.name,
                expires_at=expires,
                resources=[f"resources:{summary.resource_count}"] if summary.resource_count is not None else [],
            )
        )
    return out


def reap_pulumi_stack(stack: str, command: Any = None, root: Any = None) -> list[str]:
    """``down`` the stack with the spec stored in its config (destroy, refresh-on-pending, retry).

    Raises:
        CloudError: the CLI or backend failed, or the stack holds no spec to plan its teardown with.
    """
    from provision.engine.automation import run_operation
    from provision.ops.cluster import Cluster
    from provision.spec import CONFIG_KEY, load_spec
    from provision.spec.errors import CloudError, SpecError

    ws = _workspace(command, root)
    stored = run_operation("config", stack, lambda: ws.get_all_config(stack))
    try:
        spec = load_spec(json.loads(stored[CONFIG_KEY].value))
    except (KeyError, ValueError, SpecError) as e:
        why = "has no" if isinstance(e, KeyError) else f"has an unreadable ({type(e).__name__})"
        raise CloudError(
            f"stack {stack!r} {why} {CONFIG_KEY} config, so its teardown cannot be planned. To fix: run "
            f"`pulumi destroy --stack {stack}` (with the same PULUMI_BACKEND_URL)"
        ) from None
    cluster = Cluster(spec, stack=stack, pulumi_command=command, display="none")
    result = cluster.down(yes=True)
    return [f"{s.op}:{s.type}:{s.name}" for s in (result.steps if result else [])]
