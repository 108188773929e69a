"""The volume program (its own stack, ``vol-<name>``) and how it runs: under the mocked cloud, or through the
Automation API like a cluster's ``up``/``down``.

The program is the cloud's ``clouds/<cloud>/volume.py`` ``build_volume`` plus the outputs every volume records
(kind, cloud, region, zone, filesystem, size, tier, price, tags, lifetime): what ``provision volume list`` shows and
what an attaching cluster reads through a StackReference (:mod:`provision.clouds.volumeref`). Clouds without a
volume program yet (:data:`PROGRAMS`) keep the mocked cloud's recorded volume (``provision.ops.volumes``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from provision.spec import PROJECT
from provision.spec.volume import VolumeSpec

#: The clouds whose volume is a Pulumi program (``clouds/<cloud>/volume.py``).
PROGRAMS = ("aws", "gcp", "azure", "alibaba")


@dataclass
class VolumeRun:
    """What a volume program run gives: its resources (the mocked cloud's ledger) and its outputs."""

    resources: list[Any]
    outputs: dict[str, Any]
    accounting: list[Any]


def build_outputs(spec: VolumeSpec, tier: str, static: dict[str, Any]) -> dict[str, Any]:
    """Create the volume's resources in the current Pulumi context; returns its outputs (``static`` included)."""
    module = importlib.import_module(f"provision.clouds.{spec.cloud}.volume")
    tags = {**spec.tags, "provision-volume": spec.name}
    return {**static, **module.build_volume(spec, tier, tags)}


def volume_program(spec: VolumeSpec, tier: str, static: dict[str, Any]) -> Callable[[], None]:
    """The inline program of the volume's stack: its cloud's resources and the volume's outputs."""

    def program() -> None:
        import pulumi

        for key, value in build_outputs(spec, tier, static).items():
            pulumi.export(key, value)

    return program


def run_volume_mock(spec: VolumeSpec, tier: str, static: dict[str, Any], accounting: bool = False) -> VolumeRun:
    """Run the volume program under the strict mocked cloud (the first refused input fails it, naming the rule).

    Raises:
        CloudFaultError: the strict cloud refused an input, or an injected fault hit.
    """
    import pulumi

    from provision.clouds.mocking import CloudMocks, install
    from provision.engine.mockrun import _ensure_event_loop, _resolve

    _ensure_event_loop()
    mocks = CloudMocks(region=spec.region, accounting=accounting)
    pulumi.runtime.set_all_config({})
    pulumi.runtime.settings.ROOT.set(None)
    install(mocks, project=PROJECT, stack=f"vol-{spec.name}")
    captured: dict[str, Any] = {}

    @pulumi.runtime.test
    def _run() -> Any:
        return _resolve(build_outputs(spec, tier, static)).apply(captured.update)

    _run()
    return VolumeRun(list(mocks.ledger), captured, list(mocks.accounting))


def run_volume_real(spec: VolumeSpec, tier: str, static: dict[str, Any], *, destroy: bool = False) -> dict[str, Any]:
    """``pulumi up`` (or ``destroy``) of the volume's stack through the Automation API; returns its outputs.

    Raises:
        CloudError: the Pulumi CLI is missing, the backend refused, or the operation failed.
    """
    from provision.engine import automation

    name = f"vol-{spec.name}"
    program = volume_program(spec, tier, static)
    stack = automation.open_stack(name, program, root=automation.project_root(), create=not destroy)
    if stack is None:
        return {}
    if not destroy and automation.run_operation("outputs", name, stack.outputs).get("kind") is not None:
        from provision.spec.errors import Problem
        from provision.spec.volume import VolumeSpecError

        # An up of a volume that exists would update it in place, or replace its filesystem (data lost).
        raise VolumeSpecError(
            problems=[Problem("name", spec.name, "names a volume that exists", "pick another name or delete it first")]
        )
    import pulumi.automation as auto

    from provision.catalog import cloud_facts

    # The provider's region: aws:region, gcp:region (GCP's project is the provider's gcp:project),
    # azure-native:location, alicloud:region (the catalog's provider_region_key).
    key = cloud_facts(spec.cloud).provider_region_key
    automation.run_operation("config", name, lambda: stack.set_config(key, auto.ConfigValue(spec.region)))
    if destroy:
        automation.run_operation("destroy", name, lambda: stack.destroy(color="never"))
        automation.run_operation("rm", name, lambda: stack.workspace.remove_stack(name))
        return {}
    result = automation.run_operation("up", name, lambda: stack.up(program=program, color="never"))
    return {k: v.value for k, v in result.outputs.items()}
