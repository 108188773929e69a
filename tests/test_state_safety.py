"""State that cannot be lost: locks, damaged state, partial state after faults, reap, temp files (issue 12.2)."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, isolated_home
from typer.testing import CliRunner

from provision.cli.app import app
from provision.clouds.mocking import CloudMocks, Fault
from provision.engine.mockstate import MockState, MockStore
from provision.ops.cluster import Cluster
from provision.spec.errors import CloudError

runner = CliRunner()
STACK = "aws-p5-ci"


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolated_home(tmp_path, monkeypatch)


@pytest.fixture(scope="module")
def good_state(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A real state document of STACK (one mocked `up`), copied into each test's home."""
    mp = pytest.MonkeyPatch()
    mp.setenv("PROVISION_HOME", str(tmp_path_factory.mktemp("state") / "home"))
    try:
        Cluster(STACK, mock=True, display="none").up()
        return json.loads(MockStore().path(STACK).read_text())
    finally:
        mp.undo()


def _cli(*args: str) -> Any:
    return runner.invoke(app, list(args))


# ---------------------------------------------------------------------- one operation at a time


def _hold_lock_in_another_process(home: Path) -> subprocess.Popen[str]:
    code = textwrap.dedent(
        f"""
        import sys, time
        from provision.engine.locks import stack_lock
        with stack_lock({STACK!r}, "up", mock=True):
            print("held", flush=True)
            time.sleep(60)
        """
    )
    env = {**os.environ, "PROVISION_HOME": str(home), "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_a_second_command_on_a_busy_stack_fails_at_once_naming_the_holder(home: Path) -> None:
    proc = _hold_lock_in_another_process(home)
    try:
        result = _cli("up", STACK, "--mock", "--yes", "--json")
        assert result.exit_code == 1
        doc = json.loads(result.stdout)
        assert "is busy" in doc["message"]
        assert f"pid {proc.pid}" in doc["message"] and "since 20" in doc["message"] and "up:" in doc["message"]
        assert not MockStore().path(STACK).exists()  # nothing was written by the refused command
        assert _cli("down", STACK, "--mock", "--yes", "--json").exit_code == 1
    finally:
        proc.kill()
        proc.wait()
    # The kernel drops the lock of a dead holder: no stale lock to clean by hand.
    assert _cli("up", STACK, "--mock", "--yes", "--json").exit_code == 0


def test_status_reads_a_stack_while_another_command_holds_it(home: Path) -> None:
    proc = _hold_lock_in_another_process(home)
    try:
        assert _cli("status", STACK, "--mock", "--json").exit_code == 0
    finally:
        proc.kill()
        proc.wait()


# ---------------------------------------------------------------------- damaged or foreign state


def _damage(doc: dict[str, Any], how: str) -> Any:
    doc = json.loads(json.dumps(doc))
    if how == "list":
        return []
    if how == "null":
        return None
    if how == "version-2":
        doc["version"] = 2
    elif how == "version-missing":
        doc.pop("version")
    elif how == "version-text":
        doc["version"] = "1"
    elif how == "resources-missing":
        doc.pop("resources")
    elif how == "created-at-number":
        doc["created_at"] = 5
    elif how == "created-at-far-future":
        doc["created_at"] = "9999-12-31T23:59:59Z"
    elif how == "outputs-list":
        doc["outputs"] = [1, 2]
    elif how == "resource-without-type":
        doc["resources"][0].pop("type")
    return doc


DAMAGES = [
    "list",
    "null",
    "version-2",
    "version-missing",
    "version-text",
    "resources-missing",
    "created-at-number",
    "outputs-list",
    "resource-without-type",
]


@pytest.mark.parametrize("how", DAMAGES)
def test_damaged_or_foreign_state_is_refused_and_never_deleted(good_state: dict[str, Any], how: str) -> None:
    path = MockStore().path(STACK)
    text = json.dumps(_damage(good_state, how))
    path.write_text(text)
    for command in (["status", STACK, "--mock", "--json"], ["down", STACK, "--mock", "--yes", "--json"]):
        result = _cli(*command)
        assert result.exit_code == 1, (command, result.stdout)
        message = json.loads(result.stdout)["message"]
        assert str(path) in message and "To recover" in message
    assert path.read_text() == text  # `down` forgot nothing


def test_a_hugely_nested_state_file_is_a_clear_error(tmp_path: Path) -> None:
    path = MockStore().path(STACK)
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(CloudError, match="nests deeper than 100 levels"):
        MockStore().load(STACK)


def test_a_far_future_created_at_is_refused_not_a_traceback(good_state: dict[str, Any]) -> None:
    MockStore().path(STACK).write_text(json.dumps(_damage(good_state, "created-at-far-future")))
    result = _cli("status", STACK, "--mock", "--json")
    assert result.exit_code == 1
    assert "error" in json.loads(result.stdout)


# ---------------------------------------------------------------------- partial state after a fault


@pytest.mark.parametrize(
    ("stack", "token"),
    [
        ("aws-p5-64", "aws:iam/role:Role"),
        ("gcp-a3-64", "gcp:serviceaccount/account:Account"),
        ("azure-ndh100-64", "azure-native:network:NatGateway"),
        ("alibaba-gn8-64", "alicloud:vpc/natGateway:NatGateway"),
    ],
)
def test_partial_state_after_a_fault_holds_every_resource_the_mocked_cloud_created(
    stack: str, token: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    created: list[tuple[str, str]] = []
    real = CloudMocks._new_resource

    def record(self: CloudMocks, args: Any) -> Any:
        out = real(self, args)
        created.append((args.typ, args.name))
        return out

    monkeypatch.setattr(CloudMocks, "_new_resource", record)
    cluster = Cluster(stack, mock=True, display="none", faults=[Fault(code="InternalError", type_token=token)])
    with pytest.raises(CloudError, match="InternalError"):
        cluster.up()
    done = list(created)
    state = MockStore().load(stack)
    assert state is not None
    assert set(done) <= {(r.type, r.name) for r in state.resources}
    assert created == done  # nothing was created after up() returned
    cluster.down()
    assert MockStore().load(stack) is None


# ---------------------------------------------------------------------- reap goes on past a damaged file


def test_one_damaged_state_file_does_not_stop_reaping_the_others(good_state: dict[str, Any]) -> None:
    store = MockStore()
    expired = json.loads(json.dumps(good_state))
    expired["outputs"]["expires_at"] = "2020-01-01T00:00:00Z"
    store.path(STACK).write_text(json.dumps(expired))
    store.path("zzz-broken").write_text("not json")
    result = _cli("reap", "--mock", "--yes", "--json")
    doc = json.loads(result.stdout)
    assert result.exit_code == 1 and "expired" in doc, doc
    assert [row["cluster"] for row in doc["expired"]] == [STACK] and doc["expired"][0]["deleted"]
    assert len(doc["errors"]) == 1 and "zzz-broken" in doc["errors"][0]
    assert not store.path(STACK).exists()
    assert store.path("zzz-broken").exists()


# ---------------------------------------------------------------------- temp files of failed writes


def test_a_failed_write_leaves_no_temp_file_and_keeps_the_old_state(
    good_state: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = MockStore()
    store.path(STACK).write_text(json.dumps(good_state))
    state = MockState.from_dict(good_state)

    def full_disk(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(json, "dump", full_disk)
    with pytest.raises(OSError):
        store.save(state)
    assert list(store.root.glob("*.tmp")) == [] and list(store.root.glob(".*.tmp")) == []
    assert json.loads(store.path(STACK).read_text()) == good_state


def test_temp_files_left_by_a_dead_process_are_removed_by_the_next_run(home: Path) -> None:
    root = MockStore().root
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = root / f".{STACK}.json.{dead.stdout.strip()}.tmp"
    stale.write_text("{")
    mine = root / f".{STACK}.json.{os.getpid()}.tmp"  # a write in progress in this process
    mine.write_text("{")
    MockStore()
    assert not stale.exists() and mine.exists()
