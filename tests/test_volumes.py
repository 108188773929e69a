"""Volumes under --mock: created on their own, attached by clusters in turn, kept by retain, refused delete."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import mock_volumes as volumes
from conftest import run_cli as cli

from tests.conftest import stack_spec


@pytest.fixture(autouse=True)
def _own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test its own mocked cloud: volumes and clusters of other tests are not seen."""
    monkeypatch.setenv("PROVISION_HOME", str(tmp_path / "home"))


VOLUME = {
    "name": "llm-data",
    "cloud": "aws",
    "region": "us-east-1",
    "kind": "fsx-lustre",
    "size_gib": 1200,
    "lifetime": "30d",
    "tags": {"team": "ml"},
}


def cluster_file(tmp_path: Path, name: str, shared: dict[str, Any]) -> str:
    data = stack_spec("aws-p5-ci").model_dump(mode="json", exclude_none=True)
    data["name"] = name
    data["storage"]["shared"] = shared
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def fs_resources(stack: str) -> list[Any]:
    from provision.engine.mockstate import MockStore
    from provision.ops.volumes import FILESYSTEM_TYPES

    state = MockStore().load(stack)
    assert state is not None
    return [r for r in state.resources if r.type in FILESYSTEM_TYPES.values()]


def test_volume_attached_by_two_clusters_in_turn_outlives_them(tmp_path: Path) -> None:
    spec = tmp_path / "vol.yaml"
    spec.write_text(yaml.safe_dump(VOLUME))
    assert cli("volume", "create", str(spec), "--mock")[0] == 0
    for name in ("first", "second"):
        path = cluster_file(tmp_path, name, {"volume": "llm-data", "mount": "/data"})
        code, out = cli("up", path, "--mock", "--yes")
        assert code == 0, out
        assert fs_resources(name) == []  # the cluster creates no filesystem of its own
        code, out = cli("outputs", name, "--mock", "--json")
        outputs = json.loads(out)
        assert outputs["volume"] == "llm-data"
        assert outputs["shared_fs"]["mount_point"] == "/data"
        assert volumes()["llm-data"]["used_by"] == [name]
        code, out = cli("volume", "delete", "llm-data", "--mock")
        assert code == 2 and "attached by cluster" in out and name in out
        assert cli("down", name, "--mock", "--yes")[0] == 0
    listed = volumes()["llm-data"]
    assert listed["used_by"] == [] and listed["tags"] == {"team": "ml"} and listed["lifetime_until"]
    assert listed["tier"] and listed["hourly_usd"] > 0  # priced from the catalog (FSx for Lustre, 1200 GiB)
    code, out = cli("list", "--mock", "--json")
    assert json.loads(out)["clusters"] == []  # a volume is not a cluster
    assert cli("volume", "delete", "llm-data", "--mock")[0] == 0
    assert volumes() == {}


def test_retained_filesystem_becomes_a_volume_at_down_and_is_attached_by_name(tmp_path: Path) -> None:
    own = cluster_file(
        tmp_path, "keeper", {"kind": "fsx-lustre", "tier": "SCRATCH_2", "size_gib": 1200, "retain": True}
    )
    assert cli("up", own, "--mock", "--yes")[0] == 0
    [fs] = fs_resources("keeper")
    code, out = cli("down", "keeper", "--mock", "--yes")
    assert code == 0, out
    kept = volumes()["keeper"]
    assert kept["filesystem_id"] == fs.id and kept["filesystem"] == "fsx-lustre" and kept["zone"]
    # Priced like a created volume: its catalog tier at its size (FSx SCRATCH_2, 1200 GiB).
    from provision.catalog import load_catalog
    from provision.planning.cost import storage_hourly_usd

    [offer] = [o for o in load_catalog().filesystems_for("aws", "fsx-lustre") if o.tier == "SCRATCH_2"]
    assert kept["tier"] == "SCRATCH_2"
    expected = storage_hourly_usd(offer, 1200, None, "us-east-1")
    assert expected and kept["hourly_usd"] == pytest.approx(expected, abs=1e-4)
    assert fs_resources("vol-keeper") == [fs]
    path = cluster_file(tmp_path, "reuser", {"volume": "keeper"})
    code, out = cli("up", path, "--mock", "--yes")  # the kept VPC is 10.0.0.0/16, like the new cluster's default
    assert code == 2 and "aws.vpc_cidr" in out and "overlaps volume keeper's network 10.0.0.0/16" in out, out
    data = yaml.safe_load(Path(path).read_text())
    data["aws"] = {**data.get("aws", {}), "vpc_cidr": "10.1.0.0/16"}
    Path(path).write_text(yaml.safe_dump(data))
    code, out = cli("up", path, "--mock", "--yes")
    assert code == 0, out
    outputs = json.loads(cli("outputs", "reuser", "--mock", "--json")[1])
    assert outputs["volume_filesystem_id"] == fs.id
    assert fs.id in outputs["shared_fs"]["source"]


def test_not_retained_filesystem_is_deleted_with_the_cluster(tmp_path: Path) -> None:
    own = cluster_file(tmp_path, "plain", {"kind": "fsx-lustre", "tier": "SCRATCH_2", "size_gib": 1200})
    assert cli("up", own, "--mock", "--yes")[0] == 0
    assert cli("down", "plain", "--mock", "--yes")[0] == 0
    assert volumes() == {}


def test_attach_refused_before_anything_exists(tmp_path: Path) -> None:
    spec = tmp_path / "vol.yaml"
    spec.write_text(yaml.safe_dump({**VOLUME, "zone": "us-east-1f", "region": "us-east-1"}))
    assert cli("volume", "create", str(spec), "--mock")[0] == 0
    code, out = cli("up", cluster_file(tmp_path, "missing", {"volume": "nope"}), "--mock", "--yes")
    assert code == 2 and "storage.shared.volume" in out and "names no volume" in out
    code, out = cli("up", cluster_file(tmp_path, "far", {"volume": "llm-data"}), "--mock", "--yes")
    assert code == 2 and "cannot mount it" in out and "us-east-1f" in out
    assert json.loads(cli("list", "--mock", "--json")[1])["clusters"] == []


def test_volume_spec_problems_all_at_once(tmp_path: Path) -> None:
    spec = tmp_path / "vol.yaml"
    spec.write_text(yaml.safe_dump({**VOLUME, "name": "Bad_Name", "kind": "amlfs", "size_gib": 0}))
    code, out = cli("volume", "create", str(spec), "--mock")
    assert code == 2
    assert "name" in out and "is not a aws filesystem" in out and "size_gib" in out
    assert cli("volume", "create", str(tmp_path / "vol.yaml"))[0] == 2  # not under --mock: refused


def test_volume_name_taken_and_unknown_delete(tmp_path: Path) -> None:
    spec = tmp_path / "vol.yaml"
    spec.write_text(yaml.safe_dump(VOLUME))
    assert cli("volume", "create", str(spec), "--mock")[0] == 0
    code, out = cli("volume", "create", str(spec), "--mock")
    assert code == 2 and "names a volume that exists" in out
    code, out = cli("volume", "delete", "other", "--mock")
    assert code == 2 and "names no volume" in out


def test_a_volume_on_a_scratch_tier_is_created_with_a_warning(tmp_path: Path) -> None:
    """A volume is data meant to outlive clusters: a tier keeping one copy is said so at create."""
    spec = tmp_path / "vol.yaml"
    spec.write_text(yaml.safe_dump(VOLUME))
    code, out = cli("volume", "create", str(spec), "--mock")
    flat = " ".join(out.split())
    assert code == 0 and volumes()["llm-data"]["tier"] == "SCRATCH_2"
    assert "warning: tier SCRATCH_2 is a scratch tier: not replicated" in flat and "throughput_mbps_per_tib" in flat
