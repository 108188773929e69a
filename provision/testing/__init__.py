"""The mocked clouds: run the real Pulumi program with no credentials and no spend.

``run_program(spec)`` runs :func:`provision.engine.program.cluster_program` under
:class:`~provision.clouds.mocking.CloudMocks` and returns what was registered and the
outputs. ``stack_config(root, stack)`` loads a stack file into Pulumi config exactly as
the CLI would.

The names below are imported on first use: pytest loads this package's plugin
(``provision.testing.pytest_plugin``) in every test run, which must not import Pulumi.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from provision.clouds.mocking import CloudFaultError, CloudMocks, Fault, Registered, UnknownInvokeError
    from provision.engine.mockrun import PreviewResult, run_program, stack_config

__all__ = [
    "CloudFaultError",
    "CloudMocks",
    "Fault",
    "PreviewResult",
    "Registered",
    "UnknownInvokeError",
    "run_program",
    "stack_config",
]

_LAZY = {
    "CloudFaultError": "provision.clouds.mocking",
    "CloudMocks": "provision.clouds.mocking",
    "Fault": "provision.clouds.mocking",
    "Registered": "provision.clouds.mocking",
    "UnknownInvokeError": "provision.clouds.mocking",
    "PreviewResult": "provision.engine.mockrun",
    "run_program": "provision.engine.mockrun",
    "stack_config": "provision.engine.mockrun",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'provision.testing' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
