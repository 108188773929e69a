"""pytest fixtures for suites that use provision: mocked clouds by default, no credentials, no spend.

Installed with provision (entry point ``pytest11: provision``), so any suite can use:

* ``provision_home``: an isolated ``PROVISION_HOME`` under ``tmp_path`` (mock state, ledger, backend).
* ``provision_mock_cloud``: ``run(target, faults=(), stack=None, now=None)`` runs the real Pulumi
  program of a stack name, spec file, mapping or ``ClusterSpec`` under
  :class:`~provision.testing.CloudMocks` and returns the
  :class:`~provision.testing.PreviewResult` (resources, inputs, outputs). ``faults`` are
  :class:`~provision.testing.Fault` s; a fault makes ``run`` raise. Each run happens in a
  worker thread with its own event loop and context, so the Pulumi mocks and config it
  installs never reach the test's thread, and nothing of the test's is reset.
* ``ephemeral_cluster``: ``cluster = ephemeral_cluster(target, max_cost_usd=..., ttl=...)``
  brings up a bounded cluster (:func:`provision.ops.ephemeral.ephemeral_cluster`) and destroys it
  when the test ends, failed or not (``with ephemeral_cluster(target) as cluster:``, the README's
  form, tears it down at the end of the block instead). It runs on the mocked cloud, in an isolated home, unless
  pytest runs with ``--provision-real``; ``mock=False`` without that option fails the test.

Options: ``--provision-real`` (let ``ephemeral_cluster`` create real, billable clusters: tests
that do not pass ``mock=`` then run on the real cloud), ``--provision-max-cost-usd`` and
``--provision-ttl`` (the cap and lifetime for clusters whose test passes none).

Loading this plugin imports only pytest and the standard library: every pytest run of a suite
with provision installed loads it, so Pulumi and pydantic are imported by the fixtures, on use.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from provision.clouds.mocking import Fault
    from provision.engine.mockrun import PreviewResult
    from provision.ops.cluster import Cluster
    from provision.spec import ClusterSpec

REAL_OPTION = "--provision-real"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("provision", "provision: GPU clusters (mocked clouds unless --provision-real)")
    group.addoption(
        REAL_OPTION,
        action="store_true",
        default=False,
        help="let the ephemeral_cluster fixture create real, billable cloud resources "
        "(tests that do not pass mock= then run on the real cloud)",
    )
    group.addoption(
        "--provision-max-cost-usd",
        type=float,
        default=None,
        metavar="USD",
        help="cost cap for ephemeral clusters whose test passes none (replaces the spec's)",
    )
    group.addoption(
        "--provision-ttl",
        default=None,
        metavar="DURATION",
        help="lifetime (e.g. 2h) for ephemeral clusters whose test passes none (replaces the spec's)",
    )


#: Provider SDKs warn about their own deprecated resources on import and on every Args class; that is
#: noise in a user's run, not something the user's code did.
PROVIDER_WARNINGS = tuple(
    f"ignore::DeprecationWarning:{module}.*"
    for module in ("pulumi_aws", "pulumi_gcp", "pulumi_azure_native", "pulumi_alicloud")
)


def pytest_configure(config: pytest.Config) -> None:
    """Keep the provider SDKs' DeprecationWarnings out of the user's test report (their own filters still apply)."""
    for line in PROVIDER_WARNINGS:
        config.addinivalue_line("filterwarnings", line)


def pytest_report_header(config: pytest.Config) -> str | None:
    if config.getoption("provision_real"):
        return "provision: REAL clouds enabled (--provision-real): ephemeral_cluster creates billable resources"
    return None


@pytest.fixture
def provision_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty ``PROVISION_HOME`` (0700) under ``tmp_path``, set for the test and restored after.

    A backend or passphrase from the developer's environment (``PULUMI_BACKEND_URL``,
    ``PULUMI_CONFIG_PASSPHRASE[_FILE]``) is unset too, so nothing reaches real state.
    """
    home = tmp_path / "provision-home"
    home.mkdir(mode=0o700)
    monkeypatch.setenv("PROVISION_HOME", str(home))
    for var in ("PULUMI_BACKEND_URL", "PULUMI_CONFIG_PASSPHRASE", "PULUMI_CONFIG_PASSPHRASE_FILE"):
        monkeypatch.delenv(var, raising=False)
    return home


def _target(target: Any, root: Path | None) -> tuple[ClusterSpec, str, dict[str, str]]:
    """(spec, stack name, the stack file's provider config) for a run under the mocks."""
    from provision.engine.mockrun import held_config
    from provision.ops.ephemeral import read_stack_file_config
    from provision.spec.loading import resolve_target, stack_of_file

    spec, source = resolve_target(target, root)
    if source is None:
        return spec, spec.name, {}
    plain, secret, _ = read_stack_file_config(source)
    # Secrets cannot be decrypted without the CLI; the mocked cloud gets a placeholder, as `provision preview`.
    # The failover try and createdAt the file holds count as in `pulumi up -s <stack>`.
    config = {**plain, **dict.fromkeys(secret, "mock-secret"), **held_config(source)}
    return spec, stack_of_file(source) or spec.name, config


@pytest.fixture
def provision_mock_cloud() -> Callable[..., PreviewResult]:
    """``run(target, *, faults=(), stack=None, now=None, root=None, strict=True) -> PreviewResult`` on the mocked cloud.

    ``target`` is a stack name, a spec or stack YAML path, a mapping or a ``ClusterSpec``; a stack
    file's provider config (``aws:region``, ...) is set as the program would see it. Raises what
    the program raises: ``SpecError`` / ``BudgetError`` before any resource, an exception
    carrying the fault's code when a :class:`~provision.testing.Fault` fires, and
    :class:`~provision.testing.StrictViolationError` when an input breaks a rule of the real cloud
    (``strict=False`` turns the rules off).
    """

    def run(
        target: Any,
        *,
        faults: Iterable[Fault] = (),
        stack: str | None = None,
        now: datetime | None = None,
        root: Path | str | None = None,
        strict: bool = True,
    ) -> PreviewResult:
        from provision.engine.mockrun import run_program

        spec, default_stack, config = _target(target, Path(root) if root else None)
        return _isolated(
            run_program,
            spec,
            stack=stack or default_stack,
            faults=tuple(faults),
            now=now,
            config=config,
            strict=strict,
            fail_fast=False,  # nothing persists: report every violation at once
        )

    return run


def _isolated(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` in a worker thread with its own event loop and ``contextvars`` context.

    Pulumi keeps its runtime settings in context variables and its futures on the thread's
    loop, so nothing it sets up reaches the caller's thread. After an injected fault, the
    futures of resources that waited on the failed one hold its exception unread; the private
    loop drops those reports instead of logging dozens of "Future exception was never
    retrieved" whenever the garbage collector happens to run.
    """
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from provision.clouds.mocking import CloudFaultError

    def quiet(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if isinstance(context.get("exception"), CloudFaultError) and "never retrieved" in context.get("message", ""):
            return
        loop.default_exception_handler(context)

    def work() -> Any:
        loop = asyncio.new_event_loop()
        loop.set_exception_handler(quiet)
        asyncio.set_event_loop(loop)
        try:
            return contextvars.copy_context().run(fn, *args, **kwargs)
        finally:
            asyncio.set_event_loop(None)
            loop.close()

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="provision-mock-cloud") as pool:
        return pool.submit(work).result()


@pytest.fixture
def ephemeral_cluster(request: pytest.FixtureRequest) -> Iterator[Callable[..., Cluster]]:
    """``ephemeral_cluster(target, *, mock=None, max_cost_usd=None, ttl=None, **kwargs) -> Cluster`` (up).

    Every cluster started in the test is destroyed when the test ends, in reverse order. ``mock``
    defaults to the mocked cloud unless pytest runs with ``--provision-real``; other keyword
    arguments go to :func:`provision.ops.ephemeral.ephemeral_cluster`.
    """
    real = bool(request.config.getoption("provision_real"))
    if not real:
        # Set up before this fixture finishes, so it is torn down after the clusters are.
        request.getfixturevalue("provision_home")

    with ExitStack() as clusters:

        def start(
            target: Any,
            *,
            mock: bool | None = None,
            max_cost_usd: float | None = None,
            ttl: Any = None,
            **kwargs: Any,
        ) -> Cluster:
            from provision.ops.ephemeral import ephemeral_cluster as bounded

            if mock is None:
                mock = not real
            if not mock and not real:
                pytest.fail(
                    "ephemeral_cluster(mock=False) would create real, billable cloud resources; run pytest with "
                    f"{REAL_OPTION} to allow it (in CI: only in a manually triggered job with a cost cap)",
                    pytrace=False,
                )
            if max_cost_usd is None:
                max_cost_usd = request.config.getoption("provision_max_cost_usd")
            if ttl is None:
                ttl = request.config.getoption("provision_ttl")
            kwargs.setdefault("display", "none" if mock else "plain")
            return clusters.enter_context(bounded(target, mock=mock, max_cost_usd=max_cost_usd, ttl=ttl, **kwargs))

        yield start
