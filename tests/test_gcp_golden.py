"""Golden resource graphs of every GCP stack (regenerate with PROVISION_UPDATE_GOLDEN=1, review the diff)."""

from __future__ import annotations

import pytest
from conftest import assert_golden, golden_graph, shipped_preview

GCP_STACKS = ["gcp-a3-64", "gcp-a3high-16", "gcp-a3ultra-64", "gcp-a3-ci", "gcp-a3-16-slurm"]


@pytest.mark.parametrize("stack", GCP_STACKS)
def test_gcp_stack_matches_its_golden_graph(stack: str) -> None:
    assert_golden(stack, golden_graph(shipped_preview(stack, stack=stack)))


def test_headline_stack_is_eight_mega_nodes_with_managed_lustre() -> None:
    r = shipped_preview("gcp-a3-64", stack="gcp-a3-64")
    assert r.plan.instance_type == "a3-megagpu-8g" and r.plan.nodes == 8 and r.plan.gpus == 64
    assert r.one("gcp:lustre/instance:Instance").inputs["capacityGib"] == "36000"
    assert len(r.outputs["hosts"]) == 8
    assert r.plan.spec.gcp is not None and r.plan.spec.gcp.project == "my-ml-project"


def test_stack_files_set_the_gcp_project_consistently() -> None:
    import yaml
    from conftest import ROOT

    for stack in GCP_STACKS:
        cfg = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())["config"]
        assert cfg["gcp:project"] == cfg["provision:cluster"]["gcp"]["project"], stack
        assert cfg["gcp:region"] == cfg["provision:cluster"]["region"], stack
