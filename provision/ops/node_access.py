"""The node-facing methods of :class:`~provision.ops.cluster.Cluster`: nodes, ssh, exec, launch."""

from __future__ import annotations

from typing import Any

from provision.ops import access


class NodeAccess:
    """The node-facing part of :class:`~provision.ops.cluster.Cluster`: nodes, ssh, exec, launch.

    Mixed into ``Cluster``, which provides ``spec``, ``stack``, ``mock`` and ``outputs``.
    """

    spec: Any
    stack: str
    mock: bool

    @property
    def outputs(self) -> dict[str, Any]:
        """The stack outputs (provided by ``Cluster``)."""
        raise NotImplementedError

    def nodes(self) -> list[dict[str, Any]]:
        """``[{"name", "rank", "address", "state", "health"}]`` from the state (no node is contacted).

        ``health`` is what the last health check recorded for the node (``None`` when unknown).
        """
        hosts = list(self.outputs.get("hosts") or [])
        health = self.outputs.get("health") or {}
        name = self.spec.name
        return [
            {
                "name": f"{name}-{rank}",
                "rank": rank,
                "address": ip,
                "state": "running",
                "health": health.get(f"{name}-{rank}") if isinstance(health, dict) else None,
            }
            for rank, ip in enumerate(hosts)
        ]

    def ssh_command(self, node: str | int | None = None, command: list[str] | None = None) -> list[str]:
        """The ``ssh`` argv into ``node`` (rank, ``head``, name or IP; default the head node)."""
        return access.ssh_argv(self, node, command)

    def run_on_nodes(self, command: str | list[str], **kwargs: Any) -> list[Any]:
        """:func:`provision.ops.exec.run_on_nodes` on this cluster (``nodes=``, ``timeout=``, ``on_line=`` ...)."""
        from provision.ops.exec import run_on_nodes

        return run_on_nodes(self, command, **kwargs)

    def launch_command(self, kind: str, script: str, *args: str) -> str:
        """The shell line that launches ``script args`` with ``kind`` (torchrun, deepspeed, mpirun, accelerate)."""
        from provision.ops.launch import launch_command

        return str(launch_command(self, kind, script, *args)["line"])

    def launch(self, kind: str, script: str, *args: str, timeout: float | None = None) -> list[Any]:
        """Run the launch on its nodes (prepares them once); per-node results."""
        from provision.ops.launch import launch

        return launch(self, kind, script, list(args), timeout=timeout)

    def prepare_nodes(self) -> list[Any]:
        """Install ``/etc/provision/env``, the hostfile and the node-to-node SSH key on every node."""
        from provision.ops.prepare import prepare_nodes

        return prepare_nodes(self)

    def forget_access(self) -> None:
        """Remove this cluster's local SSH files (config, known hosts, node-to-node key); on a mocked cluster,
        stop its nodes' running jobs first (its nodes are local process trees)."""
        if self.mock:
            from provision.ops.jobs.local import stop_all
            from provision.ops.slurm_local import stop_mock_slurm

            stop_all(self)
            stop_mock_slurm(self)  # a mocked Slurm cluster's local daemons
        access.forget(self)
