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
    from provision.cluster import Cluster
    from provision.errors import (
        BudgetError,
        CapacityError,
        CloudError,
        ProvisionError,
        SpecError,
        UnsupportedError,
    )
    from provision.plan import ClusterPlan
    from provision.spec import ClusterSpec, load_spec, load_spec_file

_LAZY = {
    "Cluster": "provision.cluster",
    "ClusterSpec": "provision.spec",
    "load_spec": "provision.spec",
    "load_spec_file": "provision.spec",
    "BudgetError": "provision.errors",
    "CapacityError": "provision.errors",
    "CloudError": "provision.errors",
    "ProvisionError": "provision.errors",
    "SpecError": "provision.errors",
    "UnsupportedError": "provision.errors",
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
