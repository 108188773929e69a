"""Test helper: what the Pulumi engine would see of each registration that the mocks drop.

``pulumi.runtime.Mocks.new_resource`` gets no dependencies and no custom timeouts, so a test that
asserts "the file system waits for its security-group rules" records them from the mock monitor's
``RegisterResource`` requests instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pulumi.runtime import mocks as pulumi_mocks


@dataclass
class Registration:
    type: str
    name: str
    urn: str
    dependencies: set[str]
    custom_timeouts: dict[str, str]


@dataclass
class Graph:
    by_urn: dict[str, Registration] = field(default_factory=dict)

    def named(self, name: str) -> Registration:
        return next(r for r in self.by_urn.values() if r.name == name)

    def of_type(self, type_token: str) -> list[Registration]:
        return [r for r in self.by_urn.values() if r.type == type_token]

    def ancestors(self, reg: Registration) -> set[str]:
        """Every URN ``reg`` waits for, directly or through other resources."""
        seen: set[str] = set()
        todo = list(reg.dependencies)
        while todo:
            urn = todo.pop()
            if urn in seen:
                continue
            seen.add(urn)
            if urn in self.by_urn:
                todo.extend(self.by_urn[urn].dependencies)
        return seen


@contextmanager
def recorded_graph() -> Iterator[Graph]:
    """Record every registration's dependencies while the block runs a mocked program."""
    graph = Graph()
    original = pulumi_mocks.MockMonitor.RegisterResource

    def register(self: Any, request: Any) -> Any:
        response = original(self, request)
        timeouts = request.customTimeouts
        graph.by_urn[response.urn] = Registration(
            request.type,
            request.name,
            response.urn,
            set(request.dependencies),
            {k: getattr(timeouts, k) for k in ("create", "update", "delete") if getattr(timeouts, k, "")},
        )
        return response

    pulumi_mocks.MockMonitor.RegisterResource = register  # type: ignore[method-assign]
    try:
        yield graph
    finally:
        pulumi_mocks.MockMonitor.RegisterResource = original  # type: ignore[method-assign]
