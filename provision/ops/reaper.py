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


class AwsSweeper:
    """Tag-based discovery and deletion of expired clusters in one AWS region.

    Args:
        region: the AWS region.
        client: ``boto3.client``-like factory ``(service, region) -> client`` (tests pass moto's).
        sleep: waits between retries of a deletion blocked by a dependency.
    """

    #: Deletion order: what holds ENIs or IPs first, the network last.
    KINDS = (
        "instance",
        "fsx",
        "launch-template",
        "placement-group",
        "nat-gateway",
        "elastic-ip",
        "vpc-endpoint",
        "security-group",
        "subnet",
        "route-table",
        "internet-gateway",
        "vpc",
        "key-pair",
    )

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
        simple = {
            "launch-template": ("describe_launch_templates", "LaunchTemplates", "LaunchTemplateId"),
            "nat-gateway": ("describe_nat_gateways", "NatGateways", "NatGatewayId"),
            "security-group": ("describe_security_groups", "SecurityGroups", "GroupId"),
            "subnet": ("describe_subnets", "Subnets", "SubnetId"),
            "route-table": ("describe_route_tables", "RouteTables", "RouteTableId"),
            "internet-gateway": ("describe_internet_gateways", "InternetGateways", "InternetGatewayId"),
            "vpc": ("describe_vpcs", "Vpcs", "VpcId"),
            "vpc-endpoint": ("describe_vpc_endpoints", "VpcEndpoints", "VpcEndpointId"),
            "key-pair": ("describe_key_pairs", "KeyPairs", "KeyPairId"),
            "placement-group": ("describe_placement_groups", "PlacementGroups", "GroupName"),
            "elastic-ip": ("describe_addresses", "Addresses", "AllocationId"),
        }
        for kind, (call, key, id_key) in simple.items():
            try:
                items = getattr(ec2, call)(Filters=tag_filter)[key]
            except Exception as e:  # noqa: BLE001  # moto lacks some calls; a real cloud has them all
                if type(e).__name__ in ("NotImplementedError", "ClientError") and "NotImplemented" in repr(e):
                    continue
                raise
            for item in items:
                if kind == "nat-gateway" and item.get("State") in ("deleted", "deleting"):
                    continue
                found.append((kind, item[id_key], _tags(item.get("Tags"))))
        fsx = self._client("fsx", self.region)
        for fs in fsx.describe_file_systems().get("FileSystems", []):
            if fs.get("Lifecycle") in ("DELETING",):
                continue
            found.append(("fsx", fs["FileSystemId"], _tags(fs.get("Tags"))))
        by_cluster: dict[str, list[tuple[str, str, dict[str, str]]]] = {}
        for kind, rid, tags in found:
            expires = parse_label_time(tags.get(TAG_EXPIRES, ""))
            cluster = tags.get(TAG_CLUSTER)
            if cluster and expires is not None and expires <= now:
                by_cluster.setdefault(cluster, []).append((kind, rid, tags))
        return by_cluster

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
            if tags.get(TAG_RETAIN) == "true":
                continue
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
        ec2 = self._ec2()
        if kind == "instance":
            ec2.terminate_instances(InstanceIds=[rid])
        elif kind == "fsx":
            self._client("fsx", self.region).delete_file_system(FileSystemId=rid)
        elif kind == "launch-template":
            ec2.delete_launch_template(LaunchTemplateId=rid)
        elif kind == "placement-group":
            ec2.delete_placement_group(GroupName=rid)
        elif kind == "nat-gateway":
            ec2.delete_nat_gateway(NatGatewayId=rid)
        elif kind == "elastic-ip":
            ec2.release_address(AllocationId=rid)
        elif kind == "vpc-endpoint":
            ec2.delete_vpc_endpoints(VpcEndpointIds=[rid])
        elif kind == "security-group":
            ec2.delete_security_group(GroupId=rid)
        elif kind == "subnet":
            ec2.delete_subnet(SubnetId=rid)
        elif kind == "route-table":
            ec2.delete_route_table(RouteTableId=rid)
        elif kind == "internet-gateway":
            for att in ec2.describe_internet_gateways(InternetGatewayIds=[rid])["InternetGateways"][0].get(
                "Attachments", []
            ):
                ec2.detach_internet_gateway(InternetGatewayId=rid, VpcId=att["VpcId"])
            ec2.delete_internet_gateway(InternetGatewayId=rid)
        elif kind == "vpc":
            ec2.delete_vpc(VpcId=rid)
        elif kind == "key-pair":
            ec2.delete_key_pair(KeyPairId=rid)
        else:  # pragma: no cover - KINDS and this dispatch are kept in step
            raise ValueError(kind)


# ---------------------------------------------------------------------- stacks (mock and Pulumi state)


def _iso_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return parse_time(value)
    except ValueError:
        return None


def expired_mock_stacks(now: datetime | None = None, home: Any = None) -> list[ExpiredCluster]:
    """Mocked clusters (``--mock`` state) whose ``expires_at`` output has passed."""
    from provision.engine.mockstate import MockStore

    now = now or datetime.now(timezone.utc)
    store = MockStore(home)
    out = []
    for stack in store.stacks():
        state = store.load(stack)
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
    """Delete a mocked cluster's state (what ``provision down --mock`` does); returns what went."""
    from provision.engine.mockstate import MockStore

    state = MockStore(home).delete(stack)
    return [f"{r.type}:{r.name}" for r in state.resources if r.custom] if state else []


def _workspace(command: Any = None, root: Any = None) -> Any:
    from pulumi import automation as auto

    from provision.engine import automation

    return auto.LocalWorkspace(**automation.workspace_settings(root or automation.project_root(), command))


def expired_pulumi_stacks(now: datetime | None = None, command: Any = None, root: Any = None) -> list[ExpiredCluster]:
    """Stacks in the state backend whose ``provision-expires-at`` stack tag has passed.

    Raises:
        CloudError: the Pulumi CLI is missing or the backend refused.
    """
    from provision.engine.automation import run_operation

    now = now or datetime.now(timezone.utc)
    ws = _workspace(command, root)
    out = []
    for summary in run_operation("stack ls", "(every stack)", ws.list_stacks):
        name = summary.name
        tags = run_operation("stack tag ls", name, partial(ws.list_tags, name))
        expires = parse_label_time(tags.get(TAG_EXPIRES, ""))
        if expires is None or expires > now:
            continue
        stored = run_operation("config", name, partial(ws.get_all_config, name))
        config = {k: v.value for k, v in stored.items()}
        spec = config.get("provision:cluster", "{}")
        try:
            doc = json.loads(spec)
        except ValueError:
            doc = {}
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
