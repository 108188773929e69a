"""Volumes on the Pulumi backend (without ``--mock``): the project's stacks, read through the Automation API.

A volume's stack is ``vol-<name>`` and records ``kind: volume`` with the rest of its outputs
(:mod:`provision.engine.volumerun`); a cluster attaching it records ``volume: <name>`` in its own stack's outputs
(:meth:`provision.ops.cluster.Cluster._program`). So:

* ``volume list``: every stack of the project (``pulumi stack ls``), the outputs of those with resources; the
  volumes are those marked ``kind: volume``, their users the other stacks naming them;
* finding one volume (an attaching ``up``, its plan) selects ``vol-<name>`` alone and reads its outputs;
* ``volume delete``: refused while a cluster stack names the volume, else ``pulumi destroy`` and ``stack rm``.

Without the Pulumi CLI each of them is a :class:`~provision.spec.errors.CloudError` saying how to install it
(:func:`provision.engine.automation.pulumi_command`).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from provision.ops.volume_record import VOLUME_MARK, VolumeRecord, refuse_if_attached
from provision.spec.errors import Problem
from provision.spec.volume import STACK_PREFIX, VolumeSpecError


def _workspace(root: Path | None, command: Any) -> Any:
    from pulumi import automation as auto

    from provision.engine import automation

    return auto.LocalWorkspace(**automation.workspace_settings(root or automation.project_root(), command))


def _outputs(workspace: Any, name: str) -> dict[str, Any] | None:
    """The outputs of stack ``name``; ``None`` when there is no such stack."""
    from pulumi import automation as auto

    from provision.engine import automation

    def select() -> Any:
        try:
            return auto.Stack.select(name, workspace)
        except auto.StackNotFoundError:
            return None

    stack = automation.run_operation("stack select", name, select)
    if stack is None:
        return None
    return {k: v.value for k, v in automation.run_operation("outputs", name, stack.outputs).items()}


def _created_at(outputs: dict[str, Any]) -> datetime | None:
    from provision.spec.units import parse_time

    try:
        return parse_time(str(outputs["created_at"])) if outputs.get("created_at") else None
    except ValueError:
        return None


def _stacks(workspace: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each stack with resources and its outputs."""
    from provision.engine import automation

    for summary in automation.run_operation("stack ls", "*", workspace.list_stacks):
        if summary.resource_count:
            outputs = _outputs(workspace, summary.name)
            if outputs is not None:
                yield summary.name, outputs


def real_volumes(root: Path | None = None, command: Any = None) -> list[VolumeRecord]:
    """Every volume stack of the backend, with the cluster stacks attaching each (by name).

    Raises:
        CloudError: the Pulumi CLI is missing, or the backend refused.
    """
    volumes: dict[str, dict[str, Any]] = {}
    users: dict[str, list[str]] = {}
    for stack, outputs in _stacks(_workspace(root, command)):
        if outputs.get("kind") == VOLUME_MARK:
            volumes[str(outputs.get("volume") or stack.removeprefix(STACK_PREFIX))] = outputs
        elif isinstance(outputs.get("volume"), str):
            users.setdefault(outputs["volume"], []).append(stack)
    return [
        VolumeRecord(name, out, _created_at(out), tuple(sorted(users.get(name, []))))
        for name, out in sorted(volumes.items())
    ]


def real_volume(name: str, root: Path | None = None, command: Any = None) -> VolumeRecord | None:
    """The volume ``name`` (its stack ``vol-<name>`` only, users not looked up), or ``None`` when there is none.

    Raises:
        CloudError: the Pulumi CLI is missing, or the backend refused.
    """
    outputs = _outputs(_workspace(root, command), STACK_PREFIX + name)
    if outputs is None or outputs.get("kind") != VOLUME_MARK:
        return None
    return VolumeRecord(name, outputs, _created_at(outputs), ())


def delete_real_volume(name: str, root: Path | None = None, command: Any = None) -> VolumeRecord:
    """``pulumi destroy`` and ``stack rm`` of the volume's stack; refused while a cluster stack attaches it.

    Raises:
        VolumeSpecError: no such volume, or clusters use it (named). CloudError: the CLI or the backend failed.
    """
    from provision.engine import automation

    stack_name = STACK_PREFIX + name
    record = next((v for v in real_volumes(root, command) if v.name == name), None)
    if record is None:
        raise VolumeSpecError(
            problems=[
                Problem(
                    "name",
                    name,
                    f"names no volume (no stack {stack_name} marked kind: volume)",
                    "see provision volume list",
                )
            ]
        )
    refuse_if_attached(record, mock=False)
    stack = automation.open_stack(
        stack_name, lambda: None, root=root or automation.project_root(), command=command, create=False
    )
    if stack is None:  # removed since the listing
        return record
    automation.run_operation("destroy", stack_name, lambda: stack.destroy(color="never"))
    automation.run_operation("rm", stack_name, lambda: stack.workspace.remove_stack(stack_name))
    return record
