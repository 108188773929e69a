"""`provision preview`: the real program under the mocked cloud, printed as a tree or one JSON document."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner, Result

from provision.cli.app import app

STACKS = sorted(
    p.name[len("Pulumi.") : -len(".yaml")] for p in (Path(__file__).parent.parent / "stacks").glob("Pulumi.*.yaml")
)


@pytest.fixture(scope="module")
def preview_json() -> Callable[[str], Result]:
    """``provision preview STACK --json`` of a shipped stack, run once per stack in this module: the four 64-GPU
    stacks' own test and the every-stack test read the same run (its result is never changed)."""
    runs: dict[str, Result] = {}

    def run(stack: str) -> Result:
        if stack not in runs:
            runs[stack] = CliRunner().invoke(app, ["preview", stack, "--json"])
        return runs[stack]

    return run


@pytest.mark.parametrize("stack", ["gcp-a3-64", "aws-p5-64", "azure-ndh100-64", "alibaba-gn8-64"])
def test_preview_json_lists_every_resource_with_engine_inputs_and_the_contract_outputs(
    preview_json: Callable[[str], Result], stack: str
) -> None:
    result = preview_json(stack)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)  # exactly one JSON document
    assert set(doc) >= {"plan", "resources", "outputs"}
    assert doc["plan"]["nodes"] == 8 and doc["plan"]["gpus"] == 64
    types = {r["type"] for r in doc["resources"]}
    assert all(":" in t for t in types)  # Pulumi type tokens
    assert all(isinstance(r["inputs"], dict) and r["name"].startswith(doc["plan"]["name"]) for r in doc["resources"])
    outputs = doc["outputs"]
    for key in (
        "hostfile",
        "head_node",
        "ssh_config",
        "nccl_env",
        "fabric",
        "shared_fs",
        "expires_at",
        "hourly_usd",
        "fabric_manifest",
    ):
        assert key in outputs, key
    hosts = outputs["hostfile"].splitlines()
    assert len(hosts) == 8 and all(line.endswith("slots=8") for line in hosts)
    assert outputs["head_node"] == hosts[0].split()[0]
    assert outputs["shared_fs"]["mount_command"].startswith("sudo mkdir -p")


def test_every_stack_file_previews_offline(preview_json: Callable[[str], Result]) -> None:
    for stack in STACKS:
        result = preview_json(stack)
        assert result.exit_code == 0, (stack, result.output[-2000:])
        assert json.loads(result.stdout)["resources"], stack


def test_preview_of_a_bad_spec_exits_2_and_registers_nothing(tmp_path: Path) -> None:
    spec = yaml.safe_load((Path(__file__).parent.parent / "stacks" / "Pulumi.gcp-a3-64.yaml").read_text())
    cluster = spec["config"]["provision:cluster"]
    cluster["gpus"] = 60
    cluster["storage"]["shared"]["size_gib"] = 1000
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(spec))
    result = CliRunner().invoke(app, ["preview", str(path), "--json"])
    assert result.exit_code == 2
    doc = json.loads(result.stdout)
    assert {p["path"] for p in doc["problems"]} == {"gpus", "storage.shared.size_gib"}
    assert "resources" not in doc


def test_preview_tree_names_the_resources() -> None:
    result = CliRunner().invoke(app, ["preview", "gcp-a3-ci"])
    assert result.exit_code == 0, result.output
    assert "gcp:compute/instanceGroupManager:InstanceGroupManager" in result.stdout
    assert "hostfile" in result.stdout and "Traceback" not in result.output
