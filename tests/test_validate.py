"""Shape and catalog problems of one spec reported together."""

from __future__ import annotations

import pytest

from provision.clouds.validate import load_and_plan, salvage
from provision.spec.errors import BudgetError, SpecError

BASE = {"name": "llm-train", "cloud": "aws", "region": "us-east-1", "gpu": "H100", "gpus": 64}


def _paths(err: pytest.ExceptionInfo[SpecError]) -> set[str]:
    return {p.path for p in err.value.problems}


def test_a_shape_mistake_and_a_catalog_mistake_come_in_one_error() -> None:
    spec = {**BASE, "name": "LLM_train", "gpus": 12, "fabrik": "efa"}
    with pytest.raises(SpecError) as err:
        load_and_plan(spec)
    assert _paths(err) == {"name", "fabrik", "gpus"}
    gpus = next(p for p in err.value.problems if p.path == "gpus")
    assert "multiple of 8" in gpus.rule


def test_a_catalog_problem_about_a_field_that_failed_its_shape_is_not_repeated() -> None:
    spec = {**BASE, "storage": {"shared": {"kind": "fsx-lustre", "size_gib": "lots"}}}
    with pytest.raises(SpecError) as err:
        load_and_plan(spec)
    assert [p.path for p in err.value.problems] == ["storage.shared.size_gib"]


def test_without_cloud_or_region_only_the_shape_problems_are_reported() -> None:
    spec = {**BASE, "cloud": "gpc", "gpus": 12}
    with pytest.raises(SpecError) as err:
        load_and_plan(spec)
    assert _paths(err) == {"cloud"}


def test_a_budget_refusal_of_the_salvaged_spec_does_not_hide_the_shape_problems() -> None:
    spec = {**BASE, "name": "Bad Name", "lifetime": {"ttl": "24h", "max_cost_usd": 10}}
    with pytest.raises(SpecError) as err:
        load_and_plan(spec)
    assert _paths(err) == {"name"}


def test_a_valid_spec_plans_and_budget_errors_still_apply() -> None:
    assert load_and_plan(BASE).nodes == 8
    with pytest.raises(BudgetError):
        load_and_plan({**BASE, "lifetime": {"ttl": "24h", "max_cost_usd": 100}})


def test_salvage_drops_failed_fields_and_stands_in_for_a_bad_name() -> None:
    from provision.spec.errors import Problem

    spec = salvage({**BASE, "name": "X", "fabrik": "efa"}, [Problem("name", "X", "r"), Problem("fabrik", "efa", "r")])
    assert spec is not None and spec.name == "salvaged-spec" and spec.gpus == 64
    assert salvage({**BASE, "region": 5}, [Problem("region", 5, "r")]) is None
