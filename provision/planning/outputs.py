"""Stack outputs shared by every cloud, rendered from plain values (pure, no Pulumi).

Adapters' components call :func:`stack_outputs` with Pulumi ``Output`` values for the
node IPs; the text renderers here are also used by the Python API on stored outputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from provision.spec.units import format_time

if TYPE_CHECKING:
    from provision.planning.plan import ClusterPlan

#: Output names (contract: DESIGN.md "Outputs").
OUTPUT_NAMES = (
    "cluster",
    "cloud",
    "region",
    "zone",
    "instance_type",
    "nodes",
    "gpus",
    "hosts",
    "hostfile",
    "head_node",
    "ssh_config",
    "nccl_env",
    "fabric",
    "shared_fs",
    "expires_at",
    "hourly_usd",
    "fabric_manifest",
)


def render_hostfile(ips: list[str], slots: int) -> str:
    """One line a node, in rank order: ``10.0.0.5 slots=8`` (MPI/DeepSpeed hostfile)."""
    return "".join(f"{ip} slots={slots}\n" for ip in ips)


def render_ssh_config(name: str, user: str, ips: list[str], head_public_ip: str | None) -> str:
    """An ``~/.ssh/config`` fragment: ``<name>-0`` .. ``<name>-N``; through the head node when it is public."""
    lines: list[str] = []
    for rank, ip in enumerate(ips):
        public = rank == 0 and head_public_ip
        lines += [
            f"Host {name}-{rank}",
            f"  HostName {head_public_ip if public else ip}",
            f"  User {user}",
            "  StrictHostKeyChecking accept-new",
        ]
        if head_public_ip and rank > 0:
            lines.append(f"  ProxyJump {name}-0")
        lines.append("")
    return "\n".join(lines)


def fabric_summary(plan: ClusterPlan) -> dict[str, Any]:
    """The ``fabric`` output: kind, interfaces and bandwidth per node, and islands with their ranks."""
    islands, start = [], 0
    for size in plan.islands:
        islands.append({"first_rank": start, "nodes": size})
        start += size
    return {
        "kind": plan.fabric,
        "interfaces_per_node": plan.fabric_interfaces,
        "gbps_per_node": plan.offer.fabric_gbps if plan.fabric != "none" else None,
        "islands": islands,
    }


def shared_fs_summary(plan: ClusterPlan, mount_source: str, fs_type: str, options: str) -> dict[str, Any]:
    """The ``shared_fs`` output: what it is and the exact mount command for a node."""
    assert plan.storage is not None  # noqa: S101
    mount = plan.storage.mount
    return {
        "kind": plan.storage.kind,
        "tier": plan.storage.tier,
        "size_gib": plan.storage.size_gib,
        "mount_point": mount,
        "source": mount_source,
        "mount_command": f"sudo mkdir -p {mount} && sudo mount -t {fs_type} -o {options} {mount_source} {mount}",
        "retain": plan.storage.retain,
    }


def static_outputs(plan: ClusterPlan) -> dict[str, Any]:
    """The outputs known from the plan alone."""
    return {
        "cluster": plan.name,
        "cloud": plan.cloud,
        "region": plan.region,
        "zone": plan.zone,
        "instance_type": plan.instance_type,
        "nodes": plan.nodes,
        "gpus": plan.gpus,
        "nccl_env": plan.nccl_env,
        "fabric": fabric_summary(plan),
        "expires_at": format_time(plan.expires_at) if plan.expires_at else None,
        "hourly_usd": plan.cost.hourly_usd,
        # Image, pinned versions, the NCCL settings and (after `provision up --accept` / `nccl-test`) the measured
        # all-reduce bandwidth: what two runs are compared by.
        "fabric_manifest": {
            "image": plan.image.ref,
            **plan.image.versions,
            "nccl_env": dict(plan.nccl_env),
            "measured": None,
        },
    }


def gather(outputs: Sequence[Any]) -> Any:
    """``Output[list]`` of ``outputs`` (Outputs or plain values), like ``Output.all`` but without its deep copy.

    ``Output.all`` passes every argument through ``Output.from_input``, which re-wraps each element of a
    list value in an Output of its own: a 1,024-node host list costs 1,024 Outputs (and their asyncio
    tasks) at every step. Chained ``apply`` calls hand the list on as it is.
    """
    import pulumi

    acc: pulumi.Output[list[Any]] = pulumi.Output.from_input([])
    for item in outputs:
        out = item if isinstance(item, pulumi.Output) else pulumi.Output.from_input(item)
        acc = acc.apply(lambda got, out=out: out.apply(lambda value, got=got: [*got, value]))  # type: ignore[misc]
    return acc


def stack_outputs(plan: ClusterPlan, ips: Any, head_public_ip: Any = None, shared_fs: Any = None) -> dict[str, Any]:
    """All outputs; ``ips`` (a list of node addresses by rank) may be a Pulumi ``Output``.

    ``head_public_ip`` and ``shared_fs`` may be plain values or ``Output`` s too.
    """
    import pulumi

    ips_out = ips if isinstance(ips, pulumi.Output) else pulumi.Output.from_input(ips)
    head_pub = pulumi.Output.from_input(head_public_ip)
    user = plan.access.ssh_user
    both = gather([ips_out, head_pub])
    return {
        **static_outputs(plan),
        "hosts": ips_out,
        "hostfile": ips_out.apply(lambda v: render_hostfile(list(v or []), plan.gpus_per_node)),
        "head_node": both.apply(lambda a: a[1] or (a[0][0] if a[0] else None)),
        "ssh_config": both.apply(lambda a: render_ssh_config(plan.name, user, list(a[0] or []), a[1])),
        "shared_fs": shared_fs,
    }
