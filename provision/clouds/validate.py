"""Report shape and catalog problems of a spec together, in one error.

Shape validation (pydantic) must pass before the catalog can be asked anything, so a spec with
a typo in one field and an impossible GPU count in another would otherwise need two rounds.
:func:`load_and_plan` salvages what it can: it drops the fields that failed shape validation
(their defaults stand in), plans the rest against the catalog, and adds the catalog's problems
about the *other* fields to the shape problems.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from provision.planning.plan import ClusterPlan
from provision.spec import ClusterSpec
from provision.spec.errors import Problem, SpecError
from provision.spec.loading import load_spec

#: Fields the catalog cannot be asked about without: a salvage that loses one of them is pointless.
_ESSENTIAL = ("cloud", "region")
#: Stand-ins for required fields that failed, so the rest can still be checked.
_STAND_INS = {"name": "salvaged-spec"}


def _drop(data: dict[str, Any], path: str) -> None:
    """Delete the field at dotted ``path`` (a list index drops the whole list)."""
    parts = [p for p in re.split(r"\.|\[\d+\]", path) if p]
    node: Any = data
    for part in parts[:-1]:
        if not isinstance(node, dict) or part not in node:
            return
        node = node[part]
    if isinstance(node, dict) and parts:
        node.pop(parts[-1], None)


def salvage(data: Any, problems: tuple[Problem, ...] | list[Problem]) -> ClusterSpec | None:
    """A valid spec from ``data`` without the fields named by ``problems``; ``None`` when none can be made."""
    if not isinstance(data, dict):
        return None
    fixed = copy.deepcopy(data)
    for p in problems:
        if not p.path:
            return None
        top = re.split(r"\.|\[", p.path)[0]
        if top in _ESSENTIAL:
            return None
        _drop(fixed, p.path)
        if top in _STAND_INS and top not in fixed:
            fixed[top] = _STAND_INS[top]
    try:
        return load_spec(fixed)
    except SpecError:
        return None


def load_and_plan(data: Any, **plan_kwargs: Any) -> ClusterPlan:
    """Validate ``data`` and plan it; a spec with shape problems also gets its catalog problems listed.

    Raises:
        SpecError: every shape problem, plus the catalog's problems about the fields that passed
            (and about each failover try).
        BudgetError: the cost cap refuses a valid spec (or one of its failover tries).
    """
    from provision.clouds.base import get_adapter

    try:
        spec = load_spec(data)
    except SpecError as shape:
        partial = salvage(data, shape.problems)
        if partial is None:
            raise
        try:
            get_adapter(partial.cloud).plan(partial, **plan_kwargs)
        except SpecError as catalog:
            failed = {p.path for p in shape.problems}
            extra = [p for p in catalog.problems if p.path not in failed]
            raise SpecError(shape.message, [*shape.problems, *extra]) from None
        except Exception:  # noqa: BLE001  # the salvage is best effort: report the shape problems as they are
            pass
        raise
    from provision.clouds import failover

    adapter = get_adapter(spec.cloud)
    # Every failover try is planned too (all problems at once); the spec as written is the plan shown.
    return failover.plan_all(spec, lambda s: adapter.plan(s, **plan_kwargs))[0]
