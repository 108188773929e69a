"""The Pulumi program: stack config -> spec -> plan -> adapter build -> outputs.

``stacks/__main__.py`` calls :func:`main` for ``pulumi up -s <stack>``; the Python API and
``provision preview`` call :func:`cluster_program` with a spec in-process. Both run the
same code.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from provision.clouds.base import get_adapter
from provision.errors import ProvisionError
from provision.plan import ClusterPlan
from provision.spec import CONFIG_KEY, PROJECT, ClusterSpec, load_spec

#: Config key holding the cluster's creation time (ISO 8601, UTC). ``provision up`` writes it
#: once, so the expiry and every tag derived from it stay the same on later updates.
CREATED_AT_KEY = f"{PROJECT}:createdAt"


def _config_created_at() -> datetime | None:
    import pulumi

    raw = pulumi.Config(PROJECT).get("createdAt")
    if not raw:
        return None
    return datetime.fromisoformat(raw.replace("Z", "+00:00")).astimezone(timezone.utc)


def spec_from_config() -> ClusterSpec:
    """The spec in the stack's ``provision:cluster`` config.

    Raises:
        SpecError: missing or invalid.
    """
    import pulumi

    raw = pulumi.Config(PROJECT).get("cluster")
    if raw is None:
        from provision.errors import Problem, SpecError

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
    return load_spec(json.loads(raw) if isinstance(raw, str) else raw)


def plan_for_stack(spec: ClusterSpec, now: datetime | None = None) -> ClusterPlan:
    import pulumi

    return get_adapter(spec.cloud).plan(spec, now=now or _config_created_at(), stack=pulumi.get_stack())


def cluster_program(spec: ClusterSpec | None = None, now: datetime | None = None) -> dict[str, Any]:
    """Create the cluster's resources in the current Pulumi context; returns the outputs.

    Validation (spec, catalog, cost cap) completes before the first resource is registered.
    """
    spec = spec or spec_from_config()
    plan = plan_for_stack(spec, now)
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
