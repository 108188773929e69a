"""The cost cap holds for types the catalog cannot price: a contract price below any catalog price of that
GPU is refused in capped and ephemeral runs, unless the operator confirms it outside the spec."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ROOT, isolated_home
from typer.testing import CliRunner

from provision.cli.app import app

runner = CliRunner()
CONFIRM_PRICE_ENV = "PROVISION_CONFIRM_HOURLY_PRICE_USD"


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolated_home(tmp_path, monkeypatch)


def _spec(tmp_path: Path, price: float, **lifetime: Any) -> Path:
    """The Alibaba CI cluster (ecs.ebmgn8v.48xlarge, sales-only: no catalog price) at ``price`` per node-hour."""
    doc = yaml.safe_load((ROOT / "stacks" / "Pulumi.alibaba-gn8-ci.yaml").read_text())["config"]["provision:cluster"]
    doc["lifetime"] = {**doc["lifetime"], "hourly_price_usd": price, **lifetime}
    path = tmp_path / "ali.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def test_run_with_an_unpriced_type_at_one_cent_an_hour_is_refused_before_anything_exists(tmp_path: Path) -> None:
    result = runner.invoke(app, ["run", str(_spec(tmp_path, 0.01)), "--mock", "--", "true"])
    assert result.exit_code == 3, result.output
    assert "lifetime.hourly_price_usd" in result.output and CONFIRM_PRICE_ENV in result.output
    assert "bringing up" not in result.output.lower()
    listed = runner.invoke(app, ["list", "--mock", "--json"])
    assert "alibaba-gn8-ci" not in listed.stdout


def test_the_floor_is_the_cheapest_catalog_price_of_any_gpu_when_this_one_has_none() -> None:
    from provision.planning.cost import cheapest_gpu_hour

    assert cheapest_gpu_hour("H20") is None  # sales-only everywhere in the catalog
    any_gpu = cheapest_gpu_hour(None)
    assert any_gpu is not None and any_gpu[0] * 8 > 0.01


def test_a_realistic_contract_price_or_an_operator_confirmation_is_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert runner.invoke(app, ["plan", str(_spec(tmp_path, 30.0))]).exit_code == 0
    low = _spec(tmp_path, 0.01)
    assert runner.invoke(app, ["plan", str(low)]).exit_code == 3
    monkeypatch.setenv(CONFIRM_PRICE_ENV, "0.02")  # confirms another figure: still refused
    assert runner.invoke(app, ["plan", str(low)]).exit_code == 3
    monkeypatch.setenv(CONFIRM_PRICE_ENV, "0.01")
    assert runner.invoke(app, ["plan", str(low)]).exit_code == 0
