"""Shared fixtures: a fixed clock, stack loading, mocked runs and golden files.

Golden files live in tests/golden/. Regenerate after an intended change with
``PROVISION_UPDATE_GOLDEN=1 pytest tests``; review the diff like code.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden"
#: Every test plans "now" at this instant, so expiries, tags and golden files are stable.
FIXED_NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=timezone.utc)


@pytest.fixture
def now() -> datetime:
    return FIXED_NOW


@pytest.fixture
def root() -> Path:
    return ROOT


#: AWS settings a developer or CI runner may have that would let a test reach a real AWS account (credentials,
#: profiles) or the network (the instance metadata service, which botocore asks when nothing else gives
#: credentials). A real ``up`` asks the account first (engine.preflight.check_before_up); in tests it must find
#: no credentials and say so, unless moto (which sets its own fake keys) answers.
AWS_ENV = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ROLE_ARN",
)


#: Azure settings that would let a real ``up``'s preflight ask a real subscription (ArmAccount.from_environment).
AZURE_ENV = ("AZURE_SUBSCRIPTION_ID", "AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET", "AZURE_TENANT_ID")


@pytest.fixture(scope="session", autouse=True)
def no_real_cloud_account(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """No test (nor a CLI it runs in a subprocess) can find real AWS or Azure credentials or ask a metadata
    service."""
    missing = tmp_path_factory.mktemp("aws") / "none"
    with pytest.MonkeyPatch.context() as mp:
        for name in (*AWS_ENV, *AZURE_ENV):
            mp.delenv(name, raising=False)
        mp.setenv("AWS_EC2_METADATA_DISABLED", "true")
        mp.setenv("AWS_SHARED_CREDENTIALS_FILE", str(missing))
        mp.setenv("AWS_CONFIG_FILE", str(missing))
        yield


@pytest.fixture(scope="module", autouse=True)
def aws_env_restored() -> Any:
    """Each module leaves the AWS variables as it found them: a module fixture that sets credentials around moto
    (moto restores its own, a MonkeyPatch opened before it restores moto's fake keys) must not hand them on to
    a later module's real ``up``, whose preflight would then call the real endpoint."""
    before = {name: os.environ.get(name) for name in AWS_ENV}
    yield
    for name, value in before.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


#: Environment a developer may have set that would leak a real backend or passphrase into a test.
PULUMI_ENV = ("PULUMI_BACKEND_URL", "PULUMI_CONFIG_PASSPHRASE", "PULUMI_CONFIG_PASSPHRASE_FILE")


def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point ``PROVISION_HOME`` under ``tmp_path`` (not created) and drop inherited Pulumi backend settings."""
    home = tmp_path / "home"
    monkeypatch.setenv("PROVISION_HOME", str(home))
    for var in PULUMI_ENV:
        monkeypatch.delenv(var, raising=False)
    return home


#: A real-format ed25519 public key for specs in tests (no private half is used anywhere).
TEST_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFuklxbbk6t4b9QFinnkHIycCB4EVKbeaSXofdzno6PC t@h"
#: The smallest AWS spec that plans; tests build variants with ``{**MINIMAL_SPEC, ...}`` or :func:`set_dotted`.
MINIMAL_SPEC: dict[str, Any] = {
    "name": "t1",
    "cloud": "aws",
    "region": "us-east-1",
    "gpu": "H100",
    "nodes": 2,
    "access": {"ssh_public_keys": [TEST_KEY], "allowed_cidrs": ["203.0.113.0/24"]},
}


def run_cli(*args: str) -> tuple[int, str]:
    """``provision ARGS`` in this process: its exit code and its stdout and stderr. A user error is an exit code,
    never an exception or a traceback."""
    from typer.testing import CliRunner

    from provision.cli.app import app

    result = CliRunner().invoke(app, list(args))
    out = result.stdout + (result.stderr if result.stderr_bytes is not None else "")
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in out
    return result.exit_code, out


def mock_volumes() -> dict[str, dict[str, Any]]:
    """``provision volume list --mock --json``, by volume name."""
    code, out = run_cli("volume", "list", "--mock", "--json")
    assert code == 0, out
    return {v["name"]: v for v in json.loads(out)}


def mock_state(stack: str) -> Any:
    """The mocked cloud's state of ``stack`` (it must exist)."""
    from provision.engine.mockstate import MockStore

    found = MockStore().load(stack)
    assert found is not None, stack
    return found


def set_dotted(doc: dict[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    """A deep copy of ``doc`` with ``value`` at the dotted path (``access.ssh_user``), parents made as needed."""
    out = json.loads(json.dumps(doc))
    node = out
    *parents, leaf = dotted.split(".")
    for part in parents:
        node = node.setdefault(part, {})
    node[leaf] = value
    return out


def stack_spec(name: str) -> Any:
    """The ClusterSpec of ``stacks/Pulumi.<name>.yaml``."""
    from provision.spec import load_target

    return load_target(name, ROOT)


def preview(spec: Any, **kwargs: Any) -> Any:
    """Run the program for ``spec`` under the mocked cloud at the fixed clock."""
    from provision.testing import run_program

    kwargs.setdefault("now", FIXED_NOW)
    kwargs.setdefault("owner", "test")
    return run_program(spec, **kwargs)


_SCRIPT_KEYS = ("userData", "customData", "user-data", "startup-script")


def _readable(value: Any, key: str = "") -> Any:
    """Node scripts as lists of lines (base64 decoded), so golden diffs show what changed in them."""
    if isinstance(value, dict):
        return {k: _readable(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_readable(v) for v in value]
    if key in _SCRIPT_KEYS and isinstance(value, str):
        text = value
        if not value.startswith(("#!", "#cloud-config")):
            import base64
            import binascii
            import gzip

            try:
                raw = base64.b64decode(value, validate=True)
                text = (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode("utf-8")
            except (binascii.Error, UnicodeDecodeError, OSError):
                return value
        return {"script_lines": text.splitlines()}
    return value


def golden_graph(result: Any) -> dict[str, Any]:
    """The part of a mocked run that golden files pin: resources (type, name, inputs) and outputs."""
    doc = result.as_dict()
    # Pulumi registers sibling resources concurrently, so registration order varies between runs.
    resources = sorted(doc["resources"], key=lambda r: (r["type"], r["name"]))
    components = sorted(doc["components"], key=lambda r: (r["type"], r["name"]))
    return _readable({"resources": resources, "components": components, "outputs": doc["outputs"]})


def assert_golden(name: str, data: Any) -> None:
    """Compare ``data`` with tests/golden/<name>.json (rewrite it with PROVISION_UPDATE_GOLDEN=1)."""
    path = GOLDEN / f"{name}.json"
    text = json.dumps(data, indent=1, sort_keys=True, default=str) + "\n"
    if os.environ.get("PROVISION_UPDATE_GOLDEN") == "1" or not path.exists():
        if os.environ.get("CI") and not path.exists():
            pytest.fail(f"golden file {path.name} is missing; generate it with PROVISION_UPDATE_GOLDEN=1")
        path.write_text(text, encoding="utf-8")
        return
    expected = path.read_text(encoding="utf-8")
    if expected != text:
        import difflib

        diff = "".join(difflib.unified_diff(expected.splitlines(True), text.splitlines(True), "golden", "now", n=2))
        pytest.fail(f"{path.name} differs from the golden file (PROVISION_UPDATE_GOLDEN=1 to accept):\n{diff[:6000]}")


# ---------------------------------------------------------------- strict mocked cloud: pending cloud fixes
#: Findings of the 2026-12-01 review that the strict mocked cloud refuses and engineer "cloudfix" fixes
#: (issue 11 item 2). Until then the tests that build those graphs are xfail(strict=True): each starts
#: failing the suite the moment the fix makes it pass, so remove its line then.
STRICT_PENDING: dict[str, str] = {}  # empty: every cloudfix finding has landed
#: Tests whose failure arrives wrapped (an exit code, a MockRunFailedError) rather than as the violation itself.
STRICT_PENDING_WRAPPED: set[str] = set()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    from provision.clouds.mocking import StrictViolationError

    for item in items:
        reason = STRICT_PENDING.get(item.nodeid)
        if reason:
            raises = None if item.nodeid in STRICT_PENDING_WRAPPED else StrictViolationError
            item.add_marker(pytest.mark.xfail(strict=True, raises=raises, reason=reason))


# ---------------------------------------------------------------------- secret canaries
#: Secrets that tests paste into specs, state and errors. No fragment of them may appear in any
#: output a test captures: the hook below fails the test that printed one (issue 12.3).
CANARY_PRIVATE_KEY = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAACanaryBodyLineOneX9f3Kq7Lm2Pz8Rt5Vw1Yb4Nc6Hd0Jg\n"
    "Q2FuYXJ5Qm9keUxpbmVUd29Ob3RBUmVhbEtleUF0QWxsWjh4R2t2TDNtUDl3UTJy\n"
    "-----END OPENSSH PRIVATE KEY-----\n"
)
#: A private key's second body line on its own (no header: only its look gives it away).
CANARY_BODY_LINE = "Q2FuYXJ5Qm9keUxpbmVUd29Ob3RBUmVhbEtleUF0QWxsWjh4R2t2TDNtUDl3UTJy"
CANARY_TOKEN = "ghp_Canary0Token1Never2Echo3Me4Ever5Xy6Z7a8"
CANARY_FRAGMENTS = ("CanaryBodyLineOne", "Q2FuYXJ5Qm9keUxpbmVUd29", "Canary0Token1Never2Echo")


def leaked_canary(text: str) -> str | None:
    """The first canary fragment found in ``text``, if any."""
    return next((f for f in CANARY_FRAGMENTS if f in (text or "")), None)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Any:
    """Fail any test whose captured stdout, stderr or log holds a canary secret."""
    outcome = yield
    report = outcome.get_result()
    if report.when == "teardown":  # its sections repeat the call's, which were checked already
        return
    for title, text in report.sections:
        fragment = leaked_canary(text)
        if fragment and report.outcome != "failed":
            report.outcome = "failed"
            report.longrepr = f"secret canary {fragment!r} leaked into {title!r}"
            break


# ---------------------------------------------------------------------- children a test interrupts
def default_signals() -> None:
    """``preexec_fn`` for a child that a test interrupts: SIGINT and SIGTERM back to their default action.

    A shell started in the background (``cmd &``, CI runners) ignores SIGINT, and an ignored signal stays ignored
    across ``exec``: Python then installs no ``KeyboardInterrupt`` handler and the child never sees the Ctrl-C.
    """
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


# ---------------------------------------------------------------------- one preview per distinct input
#: The mocked runs :func:`shipped_preview` made in this test process, by (stack, keyword arguments).
_SHIPPED_RUNS: dict[tuple[str, str], Any] = {}


def shipped_preview(name: str, /, **kwargs: Any) -> Any:
    """``preview(stack_spec(name), **kwargs)``, run once per distinct ``(name, kwargs)`` in this test process.

    ``name`` is a shipped stack's (``stacks/Pulumi.<name>.yaml``); ``stack=`` in ``kwargs`` names the Pulumi stack
    the run tags its resources with, as for :func:`preview` (``mock`` when not given).

    Golden, strict, policy and module fixtures of the shipped stacks share it; a test that changes the spec or
    monkeypatches what the run calls must call :func:`preview` itself. Each caller gets its own deep copy (2 ms
    against 1-2 s for a run), so a test that edits the result cannot change what the next one sees. A run that
    raises is not kept: the next caller runs it again and gets the same error. Under pytest-xdist the modules that
    call it run in one worker (:func:`pytest_xdist_make_scheduler`), so the cache serves the whole run.

    Every run records the strict cloud's accounting (``accounting=True``, which only adds a record of each input leaf
    and costs no measurable time), so a caller that asks for it and one that does not share the run; a caller that
    does not ask gets an empty :attr:`accounting`, as from a run without it.
    """
    import copy

    accounting = kwargs.pop("accounting", False)
    key = (name, repr(sorted(kwargs.items())))
    if key not in _SHIPPED_RUNS:
        _SHIPPED_RUNS[key] = preview(stack_spec(name), accounting=True, **kwargs)
    run = copy.deepcopy(_SHIPPED_RUNS[key])
    if not accounting:
        run.accounting = []
    return run


# ---------------------------------------------------------------------- parallel runs (pytest-xdist)
#: The scope of the modules that use :func:`shipped_preview`: they run in one worker, so its session cache serves
#: all of them (one preview per distinct input in the whole run, not one per worker).
SHIPPED_PREVIEW_SCOPE = "shipped-previews"


@pytest.fixture(scope="session", autouse=True)
def provision_home_per_process(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """``PROVISION_HOME`` of this test process (one per xdist worker): no test writes to the developer's
    ``~/.provision`` and two workers never share a state folder. Tests that need a fresh one still set their own
    (:func:`isolated_home`)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PROVISION_HOME", str(tmp_path_factory.mktemp("provision-home")))
        yield


#: Seconds each test module took in a full run (``tests/durations.json``): the longest work units start first.
DURATIONS = Path(__file__).resolve().parent / "durations.json"
#: Seconds assumed per test of a module the file does not list yet (a new module).
DEFAULT_TEST_SECONDS = 0.2


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile`` (pyproject's addopts) with two changes: every test module that uses ``shipped_preview``
    is one work unit, and the units are handed out longest first (by ``tests/durations.json``), so the run does not
    end with one worker busy on a slow module while the other idles. xdist's own order (most tests first) puts slow
    modules of a few tests (a real Slurm, a wheel build, a notebook) last. Each other module stays one unit, so its
    module fixtures run once. Other ``--dist`` modes are xdist's own."""
    if config.getoption("dist", None) != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    uses: dict[str, bool] = {}
    known: dict[str, float] = json.loads(DURATIONS.read_text(encoding="utf-8")) if DURATIONS.is_file() else {}

    def scope(nodeid: str) -> str:
        path = nodeid.split("::", 1)[0]
        if path not in uses:
            try:
                uses[path] = "shipped_preview" in (config.rootpath / path).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):  # not a file of ours (a doctest module, a plugin's item)
                uses[path] = False
        return SHIPPED_PREVIEW_SCOPE if uses[path] else path

    def seconds(unit: dict[str, bool]) -> float:
        """A work unit's expected seconds: its modules' from the table, else a default per test."""
        counts: dict[str, int] = {}
        for nodeid in unit:
            path = nodeid.split("::", 1)[0]
            counts[path] = counts.get(path, 0) + 1
        return sum(known.get(path, n * DEFAULT_TEST_SECONDS) for path, n in counts.items())

    class SharedPreviewScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scope(nodeid)

        def _assign_work_unit(self, node: Any) -> None:
            # Before the first unit is handed out, the queue is put longest first (xdist takes the queue's first;
            # equal units keep their collected order). Tests are sent by their index in the workers' collection,
            # which stays as collected.
            if not any(self.assigned_work.values()):
                ordered = sorted(self.workqueue.items(), key=lambda item: -seconds(item[1]))
                self.workqueue.clear()
                self.workqueue.update(ordered)
            super()._assign_work_unit(node)

    return SharedPreviewScheduling(config, log)


class DurationRecorder:
    """Adds up each module's seconds (setup, call and teardown of its tests) and writes ``tests/durations.json``
    at the end of the run. Registered by :func:`pytest_configure` with ``PROVISION_STORE_DURATIONS=1``:
    ``PROVISION_STORE_DURATIONS=1 pytest`` after adding or speeding up a module."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        path = report.nodeid.split("::", 1)[0]
        self.seconds[path] = self.seconds.get(path, 0.0) + report.duration

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if exitstatus == 0 and self.seconds:  # a partial or failed run would drop or skew modules
            # Merged into the table (a run of some modules updates those), without modules that are gone.
            table = json.loads(DURATIONS.read_text(encoding="utf-8")) if DURATIONS.is_file() else {}
            table.update({path: round(s, 1) for path, s in self.seconds.items()})
            kept = {path: table[path] for path in sorted(table) if (session.config.rootpath / path).is_file()}
            DURATIONS.write_text(json.dumps(kept, indent=0) + "\n", encoding="utf-8")


#: The garbage collector's thresholds in the test processes (CPython's defaults: 700, 10, 10). A test process holds
#: hundreds of thousands of long-lived objects (the cloud SDKs' modules, cached previews), and every mocked Pulumi run
#: allocates many more: with the defaults a third of a worker's CPU went to full collections scanning them all
#: (tests/test_azure_graph.py, test_hardening_input.py and test_strict_accounting.py in one process: 20 s of 63 s).
#: Rarer collections free the same cycles later; nothing a test asserts depends on when.
GC_THRESHOLDS = (10_000, 50, 100)


def compile_package() -> None:
    """Compile the package's modules to bytecode once, before the workers start.

    pip compiles a wheel's modules when it installs one; an editable install (the README's) has none, and with
    ``PYTHONDONTWRITEBYTECODE`` set (as on some CI machines) no process writes them, so each xdist worker and each
    of the hundreds of ``python -m provision`` children the suite starts compiled the package again (``plan`` in a
    child: 0.40 s with, 0.35 s without). The bytecode goes where Python looks for it (``__pycache__`` beside the
    sources, ignored by git); an up-to-date file is left alone, and a folder that cannot be written is skipped.
    """
    import compileall

    import provision

    compileall.compile_dir(Path(provision.__file__).parent, quiet=2)


def pytest_configure(config: pytest.Config) -> None:
    import gc

    gc.set_threshold(*GC_THRESHOLDS)
    if not hasattr(config, "workerinput"):  # once, in the process that starts the workers
        compile_package()
    # In the controller only (an xdist worker sees its own modules): it receives every test's report.
    if os.environ.get("PROVISION_STORE_DURATIONS") == "1" and not hasattr(config, "workerinput"):
        config.pluginmanager.register(DurationRecorder(), "provision-durations")


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    """Without pytest-xdist (``-p no:xdist``, or not installed) the ``--numprocesses``/``--dist`` of pyproject's
    addopts are accepted and the suite runs in this process."""
    if pluginmanager.has_plugin("xdist"):
        return
    group = parser.getgroup("xdist", "pytest-xdist is not loaded: tests run in this process")
    group.addoption("--numprocesses", dest="numprocesses", default=0, help="ignored without pytest-xdist")
    group.addoption("--dist", dest="dist", default="no", help="ignored without pytest-xdist")


@pytest.fixture(scope="session", autouse=True)
def python_sigint_handler() -> Any:
    """Python's own SIGINT handler in the test process even when it started with SIGINT ignored (a background
    shell, some CI runners): tests that interrupt themselves or check the handler see what a terminal gives them
    (an ignored Ctrl-C would leave ``test_a_ctrl_c_stops_the_loop_between_steps_and_restores_the_handler``
    waiting forever), and the children they start get SIGINT's default action."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGINT) != signal.SIG_IGN:
        yield
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, signal.SIG_IGN)


# ---------------------------------------------------------------------- one click command per Typer app
@pytest.fixture(scope="session", autouse=True)
def one_click_command_per_app() -> Any:
    """typer's ``CliRunner().invoke(app, ...)`` builds the click command tree from the Typer app on every call:
    for ``provision`` that reads every command's signature and evaluates its string annotations again, about 60 %
    of an in-process ``provision plan`` that refuses a spec. The tree depends only on what is registered on the app
    (the commands' functions and options, fixed at registration), so it is built once per app and rebuilt when the
    registered commands, groups or callback change. Invocations stay independent: click makes a new context for each
    call, and the group's one per-call attribute (``JsonAwareGroup._as_json``) is set at the start of every call."""
    import typer.testing

    build = getattr(typer.testing, "_get_command", None)
    if build is None:  # a typer that builds it some other way: every invocation builds its own, as before
        yield
        return
    built: dict[int, tuple[Any, tuple[Any, ...], Any]] = {}

    def get_command(app: Any) -> Any:
        registered = (
            tuple(map(id, app.registered_commands)),
            tuple(map(id, app.registered_groups)),
            id(app.registered_callback),
        )
        hit = built.get(id(app))
        if hit is None or hit[0] is not app or hit[1] != registered:
            hit = built[id(app)] = (app, registered, build(app))
        return hit[2]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(typer.testing, "_get_command", get_command)
        yield


@contextmanager
def moto_without_public_amis() -> Iterator[None]:
    """moto's EC2 without Amazon's public AMI list for the length of the block (moto/settings.py
    ``ec2_load_default_amis``): building it is most of a mocked EC2's start-up, and moto checks no ``ImageId`` unless
    MOTO_ENABLE_AMI_VALIDATION is set.

    moto's EC2 backends are dropped on the way in and on the way out. moto rebuilds EC2's while it resets
    autoscaling's (AutoScalingBackend reads ec2_backends in its constructor), after it has reset EC2's and cleared its
    list of backends to reset (moto/core/base_backend.py, BackendDict.reset); no later reset reaches that one, so it
    serves the next mocks of the process as it was built: with the list when an earlier module left it (this block
    would load it anyway), without it when this block leaves it (another module's
    ``describe_images(Owners=["amazon"])`` then finds none)."""
    from moto.ec2.models import ec2_backends

    ec2_backends.clear()
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("MOTO_EC2_LOAD_DEFAULT_AMIS", "false")
            yield
    finally:
        ec2_backends.clear()
