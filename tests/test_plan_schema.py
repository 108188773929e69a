"""`provision schema --plan` publishes the JSON Schema of `provision plan --json`, and every shipped stack meets it."""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonschema
import pytest
from conftest import ROOT
from typer.testing import CliRunner

from provision.cli.app import app
from provision.clouds.base import ADAPTERS
from provision.clouds.plan_schema import plan_models
from provision.planning.plan import CloudPlan

STACKS = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in (ROOT / "stacks").glob("Pulumi.*.yaml"))
runner = CliRunner()


def run_json(*args: str) -> Any:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.stdout
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = run_json("schema", "--plan")
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.fixture(scope="module")
def docs() -> dict[str, Any]:
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(ROOT)
        return {stack: run_json("plan", stack, "--json") for stack in STACKS}


@pytest.mark.parametrize("stack", STACKS)
def test_plan_json_of_every_shipped_stack_meets_the_published_schema(
    stack: str, docs: dict[str, Any], validator: jsonschema.Draft202012Validator
) -> None:
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(docs[stack])]
    assert errors == []


def test_schema_holds_each_clouds_extra_to_its_own_model(
    docs: dict[str, Any], validator: jsonschema.Draft202012Validator
) -> None:
    aws = docs["aws-p5-ci"]
    assert validator.is_valid(aws)
    unknown = copy.deepcopy(aws)
    unknown["extra"]["market"]["spot_price"] = "1.0"  # a renamed or new field must show in the schema
    assert not validator.is_valid(unknown)
    missing = copy.deepcopy(aws)
    del missing["extra"]["fsx"]
    assert not validator.is_valid(missing)
    foreign = {**aws, "extra": docs["gcp-a3-ci"]["extra"]}  # another cloud's decisions under cloud: aws
    assert not validator.is_valid(foreign)
    assert not validator.is_valid({**aws, "scheduler": {"kind": "slurm"}})


def test_every_registered_cloud_names_its_plan_model() -> None:
    models = plan_models()
    assert set(models) == set(ADAPTERS)
    assert all(issubclass(m, CloudPlan) for m in models.values())
