"""docs/contracts.md says what the code does: each of its tables against the code that defines the contract."""

from __future__ import annotations

import re
from typing import Any

import pytest
from conftest import FIXED_NOW, ROOT, stack_spec

from provision.spec import errors

DOC = (ROOT / "docs" / "contracts.md").read_text(encoding="utf-8")


def table(heading: str) -> list[list[str]]:
    """The rows (cells, without the header) of the first table after ``heading``."""
    start = DOC.index(f"\n{heading}\n")
    rows = []
    for line in DOC[start:].splitlines()[2:]:
        if line.startswith("|"):
            rows.append([cell.strip() for cell in line.strip("|").split("|")])
        elif rows:
            break
    return rows[2:]  # without the header and its |---| line


def names(heading: str) -> list[str]:
    """The first column's `name` of each row."""
    return [re.fullmatch(r"`([^`]+)`", row[0]).group(1) for row in table(heading)]  # type: ignore[union-attr]


@pytest.fixture(scope="module")
def plan() -> Any:
    from provision.clouds.base import get_adapter

    spec = stack_spec("aws-p5-ci")
    return get_adapter(spec.cloud).plan(spec, now=FIXED_NOW, stack="aws-p5-ci")


def test_plan_keys(plan: Any) -> None:
    assert names("### `provision plan`") == list(plan.summary())


def test_preview_keys(plan: Any) -> None:
    from provision.engine.mockrun import PreviewResult

    assert names("### `provision preview`") == list(PreviewResult(plan, [], {}).as_dict())


def test_offer_row_keys() -> None:
    from provision.catalog import load_catalog
    from provision.cli.offers import _type_row

    offer = load_catalog().instances[0]
    assert names("### `provision offers`") == list(_type_row(offer, None))


def test_error_document_keys() -> None:
    assert names("### Errors") == list(errors.ProvisionError("x").as_dict())


def test_output_names() -> None:
    from provision.planning.outputs import OUTPUT_NAMES

    assert names("## Stack outputs") == list(OUTPUT_NAMES)


def test_exit_codes_name_every_error_class_under_its_code() -> None:
    from provision.cli.common import EXIT_INTERRUPTED

    rows = {int(name): row for name, row in zip(names("## Exit codes"), table("## Exit codes"), strict=True)}
    classes, todo = [], [errors.ProvisionError]
    while todo:
        cls = todo.pop()
        classes.append(cls)
        todo.extend(cls.__subclasses__())
    # The error classes of provision.spec.errors (other modules' subclasses share their parents' codes).
    public = [c for c in classes if c.__module__ == errors.__name__ and not c.__name__.startswith("_")]
    assert len(public) == 7
    for cls in public:
        assert f"`{cls.__name__}`" in rows[cls.exit_code][2], (cls.__name__, cls.exit_code)
    assert "`KeyboardInterrupt`" in rows[EXIT_INTERRUPTED][2]
    assert sorted(rows) == [0, 1, 2, 3, EXIT_INTERRUPTED]
