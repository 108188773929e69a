"""The reaper over stacks: mocked clusters' state and Pulumi stacks found by their expiry tag."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXED_NOW, isolated_home, stack_spec
from pulumi import automation as auto
from test_automation import ListingPulumi
from typer.testing import CliRunner

from provision.cli.app import app
from provision.clouds.aws.sweeper import AwsSweeper
from provision.engine.mockrun import run_mock
from provision.engine.mockstate import MockStore
from provision.ops import reaper


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = isolated_home(tmp_path, monkeypatch)
    return home


def _mock_up(stack: str, created: Any) -> None:
    store = MockStore()
    store.save(run_mock(stack_spec(stack), stack, None, now=created).state)


def test_expired_mock_cluster_is_listed_and_a_live_one_is_not() -> None:
    _mock_up("gcp-a3-ci", FIXED_NOW - timedelta(days=1))  # 4h ttl: long gone
    _mock_up("aws-p5-ci", FIXED_NOW)  # 2h ttl: still alive at FIXED_NOW + 1h
    found = reaper.expired_mock_stacks(now=FIXED_NOW + timedelta(hours=1))
    assert [c.cluster for c in found] == ["gcp-a3-ci"]
    assert found[0].cloud == "gcp" and found[0].expires_at == FIXED_NOW - timedelta(days=1) + timedelta(hours=4)
    assert any(r.startswith("gcp:compute/instanceGroupManager") for r in found[0].resources)


def test_reap_cli_lists_then_deletes_expired_mock_clusters_only_with_yes() -> None:
    _mock_up("gcp-a3-ci", FIXED_NOW - timedelta(days=30))
    runner = CliRunner()
    listed = runner.invoke(app, ["reap", "--mock", "--json"])
    assert listed.exit_code == 0, listed.output
    doc = json.loads(listed.stdout)
    assert [r["cluster"] for r in doc["expired"]] == ["gcp-a3-ci"] and doc["deleted"] is False
    assert MockStore().load("gcp-a3-ci") is not None  # listing deletes nothing
    reaped = runner.invoke(app, ["reap", "--mock", "--yes", "--json"])
    assert reaped.exit_code == 0, reaped.output
    assert json.loads(reaped.stdout)["expired"][0]["deleted"]
    assert MockStore().load("gcp-a3-ci") is None
    again = json.loads(runner.invoke(app, ["reap", "--mock", "--json"]).stdout)
    assert again["expired"] == []


class TaggedFake(ListingPulumi):
    """The automation tests' listing fake CLI, plus `stack tag ls`."""

    def run(self, args, cwd, additional_env, on_output=None, on_error=None):  # type: ignore[no-untyped-def]
        a = [x for x in args if x != "--non-interactive"]
        if a[:3] == ["stack", "tag", "ls"]:
            self.calls.append(a)
            stack = a[a.index("--stack") + 1]
            return auto.CommandResult(json.dumps(self.tags.get(stack, {})), "", 0)
        return super().run(args, cwd, additional_env, on_output, on_error)


def test_expired_pulumi_stack_is_found_by_tag_and_destroyed() -> None:
    from provision.ops.cluster import Cluster

    fake = TaggedFake()
    old = Cluster("gcp-a3-ci", stack="ci-old", pulumi_command=fake, display="none")
    old.up(yes=True)
    fake.tags["ci-old"]["provision-expires-at"] = "20261101t0000z"  # as if created weeks ago
    Cluster("aws-p5-ci", stack="ci-live", pulumi_command=fake, display="none").up(yes=True)
    fake.tags["ci-live"]["provision-expires-at"] = "20991231t0000z"

    found = reaper.expired_pulumi_stacks(now=FIXED_NOW, command=fake)
    assert [(c.cluster, c.cloud) for c in found] == [("ci-old", "gcp")]
    deleted = reaper.reap_pulumi_stack("ci-old", command=fake)
    assert deleted and all(d.startswith("delete:") for d in deleted)
    assert fake.state["ci-old"] == [] and fake.state["ci-live"]
    assert any(c[0] == "destroy" and "ci-old" in c for c in fake.calls)
    assert not any(c[0] == "destroy" and "ci-live" in c for c in fake.calls)


class BrokenBackendFake(TaggedFake):
    """`stack ls` fails as it does when the backend cannot be read."""

    def run(self, args, cwd, additional_env, on_output=None, on_error=None):  # type: ignore[no-untyped-def]
        if [x for x in args if x != "--non-interactive"][:2] == ["stack", "ls"]:
            raise self._error("error: could not list stacks: permission denied")
        return super().run(args, cwd, additional_env, on_output, on_error)


def test_a_backend_that_cannot_list_stacks_is_a_cloud_error() -> None:
    from provision.spec.errors import CloudError

    with pytest.raises(CloudError, match="permission denied"):
        reaper.expired_pulumi_stacks(now=FIXED_NOW, command=BrokenBackendFake())


def test_reap_cli_on_a_broken_backend_exits_1_without_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("provision.engine.automation.pulumi_command", BrokenBackendFake)
    result = CliRunner().invoke(app, ["reap", "--json"])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
    assert "permission denied" in json.loads(result.stdout)["message"]


def test_reaping_a_stack_without_a_spec_says_how_to_destroy_it() -> None:
    from provision.spec.errors import CloudError

    fake = TaggedFake()
    fake.stacks.add("orphan")
    with pytest.raises(CloudError, match="pulumi destroy --stack orphan") as err:
        reaper.reap_pulumi_stack("orphan", command=fake)
    assert "has no provision:cluster config" in err.value.message


def test_reap_aws_region_without_credentials_exits_1_without_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    from botocore.exceptions import NoCredentialsError

    def no_credentials(self: Any, now: Any = None) -> Any:
        raise NoCredentialsError()

    monkeypatch.setattr(AwsSweeper, "find", no_credentials)
    result = CliRunner().invoke(app, ["reap", "--mock", "--aws-region", "us-east-1", "--json"])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
    doc = json.loads(result.stdout)
    assert doc["error"] == "CloudError" and "us-east-1" in doc["message"] and "credentials" in doc["message"]


class OneBrokenStackFake(TaggedFake):
    """`stack tag ls` fails for one stack only (a damaged checkpoint, a permission on one stack)."""

    def run(self, args, cwd, additional_env, on_output=None, on_error=None):  # type: ignore[no-untyped-def]
        a = [x for x in args if x != "--non-interactive"]
        if a[:3] == ["stack", "tag", "ls"] and a[a.index("--stack") + 1] == "ci-broken":
            raise self._error("error: could not read stack ci-broken: checkpoint is damaged")
        return super().run(args, cwd, additional_env, on_output, on_error)


def test_one_unreadable_stack_does_not_hide_the_other_expired_ones() -> None:
    from provision.ops.cluster import Cluster

    fake = OneBrokenStackFake()
    Cluster("gcp-a3-ci", stack="ci-old", pulumi_command=fake, display="none").up(yes=True)
    fake.tags["ci-old"]["provision-expires-at"] = "20261101t0000z"
    fake.stacks.add("ci-broken")
    errors: list[str] = []
    found = reaper.expired_pulumi_stacks(now=FIXED_NOW, command=fake, errors=errors)
    assert [c.cluster for c in found] == ["ci-old"]
    assert len(errors) == 1 and "ci-broken" in errors[0] and "damaged" in errors[0]
