"""provision: GPU training clusters on four clouds from one cluster spec.

Importing this package loads no cloud SDK and no Pulumi provider; those are imported
when a cluster on that cloud is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    "BudgetError",
    "CapacityError",
    "CloudError",
    "Cluster",
    "ClusterSpec",
    "ProvisionError",
    "SpecError",
    "UnsupportedError",
    "load_spec",
    "load_spec_file",
    "plan",
]

if TYPE_CHECKING:
    from provision.ops.cluster import Cluster
    from provision.planning.plan import ClusterPlan
    from provision.spec import ClusterSpec, load_spec, load_spec_file
    from provision.spec.errors import (
        BudgetError,
        CapacityError,
        CloudError,
        ProvisionError,
        SpecError,
        UnsupportedError,
    )

_LAZY = {
    "Cluster": "provision.ops.cluster",
    "ClusterSpec": "provision.spec",
    "load_spec": "provision.spec",
    "load_spec_file": "provision.spec",
    "BudgetError": "provision.spec.errors",
    "CapacityError": "provision.spec.errors",
    "CloudError": "provision.spec.errors",
    "ProvisionError": "provision.spec.errors",
    "SpecError": "provision.spec.errors",
    "UnsupportedError": "provision.spec.errors",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'provision' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


def plan(spec: Any, **kwargs: Any) -> ClusterPlan:
    """Validate ``spec`` (a ``ClusterSpec``, a mapping, or a path / stack name) and plan it."""
    from pathlib import Path

    from provision.clouds.base import plan_spec
    from provision.spec import ClusterSpec, load_spec, load_target

    if isinstance(spec, (str, Path)):
        spec = load_target(str(spec))
    elif not isinstance(spec, ClusterSpec):
        spec = load_spec(spec)
    return plan_spec(spec, **kwargs)
