"""Stack outputs shared by every cloud, rendered from plain values (pure, no Pulumi).

Adapters' components call :func:`stack_outputs` with Pulumi ``Output`` values for the
node IPs; the text renderers here are also used by the Python API on stored outputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from provision.planning import access
from provision.planning.launch import ClusterFacts, launch_lines
from provision.spec.units import format_time

if TYPE_CHECKING:
    from provision.planning.plan import ClusterPlan

#: Output names (contract: docs/contracts.md, "Stack outputs").
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
    "access",
    "launch",
    "spec",
)


def render_hostfile(ips: list[str], slots: int) -> str:
    """One line a node, in rank order: ``10.0.0.5 slots=8`` (MPI/DeepSpeed hostfile)."""
    return "".join(f"{ip} slots={slots}\n" for ip in ips)


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
        # The launch lines (they read /etc/provision/env on each node; see provision.planning.launch).
        "launch": launch_lines(ClusterFacts(plan.name, (), plan.gpus_per_node, plan.fabric, plan.nccl_env)),
        # The resolved spec: the state alone can name, plan and tear down the cluster (no spec file needed).
        "spec": plan.spec.model_dump(mode="json", exclude_none=True),
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


def _shallow(value: Any) -> Any:
    """``value`` as an Output without wrapping each element of a plain list in an Output of its own.

    ``Output.from_input`` on a 1,024-name list makes 1,024 Outputs (and their tasks); an ``apply`` hands
    the list on as it is, so a plain list costs one Output whatever the node count.
    """
    import pulumi

    if isinstance(value, pulumi.Output):
        return value
    return pulumi.Output.from_input(0).apply(lambda _: value)


def stack_outputs(
    plan: ClusterPlan, ips: Any, head_public_ip: Any = None, shared_fs: Any = None, node_ids: Any = None
) -> dict[str, Any]:
    """All outputs; ``ips`` (a list of node addresses by rank) may be a Pulumi ``Output``.

    ``head_public_ip``, ``shared_fs`` and ``node_ids`` (per rank, the id the cloud's private way in
    needs: AWS instance ids) may be plain values or ``Output`` s too.
    """
    import pulumi

    ips_out = _shallow(ips)
    head_pub = pulumi.Output.from_input(head_public_ip)
    ids_out = _shallow(node_ids)
    path = access.access_path(plan)
    both = gather([ips_out, head_pub, ids_out])

    def way_in(a: list[Any]) -> dict[str, Any]:
        ids = list(a[2] or []) or access.node_names(list(a[0] or []), path)
        return {**path, "node_ids": ids, "head_public_ip": a[1]}

    access_out = both.apply(way_in)
    return {
        **static_outputs(plan),
        "hosts": ips_out,
        "hostfile": ips_out.apply(lambda v: render_hostfile(list(v or []), plan.gpus_per_node)),
        "head_node": both.apply(lambda a: a[1] or (a[0][0] if a[0] else None)),
        "access": access_out,
        "ssh_config": gather([ips_out, access_out]).apply(
            lambda a: access.render_ssh_config(
                plan.name, list(a[0] or []), a[1], node_ids=a[1]["node_ids"], head_public_ip=a[1]["head_public_ip"]
            )
        ),
        "shared_fs": shared_fs,
    }
