"""Ephemeral CI clusters: bounded, priced before launch, unique per run, always torn down.

Mock mode runs the real program under the mocked cloud with state in a temporary
``PROVISION_HOME``; real mode runs against the automation tests' fake Pulumi CLI.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, isolated_home, stack_spec
from test_automation import FakePulumi

from provision.clouds.base import plan_spec
from provision.engine.mockstate import MockStore
from provision.ops import ephemeral
from provision.ops.cluster import Cluster
from provision.ops.ephemeral import cleanup, ephemeral_cluster, require_bounds, unique_names, with_overrides
from provision.ops.targets import check_stack_name
from provision.spec import NAME_PATTERN, load_spec
from provision.spec.errors import BudgetError, CloudError, SpecError, UnsupportedError

STACK = "aws-p5-ci"
FLEET = "aws:ec2/fleet:Fleet"
LOCKED = "error: the stack is currently locked by 1 lock(s). Either wait or delete the lock file with `pulumi cancel`."


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = isolated_home(tmp_path, monkeypatch)
    for var in (*ephemeral.RUN_ID_VARS, "GITHUB_RUN_ATTEMPT"):  # our own CI sets these
        monkeypatch.delenv(var, raising=False)
    return home


def _nothing_exists(home: Path) -> bool:
    mock = list((home / "mock").glob("*.json")) if (home / "mock").exists() else []
    ledger = list((home / "ephemeral").glob("*.json")) if (home / "ephemeral").exists() else []
    return not mock and not ledger


def _spec_data(stack: str = STACK, **lifetime: Any) -> dict[str, Any]:
    data = stack_spec(stack).model_dump(mode="json", exclude_none=True)
    data["lifetime"] = lifetime
    return data


class StackFake(FakePulumi):
    """The automation tests' fake CLI, plus `stack rm` and `cancel`."""

    def run(self, args, cwd, additional_env, on_output=None, on_error=None):  # type: ignore[no-untyped-def]
        from pulumi import automation as auto

        a = [x for x in args if x != "--non-interactive"]
        if a[:2] == ["stack", "rm"] or a[:1] == ["cancel"]:
            self.calls.append(a)
            if a[0] == "stack":
                self.stacks.discard(a[-1])
                self.files.pop(a[-1], None)
            return auto.CommandResult("", "", 0)
        return super().run(args, cwd, additional_env, on_output, on_error)


def _ops(fake: FakePulumi) -> list[str]:
    return [" ".join(a[:2]) if a[0] in ("stack", "config") else a[0] for a in fake.calls]


# ---------------------------------------------------------------------- the lifecycle (mock)


def test_cluster_is_up_inside_the_block_and_gone_after(home: Path) -> None:
    with ephemeral_cluster(STACK, mock=True, display="none") as c:
        assert c.status()["state"] == "up"
        hosts = [line.split()[0] for line in c.hostfile().splitlines()]
        assert len(hosts) == 2 and all(re.fullmatch(r"\d+\.\d+\.\d+\.\d+", ip) for ip in hosts)
        assert MockStore().load(c.stack) is not None
        assert json.loads((home / "ephemeral" / f"{c.stack}.json").read_text())["stack"] == c.stack
    assert MockStore().load(c.stack) is None and c.status()["state"] == "none"
    assert _nothing_exists(home)


def test_an_exception_in_the_block_tears_down_and_propagates(home: Path) -> None:
    with pytest.raises(RuntimeError, match="training failed"), ephemeral_cluster(STACK, mock=True, display="none"):
        assert list((home / "mock").glob("*.json"))
        raise RuntimeError("training failed")
    assert _nothing_exists(home)


def test_ctrl_c_in_the_block_tears_down(home: Path) -> None:
    with pytest.raises(KeyboardInterrupt), ephemeral_cluster(STACK, mock=True, display="none"):
        raise KeyboardInterrupt
    assert _nothing_exists(home)


def test_sigterm_in_the_block_tears_down_and_propagates_as_keyboard_interrupt(home: Path) -> None:
    before = signal.getsignal(signal.SIGTERM)
    torn_down = []
    with pytest.raises(KeyboardInterrupt), ephemeral_cluster(STACK, mock=True, display="none") as c:
        stack = c.stack
        original = c.down
        c.down = lambda yes=True: torn_down.append(original(yes)) or torn_down[-1]  # type: ignore[method-assign]
        os.kill(os.getpid(), signal.SIGTERM)
        pytest.fail("SIGTERM must interrupt the block")
    assert torn_down and torn_down[0] is not None and torn_down[0].operation == "destroy"
    assert MockStore().load(stack) is None and _nothing_exists(home)
    assert signal.getsignal(signal.SIGTERM) == before


def test_an_up_that_fails_half_way_destroys_what_it_created(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fleet fails with a capacity fault after the network, storage and template exist.

    The Pulumi engine keeps resources created before a failure in the stack's state; the
    mocked cloud's state does the same here, then the fault from the mocked cloud propagates.
    """
    from provision.engine import mockrun, mockstate
    from provision.testing import CloudFaultError, Fault, run_program

    real_run_mock, deleted = mockrun.run_mock, []

    def half_way(spec: Any, stack: str, previous: Any, now: Any = None, faults: Any = ()) -> Any:
        full = real_run_mock(spec, stack, previous, now).state
        created = [r for r in full.resources if r.type != FLEET]
        MockStore().save(dataclasses.replace(full, resources=created, outputs={}))
        run_program(spec, stack=stack, faults=[Fault("InsufficientInstanceCapacity", type_token=FLEET)])

    def destroy_steps(state: Any) -> Any:
        deleted.append(state)
        return real_destroy_steps(state)

    real_destroy_steps = mockstate.destroy_steps
    monkeypatch.setattr(mockrun, "run_mock", half_way)
    monkeypatch.setattr(mockstate, "destroy_steps", destroy_steps)
    with (
        pytest.raises(CloudFaultError, match="InsufficientInstanceCapacity"),
        ephemeral_cluster(STACK, mock=True, display="none"),
    ):
        pytest.fail("the block must not run when up failed")
    assert len(deleted) == 1 and deleted[0] is not None and len(deleted[0].resources) > 10
    assert _nothing_exists(home)


# ---------------------------------------------------------------------- bounds and price


@pytest.mark.parametrize(
    ("lifetime", "missing"),
    [
        ({}, ["lifetime.ttl", "lifetime.max_cost_usd"]),
        ({"ttl": "2h"}, ["lifetime.max_cost_usd"]),
        ({"max_cost_usd": 250}, []),  # the cap derives a lifetime, enforced in the cloud
        ({"ttl": "2h", "max_cost_usd": 250}, []),
    ],
)
def test_a_cluster_needs_both_a_lifetime_and_a_cap(lifetime: dict[str, Any], missing: list[str]) -> None:
    plan = plan_spec(load_spec(_spec_data(**lifetime)), stack="s")
    if not missing:
        require_bounds(plan)
        assert plan.expires_at is not None
        return
    with pytest.raises(BudgetError) as err:
        require_bounds(plan)
    assert err.value.exit_code == 3
    assert [p.path for p in err.value.problems] == missing
    assert all("ephemeral_cluster" in p.fix for p in err.value.problems)
    if lifetime.get("ttl"):  # the fix suggests the projected cost of the ttl as the cap
        assert "max_cost_usd=221" in err.value.problems[0].fix


def test_an_unbounded_cluster_is_refused_and_nothing_is_created(home: Path) -> None:
    with pytest.raises(BudgetError) as err, ephemeral_cluster(_spec_data(), mock=True, display="none"):
        pytest.fail("the block must not run")
    assert "lifetime.ttl" in str(err.value) and "lifetime.max_cost_usd" in str(err.value)
    assert _nothing_exists(home)


def test_over_the_cap_is_refused_before_anything_is_created(home: Path, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(BudgetError) as err, ephemeral_cluster(STACK, max_cost_usd=150, mock=True):
        pytest.fail("the block must not run")
    assert err.value.exit_code == 3
    assert err.value.problems[0].path == "lifetime.max_cost_usd" and "projected" in err.value.problems[0].rule
    assert _nothing_exists(home)
    assert "ephemeral cluster" not in capsys.readouterr().err  # refused before the launch line


def test_the_launch_line_prices_the_cluster_before_anything_exists(
    home: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = []
    monkeypatch.setattr(ephemeral.EphemeralCluster, "up", lambda self, yes=True: seen.append(capsys.readouterr().err))
    with ephemeral_cluster(STACK, mock=True, ttl="1h", display="plain"):
        pass
    assert "x p5.48xlarge" in seen[0] and "/h, capped at $250.00; expires " in seen[0]
    assert "warning:" in seen[0]  # the plan's warnings (e.g. what the AWS lifetime does not cover)


def test_overrides_make_a_new_validated_spec(home: Path) -> None:
    spec = stack_spec(STACK)
    with ephemeral_cluster(_spec_data(), ttl="90m", max_cost_usd=400, mock=True, display="none") as c:
        assert c.spec.lifetime.ttl == timedelta(minutes=90) and c.spec.lifetime.max_cost_usd == 400
        assert c.expires_at is not None
    assert spec == stack_spec(STACK)  # the original is untouched (frozen)
    with pytest.raises(SpecError) as err, ephemeral_cluster(STACK, ttl="5m", mock=True, display="none"):
        pytest.fail("the block must not run")
    assert err.value.problems[0].path == "lifetime.ttl"
    assert _nothing_exists(home)


# ---------------------------------------------------------------------- names


def test_stack_and_cluster_names_are_unique_per_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_RUN_ID", "9876543210")
    monkeypatch.setenv("GITHUB_RUN_ATTEMPT", "2")
    first, second = unique_names("aws-p5-ci"), unique_names("aws-p5-ci")
    assert first != second
    assert re.fullmatch(r"aws-p5-ci-9876543210-2-[0-9a-f]{6}", first[0])  # no doubled "-ci-ci-"
    assert first[1] == "aws-p5-ci-" + first[0][-6:]
    monkeypatch.delenv("GITHUB_RUN_ID")
    monkeypatch.setenv("CI_JOB_ID", "job 7/x")  # GitLab; odd characters are made stack-safe
    assert unique_names("gcp-ci", nonce="abc123") == ("gcp-ci-job-7-x-abc123", "gcp-ci-abc123")
    monkeypatch.delenv("CI_JOB_ID")
    assert unique_names("gcp-ci", nonce="abc123") == ("gcp-ci-abc123", "gcp-ci-abc123")
    assert unique_names("llm-train", nonce="abc123") == ("llm-train-ci-abc123", "llm-train-abc123")
    longest = "a" + "b-" * 19 + "c"  # 40 characters, the most a spec name may have
    stack, name = unique_names(longest)
    assert len(name) <= 40 and re.fullmatch(NAME_PATTERN, name) and "--" not in name
    assert check_stack_name(stack) == stack


def test_without_a_stack_the_run_gets_its_own_stack_and_cluster_name(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_RUN_ID", "555")
    with (
        ephemeral_cluster(STACK, mock=True, display="none") as a,
        ephemeral_cluster(STACK, mock=True, display="none") as b,
    ):
        assert a.stack.startswith("aws-p5-ci-555-") and b.stack.startswith("aws-p5-ci-555-")
        assert a.stack != b.stack and a.spec.name != b.spec.name
        assert a.plan().tags["provision-cluster"] == a.spec.name  # resources are told apart in the cloud too
        assert len(MockStore().stacks()) == 2
    with ephemeral_cluster(STACK, stack="mine", mock=True, display="none") as c:
        assert (c.stack, c.spec.name) == ("mine", "aws-p5-ci")
    assert _nothing_exists(home)


@pytest.mark.parametrize("stack", ["aws-p5-ci", "gcp-a3-ci", "azure-ndh100-ci", "alibaba-gn8-ci"])
def test_every_cloud_plans_the_longest_per_run_cluster_name(stack: str) -> None:
    """Names are decided in the plan (resource groups, key pairs, host names), so planning proves them."""
    longest = (stack_spec(stack).name + "-" + "x" * 40)[:40]
    run_stack, name = unique_names(longest)
    plan = plan_spec(with_overrides(stack_spec(stack), name=name), stack=run_stack)
    assert plan.name == name and len(name) == 40 and plan.tags["provision-cluster"] == name


# ---------------------------------------------------------------------- failed teardown and leftovers


def test_a_failed_teardown_names_the_stack_and_reap_and_keeps_the_record(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: Cluster) -> Any:
        raise CloudError("destroy failed: DependencyViolation", code="DependencyViolation")

    with pytest.raises(CloudError) as err, ephemeral_cluster(STACK, mock=True, display="none") as c:
        monkeypatch.setattr(Cluster, "_mock_down", broken)
    text = str(err.value)
    assert c.stack in text and "provision reap --yes --mock" in text
    assert "python -m provision.ops.ephemeral cleanup" in text
    assert err.value.code == "DependencyViolation"
    assert MockStore().load(c.stack) is not None
    monkeypatch.undo()
    monkeypatch.setenv("PROVISION_HOME", str(home))
    # The block is over, so the record is released although this process lives on.
    assert cleanup() == [{"stack": c.stack, "cluster": c.spec.name, "mock": True, "status": "deleted"}]
    assert _nothing_exists(home)


def test_cleanup_destroys_what_a_killed_run_left(home: Path, capsys: pytest.CaptureFixture) -> None:
    script = (
        "import os, signal\n"
        "from provision.ops.ephemeral import ephemeral_cluster\n"
        "with ephemeral_cluster('alibaba-gn8-ci', mock=True, display='none') as c:\n"
        "    print(c.stack, flush=True)\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    env = {**os.environ, "PROVISION_HOME": str(home)}
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]
    stack = done.stdout.strip()
    assert MockStore().load(stack) is not None  # SIGKILL: no teardown ran
    with ephemeral_cluster(STACK, mock=True, display="none") as live:
        assert ephemeral.main(["cleanup", "--json"]) == 0
        rows = {r["stack"]: r["status"] for r in json.loads(capsys.readouterr().out)["ephemeral"]}
        assert rows == {stack: "deleted", live.stack: "running"}  # a live block in this process is left alone
        assert MockStore().load(live.stack) is not None
    assert MockStore().load(stack) is None and _nothing_exists(home)
    assert ephemeral.main(["cleanup"]) == 0 and "no ephemeral clusters left over" in capsys.readouterr().out


# ---------------------------------------------------------------------- real mode (fake CLI)


def test_real_mode_copies_the_stack_files_provider_config_and_removes_the_stack_after(home: Path) -> None:
    fake = StackFake()
    with ephemeral_cluster(STACK, pulumi_command=fake, root=ROOT, display="none") as c:
        assert fake.files[c.stack]["aws:region"] == "us-east-1"  # else the provider follows AWS_REGION
        assert fake.state[c.stack] and json.loads(fake.files[c.stack]["provision:cluster"])["name"] == c.spec.name
        assert fake.tags[c.stack]["provision-cluster"] == c.spec.name
    ops = _ops(fake)
    assert ops.index("config set-all") < ops.index("up") < ops.index("destroy") < ops.index("stack rm")
    assert c.stack not in fake.stacks and _nothing_exists(home)


def test_real_mode_from_a_spec_sets_the_providers_region_from_the_spec(home: Path) -> None:
    fake = StackFake()
    with ephemeral_cluster(stack_spec(STACK), pulumi_command=fake, root=ROOT, display="none") as c:
        assert fake.files[c.stack]["aws:region"] == "us-east-1"
    fake = StackFake()
    with ephemeral_cluster(STACK, stack=STACK, pulumi_command=fake, root=ROOT, display="none") as c:
        assert "aws:region" not in fake.files[STACK]  # the stack's own file: Pulumi reads it itself
    assert "stack rm" not in _ops(fake)  # a stack the caller named is kept


def test_secret_provider_config_cannot_be_copied_and_nothing_is_called(home: Path, tmp_path: Path) -> None:
    doc = (ROOT / "stacks" / f"Pulumi.{STACK}.yaml").read_text()
    stack_file = tmp_path / "Pulumi.team-p5.yaml"
    stack_file.write_text(doc.replace("config:\n", "config:\n  aws:secretKey:\n    secure: v1:abc\n", 1))
    fake = StackFake()
    with (
        pytest.raises(UnsupportedError, match=r"aws:secretKey.*stack='team-p5'"),
        ephemeral_cluster(stack_file, pulumi_command=fake, root=ROOT, display="none"),
    ):
        pytest.fail("the block must not run")
    assert fake.calls == [] and _nothing_exists(home)


def test_real_teardown_failure_keeps_the_stack_and_cleanup_releases_the_lock(home: Path) -> None:
    fake = StackFake(fail={"destroy": "error: destroy failed: DependencyViolation"})
    with (
        pytest.raises(CloudError, match="provision reap --yes`") as err,
        ephemeral_cluster(STACK, pulumi_command=fake, root=ROOT, display="none") as c,
    ):
        pass
    assert c.stack in str(err.value) and "--mock" not in str(err.value)
    assert fake.state[c.stack] and c.stack in fake.stacks  # kept for the cleanup and the reaper
    fake.fail["destroy"] = LOCKED  # the killed run's CLI left its lock behind
    rows = cleanup(pulumi_command=fake)
    assert [r["status"] for r in rows] == ["deleted"]
    assert "cancel" in _ops(fake) and fake.state[c.stack] == [] and c.stack not in fake.stacks
    assert _nothing_exists(home)


@pytest.mark.parametrize(
    "record",
    [{"stack": "x", "mock": True}, {"stack": "x", "mock": True, "spec": "gcp"}, ["not", "a", "record"], "{"],
    ids=["no-spec", "spec-not-a-mapping", "a-list", "bad-json"],
)
def test_cleanup_reports_a_broken_record_and_goes_on(home: Path, record: Any) -> None:
    from provision.ops.ephemeral import cleanup, ledger_dir

    text = record if isinstance(record, str) else json.dumps(record)
    (ledger_dir() / "broken.json").write_text(text)
    rows = cleanup()
    assert [(r["stack"], r["status"]) for r in rows] == [("broken", "failed")]
    assert "unreadable record" in rows[0]["error"] and (ledger_dir() / "broken.json").exists()
