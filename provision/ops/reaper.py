"""Find and delete expired clusters: by the state (mocked and Pulumi stacks), and by cloud tags.

Every resource carries ``provision-cluster`` and ``provision-expires-at``. Expired stacks are destroyed through
their state here; a cloud whose state may be gone is swept by its tags through the sweeper its folder declares
(``Adapter.sweeper``, ``clouds/<cloud>/sweeper.py``), reached through :func:`sweep`, which names no cloud.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from functools import partial
from typing import Any

from provision.clouds.base import TAG_EXPIRES, get_adapter, parse_label_time
from provision.clouds.sweep import ExpiredCluster
from provision.spec.units import parse_time


def sweep(cloud: str, target: str, delete: bool, client: Any = None) -> list[dict[str, Any]]:
    """Expired clusters of ``cloud`` found by their tags in ``target`` (what the cloud's sweeper sweeps: a
    region, a subscription), deleted with ``delete``; one report row each. ``client``: tests pass fakes.

    Raises:
        UnsupportedError: the cloud has no sweeper, or its SDK is not installed. CloudError: the cloud refused.
    """
    return get_adapter(cloud).sweep(target, delete, client)


# ---------------------------------------------------------------------- stacks (mock and Pulumi state)


def _iso_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return parse_time(value)
    except ValueError:
        return None


def expired_mock_stacks(
    now: datetime | None = None, home: Any = None, errors: list[str] | None = None
) -> list[ExpiredCluster]:
    """Mocked clusters (``--mock`` state) whose ``expires_at`` output has passed.

    A damaged state file does not stop the sweep: it is skipped, and its error (naming the
    file and how to recover) is appended to ``errors`` when given.
    """
    from provision.engine.mockstate import MockStore
    from provision.spec.errors import CloudError

    now = now or datetime.now(timezone.utc)
    store = MockStore(home)
    out = []
    for stack in store.stacks():
        try:
            state = store.load(stack)
        except (CloudError, OSError) as e:
            if errors is not None:
                errors.append(f"{stack}: {e}")
            continue
        expires = _iso_time(state.outputs.get("expires_at")) if state else None
        if state is None or expires is None or expires > now:
            continue
        out.append(
            ExpiredCluster(
                cloud=str(state.spec.get("cloud", "")),
                region=str(state.spec.get("region", "")),
                cluster=stack,
                expires_at=expires,
                resources=[f"{r.type}:{r.name}" for r in state.resources if r.custom],
            )
        )
    return out


def reap_mock_stack(stack: str, home: Any = None) -> list[str]:
    """Delete a mocked cluster's state (what ``provision down --mock`` does) under its lock; returns what went.

    Raises:
        StackBusyError: another command holds the stack. DamagedStateError: the file is damaged.
    """
    from provision.engine.locks import stack_lock
    from provision.engine.mockstate import MockStore

    with stack_lock(stack, "reap", mock=True, home=home):
        state = MockStore(home).delete(stack)
    return [f"{r.type}:{r.name}" for r in state.resources if r.custom] if state else []


def _workspace(command: Any = None, root: Any = None) -> Any:
    from pulumi import automation as auto

    from provision.engine import automation

    return auto.LocalWorkspace(**automation.workspace_settings(root or automation.project_root(), command))


def expired_pulumi_stacks(
    now: datetime | None = None, command: Any = None, root: Any = None, errors: list[str] | None = None
) -> list[ExpiredCluster]:
    """Stacks in the state backend whose ``provision-expires-at`` stack tag has passed.

    A stack whose tags or config cannot be read is skipped (its error appended to ``errors``
    when given), so one broken stack never hides the others.

    Raises:
        CloudError: the Pulumi CLI is missing or the backend refused to list the stacks.
    """
    from provision.engine.automation import run_operation
    from provision.spec.errors import CloudError

    now = now or datetime.now(timezone.utc)
    ws = _workspace(command, root)
    out = []
    for summary in run_operation("stack ls", "(every stack)", ws.list_stacks):
        name = summary.name
        try:
            tags = run_operation("stack tag ls", name, partial(ws.list_tags, name))
            expires = parse_label_time(tags.get(TAG_EXPIRES, ""))
            if expires is None or expires > now:
                continue
            stored = run_operation("config", name, partial(ws.get_all_config, name))
        except CloudError as e:
            if errors is not None:
                errors.append(f"{name}: {e}")
            continue
        config = {k: v.value for k, v in stored.items()}
        spec = config.get("provision:cluster", "{}")
        try:
            doc = json.loads(spec) if len(spec) < 1_000_000 else {}
        except (ValueError, RecursionError):
            doc = {}
        doc = doc if isinstance(doc, dict) else {}
        out.append(
            ExpiredCluster(
                cloud=str(doc.get("cloud", "")),
                region=str(doc.get("region", "")),
                cluster=summary.name,
                expires_at=expires,
                resources=[f"resources:{summary.resource_count}"] if summary.resource_count is not None else [],
            )
        )
    return out


def reap_pulumi_stack(stack: str, command: Any = None, root: Any = None) -> list[str]:
    """``down`` the stack with the spec stored in its config (destroy, refresh-on-pending, retry).

    Raises:
        CloudError: the CLI or backend failed, or the stack holds no spec to plan its teardown with.
    """
    from provision.engine.automation import run_operation
    from provision.ops.cluster import Cluster
    from provision.spec import CONFIG_KEY, load_spec
    from provision.spec.errors import CloudError, SpecError

    ws = _workspace(command, root)
    stored = run_operation("config", stack, lambda: ws.get_all_config(stack))
    try:
        spec = load_spec(json.loads(stored[CONFIG_KEY].value))
    except (KeyError, ValueError, SpecError) as e:
        why = "has no" if isinstance(e, KeyError) else f"has an unreadable ({type(e).__name__})"
        raise CloudError(
            f"stack {stack!r} {why} {CONFIG_KEY} config, so its teardown cannot be planned. To fix: run "
            f"`pulumi destroy --stack {stack}` (with the same PULUMI_BACKEND_URL)"
        ) from None
    cluster = Cluster(spec, stack=stack, pulumi_command=command, display="none")
    result = cluster.down(yes=True)
    return [f"{s.op}:{s.type}:{s.name}" for s in (result.steps if result else [])]
