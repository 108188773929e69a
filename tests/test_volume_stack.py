"""A volume is its own Pulumi stack: its cloud's program (AWS: VPC, subnet, FSx group and FSx) under the strict mocked
cloud, or through the Automation API without --mock; attaching clusters read its recorded outputs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import run_cli as _cli

from tests.conftest import stack_spec

VOLUME = {"name": "llm-data", "cloud": "aws", "region": "us-east-1", "kind": "fsx-lustre", "size_gib": 2400}


@pytest.fixture(autouse=True)
def _own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROVISION_HOME", str(tmp_path / "home"))


def _create(tmp_path: Path, volume: dict[str, Any], *flags: str) -> tuple[int, str]:
    path = tmp_path / "vol.yaml"
    path.write_text(yaml.safe_dump(volume))
    return _cli("volume", "create", str(path), *flags)


def test_aws_volume_stack_is_the_program_and_its_outputs_name_its_resources(tmp_path: Path) -> None:
    from provision.engine.mockstate import MockStore

    code, out = _create(tmp_path, VOLUME, "--mock")
    assert code == 0, out
    state = MockStore().load("vol-llm-data")
    assert state is not None
    by_type = {r.type: r for r in state.resources}
    vpc, group = by_type["aws:ec2/vpc:Vpc"], by_type["aws:ec2/securityGroup:SecurityGroup"]
    fs = by_type["aws:fsx/lustreFileSystem:LustreFileSystem"]
    table = by_type["aws:ec2/routeTable:RouteTable"]
    assert fs.inputs["storageCapacity"] == 2400 and fs.inputs["deploymentType"] == state.outputs["tier"]
    assert state.outputs["filesystem_id"] == fs.id
    assert state.outputs["network"] == {
        "vpc_id": vpc.id,
        "cidr": "10.250.0.0/16",
        "route_table_id": table.id,
        "security_group_id": group.id,
    }
    assert state.outputs["mount_source"].startswith(f"{fs.id}.fsx.us-east-1.amazonaws.com@tcp:/")
    # An attaching cluster peers with exactly that VPC and opens exactly that group.
    data = stack_spec("aws-p5-ci").model_dump(mode="json", exclude_none=True)
    data["storage"]["shared"] = {"volume": "llm-data"}
    spec_file = tmp_path / "c.yaml"
    spec_file.write_text(yaml.safe_dump(data))
    code, out = _cli("up", str(spec_file), "--mock", "--yes")
    assert code == 0, out
    cluster = MockStore().load("aws-p5-ci")
    [peering] = [r for r in cluster.resources if r.type == "aws:ec2/vpcPeeringConnection:VpcPeeringConnection"]
    assert peering.inputs["peerVpcId"] == vpc.id


def test_volume_program_has_no_unchecked_leaf() -> None:
    from provision.engine.volumerun import run_volume_mock
    from provision.spec.volume import load_volume_spec

    run = run_volume_mock(load_volume_spec(VOLUME), "SCRATCH_2", {}, accounting=True)
    assert run.resources
    assert [leaf for leaf in run.accounting if leaf.status == "unchecked"] == []


def test_a_size_fsx_does_not_sell_is_refused_first_and_the_strict_cloud_refuses_it_too(tmp_path: Path) -> None:
    from provision.clouds.mocking import CloudFaultError
    from provision.engine.volumerun import run_volume_mock
    from provision.spec.volume import load_volume_spec

    code, out = _create(tmp_path, {**VOLUME, "size_gib": 1000}, "--mock")
    flat = " ".join(out.split())
    assert code == 2 and "size_gib: 1000 is a size no fsx-lustre tier sells" in flat and "1200, 2400" in flat
    assert "Traceback" not in out
    with pytest.raises(CloudFaultError, match="storageCapacity"):
        run_volume_mock(load_volume_spec({**VOLUME, "size_gib": 1000}), "SCRATCH_2", {})
    code, listing = _cli("volume", "list", "--mock", "--json")
    assert json.loads(listing) == []


def test_without_mock_clouds_without_a_program_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Every cloud has a volume program now; a cloud without one (as GCP was) is refused with the reason.
    monkeypatch.setattr("provision.engine.volumerun.PROGRAMS", ("aws",))
    volume = {"name": "gdata", "cloud": "gcp", "region": "us-central1", "kind": "filestore", "size_gib": 2560}
    code, out = _create(tmp_path, volume)
    assert code == 2 and "volume create on gcp" in out and "only so far" in out


def test_without_mock_create_runs_the_stack_through_the_automation_api(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from provision.engine import automation

    calls: list[Any] = []

    class Out:
        def __init__(self, value: Any) -> None:
            self.value = value

    class FakeWorkspace:
        def remove_stack(self, name: str) -> None:
            calls.append(("rm", name))

    class FakeStack:
        workspace = FakeWorkspace()

        def set_config(self, key: str, value: Any) -> None:
            calls.append(("config", key, value.value))

        def up(self, program: Any, color: str) -> Any:
            calls.append(("up", callable(program)))
            return type("R", (), {"outputs": {"kind": Out("volume"), "volume": Out("llm-data")}})()

        def outputs(self) -> dict[str, Any]:
            return {}  # a new stack

        def destroy(self, color: str) -> None:
            calls.append(("destroy",))

    def open_stack(name: str, program: Any, *, root: Any, command: Any = None, create: bool = True) -> Any:
        calls.append(("open", name, create))
        return FakeStack()

    monkeypatch.setattr(automation, "open_stack", open_stack)
    code, out = _create(tmp_path, VOLUME)
    assert code == 0, out
    assert calls == [("open", "vol-llm-data", True), ("config", "aws:region", "us-east-1"), ("up", True)]
    # delete without --mock (it first lists the backend's stacks for clusters using it): tests/test_volume_real.py
