"""`provision plan` prices an attached volume beside the cluster (not in it) and shows an object-store link."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from provision.cli.app import app
from tests.conftest import stack_spec


@pytest.fixture(autouse=True)
def _own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROVISION_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "200")


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout + (result.stderr if result.stderr_bytes is not None else "")


def _file(tmp_path: Path, name: str, shared: dict[str, Any] | None) -> str:
    data = stack_spec("aws-p5-ci").model_dump(mode="json", exclude_none=True)
    data["name"] = name
    if shared is None:
        data["storage"].pop("shared", None)
    else:
        data["storage"]["shared"] = shared
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def test_plan_prices_the_attached_volume_beside_the_cluster(tmp_path: Path) -> None:
    vol = tmp_path / "vol.yaml"
    vol.write_text(
        yaml.safe_dump({"name": "big", "cloud": "aws", "region": "us-east-1", "kind": "fsx-lustre", "size_gib": 4800})
    )
    assert _cli("volume", "create", str(vol), "--mock")[0] == 0
    [row] = json.loads(_cli("volume", "list", "--mock", "--json")[1])
    volume_hourly = row["hourly_usd"]
    assert volume_hourly > 0

    code, out = _cli("plan", _file(tmp_path, "att", {"volume": "big", "mount": "/data"}), "--json")
    assert code == 0, out
    attached = json.loads(out)
    code, out = _cli("plan", _file(tmp_path, "bare", None), "--json")
    bare = json.loads(out)
    # The volume's own stack bills it: the cluster's hourly cost (and its cap) is the cluster's alone ...
    assert attached["cost"]["hourly_usd"] == bare["cost"]["hourly_usd"]
    # ... and the plan has the volume's filesystem and price.
    storage = attached["storage"]
    assert (storage["volume"], storage["kind"], storage["size_gib"]) == ("big", "fsx-lustre", 4800)
    assert storage["hourly_usd"] == pytest.approx(volume_hourly, abs=0.01)

    code, out = _cli("plan", _file(tmp_path, "att", {"volume": "big", "mount": "/data"}))
    assert code == 0, out
    monthly = f"~${volume_hourly * 730:,.0f}/month"
    assert "volume big: fsx-lustre" in out and monthly in out
    assert f"(+ volume big ${volume_hourly:,.2f}/h)" in out


def test_plan_shows_the_object_store_link_and_what_bills_it(tmp_path: Path) -> None:
    shared = {
        "kind": "fsx-lustre",
        "tier": "SCRATCH_2",
        "size_gib": 1200,
        "object_store": {"uri": "s3://my-data/llm", "import_path": "/data"},
    }
    code, out = _cli("plan", _file(tmp_path, "linked", shared))
    assert code == 0, out
    assert "object store link" in out and "s3://my-data/llm: $0.00/h for the link itself" in out
