"""Run the cluster program (the one a real ``pulumi up`` runs) under the mocked cloud, in-process."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import threading
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from provision.clouds.mocking import CloudFaultError, CloudMocks, Fault, Registered, StrictViolationError, install
from provision.clouds.strict import Leaf
from provision.engine.mockstate import (
    MockPlan,
    MockResource,
    MockRunFailedError,
    MockState,
    _jsonable,
    diff_resources,
    recorded_outputs,
    spec_hash,
)
from provision.planning.plan import ClusterPlan
from provision.spec import CONFIG_KEY, PROJECT, ClusterSpec
from provision.spec.units import format_time


@dataclass
class PreviewResult:
    """What one mocked run registered and returned."""

    plan: ClusterPlan
    resources: list[Registered]
    outputs: dict[str, Any]
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    #: How every input leaf was accounted for (``run_program(..., accounting=True)``).
    accounting: list[Leaf] = field(default_factory=list)

    def of_type(self, type_token: str) -> list[Registered]:
        return [r for r in self.resources if r.type == type_token]

    def one(self, type_token: str) -> Registered:
        found = self.of_type(type_token)
        if len(found) != 1:
            raise AssertionError(f"expected one {type_token}, found {len(found)}: {[r.name for r in found]}")
        return found[0]

    def as_dict(self) -> dict[str, Any]:
        """The JSON shape of ``provision preview --json`` (docs/contracts.md)."""
        return {
            "plan": self.plan.summary(),
            "resources": [{"type": r.type, "name": r.name, "inputs": r.inputs} for r in self.resources if r.custom],
            "components": [{"type": r.type, "name": r.name} for r in self.resources if not r.custom],
            "outputs": self.outputs,
        }


def stack_config(root: Path, stack: str) -> tuple[dict[str, str], list[str]]:
    """A stack's config as the Pulumi CLI hands it to a program: ``{"ns:key": str}``.

    Structured values become JSON strings; ``secure:`` values are listed as secret keys
    with a placeholder (they cannot be decrypted without the CLI).
    """
    project = yaml.safe_load((root / "Pulumi.yaml").read_text(encoding="utf-8"))
    name = project["name"]
    cfg: dict[str, Any] = {}
    for key, decl in (project.get("config") or {}).items():
        full = key if ":" in key else f"{name}:{key}"
        if isinstance(decl, dict) and "default" in decl:
            cfg[full] = decl["default"]
        elif isinstance(decl, dict) and "value" in decl:
            cfg[full] = decl["value"]
        elif not isinstance(decl, dict):
            cfg[full] = decl
    doc = yaml.safe_load((root / project.get("stackConfigDir", ".") / f"Pulumi.{stack}.yaml").read_text()) or {}
    secret: list[str] = []
    for key, value in (doc.get("config") or {}).items():
        full = key if ":" in key else f"{name}:{key}"
        if isinstance(value, dict) and set(value) == {"secure"}:
            secret.append(full)
            value = "mock-secret"
        cfg[full] = value
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in cfg.items()}, secret


def held_config(path: Path) -> dict[str, str]:
    """What a stack file records about the cluster it holds, as program config: the failover try and createdAt.

    ``provision up`` writes ``provision:failover`` and ``provision:createdAt`` into the stack; a bare
    ``pulumi up`` reads them back (``engine/program.py``), so a mocked run of the stack file must too.
    """
    from provision.clouds.failover import CONFIG_KEY as FAILOVER_KEY
    from provision.engine.program import CREATED_AT_KEY

    doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    held: dict[str, str] = {}
    for key, value in (doc.get("config") or {}).items():
        full = key if ":" in key else f"{PROJECT}:{key}"
        if full in (FAILOVER_KEY, CREATED_AT_KEY) and value is not None:
            # YAML reads an unquoted time as a datetime; Pulumi hands the program the text.
            held[full] = format_time(value) if isinstance(value, datetime) else str(value)
    return held


def _resolve(value: Any) -> Any:
    """An Output of the program's outputs with every value resolved.

    A dict's Output values are chained, not passed through ``Output.from_input``, whose deep copy wraps
    every element of a long host list in an Output of its own (see ``clouds.outputs.gather``).
    """
    import pulumi

    from provision.clouds.outputs import gather

    if not isinstance(value, dict):
        return pulumi.Output.from_input(value)
    keys = list(value)
    return gather([value[k] for k in keys]).apply(lambda values: dict(zip(keys, values, strict=True)))


def run_program(
    spec: ClusterSpec,
    *,
    stack: str = "mock",
    faults: tuple[Fault, ...] | list[Fault] = (),
    now: datetime | None = None,
    config: dict[str, str] | None = None,
    owner: str | None = None,
    strict: bool = True,
    fail_fast: bool = True,
    accounting: bool = False,
) -> PreviewResult:
    """Run the cluster program (:func:`~provision.engine.program.cluster_program`) under :class:`CloudMocks`.

    The program gets the stack config a ``pulumi up`` would: ``config`` (``"ns:key"`` strings, e.g. from
    :func:`stack_config`) with ``spec`` as ``provision:cluster``, so it reads the failover try
    (``provision:failover``) and the creation time (``provision:createdAt``) from it as a real run does.
    ``now`` is the creation time; without it the config's ``provision:createdAt`` counts, and without that
    the current time is written there first, as ``provision up`` does.

    Validation happens first: a bad spec raises ``SpecError`` / ``BudgetError`` before any
    resource is registered. Faults raise ``CloudFaultError`` (wrapped by Pulumi). Under
    ``strict`` (the default) an input the real cloud rejects raises ``StrictViolationError``
    (a ``CloudFaultError``) naming the resource, field, value, rule and source: at the first
    refused resource, as the cloud would, or with ``fail_fast=False`` after the whole program ran,
    listing every violation at once. With ``accounting`` the result also says how every input leaf of every
    resource was accounted for (:attr:`PreviewResult.accounting`).

    Not thread-safe: Pulumi's runtime settings are process-global.
    """
    import pulumi

    from provision.clouds.base import get_adapter
    from provision.engine import program

    settings = {**(config or {}), CONFIG_KEY: spec.model_dump_json(exclude_none=True)}
    if now is None and not settings.get(program.CREATED_AT_KEY):
        settings[program.CREATED_AT_KEY] = format_time(datetime.now(timezone.utc))
    get_adapter(spec.cloud).require_sdk()
    _ensure_event_loop()
    mocks = CloudMocks(
        faults,
        region=spec.region,
        strict=strict,
        fail_fast=fail_fast,
        accounting=accounting,
        now=now,
        stack_outputs=recorded_outputs,
    )
    pulumi.runtime.set_all_config(settings)
    pulumi.runtime.settings.ROOT.set(None)
    install(mocks, project=PROJECT, stack=stack)
    captured: dict[str, Any] = {}
    planned: list[ClusterPlan] = []

    def placed(plan: ClusterPlan) -> None:
        """The plan of the try the config holds: the mocked cloud answers for its region and places faults by it."""
        planned.append(plan)
        mocks.ctx.region = plan.spec.region
        mocks.placement = tuple(p for p in (plan.region, plan.zone, plan.instance_type, plan.capacity.type) if p)

    @pulumi.runtime.test
    def _run() -> Any:
        outputs = program.cluster_program(now=now, owner=owner, on_plan=placed)
        return _resolve(outputs).apply(captured.update)

    with _interrupt_stops_the_loop() as interrupted, fewer_collections():
        try:
            _run()
        except RuntimeError:
            if interrupted:  # the loop was stopped for a Ctrl-C: report the interrupt itself
                raise KeyboardInterrupt from None
            raise
        except CloudFaultError as e:
            # What a real run leaves in the state: every resource the cloud created, those whose
            # creates were still in flight when the fault surfaced included.
            mocks.settle()
            first = mocks.first_fault or e
            first.partial = list(mocks.ledger)
            first.listed = dict(mocks.ctx.listed_errors)
            raise first from None
        except pulumi.RunError as e:
            # The program itself failed (e.g. a read-back that finds fewer nodes than asked): a real `up` stops
            # the same way and keeps what was created. It carries no cloud code.
            mocks.settle()
            failed = CloudFaultError("", str(e))
            failed.partial = list(mocks.ledger)
            failed.listed = dict(mocks.ctx.listed_errors)
            raise failed from None
    if mocks.violations:
        error = StrictViolationError(mocks.violations)
        error.partial = list(mocks.ledger)
        raise error
    return PreviewResult(
        plan=planned[0],
        resources=list(mocks.ledger),
        outputs=captured,
        calls=list(mocks.calls),
        accounting=list(mocks.accounting),
    )


#: The garbage collector's thresholds while a mocked program runs (CPython's defaults: 700, 10, 10). The Pulumi
#: runtime allocates futures, outputs and property structs by the hundred thousand for a large cluster, and with the
#: defaults collections scan them again and again: ``up --mock`` of the 64-node Azure stack spent about a fifth of
#: its CPU there. The same cycles are freed, only later; the caller's thresholds come back after the run.
MOCK_RUN_GC_THRESHOLDS = (10_000, 50, 100)


@contextlib.contextmanager
def fewer_collections() -> Iterator[None]:
    """Run the body with :data:`MOCK_RUN_GC_THRESHOLDS` (or the caller's, where higher), then restore the caller's."""
    import gc

    before = gc.get_threshold()
    gc.set_threshold(*(max(a, b) for a, b in zip(before, MOCK_RUN_GC_THRESHOLDS, strict=True)))
    try:
        yield
    finally:
        gc.set_threshold(*before)


@contextlib.contextmanager
def _interrupt_stops_the_loop() -> Iterator[list[bool]]:
    """While the mocked program runs, a Ctrl-C stops the event loop instead of landing inside a task.

    Python raises ``KeyboardInterrupt`` wherever the main thread is; inside an asyncio task step it
    breaks the task ("Leaving task ... does not match the current task") and Pulumi's ``_sync_await``
    can then wait forever for a future nobody completes (2 of 36 interrupted ``up --mock`` runs hung).
    ``loop.add_signal_handler`` runs the handler between steps instead; the caller turns the stopped
    loop into a ``KeyboardInterrupt``. Only on the main thread, with Python's default SIGINT handler
    and a loop that is not already running (a notebook's loop is left alone). Yields a list that holds
    ``True`` once interrupted.
    """
    hit: list[bool] = []
    loop = None
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is (
        signal.default_int_handler
    ):
        with contextlib.suppress(RuntimeError), warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            loop = asyncio.get_event_loop()
    if loop is None or loop.is_running() or loop.is_closed():
        yield hit
        return

    def stop() -> None:
        hit.append(True)
        loop.stop()

    try:
        loop.add_signal_handler(signal.SIGINT, stop)
    except (ValueError, RuntimeError, NotImplementedError):  # no signal support on this loop or platform
        yield hit
        return
    try:
        yield hit
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _ensure_event_loop() -> None:
    """Give this thread an open event loop unless one is running.

    Pulumi's mocked runtime makes futures on the current loop. After an ``asyncio.run``
    (in a script, or an earlier test) the main thread has none and ``asyncio.Future()``
    raises. Inside a running loop (a Jupyter cell) nothing is needed: the runtime pumps it.
    """
    try:
        _quiet_injected_faults(asyncio.get_running_loop())
        return
    except RuntimeError:
        pass
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            loop = asyncio.get_event_loop()
        if not loop.is_closed():
            _quiet_injected_faults(loop)
            return
    except RuntimeError:
        pass
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    _quiet_injected_faults(loop)


def _quiet_injected_faults(loop: asyncio.AbstractEventLoop) -> None:
    """Drop asyncio's "Future exception was never retrieved" for an injected fault (and an interrupt's echo).

    The run already raised the fault (or the strict violation); after it, every resource that waited on
    the failed one holds the same exception unread, and whenever the garbage collector frees them the
    loop would print its traceback again. Installed once per loop (the handler carries a marker);
    everything else goes to the loop's previous handler.
    """
    previous = loop.get_exception_handler()
    if getattr(previous, "provision_quiet", False):
        return

    def handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if isinstance(exc, CloudFaultError):
            return
        # A Ctrl-C that lands inside a task step leaves asyncio unable to leave that task ("Leaving task
        # ... does not match the current task"); the interrupt itself is reported (exit 130), so its
        # traceback on stderr is only noise.
        if isinstance(exc, RuntimeError) and "does not match the current task" in str(exc):
            return
        if previous is not None:
            previous(loop, context)
        else:
            loop.default_exception_handler(context)

    handler.provision_quiet = True  # type: ignore[attr-defined]
    loop.set_exception_handler(handler)


def run_mock(
    spec: ClusterSpec,
    stack: str,
    previous: MockState | None,
    now: datetime | None = None,
    faults: tuple[Any, ...] | list[Any] = (),
    replace: frozenset[tuple[str, str]] = frozenset(),
) -> MockPlan:
    """Run the program for ``spec`` under the mocked cloud and diff it against ``previous``.

    ``replace``: resources (type, name) to replace even when unchanged, as ``pulumi up --replace`` does.

    The creation time is ``previous.created_at`` when there is one, else ``now``, so an
    unchanged spec yields the same graph (expiry tags included) and no steps.

    Raises:
        SpecError, BudgetError: the spec fails validation (nothing is registered).
        MockRunFailedError: an injected fault failed a resource; carries the partial state.
    """
    now = (now or datetime.now(timezone.utc)).replace(microsecond=0)
    created_at = previous.created_at if previous else now

    def state_of(registered: list[Any], outputs: dict[str, Any]) -> MockState:
        resources = [
            MockResource(
                r.type,
                r.name,
                _jsonable(r.inputs),
                r.id,
                r.custom,
                tuple(getattr(r, "replace_on_changes", ())),
                bool(getattr(r, "delete_before_replace", False)),
            )
            for r in registered
        ]
        return MockState(
            stack=stack,
            spec=_jsonable(spec.model_dump(mode="json", exclude_none=True)),
            spec_hash=spec_hash(spec),
            resources=resources,
            outputs=_jsonable(outputs),
            created_at=created_at,
            updated_at=now,
        )

    try:
        run = run_program(spec, stack=stack, now=created_at, faults=faults)
    except CloudFaultError as e:
        partial = state_of(e.partial, {})
        reached = {r.key for r in partial.resources}
        partial.resources += [r for r in (previous.resources if previous else []) if r.key not in reached]
        raise MockRunFailedError(f"up of {stack!r} failed: {e}", e.code, partial, e.listed) from None
    state = state_of(run.resources, run.outputs)
    return MockPlan(state, diff_resources(previous.resources if previous else [], state.resources, replace))
