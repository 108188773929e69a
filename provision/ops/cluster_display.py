"""How a :class:`~provision.ops.cluster.Cluster` shows itself: one line in a REPL, a table in a notebook."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any, Protocol

from provision.spec.units import format_time

if TYPE_CHECKING:
    from provision.ops.cluster_cost import ClusterCost
    from provision.planning.plan import ClusterPlan


class Shown(Protocol):
    """What :func:`facts` reads of a cluster (``Cluster`` has it)."""

    spec: Any
    stack: str
    mock: bool

    def plan(self) -> ClusterPlan: ...

    @property
    def cost(self) -> ClusterCost: ...


def facts(cluster: Shown, state: str) -> dict[str, str]:
    """What a repr shows, ``cluster`` first; ``state`` is "up", "none" or "unknown".

    Never raises: a plan that fails shows why instead.
    """
    spec = cluster.spec
    try:
        plan = cluster.plan()
        cost = cluster.cost
    except Exception as e:  # noqa: BLE001  # a repr must not raise; show why the plan failed
        return {"cluster": spec.name, "cloud": f"{spec.cloud} {spec.region}", "plan": str(e)[:200]}
    expires = cost.expires_at or plan.expires_at
    return {
        "cluster": spec.name,
        "stack": cluster.stack + (" (mock)" if cluster.mock else ""),
        "cloud": f"{plan.cloud} {plan.zone or plan.region}",
        "nodes": f"{plan.nodes} x {plan.instance_type}",
        "GPUs": f"{plan.gpus} x {plan.offer.gpu}",
        "fabric": plan.fabric,
        "state": state,
        "cost": str(cost),
        "expires": (format_time(expires) if expires else "never") + ("" if cost.created_at else " (if created now)"),
    }


def as_text(shown: dict[str, str]) -> str:
    """``<Cluster name: key value, ...>``."""
    rest = dict(shown)
    name = rest.pop("cluster")
    return f"<Cluster {name}: " + ", ".join(f"{k} {v}" for k, v in rest.items()) + ">"


def as_html(shown: dict[str, str]) -> str:
    """A small HTML table (notebooks), every value escaped."""
    rest = dict(shown)
    name = rest.pop("cluster")
    cells = (f"<tr><th style='text-align:left'>{k}</th><td>{html.escape(v)}</td></tr>" for k, v in rest.items())
    return f"<div><b>Cluster {html.escape(name)}</b><table>{''.join(cells)}</table></div>"
