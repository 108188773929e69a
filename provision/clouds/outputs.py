"""The stack outputs as Pulumi ``Output`` s: the planning layer's pure renderers, wired to node addresses.

The renderers (hostfile, ssh config, access path, static outputs) stay pure in
``provision.planning.outputs``; this module only chains Pulumi ``Output`` values into them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from provision.planning import access
from provision.planning.outputs import render_hostfile, static_outputs

if TYPE_CHECKING:
    from provision.planning.plan import ClusterPlan


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
        # The attached volume (its own stack): how `provision volume delete` finds the clusters still using it.
        **({"volume": plan.storage.volume} if plan.storage is not None and plan.storage.volume else {}),
    }
