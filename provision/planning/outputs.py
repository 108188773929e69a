"""Stack outputs shared by every cloud, rendered from plain values (pure, no Pulumi).

``provision.clouds.outputs.stack_outputs`` wires these renderers to Pulumi ``Output`` values
(the node IPs); the Python API uses them on stored outputs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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
        "launch": launch_lines(
            ClusterFacts(plan.name, (), plan.gpus_per_node, plan.fabric, plan.nccl_env, tuple(plan.islands))
        ),
        # The resolved spec: the state alone can name, plan and tear down the cluster (no spec file needed).
        "spec": plan.spec.model_dump(mode="json", exclude_none=True),
    }
