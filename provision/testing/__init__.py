"""The mocked clouds: run the real Pulumi program with no credentials and no spend.

``run_program(spec)`` runs :func:`provision.engine.program.cluster_program`, the entry a real
``pulumi up`` runs, under :class:`~provision.clouds.mocking.CloudMocks` and returns the plan, what
was registered and the outputs. ``stack_config(root, stack)`` loads a stack file into Pulumi config
exactly as the CLI would; passed as ``run_program(spec, config=...)``, its ``provision:failover`` and
``provision:createdAt`` count as they do for ``pulumi up``.

The mocked cloud is **strict** by default: every resource is checked against its cloud's rules
(vendor models, documented limits, autonamed names, create-time dependencies, timeouts) before it
answers, and an input a real cloud rejects fails the run with :class:`StrictViolationError`
(``.violations``: :class:`Violation` records naming resource, field, value, rule and source).
``run_program(spec, strict=False)`` or ``CloudMocks(strict=False)`` turns the checks off. When you
install :class:`CloudMocks` yourself, use ``install_mocks(mocks, project=..., stack=...)`` so the
rules also see dependencies and custom timeouts. ``docs/fidelity.md`` lists every rule.
``strict_check(type_token, inputs)`` checks one resource of your own program (inputs as the engine
sends them: camelCase) and returns its violations.

The names below are imported on first use: pytest loads this package's plugin
(``provision.testing.pytest_plugin``) in every test run, which must not import Pulumi.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from provision.clouds.mocking import (
        CloudFaultError,
        CloudMocks,
        Fault,
        Registered,
        StrictViolationError,
        UnknownInvokeError,
        strict_check,
    )
    from provision.clouds.mocking import install as install_mocks
    from provision.clouds.strict import Violation
    from provision.engine.mockrun import PreviewResult, run_program, stack_config

__all__ = [
    "CloudFaultError",
    "CloudMocks",
    "Fault",
    "PreviewResult",
    "Registered",
    "StrictViolationError",
    "UnknownInvokeError",
    "Violation",
    "install_mocks",
    "run_program",
    "stack_config",
    "strict_check",
]

_LAZY = {
    "CloudFaultError": "provision.clouds.mocking",
    "CloudMocks": "provision.clouds.mocking",
    "Fault": "provision.clouds.mocking",
    "Registered": "provision.clouds.mocking",
    "UnknownInvokeError": "provision.clouds.mocking",
    "StrictViolationError": "provision.clouds.mocking",
    "Violation": "provision.clouds.strict",
    "install_mocks": "provision.clouds.mocking",
    "PreviewResult": "provision.engine.mockrun",
    "run_program": "provision.engine.mockrun",
    "stack_config": "provision.engine.mockrun",
    "strict_check": "provision.clouds.mocking",
}


#: Public names whose attribute in their module differs.
_RENAMED = {"install_mocks": "install"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'provision.testing' has no attribute {name!r}")
    return getattr(importlib.import_module(module), _RENAMED.get(name, name))
