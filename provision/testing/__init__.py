"""The mocked clouds: run the real Pulumi program with no credentials and no spend.

``run_program(spec)`` runs :func:`provision.program.cluster_program` under
:class:`~provision.testing.mocks.CloudMocks` and returns what was registered and the
outputs. ``stack_config(root, stack)`` loads a stack file into Pulumi config exactly as
the CLI would.
"""

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
