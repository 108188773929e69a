"""Fuzzing load -> plan -> render with specs generated from the spec's JSON Schema plus hostile values (issue 12.8).

Every example either plans and renders every node script of its cloud, or is refused with a
``SpecError`` or ``BudgetError``; any other exception is a bug. A fixed seed makes the run
reproducible. The suite runs 1,000 examples (a tenth of the long run); ``PROVISION_FUZZ_EXAMPLES`` sets the count for
the long run, ``PROVISION_FUZZ_EXAMPLES=10000 pytest -m fuzz`` (the issue's bar), which reports the
smallest failing spec it finds.
No secret pasted into a spec survives into an error.
"""

from __future__ import annotations

import os
from datetime import datetime, timezone
from functools import cache
from typing import Any

import pytest
from conftest import CANARY_BODY_LINE, CANARY_PRIVATE_KEY, CANARY_TOKEN, leaked_canary
from hypothesis import HealthCheck, event, given, seed, settings
from hypothesis import strategies as st
from schema_strategy import from_schema

from provision.catalog import load_catalog
from provision.clouds.base import get_adapter
from provision.spec.errors import BudgetError, SpecError
from provision.spec.loading import load_spec
from provision.spec.models import ClusterSpec
from provision.spec.secrets import decoded

EXAMPLES = int(os.environ.get("PROVISION_FUZZ_EXAMPLES", "1000"))
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc)

HOSTILE_STRINGS = [
    "",
    " ",
    "x" * 5000,
    "$(touch /tmp/pwned)",
    "`id`",
    "a; rm -rf /",
    "a\nExecStartPre=/bin/sh -c 'touch /tmp/p'",
    "'\"\\",
    "\x00",
    "\r\nKEYS\r\n",
    "\u202e\u200b\u2028",
    "../../etc/passwd",
    "{{ 7*7 }}",
    "%s%n%x",
    "NaN",
    "-1",
    "1e400",
    "9" * 400,
    "🚀" * 20,
    "Ｈ１００",
    CANARY_PRIVATE_KEY,
    CANARY_BODY_LINE,
    CANARY_TOKEN,
]
HOSTILE_VALUES = st.one_of(
    st.sampled_from(HOSTILE_STRINGS),
    st.text(max_size=60),
    st.sampled_from([None, True, -1, 0, 2**63, -(2**70), 1e308, float("nan"), float("inf"), [], {}, [[[]]], {"a": {}}]),
)


@cache
def _catalog_values() -> dict[str, st.SearchStrategy[Any]]:
    cat = load_catalog()
    offers = cat.instances_for(None, None, None)
    regions = sorted({r for o in offers for r in o.regions})
    return {
        "region": st.sampled_from(regions),
        "gpu": st.sampled_from(sorted({o.gpu for o in offers})),
        "instance_type": st.sampled_from(sorted({o.instance_type for o in offers})),
    }


def _leaves(doc: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(doc, dict) and doc:
        return [p for k, v in doc.items() for p in _leaves(v, (*path, k))] + [path]
    if isinstance(doc, list) and doc:
        return [p for i, v in enumerate(doc) for p in _leaves(v, (*path, i))] + [path]
    return [path]


def _replace(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(doc, dict):
        return {**doc, head: _replace(doc[head], rest, value)}
    out = list(doc)
    out[head] = _replace(out[head], rest, value)
    return out


@cache
def _shipped_specs() -> list[dict[str, Any]]:
    from conftest import ROOT

    from provision.spec.loading import read_yaml, spec_data_from_document

    paths = sorted((ROOT / "stacks").glob("Pulumi.*.yaml"))
    return [spec_data_from_document(read_yaml(p), str(p)) for p in paths]


@cache
def _strategies() -> tuple[st.SearchStrategy[Any], dict[str, st.SearchStrategy[Any]]]:
    """The whole spec, and each top-level field on its own, from the JSON Schema."""
    schema = ClusterSpec.model_json_schema()
    fields = {k: from_schema(schema, _catalog_values(), k) for k in schema["properties"]}
    return from_schema(schema, _catalog_values()), fields


@st.composite
def specs(draw: st.DrawFn) -> Any:
    whole, fields = _strategies()
    if draw(st.integers(0, 3)) == 0:
        base = draw(whole)  # straight from the schema (mostly refused: a random mix rarely plans)
    else:  # a shipped stack's spec with up to 3 top-level fields generated from the schema
        base = dict(draw(st.sampled_from(_shipped_specs())))
        for key in draw(st.lists(st.sampled_from(sorted(fields)), max_size=3, unique=True)):
            base[key] = draw(fields[key])
    for _ in range(draw(st.sampled_from([0, 0, 1, 2]))):  # up to 2 hostile values at random places
        leaves = _leaves(base)
        base = _replace(base, draw(st.sampled_from(leaves)), draw(HOSTILE_VALUES))
    return base


def _render(plan: Any) -> list[str]:
    """The node script the cloud's program would send, rendered from the plan (no Pulumi)."""
    import importlib

    scheduler = getattr(plan.spec, "scheduler", None)
    if getattr(scheduler, "kind", "") == "kubernetes":
        return []  # the managed node pools boot their own image; no VM user data is rendered
    return [importlib.import_module(f"provision.clouds.{plan.cloud}.userdata").render(plan)]


@pytest.mark.fuzz
@seed(20261201)
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
@given(doc=specs())
def test_load_plan_render_raise_only_spec_or_budget_errors(doc: Any) -> None:
    try:
        spec = load_spec(doc)
        plan = get_adapter(spec.cloud).plan(spec, now=NOW, owner="fuzz", stack="fuzz")
        scripts = _render(plan)
    except (SpecError, BudgetError) as e:
        event(f"refused: {type(e).__name__}")
        text = str(e) + repr(e.as_dict())
        assert leaked_canary(text) is None
        return
    event(f"rendered: {plan.cloud}")
    texts = [decoded(s) for s in scripts]  # some clouds send it gzipped and base64-encoded
    assert all(t.startswith(("#!", "#cloud-config")) for t in texts)
    assert not any(leaked_canary(t) for t in texts)
