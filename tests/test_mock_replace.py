"""Honest ``--mock`` diffs: a change a real cloud applies by replacing a resource says "replace", with the field
that forces it, and a change that replaces GPU nodes is warned about before ``up``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ROOT, isolated_home, stack_spec

from provision.clouds.replacement import force_new, node_replacement_warnings, replacing_keys
from provision.engine.mockrun import run_mock
from provision.engine.mockstate import MockResource, diff_resources

GOLDEN = ROOT / "tests" / "golden"


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolated_home(tmp_path, monkeypatch)


def _grown(stack: str, gpus: int):  # noqa: ANN202
    spec = stack_spec(stack)
    lifetime = spec.lifetime.model_copy(update={"max_cost_usd": None}) if spec.lifetime else None
    return spec.model_copy(update={"gpus": gpus, "lifetime": lifetime})


def test_growing_an_aws_cluster_from_64_to_80_gpus_replaces_the_fleet() -> None:
    first = run_mock(stack_spec("aws-p5-64"), "grow", None)
    second = run_mock(_grown("aws-p5-64", 80), "grow", first.state)
    fleet = [s for s in second.changes if s.type == "aws:ec2/fleet:Fleet"]
    assert [s.op for s in fleet] == ["replace"]
    assert "targetCapacitySpecification.totalTargetCapacity" in fleet[0].keys
    assert not [s for s in second.changes if s.op == "update" and s.type == "aws:ec2/fleet:Fleet"]
    (warning,) = node_replacement_warnings(second.changes)
    assert "aws:ec2/fleet:Fleet" in warning and "deleted" in warning


def test_the_mock_preview_warns_before_up_that_gpu_nodes_are_replaced() -> None:
    from provision.ops.cluster import Cluster

    Cluster(stack_spec("aws-p5-64"), stack="grow", mock=True, display="none").up()
    result = Cluster(_grown("aws-p5-64", 80), stack="grow", mock=True, display="none").preview()
    assert result.changes.get("replace") == 1
    assert "1 to replace" in result.summary()
    assert any("aws:ec2/fleet:Fleet" in w and "replaced" in w for w in result.warnings)


def test_a_provider_force_new_field_replaces_and_an_updatable_one_updates() -> None:
    fsx = "aws:fsx/lustreFileSystem:LustreFileSystem"
    old = [MockResource(fsx, "fs", {"deploymentType": "PERSISTENT_2", "storageCapacity": 1200}, "fs-1")]
    grown = [MockResource(fsx, "fs", {"deploymentType": "PERSISTENT_2", "storageCapacity": 2400}, "fs-1")]
    moved = [MockResource(fsx, "fs", {"deploymentType": "PERSISTENT_1", "storageCapacity": 1200}, "fs-1")]
    assert [(s.op, s.keys) for s in diff_resources(old, grown)] == [("update", ("storageCapacity",))]
    assert [(s.op, s.keys) for s in diff_resources(old, moved)] == [("replace", ("deploymentType",))]
    assert "terraform-provider-aws" in force_new(fsx).source  # type: ignore[union-attr]


def test_replace_on_changes_paths_match_nested_keys_and_list_items() -> None:
    keys = ["launchTemplateConfigs[0].launchTemplateSpecification.version", "tags.team"]
    assert replacing_keys("aws:ec2/fleet:Fleet", keys, ["launchTemplateConfigs"]) == (keys[0],)
    assert replacing_keys("gcp:compute/regionInstanceTemplate:RegionInstanceTemplate", ["labels.x"]) == ("labels.x",)


def test_every_resource_type_the_shipped_stacks_register_has_its_force_new_fields_listed() -> None:
    types = set()
    for path in GOLDEN.glob("*.json"):
        types |= {r["type"] for r in json.loads(path.read_text()).get("resources", [])}
    cloud_types = {t for t in types if t.split(":", 1)[0] in ("aws", "gcp", "azure-native", "alicloud")}
    missing = sorted(t for t in cloud_types if force_new(t) is None)
    assert not missing, f"no force-new fields (with their source) for {missing}"
