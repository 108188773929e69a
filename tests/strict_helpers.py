"""Helpers for the strict mocked-cloud tests: one resource, or a small Pulumi program, under the mocks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pulumi
import pytest

from provision.clouds.mocking import CloudMocks, StrictViolationError
from provision.clouds.strict import Violation
from provision.engine.mockrun import _ensure_event_loop
from provision.testing import install_mocks


def register(type_token: str, name: str, inputs: dict[str, Any], mocks: CloudMocks | None = None) -> CloudMocks:
    """Register one custom resource with the mocked cloud, as the engine would (no dependencies)."""
    mocks = mocks or CloudMocks(region="us-east-1")
    mocks.new_resource(pulumi.runtime.MockResourceArgs(type_token, name, inputs, custom=True))
    return mocks


def violations_of(type_token: str, name: str, inputs: dict[str, Any]) -> list[Violation]:
    """The violations one registration raises (fails the test if it raises none)."""
    with pytest.raises(StrictViolationError) as err:
        register(type_token, name, inputs)
    return err.value.violations


def run(program: Callable[[], Any], *, strict: bool = True, region: str = "us-east-1") -> CloudMocks:
    """Run ``program`` (which creates Pulumi resources) under the recording strict mocks."""
    _ensure_event_loop()
    mocks = CloudMocks(region=region, strict=strict)
    pulumi.runtime.settings.ROOT.set(None)
    install_mocks(mocks, project="provision", stack="strict-test")
    pulumi.runtime.test(program)()
    return mocks


def one(violations: list[Violation], field: str) -> Violation:
    found = [v for v in violations if v.field == field]
    assert len(found) == 1, [str(v) for v in violations]
    return found[0]
