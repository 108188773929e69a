"""`size --write-spec` for any run size: the spec it writes is one `provision plan` accepts (the options very large
runs need are written, with why), or `size` writes nothing and exits 2 naming the limit and its fix.

Very large runs used to write specs `plan` refused: over 1,000 nodes in one all-or-nothing EC2 Fleet, over 100 VMs
in one Azure InfiniBand island, over the 4,092 addresses of GCP's default /20 subnets, and a cost cap over the spec's
10,000,000 USD typo guard; the header comment also broke the YAML with a multi-line note.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from provision.cli.app import app

#: Flags whose problems are limits of the sizing or of the written spec, each with its fix.
LIMIT_PATHS = ("--write-spec", "--cloud", "--deadline-days", "--gpus", "--params", "--tokens")


def _size(tmp: Path, params: str, tokens: str, cloud: str, *extra: str):
    path = tmp / "spec.yaml"
    path.unlink(missing_ok=True)
    args = ["size", "--params", params, "--tokens", tokens, "--cloud", cloud, "--write-spec", str(path), "--json"]
    return CliRunner().invoke(app, [*args, *extra]), path


def _plans(path: Path) -> dict:
    planned = CliRunner().invoke(app, ["plan", str(path), "--json"])
    assert planned.exit_code == 0, planned.output
    return json.loads(planned.stdout)


@pytest.mark.parametrize(
    ("cloud", "option", "value"),
    [
        ("aws", "allocation", "asg"),
        ("azure", "split_islands", True),
        ("gcp", "gpu_subnet_prefix", 19),
    ],
)
def test_a_6804_node_run_writes_the_options_its_cloud_needs_and_plans(
    cloud: str, option: str, value: object, tmp_path: Path
) -> None:
    sized, path = _size(tmp_path, "405B", "15T", cloud, "--deadline-days", "20")

    assert sized.exit_code == 0, sized.output
    text = path.read_text()
    spec = yaml.safe_load(text)  # the header's notes stay comments: the file is YAML
    assert spec[cloud][option] == value
    assert f"{cloud}.{option}" in text.split("\nname:")[0]  # the header says why
    plan = _plans(path)
    assert plan["nodes"] == 6804
    if cloud == "gcp":
        assert spec["gcp"]["host_subnet_cidr"] == "10.0.0.0/19"
    assert "max_cost_usd" not in spec["lifetime"]  # above the 10,000,000 USD guard: left out, and said so
    assert "above the 10,000,000 USD" in text


def test_a_run_the_written_spec_cannot_hold_writes_nothing_and_names_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When no option makes `plan` accept the spec, size refuses with plan's own problem and fix (exit 2)."""
    from provision.clouds.aws.adapter import AwsAdapter

    monkeypatch.setattr(AwsAdapter, "sized_options", lambda self, nodes: ({}, ()))
    sized, path = _size(tmp_path, "405B", "15T", "aws", "--deadline-days", "20")

    assert sized.exit_code == 2, sized.output
    (problem,) = json.loads(sized.stdout)["problems"]
    assert problem["path"] == "--write-spec (nodes)"
    assert "1000" in problem["rule"] and "EC2 Fleet" in problem["rule"] and "aws.allocation: asg" in problem["fix"]
    assert not path.exists()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    params=st.sampled_from(["1B", "7B", "13B", "70B", "175B", "405B", "1T"]),
    tokens=st.sampled_from(["20B", "300B", "2T", "15T", "30T"]),
    deadline=st.sampled_from(["1", "3", "7", "20", "30", "90"]),
    cloud=st.sampled_from(["aws", "gcp", "azure"]),
    gpu=st.sampled_from(["H100", "A100-80GB", "H200", "B200"]),
)
def test_every_written_spec_plans_or_size_names_the_limit(
    tmp_path: Path, params: str, tokens: str, deadline: str, cloud: str, gpu: str
) -> None:
    sized, path = _size(tmp_path, params, tokens, cloud, "--deadline-days", deadline, "--gpu", gpu)

    if sized.exit_code == 0:
        doc = json.loads(sized.stdout)
        option = next(o for o in doc["clouds"] if o["cloud"] == cloud)
        plan = _plans(path)
        assert (plan["instance_type"], plan["gpus"]) == (option["instance_type"], option["gpus"])
    else:
        assert sized.exit_code == 2, sized.output
        assert "Traceback" not in sized.output
        problems = json.loads(sized.stdout)["problems"]
        assert problems
        for p in problems:
            assert p["path"].startswith(LIMIT_PATHS), p
            assert p["rule"] and p["fix"], p
        assert not path.exists()
