"""Launch a training script on a cluster with the right launcher line for its size and fabric.

    >>> c = Cluster("llm-train")
    >>> c.launch_command("torchrun", "train.py", "--lr", "3e-4")   # the line every node runs
    >>> launch(c, "torchrun", "train.py", ["--lr", "3e-4"])         # runs it (prepares the nodes first)

The lines come from :mod:`provision.planning.launch`; ``torchrun`` and ``accelerate`` run on every
node, ``deepspeed`` and ``mpirun`` on the head node, which starts the other ranks over the
cluster's node-to-node SSH. Before the first launch the nodes are prepared once
(:func:`provision.ops.prepare.prepare_nodes`: ``/etc/provision/env``, hostfile, node-to-node key);
a marker in the cluster's SSH folder remembers it for these hosts.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from provision.planning.launch import LAUNCHERS, RUNS_ON, launch_line
from provision.spec.errors import Problem, SpecError

if TYPE_CHECKING:
    from provision.ops.access import Cluster
    from provision.ops.exec import LineCallback, NodeResult


def check_kind(kind: str) -> str:
    """``kind`` lower-cased, or a SpecError naming the launchers."""
    k = kind.strip().lower()
    if k not in LAUNCHERS:
        raise SpecError(problems=[Problem("launcher", kind, "is not a launcher", f"use one of {', '.join(LAUNCHERS)}")])
    return k


def launch_command(cluster: Cluster, kind: str, script: str, *args: str) -> dict[str, Any]:
    """``{"kind", "runs_on": "all"|"head", "nodes": [...], "line"}`` for ``script args`` on ``cluster``.

    Raises:
        SpecError: unknown launcher. CloudError: the cluster is not up.
    """
    from provision.ops.access import facts

    k = check_kind(kind)
    f = facts(cluster)
    runs_on = RUNS_ON[k]
    names = [f"{cluster.spec.name}-{r}" for r in range(f.nodes)]
    return {
        "kind": k,
        "runs_on": runs_on,
        "nodes": names if runs_on == "all" else names[:1],
        "line": launch_line(k, f, script, list(args)),
    }


def _marker(cluster: Cluster) -> Any:
    from provision.ops.access import cluster_hosts, ssh_dir

    digest = hashlib.sha256(",".join(cluster_hosts(cluster)).encode()).hexdigest()[:16]
    return ssh_dir(cluster) / f"prepared-{digest}"


def ensure_prepared(cluster: Cluster) -> None:
    """Prepare the nodes once per set of hosts (a mocked cluster: its local env files, every time)."""
    from provision.ops.prepare import prepare_nodes

    if cluster.mock:
        prepare_nodes(cluster)
        return
    marker = _marker(cluster)
    if not marker.exists():
        prepare_nodes(cluster)
        marker.touch(mode=0o600)


def launch(
    cluster: Cluster,
    kind: str,
    script: str,
    args: Sequence[str] = (),
    *,
    on_line: LineCallback | None = None,
    timeout: float | None = None,
) -> list[NodeResult]:
    """Run the launcher on its nodes (streaming output); returns the per-node results."""
    from provision.ops.checkpoints import with_checkpoint_dir
    from provision.ops.exec import run_on_nodes

    cmd = launch_command(cluster, kind, script, *args)
    ensure_prepared(cluster)
    line = with_checkpoint_dir(cluster, cmd["line"])  # every rank gets $PROVISION_CHECKPOINT_DIR from the env file
    return run_on_nodes(
        cluster, line, nodes="all" if cmd["runs_on"] == "all" else "head", on_line=on_line, timeout=timeout
    )
