"""A real ``down`` (the Automation API, a fake Pulumi CLI) of an AWS cluster keeping its FSx (``retain: true``):
the cluster stack is destroyed, then a volume stack ``vol-<name>`` adopts the retained FSx, VPC, subnet and
security group with ``import_`` and their recorded inputs, run here under the strict mocked cloud holding the
cluster's resources (an import of another id, or of other inputs, fails as Pulumi fails it); ``volume list`` (real,
faked backend) lists it."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, isolated_home, stack_spec
from pulumi import automation as auto
from test_volume_real import VolumePulumi, _cli

from provision.engine import automation
from provision.engine.mockrun import run_program
from provision.ops import volume_adopt
from provision.ops.cluster import Cluster
from provision.spec.models import ClusterSpec

NOW = datetime(2026, 12, 1, tzinfo=timezone.utc)
FSX = "aws:fsx/lustreFileSystem:LustreFileSystem"


class ExportPulumi(VolumePulumi):
    """The volume fake plus `stack export` of the cluster's state (the mocked run's resources, with
    ``retainOnDelete`` as the engine records it) and, at `up` of a volume stack, the outputs a hook computes."""

    def __init__(self, deployments: dict[str, dict[str, Any]]) -> None:
        super().__init__()
        self.deployments = deployments
        self.on_up: dict[str, Any] = {}

    def run(self, args, cwd, additional_env, on_output=None, on_error=None):  # type: ignore[no-untyped-def]
        a = [x for x in args if x != "--non-interactive"]
        stack = a[a.index("--stack") + 1] if "--stack" in a else ""
        if a[:2] == ["stack", "export"] and stack in self.deployments:
            self.calls.append(a)
            return auto.CommandResult(json.dumps({"version": 3, "deployment": self.deployments[stack]}), "", 0)
        if a[:2] == ["config", "set"]:
            self.calls.append(a)
            self.files.setdefault(stack, {})[a[2]] = a[-1]
            return auto.CommandResult("", "", 0)
        if a[0] == "destroy" and stack in self.deployments:
            self.outputs.pop(stack, None)
        result = super().run(args, cwd, additional_env, on_output, on_error)
        if a[0] == "up" and stack in self.on_up:
            self.outputs[stack] = self.on_up[stack]()
            self.state[stack] = [("pulumi:providers:aws", "default")]
        return result


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolated_home(tmp_path, monkeypatch)


#: A retained own filesystem per cloud and kind.
SHARED = {
    "aws": {"kind": "fsx-lustre", "tier": "PERSISTENT_2", "size_gib": 4800},
    "filestore": {"kind": "filestore", "tier": "BASIC_SSD", "size_gib": 2560},
    "managed-lustre": {"kind": "managed-lustre", "tier": "500", "size_gib": 18000},
}


def keeper(shared: str = "aws") -> ClusterSpec:
    data = stack_spec("aws-p5-ci" if shared == "aws" else "gcp-a3-ci").model_dump(mode="json", exclude_none=True)
    data["name"] = "keeper"
    data["storage"]["shared"] = {**SHARED[shared], "retain": True}
    return ClusterSpec.model_validate(data)


def deployment(run: Any) -> dict[str, Any]:
    """The cluster stack's state as `pulumi stack export` gives it."""
    return {
        "resources": [
            {
                "urn": r.urn or f"urn:pulumi:keeper::provision::{r.type}::{r.name}",
                "type": r.type,
                "custom": r.custom,
                **({"id": r.id} if r.custom else {}),
                "inputs": r.inputs,
                "outputs": r.outputs,
                **({"retainOnDelete": True} if r.retain_on_delete else {}),
            }
            for r in run.resources
        ]
    }


@pytest.fixture
def cluster_run() -> Any:
    return run_program(keeper(), stack="keeper", now=NOW)


def _setup(
    monkeypatch: pytest.MonkeyPatch, cluster_run: Any, taken: tuple[str, ...] = ()
) -> tuple[ExportPulumi, list[Any]]:
    fake = ExportPulumi({"keeper": deployment(cluster_run)})
    fake.add("keeper", json.loads(json.dumps(cluster_run.outputs, default=str)))
    fake.state["keeper"] = [(r.type, r.name) for r in cluster_run.resources if r.custom]
    for stack in taken:
        fake.add(stack, {"kind": "volume", "volume": stack.removeprefix("vol-")})
    monkeypatch.setattr(automation, "pulumi_command", lambda: fake)
    monkeypatch.chdir(ROOT)
    runs: list[Any] = []
    real_program = volume_adopt.adopt_program

    def spy(retained: Any, name: str, now: Any) -> Any:
        # The volume stack's `up` runs this program: here under the strict mocked cloud that holds the cluster's
        # resources, its outputs becoming the fake stack's.
        def up() -> dict[str, Any]:
            # A second `up` of the stack finds the resources imported by the first in its state.
            in_state = tuple(k["id"] for k in retained.kept) if runs else ()
            run = volume_adopt.run_adopt_mock(retained, name, list(cluster_run.resources), NOW, in_state)
            runs.append(run)
            return json.loads(json.dumps(run.outputs, default=str))

        fake.on_up[f"vol-{name}"] = up
        return real_program(retained, name, now)

    monkeypatch.setattr(volume_adopt, "adopt_program", spy)
    return fake, runs


def test_real_down_destroys_the_cluster_then_a_volume_stack_imports_the_retained_resources(
    monkeypatch: pytest.MonkeyPatch, cluster_run: Any
) -> None:
    fake, runs = _setup(monkeypatch, cluster_run)
    result = Cluster(keeper().model_dump(mode="json", exclude_none=True), root=ROOT, pulumi_command=fake,
                     display="none").down()  # fmt: skip
    assert result is not None
    ops = [(c[0], c[c.index("--stack") + 1]) for c in fake.calls if c[0] in ("up", "destroy") and "--stack" in c]
    assert ops == [("destroy", "keeper"), ("up", "vol-keeper"), ("up", "vol-keeper")]
    assert fake.files["vol-keeper"] == {"aws:region": keeper().region}
    kept = {(r.type, r.id) for r in cluster_run.resources if r.retain_on_delete}
    assert {t for t, _ in kept} == {
        "aws:ec2/vpc:Vpc",
        "aws:ec2/subnet:Subnet",
        "aws:ec2/securityGroup:SecurityGroup",
        FSX,
    }
    run, retag = runs
    # Each retained resource imported by its id, its declared inputs those the cluster's stack recorded (the
    # strict mocked cloud refuses an import whose inputs differ).
    assert {(r.type, r.imported) for r in run.resources if r.imported} == kept
    by_id = {r.id: r for r in cluster_run.resources}
    for r in run.resources:
        if r.imported:
            assert r.inputs == by_id[r.imported].inputs
    fs = cluster_run.one(FSX)
    out = run.outputs
    assert out["kind"] == "volume" and out["volume"] == "keeper" and out["filesystem_id"] == fs.id
    assert out["mount_source"] == cluster_run.outputs["shared_fs"]["source"]
    assert out["network"]["vpc_id"] == cluster_run.one("aws:ec2/vpc:Vpc").id
    [group] = [r for r in cluster_run.of_type("aws:ec2/securityGroup:SecurityGroup") if r.name.endswith("-fsx-sg")]
    assert out["network"]["security_group_id"] == group.id
    assert out["network"]["cidr"] == cluster_run.one("aws:ec2/vpc:Vpc").inputs["cidrBlock"]
    [subnet] = [r for r in cluster_run.of_type("aws:ec2/subnet:Subnet") if r.name.endswith("-private")]
    assert out["zone"] == subnet.inputs["availabilityZone"] == cluster_run.outputs["zone"]
    # A route table of the volume's own for the subnet (the cluster's went with it), not a cluster resource.
    assert out["network"]["route_table_id"] not in {r.id for r in cluster_run.resources}
    assert any(f"filesystem {fs.id} is now volume keeper" in w for w in result.warnings), result.warnings
    # The second `up` retags them as the volume's: the cluster's expiry (what `provision reap` deletes by) gone.
    for r in retag.resources:
        if r.custom and "tags" in r.inputs:
            tags = r.inputs["tags"]
            assert "provision-expires-at" not in tags and tags["provision-volume"] == "keeper", (r.name, tags)
            assert "provision-cluster" not in tags and tags["team"] == "ci"
    assert {(r.type, r.imported) for r in retag.resources if r.imported} == kept
    code, text = _cli("volume", "list", "--json")
    assert code == 0, text
    [row] = [v for v in json.loads(text) if v["name"] == "keeper"]
    assert row["filesystem_id"] == fs.id


def test_the_volume_name_takes_the_next_suffix_when_taken(monkeypatch: pytest.MonkeyPatch, cluster_run: Any) -> None:
    fake, runs = _setup(monkeypatch, cluster_run, taken=("vol-keeper",))
    result = Cluster(keeper().model_dump(mode="json", exclude_none=True), root=ROOT, pulumi_command=fake,
                     display="none").down()  # fmt: skip
    assert result is not None and runs and runs[0].outputs["volume"] == "keeper-2"
    assert ("up", "vol-keeper-2") in [(c[0], c[c.index("--stack") + 1]) for c in fake.calls if "--stack" in c]


def test_an_import_whose_inputs_differ_from_the_cluster_resources_is_refused(cluster_run: Any) -> None:
    from provision.clouds.mocking import CloudFaultError

    resources = list(cluster_run.resources)
    retained = volume_adopt.Retained(
        "aws", keeper().region, "keeper", volume_adopt.kept_resources(deployment(cluster_run)), {}, {}
    )
    retained.filesystem = next(k for k in retained.kept if k["type"] == FSX)
    # The cloud's VPC has other tags than the state recorded: Pulumi refuses the import.
    vpc = next(k for k in retained.kept if k["type"] == "aws:ec2/vpc:Vpc")
    vpc["inputs"] = {**vpc["inputs"], "tags": {**vpc["inputs"]["tags"], "Name": "renamed"}}
    with pytest.raises(Exception) as e:
        volume_adopt.run_adopt_mock(retained, "keeper", resources, NOW)
    assert "inputs to import do not match the existing resource" in str(e.value) and "tags" in str(e.value)
    assert isinstance(e.value, CloudFaultError) or "ImportMismatch" in str(e.value)


def test_a_cloud_not_adopting_yet_keeps_the_filesystem_and_says_so(
    monkeypatch: pytest.MonkeyPatch, cluster_run: Any
) -> None:
    fake, runs = _setup(monkeypatch, cluster_run)
    monkeypatch.setattr(volume_adopt, "ADOPTING", {})
    result = Cluster(keeper().model_dump(mode="json", exclude_none=True), root=ROOT, pulumi_command=fake,
                     display="none").down()  # fmt: skip
    fs = cluster_run.one(FSX)
    assert result is not None and not runs and not [c for c in fake.calls if c[0] == "up"]
    assert any(fs.id in w and "not a volume yet" in w for w in result.warnings), result.warnings


@pytest.mark.parametrize("shared", ["filestore", "managed-lustre"])
def test_real_down_on_gcp_imports_the_host_vpc_its_service_range_and_the_filesystem(
    monkeypatch: pytest.MonkeyPatch, shared: str
) -> None:
    cluster_run = run_program(keeper(shared), stack="keeper", now=NOW)
    fake, runs = _setup(monkeypatch, cluster_run)
    result = Cluster(keeper(shared).model_dump(mode="json", exclude_none=True), root=ROOT, pulumi_command=fake,
                     display="none").down()  # fmt: skip
    ops = [(c[0], c[c.index("--stack") + 1]) for c in fake.calls if c[0] in ("up", "destroy") and "--stack" in c]
    assert ops == [("destroy", "keeper"), ("up", "vol-keeper"), ("up", "vol-keeper")]
    assert fake.files["vol-keeper"] == {"gcp:region": keeper(shared).region}
    kept = {(r.type, r.id) for r in cluster_run.resources if r.retain_on_delete}
    assert "gcp:compute/network:Network" in {t for t, _ in kept}
    run, retag = runs
    assert {(r.type, r.imported) for r in run.resources if r.imported} == kept
    labelled = [r for r in retag.resources if r.custom and "labels" in r.inputs]
    assert labelled and all(
        "provision-expires-at" not in r.inputs["labels"] and r.inputs["labels"]["provision-volume"] == "keeper"
        for r in labelled
    )
    assert not [r for r in run.resources if r.custom and not r.imported]  # nothing new: all of it existed
    out = run.outputs
    [fs] = [r for r in cluster_run.resources if r.retain_on_delete and r.type.endswith("/instance:Instance")]
    [vpc] = [r for r in cluster_run.of_type("gcp:compute/network:Network") if r.retain_on_delete]
    out = retag.outputs
    assert out["filesystem_id"] == fs.id and out["mount_source"] == cluster_run.outputs["shared_fs"]["source"]
    assert out["network"]["network_id"] == vpc.id and out["network"]["project"] and out["network"]["self_link"]
    assert out["network"]["service_range"] and out["zone"] == keeper(shared).zone
    assert result is not None and any(f"filesystem {fs.id} is now volume keeper" in w for w in result.warnings)
    # What an attaching GCP cluster checks of the volume's outputs: nothing missing.
    from provision.ops.volume_network import network_problems

    other = keeper(shared).model_copy(update={"name": "reuser"})
    missing = [p for p in network_problems(other, "keeper", {**out, "filesystem": shared}) if "records no" in str(p)]
    assert missing == []


def test_a_filesystem_in_a_network_the_cluster_did_not_make_is_kept_and_not_adopted(cluster_run: Any) -> None:
    kept = [k for k in volume_adopt.kept_resources(deployment(cluster_run)) if k["type"] != "aws:ec2/vpc:Vpc"]
    fs = next(k for k in kept if k["type"] == FSX)
    retained = volume_adopt.Retained("aws", keeper().region, "keeper", kept, fs, {})
    text = volume_adopt.adopt_after_down(retained, None, ROOT, None)  # no stack is touched
    assert f"filesystem {fs['id']} stays in the cloud but is not a volume" in text and "aws:ec2/vpc:Vpc" in text


def test_a_stack_export_that_fails_does_not_stop_the_teardown(
    monkeypatch: pytest.MonkeyPatch, cluster_run: Any
) -> None:
    """Making a volume of the retained filesystem is never a reason not to tear down: a refused export is a
    warning, and the cluster's stack is destroyed as before."""
    from provision.spec.errors import CloudError

    fake, runs = _setup(monkeypatch, cluster_run)

    def refused(spec: Any, stack: Any) -> None:
        raise CloudError("the backend refused `pulumi stack export`")

    monkeypatch.setattr(volume_adopt, "read_retained", refused)
    result = Cluster(keeper().model_dump(mode="json", exclude_none=True), root=ROOT, pulumi_command=fake,
                     display="none").down()  # fmt: skip
    ops = [(c[0], c[c.index("--stack") + 1]) for c in fake.calls if c[0] in ("up", "destroy") and "--stack" in c]
    assert ops == [("destroy", "keeper")] and not runs
    assert any("was not made a volume" in w and "stack export" in w for w in result.warnings), result.warnings
