"""Real-mode orchestration without the Pulumi CLI: a fake ``PulumiCommand`` behind the Automation API.

The fake answers the CLI calls the SDK makes (version 3.200 <= 3.205, so engine events go
through the JSON event-log file the SDK tails) and records argv, working folder and
environment. The inline program is not run by it (it is tested under the mocked cloud).
Also here: home/backend/passphrase set-up, the missing-CLI error, Ctrl-C forwarding to a
real subprocess, and progress counting from engine events.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, isolated_home, stack_spec
from pulumi import automation as auto
from pulumi.automation.errors import create_command_error
from semver import VersionInfo

from provision.engine import automation
from provision.engine.progress import Progress
from provision.ops.cluster import Cluster
from provision.spec.errors import CapacityError, CloudError
from provision.spec.units import parse_time

STACK = "gcp-a3-64"
NODE_TYPE = "gcp:compute/instance:Instance"


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = isolated_home(tmp_path, monkeypatch)
    return home


def _urn(stack: str, type_: str, name: str) -> str:
    return f"urn:pulumi:{stack}::provision::{type_}::{name}"


class FakePulumi(auto.PulumiCommand):
    """A scripted ``pulumi``: keeps stacks, config, tags and resources in memory.

    Args:
        stack_files: stack -> config the stack file already holds (as `pulumi config --json` shows it).
        resources: (type, name) pairs an `up` creates.
        fail: {"up"|"destroy": stderr} makes the first such call fail; "capacity" emits a failing resource.
    """

    def __init__(
        self,
        stack_files: dict[str, dict[str, str]] | None = None,
        resources: tuple[tuple[str, str], ...] = ((NODE_TYPE, "node-0"), (NODE_TYPE, "node-1")),
        fail: dict[str, str] | None = None,
    ) -> None:
        self.command = "pulumi"
        self.version = VersionInfo.parse("3.200.0")
        self.calls: list[list[str]] = []
        self.envs: list[dict[str, str]] = []
        self.cwds: list[str] = []
        self.stacks: set[str] = set()
        self.files = {k: dict(v) for k, v in (stack_files or {}).items()}
        self.tags: dict[str, dict[str, str]] = {}
        self.state: dict[str, list[tuple[str, str]]] = {}
        self.resources = resources
        self.fail = dict(fail or {})

    # -- helpers
    def _events(self, args: list[str], events: list[dict[str, Any]]) -> None:
        if "--event-log" not in args:  # the SDK asks for events only when given on_event
            return
        path = args[args.index("--event-log") + 1]
        with open(path, "a", encoding="utf-8") as f:
            for i, ev in enumerate([{"preludeEvent": {"config": {}}}, *events, {"cancelEvent": {}}]):
                f.write(json.dumps({**ev, "sequence": i, "timestamp": 0}) + "\n")

    def _steps(self, stack: str, op: str, items: list[tuple[str, str]]) -> list[dict[str, Any]]:
        out = []
        for type_, name in items:
            meta = {"op": op, "urn": _urn(stack, type_, name), "type": type_, "provider": ""}
            out += [{"resourcePreEvent": {"metadata": meta}}, {"resOutputsEvent": {"metadata": meta}}]
        return out

    @staticmethod
    def _summary(changes: dict[str, int]) -> dict[str, Any]:
        changes = {k: v for k, v in changes.items() if v}  # the engine lists only kinds that occurred
        return {
            "summaryEvent": {"maybeCorrupt": False, "durationSeconds": 1, "resourceChanges": changes, "policyPacks": {}}
        }

    @staticmethod
    def _error(stderr: str, stdout: str = "") -> Exception:
        return create_command_error(auto.CommandResult(stdout, stderr, 255))

    # -- the seam
    def run(self, args, cwd, additional_env, on_output=None, on_error=None):  # type: ignore[no-untyped-def]
        a = [x for x in args if x != "--non-interactive"]
        self.calls.append(a)
        self.envs.append(dict(additional_env))
        self.cwds.append(cwd)
        stack = a[a.index("--stack") + 1] if "--stack" in a else ""
        ok = auto.CommandResult("", "", 0)
        if a[:2] == ["stack", "select"]:
            if stack not in self.stacks:
                raise self._error(f"error: no stack named '{stack}' found")
            return ok
        if a[:2] == ["stack", "init"]:
            self.stacks.add(a[2])
            return ok
        config = self.files.setdefault(stack, {})
        if a[0] == "config" and "--json" in a and len(a) > 1 and a[1] == "--show-secrets":
            return auto.CommandResult(json.dumps({k: {"value": v, "secret": False} for k, v in config.items()}), "", 0)
        if a[:2] == ["config", "set-all"]:
            for i, x in enumerate(a):
                if x == "--plaintext":
                    key, _, value = a[i + 1].partition("=")
                    config[key] = value
            return ok
        if a[:2] == ["config", "rm"]:
            if config.pop(a[2], None) is None:
                raise self._error(f"error: configuration key '{a[2]}' not found for stack '{stack}'")
            return ok
        if a[:3] == ["stack", "tag", "set"]:
            self.tags.setdefault(stack, {})[a[3]] = a[4]
            return ok
        if a[0] in ("up", "destroy", "refresh", "preview"):
            return self._operation(a, stack)
        if a[:2] == ["stack", "output"]:
            outputs = {"hostfile": "10.0.0.2 slots=8\n", "hosts": ["10.0.0.2"]} if self.state.get(stack) else {}
            return auto.CommandResult(json.dumps(outputs), "", 0)
        if a[:2] == ["stack", "history"]:
            entry = {"kind": "update", "startTime": "2026-11-29T12:00:00.000Z", "message": "", "environment": {}}
            entry.update({"config": {}, "result": "succeeded", "version": 1, "resourceChanges": {}})
            return auto.CommandResult(json.dumps([entry]), "", 0)
        if a[:2] == ["stack", "export"]:
            res = [{"urn": _urn(stack, "pulumi:pulumi:Stack", f"provision-{stack}"), "type": "pulumi:pulumi:Stack"}]
            res += [{"urn": _urn(stack, t, n), "type": t, "id": f"{n}-id"} for t, n in self.state.get(stack, [])]
            return auto.CommandResult(json.dumps({"version": 3, "deployment": {"resources": res}}), "", 0)
        raise AssertionError(f"unexpected pulumi call: {a}")

    def _operation(self, a: list[str], stack: str) -> auto.CommandResult:
        kind = a[0]
        existing = self.state.get(stack, [])
        failure = self.fail.pop(kind, None)
        if failure == "capacity":
            type_, name = self.resources[0]
            meta = {"op": "create", "urn": _urn(stack, type_, name), "type": type_, "provider": ""}
            diag = {"message": "ZONE_RESOURCE_POOL_EXHAUSTED: no a3 in zone", "color": "never", "severity": "error"}
            self._events(
                a,
                [
                    {"resourcePreEvent": {"metadata": meta}},
                    {"diagnosticEvent": {**diag, "urn": meta["urn"]}},
                    {"resOpFailedEvent": {"metadata": meta, "status": 1, "steps": 0}},
                    self._summary({}),
                ],
            )
            raise self._error("error: update failed")
        if failure:
            self._events(a, [])  # the CLI ends every event log with a cancel event, failed or not
            raise self._error(failure)
        if kind == "up":
            new = [r for r in self.resources if r not in existing]
            events = self._steps(stack, "create", new) + self._steps(stack, "same", [r for r in existing])
            self.state[stack] = list(self.resources)
            self._events(a, [*events, self._summary({"create": len(new), "same": len(existing)})])
        elif kind == "preview":
            new = [r for r in self.resources if r not in existing]
            self._events(a, [*self._steps(stack, "create", new), self._summary({"create": len(new)})])
        elif kind == "destroy":
            self._events(a, [*self._steps(stack, "delete", existing[::-1]), self._summary({"delete": len(existing)})])
            self.state[stack] = []
        else:
            self._events(a, [*self._steps(stack, "refresh", existing), self._summary({"same": len(existing)})])
        return auto.CommandResult("", "", 0)


class ListingPulumi(FakePulumi):
    """The fake plus `pulumi stack ls --json` (what inventory, volume and reaper commands read)."""

    def run(self, args, cwd, additional_env, on_output=None, on_error=None):  # type: ignore[no-untyped-def]
        a = [x for x in args if x != "--non-interactive"]
        if a[:2] == ["stack", "ls"]:
            self.calls.append(a)
            rows = [
                {"name": s, "current": False, "updateInProgress": False, "resourceCount": len(self.state.get(s, []))}
                for s in sorted(self.stacks)
            ]
            return auto.CommandResult(json.dumps(rows), "", 0)
        return super().run(args, cwd, additional_env, on_output, on_error)


def _kinds(fake: FakePulumi) -> list[str]:
    """Each call as its command words (flags and values after the first flag dropped)."""
    out = []
    for a in fake.calls:
        words = []
        for x in a:
            if x.startswith("-"):
                break
            words.append(x)
        out.append(" ".join(words))
    return out


def _spec_config(name: str) -> dict[str, str]:
    """What `pulumi config --json` shows for a stack file's structured spec: the JSON text."""
    return {"provision:cluster": json.dumps(stack_spec(name).model_dump(mode="json", exclude_none=True))}


# ---------------------------------------------------------------------- home, backend, passphrase


def test_state_and_passphrase_live_under_provision_home_with_owner_only_permissions(home: Path) -> None:
    env = automation.workspace_env()
    assert env["PULUMI_BACKEND_URL"] == f"file://{home}/state/provision"
    assert stat.S_IMODE((home / "state" / "provision").stat().st_mode) == 0o700
    assert stat.S_IMODE((home / "state").stat().st_mode) == 0o700
    secret = Path(env["PULUMI_CONFIG_PASSPHRASE_FILE"])
    assert secret == home / "passphrase"
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    phrase = secret.read_text()
    assert len(phrase) >= 32 and "\n" not in phrase
    assert automation.workspace_env()["PULUMI_CONFIG_PASSPHRASE_FILE"] == str(secret)
    assert secret.read_text() == phrase  # generated once


def test_a_widened_passphrase_file_is_made_owner_only_again(home: Path) -> None:
    path = automation.passphrase_file()
    os.chmod(path, 0o644)
    assert stat.S_IMODE(automation.passphrase_file().stat().st_mode) == 0o600


def test_backend_url_and_passphrase_from_the_environment_win(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PULUMI_BACKEND_URL", "s3://team-state")
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", "from-env")
    env = automation.workspace_env()
    assert env["PULUMI_BACKEND_URL"] == "s3://team-state"
    assert "PULUMI_CONFIG_PASSPHRASE_FILE" not in env and "PULUMI_CONFIG_PASSPHRASE" not in env
    assert not (home / "passphrase").exists() and not (home / "state").exists()
    assert automation.secrets_provider("s3://team-state") == "passphrase"
    assert automation.secrets_provider("https://api.pulumi.com") is None


# ---------------------------------------------------------------------- up / down through the fake CLI


def test_up_selects_or_inits_writes_config_and_tags_then_runs_the_inline_program(home: Path) -> None:
    fake = FakePulumi()
    cluster = Cluster.from_spec(stack_spec(STACK), stack="team-a3", pulumi_command=fake, display="none")
    result = cluster.up()
    assert _kinds(fake) == [
        "stack select",
        "stack init team-a3",
        "config",
        "config set-all",
        f"stack tag set provision-cluster {cluster.spec.name}",
        f"stack tag set provision-expires-at {cluster.plan().tags['provision-expires-at']}",
        f"stack tag set provision-owner {cluster.plan().tags['provision-owner']}",
        "up",
        "stack output",
        "stack output",
        "stack history",
    ]
    assert fake.calls[1] == ["stack", "init", "team-a3", "--secrets-provider", "passphrase"]
    set_all = fake.calls[3]
    assert set_all[:4] == ["config", "set-all", "--stack", "team-a3"]
    pairs = dict(set_all[i + 1].split("=", 1) for i, x in enumerate(set_all) if x == "--plaintext")
    assert json.loads(pairs["provision:cluster"]) == stack_spec(STACK).model_dump(mode="json", exclude_none=True)
    created = parse_time(pairs["provision:createdAt"])
    assert cluster.cost.created_at == created
    up = fake.calls[7]
    assert up[:3] == ["up", "--yes", "--skip-preview"]
    assert up[3:5] == ["--color", "never"]
    assert any(x.startswith("--client=127.0.0.1:") for x in up)
    assert up[up.index("--exec-kind") + 1] == "auto.inline"
    assert "--event-log" in up and up[-2:] == ["--stack", "team-a3"]
    for env, cwd in zip(fake.envs, fake.cwds, strict=True):
        assert env["PULUMI_BACKEND_URL"] == f"file://{home}/state/provision"
        assert env["PULUMI_CONFIG_PASSPHRASE_FILE"] == str(home / "passphrase")
        assert cwd == str(ROOT)  # the repository's Pulumi.yaml and stacks/ (hybrid workspace)
    assert result is not None
    assert result.changes == {"create": 2} and result.changed == 2
    assert [(s.op, s.name) for s in result.steps] == [("create", "node-0"), ("create", "node-1")]
    assert cluster.outputs["hosts"] == ["10.0.0.2"] and cluster.hosts == ["10.0.0.2"]
    assert cluster.hostfile() == "10.0.0.2 slots=8\n"
    assert fake.tags["team-a3"]["provision-cluster"] == cluster.spec.name


def test_second_up_keeps_created_at_writes_no_config_and_changes_nothing(home: Path) -> None:
    fake = FakePulumi()
    Cluster.from_spec(stack_spec(STACK), stack="team-a3", pulumi_command=fake, display="none").up()
    created = fake.files["team-a3"]["provision:createdAt"]
    fake.calls.clear()
    again = Cluster.from_spec(stack_spec(STACK), stack="team-a3", pulumi_command=fake, display="none")
    result = again.up()
    assert "config set-all" not in _kinds(fake)
    assert _kinds(fake)[:3] == ["stack select", "config", f"stack tag set provision-cluster {again.spec.name}"]
    assert fake.files["team-a3"]["provision:createdAt"] == created
    assert again.cost.created_at == parse_time(created)
    assert result is not None and result.changed == 0 and result.changes == {"same": 2}


def test_a_stack_file_that_already_holds_the_spec_gets_only_created_at(home: Path) -> None:
    fake = FakePulumi(stack_files={STACK: _spec_config(STACK)})
    Cluster(STACK, pulumi_command=fake, display="none").up()
    set_all = next(a for a in fake.calls if a[:2] == ["config", "set-all"])
    assert [x.split("=", 1)[0] for x in set_all if "=" in x] == ["provision:createdAt"]


def test_changed_spec_is_written_again(home: Path) -> None:
    spec = stack_spec(STACK)
    fake = FakePulumi(stack_files={STACK: _spec_config(STACK)})
    changed = spec.model_copy(update={"tags": {"team": "infra"}})
    Cluster.from_spec(changed, stack=STACK, pulumi_command=fake, display="none").up()
    assert json.loads(fake.files[STACK]["provision:cluster"])["tags"] == {"team": "infra"}


def test_down_destroys_then_forgets_created_at(home: Path) -> None:
    fake = FakePulumi()
    cluster = Cluster.from_spec(stack_spec(STACK), stack="team-a3", pulumi_command=fake, display="none")
    cluster.up()
    fake.calls.clear()
    result = cluster.down()
    assert _kinds(fake) == ["stack select", "destroy", "stack history", "config rm provision:createdAt"]
    destroy = fake.calls[1]
    assert destroy[:3] == ["destroy", "--skip-preview", "--yes"] and destroy[-2:] == ["--stack", "team-a3"]
    assert result is not None and result.changes == {"delete": 2}
    assert "provision:createdAt" not in fake.files["team-a3"]
    assert cluster.status()["state"] == "none" and cluster.outputs == {}


def test_down_of_a_stack_that_never_existed_does_nothing(home: Path) -> None:
    fake = FakePulumi()
    result = Cluster(STACK, pulumi_command=fake, display="none").down()
    assert _kinds(fake) == ["stack select"] and result is not None and result.changed == 0


def test_down_clears_pending_creates_once_and_warns(home: Path) -> None:
    fake = FakePulumi(fail={"destroy": "error: the current deployment has 1 resource(s) with pending operations"})
    cluster = Cluster.from_spec(stack_spec(STACK), stack="team-a3", pulumi_command=fake, display="none")
    cluster.up()
    fake.calls.clear()
    result = cluster.down()
    assert _kinds(fake) == [
        "stack select",
        "destroy",
        "refresh",
        "stack history",
        "destroy",
        "stack history",
        "config rm provision:createdAt",
    ]
    assert "--clear-pending-creates" in fake.calls[2]
    assert result is not None and "pending creates" in result.warnings[0]


def test_status_lists_resources_from_the_state_without_the_stack_and_providers(home: Path) -> None:
    fake = FakePulumi()
    cluster = Cluster.from_spec(stack_spec(STACK), stack="team-a3", pulumi_command=fake, display="none")
    assert cluster.status()["state"] == "none"
    assert _kinds(fake) == ["stack select"]  # status never creates a stack
    cluster.up()
    status = cluster.status()
    assert status["state"] == "up"
    assert status["resources"] == [
        {"type": NODE_TYPE, "name": "node-0", "id": "node-0-id"},
        {"type": NODE_TYPE, "name": "node-1", "id": "node-1-id"},
    ]
    assert status["created_at"] == fake.files["team-a3"]["provision:createdAt"]
    assert status["hourly_usd"] == cluster.plan().cost.hourly_usd


def test_preview_counts_planned_resources_and_up_uses_them_as_the_total(home: Path) -> None:
    fake = FakePulumi()
    cluster = Cluster.from_spec(stack_spec(STACK), stack="team-a3", pulumi_command=fake, display="none")
    preview = cluster.preview()
    assert preview.changes == {"create": 2} and preview.changed == 2
    assert "provision:createdAt" not in fake.files["team-a3"]  # a preview creates nothing, starts no lifetime
    assert "preview" in _kinds(fake)
    assert cluster._progress("up").planned == 2


def test_capacity_failure_names_the_cloud_error_and_the_resource(home: Path) -> None:
    fake = FakePulumi(fail={"up": "capacity"})
    cluster = Cluster.from_spec(stack_spec(STACK), stack="team-a3", pulumi_command=fake, display="none")
    with pytest.raises(CapacityError) as err:
        cluster.up()
    assert "ZONE_RESOURCE_POOL_EXHAUSTED" in err.value.message and "node-0" in err.value.message
    assert err.value.exit_code == 1


def test_a_locked_stack_says_how_to_release_the_lock(home: Path) -> None:
    fake = FakePulumi(fail={"up": "error: the stack is currently locked by 1 lock(s)"})
    cluster = Cluster.from_spec(stack_spec(STACK), stack="team-a3", pulumi_command=fake, display="none")
    with pytest.raises(CloudError, match="pulumi cancel --stack team-a3"):
        cluster.up()


class FailingCall(FakePulumi):
    """A ``FakePulumi`` whose calls starting with ``words`` (flags ignored) fail with ``stderr``."""

    def __init__(self, words: str, stderr: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.failing, self.stderr = words, stderr

    def run(self, args, cwd, additional_env, on_output=None, on_error=None):  # type: ignore[no-untyped-def]
        words = " ".join(x for x in args if not x.startswith("-"))
        if words.startswith(self.failing):
            self.calls.append([x for x in args if x != "--non-interactive"])
            raise self._error(self.stderr)
        return super().run(args, cwd, additional_env, on_output, on_error)


WRONG_PASSPHRASE = "error: getting stack configuration: incorrect passphrase"


@pytest.mark.parametrize("operation", ["up", "preview", "status"])
def test_a_config_read_failure_is_a_cloud_error_not_a_traceback(home: Path, operation: str) -> None:
    fake = FailingCall("config", WRONG_PASSPHRASE)
    fake.stacks.add("team-a3")
    fake.state["team-a3"] = [(NODE_TYPE, "node-0")]  # status reads the config only of a stack with resources
    cluster = Cluster.from_spec(stack_spec(STACK), stack="team-a3", pulumi_command=fake, display="none")
    with pytest.raises(CloudError, match="incorrect passphrase") as err:
        getattr(cluster, operation)()
    assert err.value.exit_code == 1 and "of 'team-a3' failed" in err.value.message


def test_a_refused_stack_tag_is_a_cloud_error_before_any_resource(home: Path) -> None:
    fake = FailingCall("stack tag set", "error: stack tags are not supported by this backend")
    cluster = Cluster.from_spec(stack_spec(STACK), stack="team-a3", pulumi_command=fake, display="none")
    with pytest.raises(CloudError, match="stack tags are not supported"):
        cluster.up()
    assert "up" not in _kinds(fake) and not fake.state.get("team-a3")


def test_ephemeral_tears_down_after_an_exception_in_the_block(home: Path) -> None:
    fake = FakePulumi()
    cluster = Cluster.from_spec(stack_spec(STACK), stack="ci-a3", pulumi_command=fake, display="none")
    with pytest.raises(RuntimeError, match="training failed"), cluster.ephemeral():
        assert fake.state["ci-a3"]
        raise RuntimeError("training failed")
    assert fake.state["ci-a3"] == [] and _kinds(fake)[-1] == "config rm provision:createdAt"


# ---------------------------------------------------------------------- no CLI


def test_missing_cli_is_a_clear_error_naming_the_install_page_and_mock(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    cluster = Cluster(STACK, display="none")
    with pytest.raises(CloudError) as err:
        cluster.up()
    assert automation.INSTALL_URL in err.value.message and "--mock" in err.value.message
    assert err.value.exit_code == 1


def test_missing_cli_exits_1_without_a_traceback(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from provision.cli.app import app

    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    res = CliRunner().invoke(app, ["up", STACK, "--yes", "--json"])
    assert res.exit_code == 1, res.output
    doc = json.loads(res.stdout)
    assert doc["error"] == "CloudError" and automation.INSTALL_URL in doc["message"]
    assert "Traceback" not in res.output


# ---------------------------------------------------------------------- the real CLI wrapper, with a stand-in binary

_STAND_IN = """#!{python}
import os, signal, sys, time
args = [a for a in sys.argv[1:] if a != "--non-interactive"]
if args[:1] == ["version"]:
    print("v3.210.0"); sys.exit(0)
marker = os.environ["MARKER"]
if args[:1] == ["up"]:
    def stop(signum, frame):
        open(marker, "a").write("SIGINT\\n"); print("cancelled"); sys.exit(255)
    signal.signal(signal.SIGINT, stop)
    open(marker, "a").write("started\\n")
    print("updating", flush=True)
    time.sleep(30)
    sys.exit(0)
print("error: no stack named 'x' found", file=sys.stderr); sys.exit(255)
"""


@pytest.fixture
def stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "pulumi"
    exe.write_text(_STAND_IN.format(python=sys.executable))
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("MARKER", str(tmp_path / "marker"))
    return tmp_path / "marker"


def test_installed_cli_is_found_and_its_errors_map_to_the_sdk_errors(stand_in: Path) -> None:
    cmd = automation.pulumi_command()
    assert isinstance(cmd, automation.PulumiCli) and str(cmd.version) == "3.210.0"
    with pytest.raises(auto.StackNotFoundError):
        cmd.run(["stack", "select", "--stack", "x"], ".", {})


def test_ctrl_c_becomes_one_sigint_for_the_cli_and_waits_for_it_to_exit(stand_in: Path) -> None:
    cmd = automation.pulumi_command()
    lines: list[str] = []

    def interrupt_when_started() -> None:
        for _ in range(200):
            if stand_in.exists() and "started" in stand_in.read_text():
                break
            threading.Event().wait(0.05)
        os.kill(os.getpid(), signal.SIGINT)  # a real signal: it interrupts the blocking wait

    threading.Thread(target=interrupt_when_started, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        cmd.run(["up", "--yes"], ".", {}, on_output=lines.append)
    assert stand_in.read_text().splitlines() == ["started", "SIGINT"]
    assert lines == ["updating", "cancelled"]  # the CLI's last words were read: it had exited


# ---------------------------------------------------------------------- progress from engine events


def _event(**kw: Any) -> auto.EngineEvent:
    return auto.EngineEvent.from_json({"sequence": 0, "timestamp": 0, **kw})


def test_progress_counts_planned_done_and_failed_from_engine_events() -> None:
    p = Progress("up", "s", display="none", total=3)
    meta = {"op": "create", "urn": _urn("s", NODE_TYPE, "n0"), "type": NODE_TYPE, "provider": ""}
    upd = {"op": "update", "urn": _urn("s", NODE_TYPE, "n1"), "type": NODE_TYPE, "provider": "", "diffs": ["labels"]}
    same = {**meta, "op": "same", "urn": _urn("s", NODE_TYPE, "n2")}
    for ev in (
        {"resourcePreEvent": {"metadata": meta}},
        {"resOutputsEvent": {"metadata": meta}},
        {"resourcePreEvent": {"metadata": upd}},
        {"resOutputsEvent": {"metadata": upd}},
        {"resourcePreEvent": {"metadata": same}},
        {"resOutputsEvent": {"metadata": same}},
        {"diagnosticEvent": {"message": "QUOTA_EXCEEDED\n", "color": "never", "severity": "error", "urn": meta["urn"]}},
        {"diagnosticEvent": {"message": "just info", "color": "never", "severity": "info"}},
        {"resOpFailedEvent": {"metadata": meta, "status": 1, "steps": 0}},
    ):
        p.on_event(_event(**ev))
    assert (p.planned, p.done, p.started) == (3, 2, 2)
    assert p.errors == ["n0: QUOTA_EXCEEDED"] and p.failures == [f"create {NODE_TYPE} n0 failed"]
    result = p.result()
    assert result.changes == {"create": 1, "update": 1, "same": 1}
    assert [(s.op, s.name, s.keys) for s in result.steps] == [("create", "n0", ()), ("update", "n1", ("labels",))]
    p.on_event(_event(summaryEvent={"maybeCorrupt": False, "durationSeconds": 1, "resourceChanges": {"create": 5}}))
    assert p.result().changes == {"create": 5}  # the engine's own summary wins


def test_plain_progress_writes_one_line_per_finished_resource_and_a_summary(capsys: pytest.CaptureFixture) -> None:
    with Progress("up", "s", display="plain", verbose=True) as p:
        p.step_started("create", NODE_TYPE, "n0")
        p.step_done("create", NODE_TYPE, "n0")
        p.finish(p.result())
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "up s: started"
    assert err[1].split() == ["create", NODE_TYPE, "n0"]
    assert err[2].startswith("up s: 1 created, 0 updated, 0 deleted, 0 unchanged")


def test_plain_progress_by_default_says_how_far_it_got_then_counts_by_kind(capsys: pytest.CaptureFixture) -> None:
    with Progress("up", "s", display="plain") as p:
        p.step_started("create", NODE_TYPE, "n0")
        p.step_done("create", NODE_TYPE, "n0")
        p.finish(p.result())
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "up s: started"
    assert err[1].startswith("  up s: 1/1 done (")
    assert err[2].startswith("up s: 1 created, 0 updated, 0 deleted, 0 unchanged")
    assert err[3] == "  created: 1 Instance"


def test_a_garbled_created_at_is_a_spec_error_naming_the_key(home: Path) -> None:
    from provision.spec.errors import SpecError

    fake = FakePulumi(stack_files={"team-a3": {"provision:createdAt": "last tuesday"}})
    fake.stacks.add("team-a3")
    fake.state["team-a3"] = [(NODE_TYPE, "node-0")]
    cluster = Cluster.from_spec(stack_spec(STACK), stack="team-a3", pulumi_command=fake, display="none")
    for operation in (cluster.status, cluster.up):
        with pytest.raises(SpecError) as err:
            operation()
        assert err.value.problems[0].path == "provision:createdAt" and err.value.exit_code == 2
