"""The Pulumi program: stack config -> spec -> plan -> adapter build -> outputs.

Every run takes this one entry: ``stacks/__main__.py`` calls :func:`main` for ``pulumi up -s <stack>``,
the Python API's real mode runs :func:`main` as the Automation API's inline program, and the mocked
runs (``provision preview``, ``provision up --mock``, the Python API's mock mode and
``provision.testing.run_program``) call :func:`cluster_program` under the mocked cloud with the
stack config set as Pulumi would hand it over. So the stack's failover try (``provision:failover``)
and its creation time (``provision:createdAt``) are read the same way everywhere.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from typing import Any

from provision.clouds import failover
from provision.clouds.base import get_adapter
from provision.planning.plan import ClusterPlan
from provision.spec import CONFIG_KEY, PROJECT, ClusterSpec, load_spec
from provision.spec.errors import ProvisionError
from provision.spec.units import parse_time

#: Config key holding the cluster's creation time (ISO 8601, UTC). ``provision up`` writes it
#: once, so the expiry and every tag derived from it stay the same on later updates.
CREATED_AT_KEY = f"{PROJECT}:createdAt"


_CREATED_AT_FIX = (
    'run once: pulumi config set provision:createdAt "$(date -u +%Y-%m-%dT%H:%M:%SZ)" (provision up sets it for you)'
)


def created_at_from(raw: str | None) -> datetime | None:
    """The ``provision:createdAt`` config value as a UTC time; ``None`` when unset.

    Raises:
        SpecError: the value is not an ISO 8601 time (names the key and how to reset it).
    """
    from provision.spec.errors import Problem, SpecError

    if not raw:
        return None
    try:
        return parse_time(raw)
    except ValueError:
        raise SpecError(problems=[Problem(CREATED_AT_KEY, raw, "is not an ISO 8601 time", _CREATED_AT_FIX)]) from None


def _config_created_at() -> datetime | None:
    import pulumi

    return created_at_from(pulumi.Config(PROJECT).get("createdAt"))


def spec_from_config() -> ClusterSpec:
    """The spec in the stack's ``provision:cluster`` config.

    Raises:
        SpecError: missing or invalid.
    """
    import pulumi

    raw = pulumi.Config(PROJECT).get("cluster")
    if raw is None:
        from provision.spec.errors import Problem, SpecError

        raise SpecError(
            problems=[
                Problem(
                    CONFIG_KEY,
                    None,
                    "is not set in this stack",
                    f"add the spec under config: {CONFIG_KEY} in the stack file",
                )
            ]
        )
    spec = load_spec(json.loads(raw) if isinstance(raw, str) else raw)
    # `provision up` records which failover try holds the cluster, so a bare `pulumi up` keeps it there.
    chosen = pulumi.Config(PROJECT).get_int("failover") or 0
    return failover.alternative(spec, chosen) if chosen else spec


def plan_for_stack(spec: ClusterSpec, now: datetime | None = None, owner: str | None = None) -> ClusterPlan:
    """Plan ``spec`` for the current stack, its lifetime counting from ``now`` or ``provision:createdAt``.

    Raises:
        SpecError: an update (not a preview) of a cluster with a lifetime but no ``createdAt``:
            its expiry, and every tag and node template derived from it, would move on each
            ``pulumi up`` and replace the nodes.
    """
    import pulumi

    anchor = now or _config_created_at()
    plan = get_adapter(spec.cloud).plan(spec, now=anchor, stack=pulumi.get_stack(), owner=owner)
    if anchor is None and plan.expires_at is not None:
        if not pulumi.runtime.is_dry_run():
            from provision.spec.errors import Problem, SpecError

            raise SpecError(
                problems=[
                    Problem(
                        CREATED_AT_KEY,
                        None,
                        "is required to update a cluster with a lifetime: without it the expiry (and the tags and "
                        "node templates derived from it) would move on every update and replace the nodes",
                        _CREATED_AT_FIX,
                    )
                ]
            )
        pulumi.log.warn(f"{CREATED_AT_KEY} is not set: this preview counts the lifetime from now; {_CREATED_AT_FIX}")
    return plan


def cluster_program(
    spec: ClusterSpec | None = None,
    now: datetime | None = None,
    *,
    owner: str | None = None,
    on_plan: Callable[[ClusterPlan], None] | None = None,
) -> dict[str, Any]:
    """Create the cluster's resources in the current Pulumi context; returns the outputs.

    ``spec`` defaults to the stack config's (:func:`spec_from_config`), ``now`` to its
    ``provision:createdAt`` (:func:`plan_for_stack`); ``owner`` goes to the tags. Validation (spec,
    catalog, cost cap) completes before the first resource is registered; ``on_plan`` is handed the
    plan then (the mocked run reports it and places the mocked cloud's faults with it).
    """
    spec = spec or spec_from_config()
    plan = plan_for_stack(spec, now, owner)
    if on_plan is not None:
        on_plan(plan)
    return get_adapter(spec.cloud).build(plan)


def main(spec: ClusterSpec | None = None, now: datetime | None = None) -> None:
    """Run the program and export every output: ``stacks/__main__.py`` and the Automation API's inline program.

    User errors become a ``pulumi.RunError`` (printed without a Python traceback).
    """
    import pulumi

    try:
        outputs = cluster_program(spec, now)
    except ProvisionError as e:
        raise pulumi.RunError(str(e)) from None
    for name, value in outputs.items():
        pulumi.export(name, value)
