"""The mocked clouds: run the real Pulumi program with no credentials and no spend.

``run_program(spec)`` runs :func:`provision.program.cluster_program` under
:class:`~provision.testing.mocks.CloudMocks` and returns what was registered and the
outputs. ``stack_config(root, stack)`` loads a stack file into Pulumi config exactly as
the CLI would.

The names below are imported on first use: pytest loads this package's plugin
(``provision.testing.pytest_plugin``) in every test run, which must not import Pulumi.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from provision.testing.mocks import CloudFaultError, CloudMocks, Fault, Registered, UnknownInvokeError
    from provision.testing.run import PreviewResult, run_program, stack_config

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
    "CloudFaultError": "provision.testing.mocks",
    "CloudMocks": "provision.testing.mocks",
    "Fault": "provision.testing.mocks",
    "Registered": "provision.testing.mocks",
    "UnknownInvokeError": "provision.testing.mocks",
    "PreviewResult": "provision.testing.run",
    "run_program": "provision.testing.run",
    "stack_config": "provision.testing.run",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'provision.testing' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
