"""Every shipped stack, as shipped and with the longest cluster name the spec allows, previews under strict mocks."""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path

import pytest
from conftest import preview, stack_spec

from provision.clouds.mocking import PACKAGE_CLOUD, StrictViolationError
from provision.spec.models import ClusterSpec

STACKS = sorted(
    p.name[len("Pulumi.") : -len(".yaml")] for p in (Path(__file__).parent.parent / "stacks").glob("Pulumi.*.yaml")
)
#: The spec's name rule (docs/contracts.md): ``^[a-z][a-z0-9-]{0,38}[a-z0-9]$``, so 40 characters at most.
LONGEST = 40

#: Stacks the strict mock refuses until the cloud-code fixes of issue 11 item 2 (engineer "cloudfix") land.
#: Each entry is xfail(strict=True): it starts failing the suite the moment the fix makes it pass.
PENDING: dict[str, str] = {}  # empty: every cloudfix finding has landed
PENDING_LONG: dict[str, str] = {**PENDING}


def _params(pending: dict[str, str]) -> list[object]:
    return [
        pytest.param(s, marks=pytest.mark.xfail(strict=True, raises=StrictViolationError, reason=pending[s]))
        if s in pending
        else s
        for s in STACKS
    ]


def longest_name(stack: str) -> str:
    """A valid cluster name of exactly 40 characters that starts with the stack's own name."""
    name = (stack + "-" + "x" * LONGEST)[:LONGEST]
    assert re.fullmatch(r"[a-z][a-z0-9-]{0,38}[a-z0-9]", name) and len(name) == LONGEST
    return name


@pytest.mark.parametrize(("length", "ok"), [(LONGEST, True), (LONGEST + 1, False)])
def test_the_longest_name_is_what_the_spec_allows(length: int, ok: bool) -> None:
    pattern = ClusterSpec.model_json_schema()["properties"]["name"]["pattern"]
    assert bool(re.fullmatch(pattern, "a" * length)) is ok


@pytest.mark.parametrize("stack", STACKS)
def test_shipped_stack_has_a_golden_graph_of_its_strict_preview(stack: str) -> None:
    """Each stack's golden test previews it under the strict mock (``run_program``'s default): the golden file with
    resources in it stands for the strict preview, which runs once, there."""
    golden = Path(__file__).parent / "golden" / f"{stack}.json"
    assert golden.exists(), f"{stack} has no golden graph: add it to its cloud's golden test"
    assert json.loads(golden.read_text(encoding="utf-8"))["resources"]


@pytest.mark.parametrize("stack", _params(PENDING_LONG))
def test_shipped_stack_with_a_40_character_name_previews_under_the_strict_mock(stack: str) -> None:
    spec = stack_spec(stack)
    spec = spec.model_copy(update={"name": longest_name(stack)})
    result = preview(spec)
    assert all(r.name.startswith(spec.name) for r in result.resources if r.custom)


@pytest.mark.parametrize("golden", sorted((Path(__file__).parent / "golden").glob("*.json")), ids=lambda p: p.stem)
def test_every_resource_type_a_stack_registers_has_strict_rules(golden: Path) -> None:
    """A new resource type must get rules (or a reason it has none) in its cloud's strict.py."""
    for r in json.loads(golden.read_text(encoding="utf-8"))["resources"]:
        if r["type"].startswith(("pulumi:providers:", "time:")):  # a provider instance, a local Sleep: no cloud API
            continue
        cloud = PACKAGE_CLOUD[r["type"].split(":", 1)[0]]
        known = importlib.import_module(f"provision.clouds.{cloud}.strict").KNOWN
        assert r["type"] in known, f"{r['type']} has no strict rules in provision/clouds/{cloud}/strict.py"
