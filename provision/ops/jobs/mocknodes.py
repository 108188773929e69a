"""A mocked cluster's node folders (its nodes are local folders and processes): where they are, each node's home,
and the shared filesystem's stand-in. Imports no SSH code, so the pure modules that need the paths
(:mod:`provision.ops.checkpoints`) stay out of the access layer's imports."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["has_shared", "mock_root", "node_home", "shared_dir"]


def mock_root(cluster: Any) -> Path:
    """The mocked cluster's node folders."""
    from provision.engine.automation import stack_ssh_dir  # access.ssh_dir (no import of access: no circle)

    root = stack_ssh_dir(cluster.stack) / "mock-nodes"
    root.mkdir(mode=0o700, exist_ok=True)
    return root


def has_shared(cluster: Any) -> bool:
    return bool((cluster.outputs.get("shared_fs") or {}).get("mount_point"))


def node_home(cluster: Any, rank: int) -> Path:
    home = mock_root(cluster) / f"node-{rank}" / "home"
    home.mkdir(parents=True, exist_ok=True)
    return home


def shared_dir(cluster: Any) -> Path | None:
    """The shared filesystem's stand-in, when the cluster has one."""
    if not has_shared(cluster):
        return None
    path = mock_root(cluster) / "shared"
    path.mkdir(exist_ok=True)
    return path
