"""Every cluster the state knows, found by stack or cluster name, without its spec file.

The state records the resolved spec (the ``spec`` stack output, also in the mocked cloud's state
file) and the plan's facts (``cloud``, ``region``, ``instance_type``, ``nodes``, ``gpus``,
``hourly_usd``, ``expires_at``, ... outputs), so ``provision status|outputs|down|ssh|exec|launch``
can take a stack or cluster name after the file is gone.

* mock: ``$PROVISION_HOME/mock/*.json``;
* real: the stacks of the Pulumi backend (``pulumi stack ls`` through the Automation API), read
  one by one (needs the Pulumi CLI, as every real operation does).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from provision.spec import CONFIG_KEY
from provision.spec.errors import CloudError, Problem, SpecError
from provision.spec.units import format_time


@dataclass(frozen=True)
class ClusterRecord:
    """One cluster in the state."""

    stack: str
    name: str
    spec: dict[str, Any]
    outputs: dict[str, Any]
    created_at: datetime | None
    mock: bool
    resources: int

    def row(self, now: datetime | None = None) -> dict[str, Any]:
        """The ``provision list`` row (JSON shape)."""
        now = now or datetime.now(timezone.utc)
        out = self.outputs
        hourly = out.get("hourly_usd")
        spent = None
        if hourly is not None and self.created_at is not None:
            spent = round(float(hourly) * max(0.0, (now - self.created_at).total_seconds()) / 3600, 2)
        return {
            "stack": self.stack,
            "name": self.name,
            "cloud": out.get("cloud") or self.spec.get("cloud"),
            "region": out.get("zone") or out.get("region") or self.spec.get("region"),
            "nodes": out.get("nodes"),
            "instance_type": out.get("instance_type"),
            "gpus": out.get("gpus"),
            "created_at": format_time(self.created_at) if self.created_at else None,
            "expires_at": out.get("expires_at"),
            "hourly_usd": hourly,
            "spent_usd": spent,
            "health": out.get("health"),
            "resources": self.resources,
            "mock": self.mock,
        }


def _mock_records() -> list[ClusterRecord]:
    from provision.engine.mockstate import MockStore

    store = MockStore()
    found = []
    for stack in store.stacks():
        try:
            state = store.load(stack)
        except CloudError:
            continue  # a damaged file: `provision status` on it names the file and the fix
        if state is None or not state.resources or state.outputs.get("kind") == "volume":
            continue  # nothing there, or a volume (provision volume list)
        found.append(
            ClusterRecord(
                stack=state.stack,
                name=str(state.spec.get("name", state.stack)),
                spec=dict(state.spec),
                outputs=dict(state.outputs),
                created_at=state.created_at,
                mock=True,
                resources=len(state.resources),
            )
        )
    return found


def _real_records(root: Path | None, command: Any = None) -> list[ClusterRecord]:
    from pulumi import automation as auto

    from provision.engine import automation
    from provision.engine.program import created_at_from

    settings = automation.workspace_settings(root, command)
    workspace = auto.LocalWorkspace(**settings)
    found = []
    summaries = automation.run_operation("stack ls", "*", workspace.list_stacks)
    for summary in summaries:
        if not summary.resource_count:
            continue
        stack = auto.Stack.select(summary.name, workspace)
        outs = {k: v.value for k, v in automation.run_operation("outputs", summary.name, stack.outputs).items()}
        if outs.get("kind") == "volume":
            continue  # a volume's stack (provision volume list)
        config = automation.stack_config(stack)
        spec = _recorded_spec(outs.get("spec"), config.get(CONFIG_KEY))
        created = created_at_from(config.get(automation.CREATED_AT_KEY))
        found.append(
            ClusterRecord(
                stack=summary.name,
                name=str(spec.get("name") or outs.get("cluster") or summary.name),
                spec=dict(spec),
                outputs=outs,
                created_at=created,
                mock=False,
                resources=int(summary.resource_count or 0),
            )
        )
    return found


def _recorded_spec(output: Any, config: str | None) -> dict[str, Any]:
    """The recorded spec: the ``spec`` output, else the stack's ``provision:cluster`` config (older stacks)."""
    if isinstance(output, dict):
        return output
    try:
        found = json.loads(config) if config else {}
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def list_clusters(mock: bool, root: Path | None = None, command: Any = None) -> list[ClusterRecord]:
    """Every cluster with resources in the mocked cloud (``mock``) or in the Pulumi backend, by stack name.

    ``command`` is the ``PulumiCommand`` to use in real mode (default: the installed CLI).

    Raises:
        CloudError: real mode without the Pulumi CLI, or the backend refused.
    """
    records = _mock_records() if mock else _real_records(root, command)
    return sorted(records, key=lambda r: r.stack)


def find_cluster(target: str, mock: bool, root: Path | None = None, command: Any = None) -> ClusterRecord | None:
    """The cluster whose stack or cluster name is ``target``; ``None`` when there is none.

    Raises:
        SpecError: several stacks hold a cluster of that name (names them; use the stack).
    """
    records = list_clusters(mock, root, command)
    by_stack = [r for r in records if r.stack == target]
    if by_stack:
        return by_stack[0]
    by_name = [r for r in records if r.name == target]
    if len(by_name) > 1:
        stacks = ", ".join(r.stack for r in by_name)
        raise SpecError(
            problems=[Problem("target", target, f"names a cluster in several stacks ({stacks})", "give the stack name")]
        )
    return by_name[0] if by_name else None
