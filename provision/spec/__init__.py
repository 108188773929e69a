"""The spec layer: input -> :class:`ClusterSpec`.

``models`` holds the cluster spec (pydantic, frozen, ``extra="forbid"``) and its cross-field rules,
``options`` the per-cloud sections (``aws:``, ``gcp:``, ...), ``units`` the shorthand types
(``6h``, ``36TiB``), ``loading`` reads specs from mappings, YAML files and Pulumi stack files,
and ``errors`` the error types and :class:`Problem` every layer reports with.
This layer imports only the catalog's vocabulary (``provision.catalog.models``) below it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from provision.spec.errors import MISSING, REDACTED, Problem, SpecError
    from provision.spec.loading import (
        load_spec,
        load_spec_file,
        load_target,
        problems_from_validation,
        read_yaml,
        spec_data_from_document,
        stacks_dir,
        target_path,
    )
    from provision.spec.models import (
        CONFIG_KEY,
        LABEL_KEY_PATTERN,
        LABEL_VALUE_PATTERN,
        MAX_COST_USD,
        MAX_GPUS,
        MAX_TTL,
        MIN_TTL,
        NAME_PATTERN,
        PROJECT,
        RESERVED_TAG_PREFIX,
        AccessSpec,
        CapacitySpec,
        ClusterSpec,
        ImageSpec,
        LifetimeSpec,
        ScratchStorage,
        SharedStorage,
        StorageSpec,
        cross_field_problems,
    )

__all__ = [
    "CONFIG_KEY",
    "LABEL_KEY_PATTERN",
    "LABEL_VALUE_PATTERN",
    "MAX_COST_USD",
    "MAX_GPUS",
    "MAX_TTL",
    "MIN_TTL",
    "MISSING",
    "NAME_PATTERN",
    "PROJECT",
    "REDACTED",
    "RESERVED_TAG_PREFIX",
    "AccessSpec",
    "CapacitySpec",
    "ClusterSpec",
    "ImageSpec",
    "LifetimeSpec",
    "Problem",
    "ScratchStorage",
    "SharedStorage",
    "SpecError",
    "StorageSpec",
    "cross_field_problems",
    "load_spec",
    "load_spec_file",
    "load_target",
    "problems_from_validation",
    "read_yaml",
    "spec_data_from_document",
    "stacks_dir",
    "target_path",
]

_LAZY = {
    "AccessSpec": "provision.spec.models",
    "CONFIG_KEY": "provision.spec.models",
    "CapacitySpec": "provision.spec.models",
    "ClusterSpec": "provision.spec.models",
    "ImageSpec": "provision.spec.models",
    "LABEL_KEY_PATTERN": "provision.spec.models",
    "LABEL_VALUE_PATTERN": "provision.spec.models",
    "LifetimeSpec": "provision.spec.models",
    "MAX_COST_USD": "provision.spec.models",
    "MAX_GPUS": "provision.spec.models",
    "MAX_TTL": "provision.spec.models",
    "MIN_TTL": "provision.spec.models",
    "MISSING": "provision.spec.errors",
    "NAME_PATTERN": "provision.spec.models",
    "PROJECT": "provision.spec.models",
    "Problem": "provision.spec.errors",
    "REDACTED": "provision.spec.errors",
    "RESERVED_TAG_PREFIX": "provision.spec.models",
    "ScratchStorage": "provision.spec.models",
    "SharedStorage": "provision.spec.models",
    "SpecError": "provision.spec.errors",
    "StorageSpec": "provision.spec.models",
    "cross_field_problems": "provision.spec.models",
    "load_spec": "provision.spec.loading",
    "load_spec_file": "provision.spec.loading",
    "load_target": "provision.spec.loading",
    "problems_from_validation": "provision.spec.loading",
    "read_yaml": "provision.spec.loading",
    "spec_data_from_document": "provision.spec.loading",
    "stacks_dir": "provision.spec.loading",
    "target_path": "provision.spec.loading",
}


def __getattr__(name: str) -> Any:
    """Resolve the public names on first use: ``provision.spec.errors`` stays cheap to import."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'provision.spec' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
