"""Clusters known to the state, by stack or cluster name, in real mode (a fake Pulumi CLI) and under mocks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, isolated_home, stack_spec
from test_automation import ListingPulumi

from provision.ops.cluster import Cluster
from provision.ops.inventory import find_cluster, list_clusters
from provision.spec.errors import SpecError


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolated_home(tmp_path, monkeypatch)


def test_a_real_cluster_is_found_by_its_cluster_name_from_the_recorded_spec(tmp_path: Path) -> None:
    fake = ListingPulumi()
    Cluster("gcp-a3-64", root=ROOT, pulumi_command=fake, display="none").up()
    records = list_clusters(mock=False, root=ROOT, command=fake)
    assert [(r.stack, r.name, r.mock) for r in records] == [("gcp-a3-64", "llm-train", False)]
    assert records[0].spec == stack_spec("gcp-a3-64").model_dump(mode="json", exclude_none=True)
    assert records[0].created_at is not None
    again = Cluster("llm-train", root=ROOT, pulumi_command=fake, display="none")
    assert again.stack == "gcp-a3-64" and again.spec == stack_spec("gcp-a3-64")
    again.down()
    assert list_clusters(mock=False, root=ROOT, command=fake) == []


def test_mock_names_resolve_and_ambiguous_names_are_refused(tmp_path: Path) -> None:
    spec: dict[str, Any] = stack_spec("aws-p5-16").model_dump(mode="json", exclude_none=True)
    Cluster(spec, stack="one", mock=True, display="none").up()
    Cluster(spec, stack="two", mock=True, display="none").up()
    assert find_cluster("one", mock=True) is not None and find_cluster("nope", mock=True) is None
    with pytest.raises(SpecError) as e:
        Cluster("aws-p5-16-x", mock=True)  # neither a file, a stack nor a cluster
    assert e.value.problems[0].path == "target"
    with pytest.raises(SpecError) as e:
        find_cluster("aws-p5-16", mock=True)
    assert "one, two" in e.value.problems[0].rule
    assert Cluster("two", mock=True).stack == "two"
