"""The Python API and the lifecycle commands in mock mode: no Pulumi CLI, no credentials.

``Cluster(..., mock=True)`` runs the real program under the mocked cloud and keeps state in
``$PROVISION_HOME/mock`` (a temporary folder here).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, isolated_home, stack_spec
from typer.testing import CliRunner

from provision.cli.app import app
from provision.ops.cluster import Cluster
from provision.spec.errors import CloudError, SpecError

STACK = "gcp-a3-64"


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = isolated_home(tmp_path, monkeypatch)
    return home


def _state_file(home: Path, stack: str = STACK) -> Path:
    return home / "mock" / f"{stack}.json"


# ---------------------------------------------------------------------- building a Cluster


def test_a_cluster_comes_from_a_stack_a_spec_a_mapping_or_a_file(tmp_path: Path) -> None:
    spec = stack_spec(STACK)
    by_stack = Cluster(STACK, mock=True)
    assert (by_stack.stack, by_stack.spec) == (STACK, spec)
    assert Cluster.from_stack(STACK, mock=True).spec == spec
    assert Cluster.from_spec(spec, stack="mine", mock=True).stack == "mine"
    data = spec.model_dump(mode="json", exclude_none=True)
    assert Cluster(data, mock=True).stack == spec.name
    spec_file = tmp_path / "cluster.yaml"
    spec_file.write_text(yaml.safe_dump(data))
    assert Cluster(spec_file, mock=True).stack == spec.name
    assert Cluster(str(ROOT / "stacks" / f"Pulumi.{STACK}.yaml"), mock=True).stack == STACK


def test_bad_targets_and_stack_names_are_spec_errors() -> None:
    with pytest.raises(SpecError) as err:
        Cluster("no-such-stack", mock=True)
    assert err.value.problems[0].path == "target"
    with pytest.raises(SpecError) as err:
        Cluster(STACK, stack="bad name!", mock=True)
    assert err.value.problems[0].path == "stack"
    with pytest.raises(SpecError):
        Cluster(42, mock=True)  # type: ignore[arg-type]


def test_plan_and_nccl_env_need_nothing_to_exist(home: Path) -> None:
    cluster = Cluster(STACK, mock=True, display="none")
    plan = cluster.plan()
    assert plan.gpus == 64 and plan.nodes == 8
    assert cluster.nccl_env == plan.nccl_env
    assert cluster.cost.created_at is None and cluster.cost.spent_usd in (0.0, None)
    assert cluster.outputs == {} and not _state_file(home).exists()
    with pytest.raises(CloudError, match="not up"):
        cluster.ssh_config()


# ---------------------------------------------------------------------- the lifecycle


def test_mock_lifecycle_up_status_outputs_noop_diff_down(home: Path) -> None:
    cluster = Cluster(STACK, mock=True, display="none")
    assert cluster.status()["state"] == "none"

    first = cluster.up()
    assert first is not None and first.mock and first.changes.get("create", 0) > 3 and first.changed == len(first.steps)
    state = json.loads(_state_file(home).read_text())
    assert {"spec_hash", "resources", "outputs", "created_at"} <= set(state)
    assert all({"type", "name", "inputs", "id"} <= set(r) for r in state["resources"])

    status = cluster.status()
    assert status["state"] == "up" and len(status["resources"]) == len(state["resources"])
    assert status["created_at"] == state["created_at"] and status["hourly_usd"] == cluster.plan().cost.hourly_usd

    fresh = Cluster(STACK, mock=True, display="none")  # another process would see the same
    assert len(fresh.hosts) == 8 and fresh.hosts == state["outputs"]["hosts"]
    assert fresh.hostfile().splitlines() == [f"{ip} slots=8" for ip in fresh.hosts]
    assert f"Host {cluster.spec.name}-7" in fresh.ssh_config()
    assert fresh.nccl_env and fresh.cost.created_at is not None

    again = cluster.up()
    assert again is not None and again.changed == 0 and again.steps == []

    spec = cluster.spec
    changed = Cluster.from_spec(spec.model_copy(update={"tags": {"team": "infra"}}), stack=STACK, mock=True)
    changed.display = "none"
    preview = changed.preview()
    assert preview.operation == "preview" and preview.changes.get("update", 0) >= 1
    assert {s.op for s in preview.steps} <= {"update", "replace"} and all(s.keys for s in preview.steps)
    # An instance template is immutable: new labels make a new template (the provider's ForceNew), nothing else.
    replaced = [s.type for s in preview.steps if s.op == "replace"]
    assert replaced == ["gcp:compute/regionInstanceTemplate:RegionInstanceTemplate"]
    assert json.loads(_state_file(home).read_text())["spec_hash"] == state["spec_hash"]  # a preview writes nothing
    applied = changed.up()
    assert applied is not None and applied.changes.get("update") == preview.changes.get("update")
    assert json.loads(_state_file(home).read_text())["created_at"] == state["created_at"]

    gone = cluster.down()
    assert gone is not None and gone.changes == {"delete": len(state["resources"])}
    assert not _state_file(home).exists()
    after = cluster.status()
    assert after["state"] == "none" and after["resources"] == [] and after["created_at"] is None
    assert cluster.outputs == {}
    assert cluster.down().changed == 0  # type: ignore[union-attr]


def test_repr_shows_cloud_shape_state_cost_and_expiry(home: Path) -> None:
    cluster = Cluster(STACK, mock=True, display="none")
    text = repr(cluster)
    plan = cluster.plan()
    for part in (plan.cloud, "8 x", f"64 x {plan.offer.gpu}", plan.fabric, "state none", "/h", "expires"):
        assert part in text, (part, text)
    cluster.up()
    assert "state up" in repr(cluster) and "so far" in repr(cluster)
    html = cluster._repr_html_()
    assert "<table>" in html and "GPUs" in html and "expires" in html
    cluster.down()


def test_ephemeral_tears_down_on_error_and_on_ctrl_c(home: Path) -> None:
    cluster = Cluster(STACK, mock=True, display="none")
    with pytest.raises(RuntimeError), cluster.ephemeral() as c:
        assert _state_file(home).exists() and c.hosts
        raise RuntimeError("training failed")
    assert not _state_file(home).exists()
    with pytest.raises(KeyboardInterrupt), cluster.ephemeral():
        raise KeyboardInterrupt
    assert not _state_file(home).exists()


def test_ephemeral_turns_sigterm_into_teardown(home: Path) -> None:
    cluster = Cluster(STACK, mock=True, display="none")
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt), cluster.ephemeral():
        os.kill(os.getpid(), signal.SIGTERM)
    assert not _state_file(home).exists()
    assert signal.getsignal(signal.SIGTERM) == before


def test_ephemeral_with_an_invalid_spec_creates_nothing_and_tears_nothing_down(home: Path) -> None:
    data = stack_spec(STACK).model_dump(mode="json", exclude_none=True)
    data["lifetime"] = {"ttl": "6h", "max_cost_usd": 1}
    cluster = Cluster(data, mock=True, display="none")
    with pytest.raises(Exception) as err, cluster.ephemeral():
        pytest.fail("the block must not run")
    assert type(err.value).__name__ == "BudgetError"
    assert not (home / "mock").exists() or not list((home / "mock").iterdir())


def test_up_inside_a_running_event_loop_does_not_hang(home: Path) -> None:
    async def notebook_cell() -> object:
        await asyncio.sleep(0)
        return Cluster(STACK, mock=True, display="none").up()

    signal.alarm(120)  # a hang fails the test instead of the suite
    try:
        result = asyncio.run(notebook_cell())
    finally:
        signal.alarm(0)
    assert result is not None and result.changed > 0  # type: ignore[attr-defined]


# ---------------------------------------------------------------------- the command line


def test_cli_up_status_outputs_down_with_mock(home: Path) -> None:
    runner = CliRunner()
    up = runner.invoke(app, ["up", STACK, "--mock", "--yes", "--json"])
    assert up.exit_code == 0, up.output
    doc = json.loads(up.stdout)
    assert doc["mock"] and doc["changes"]["create"] > 3 and len(doc["outputs"]["hosts"]) == 8

    status = json.loads(runner.invoke(app, ["status", STACK, "--mock", "--json"]).stdout)
    assert status["state"] == "up" and len(status["resources"]) == doc["changes"]["create"]

    outputs = json.loads(runner.invoke(app, ["outputs", STACK, "--mock", "--json"]).stdout)
    assert outputs["hostfile"] == doc["outputs"]["hostfile"]

    again = json.loads(runner.invoke(app, ["up", STACK, "--mock", "--yes", "--json"]).stdout)
    assert again["steps"] == [] and set(again["changes"]) == {"same"}

    text = runner.invoke(app, ["status", STACK, "--mock"])
    assert text.exit_code == 0 and "resources" in text.stdout and "so far" in text.stdout

    down = runner.invoke(app, ["down", STACK, "--mock", "--yes"])
    assert down.exit_code == 0 and "deleted" in down.stdout
    assert "nothing exists" in runner.invoke(app, ["status", STACK, "--mock"]).stdout
    missing = runner.invoke(app, ["outputs", STACK, "--mock", "--json"])
    assert missing.exit_code == 1 and json.loads(missing.stdout)["error"] == "CloudError"


def test_cli_json_without_yes_is_refused_with_exit_2(home: Path) -> None:
    for command in ("up", "down"):
        res = CliRunner().invoke(app, [command, STACK, "--mock", "--json"])
        assert res.exit_code == 2
        doc = json.loads(res.stdout)
        assert doc["problems"][0]["path"] == "--yes" and "--yes" in doc["problems"][0]["fix"]
    assert not _state_file(home).exists()


def test_cli_up_shows_the_plan_and_asks_first(home: Path) -> None:
    res = CliRunner().invoke(app, ["up", STACK, "--mock"], input="n\n")
    assert res.exit_code == 1
    assert "hourly" in res.stdout and "to create" in res.stdout and "aborted" in res.output
    assert not _state_file(home).exists()
    res = CliRunner().invoke(app, ["up", STACK, "--mock"], input="y\n")
    assert res.exit_code == 0 and _state_file(home).exists() and "hostfile" in res.stdout
    res = CliRunner().invoke(app, ["down", STACK, "--mock"], input="n\n")
    assert res.exit_code == 1 and _state_file(home).exists()
    res = CliRunner().invoke(app, ["down", STACK, "--mock"], input="y\n")
    assert res.exit_code == 0 and not _state_file(home).exists()


def test_cli_bad_target_exits_2(home: Path) -> None:
    res = CliRunner().invoke(app, ["status", "no-such-stack", "--mock", "--json"])
    assert res.exit_code == 2 and json.loads(res.stdout)["problems"][0]["path"] == "target"


def test_shell_up_status_down_with_mock_in_one_subprocess(home: Path) -> None:
    cli = f"{sys.executable} -m provision.cli"
    script = f"{cli} up {STACK} --mock --yes && {cli} status {STACK} --mock && {cli} down {STACK} --mock --yes"
    env = {**os.environ, "PROVISION_HOME": str(home), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(["bash", "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "hostfile" in done.stdout and "resources" in done.stdout and "deleted" in done.stdout
    assert "Traceback" not in done.stderr
    assert not _state_file(home).exists()


def test_sigterm_during_teardown_is_ignored_so_the_teardown_finishes() -> None:
    from provision.ops.signals import sigterm_as_interrupt

    with sigterm_as_interrupt() as signals:
        signals.tearing_down = True
        os.kill(os.getpid(), signal.SIGTERM)  # would raise KeyboardInterrupt before teardown began


def test_a_mocked_capacity_fault_fails_up_keeps_what_was_created_and_down_removes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from provision.engine.mockstate import MockStore
    from provision.spec.errors import CapacityError
    from provision.testing import Fault

    monkeypatch.setenv("PROVISION_HOME", str(tmp_path / "home"))
    fault = Fault(code="InsufficientInstanceCapacity", type_token="aws:ec2/fleet:Fleet")
    cluster = Cluster("aws-p5-16", mock=True, faults=[fault], display="none")
    with pytest.raises(CapacityError) as err:
        cluster.up()
    assert "InsufficientInstanceCapacity" in str(err.value)
    state = MockStore().load("aws-p5-16")
    assert state is not None and state.resources  # the VPC, groups and template created before the fleet
    assert not any(r.type == "aws:ec2/fleet:Fleet" for r in state.resources)
    assert cluster.status()["state"] == "up"
    cluster.down()
    assert MockStore().load("aws-p5-16") is None


def test_faults_need_the_mocked_cloud() -> None:
    from provision.spec.errors import UnsupportedError
    from provision.testing import Fault

    with pytest.raises(UnsupportedError):
        Cluster("aws-p5-16", faults=[Fault(code="X", index=0)])
