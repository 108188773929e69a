"""``Cluster``: the Python API for notebooks and scripts.

    >>> from provision import Cluster
    >>> c = Cluster("gcp-a3-64", mock=True)       # a stack in stacks/, a spec file, a mapping or a ClusterSpec
    >>> c.plan().summary()["hourly_usd"]           # validated plan and cost; nothing is created
    >>> c.up()                                      # create or update; shows progress
    >>> print(c.hostfile()); c.nccl_env; c.cost    # what training jobs need
    >>> c.down()                                    # delete everything

Real mode runs :func:`provision.engine.program.cluster_program` in this process through the Pulumi
Automation API on the repository's ``Pulumi.yaml`` and stack files (see
:mod:`provision.engine.automation`); mock mode (``mock=True``) runs the same program against the
mocked cloud with local state (:mod:`provision.engine.mockstate`) and needs no CLI or credentials.

Not thread-safe: one operation at a time per process (Pulumi's runtime is process-global).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from provision.engine.progress import OperationResult, Progress
from provision.ops.cluster_cost import ClusterCost
from provision.ops.cluster_mock import MockOperations
from provision.ops.node_access import NodeAccess
from provision.ops.signals import sigterm_as_interrupt
from provision.ops.targets import check_stack_name, resolve_cluster
from provision.planning.outputs import render_hostfile
from provision.spec import ClusterSpec
from provision.spec.errors import CapacityError, CloudError, Problem, ProvisionError, QuotaError, UnsupportedError

if TYPE_CHECKING:
    from pulumi import automation as auto

    from provision.clouds.mocking import Fault
    from provision.planning.plan import ClusterPlan


class Cluster(NodeAccess, MockOperations):
    """One GPU cluster: plan it, bring it up, read its outputs, tear it down.

    Args:
        target: a :class:`~provision.spec.models.ClusterSpec`, a spec mapping, a path to a spec or
            stack YAML file, or a stack name in ``stacks/`` (the project's, else those shipped with provision).
        stack: the Pulumi stack (default: the stack name of the target, else the spec's name).
        mock: run against the mocked cloud with local state instead of the real cloud.
        root: the folder with ``Pulumi.yaml`` and ``stacks/`` (default: the working directory
            when it holds a ``Pulumi.yaml``, else a project folder under ``$PROVISION_HOME``).
        display: progress display: ``auto``, ``rich``, ``notebook``, ``plain`` or ``none``.
        pulumi_command: the ``pulumi.automation.PulumiCommand`` to run (default: the
            installed CLI; tests pass a fake).
        faults: mock mode only: :class:`~provision.testing.Fault` s that fail resources with a
            cloud error code, so a user's CI can rehearse capacity or quota failures. What was
            created before the failure stays in the mock state, as Pulumi would keep it.

    Raises:
        SpecError: the target cannot be read or the spec is invalid (every problem listed).
    """

    def __init__(
        self,
        target: ClusterSpec | Mapping[str, Any] | str | Path,
        *,
        stack: str | None = None,
        mock: bool = False,
        root: Path | str | None = None,
        display: str = "auto",
        pulumi_command: auto.PulumiCommand | None = None,
        faults: Sequence[Fault] = (),
    ) -> None:
        from provision.engine.automation import project_root

        if faults and not mock:
            raise UnsupportedError("faults can only be injected into the mocked cloud; to fix: pass mock=True")
        self.root = Path(root) if root else project_root()
        self.spec, default_stack = resolve_cluster(target, self.root, mock, pulumi_command)
        self.stack = check_stack_name(stack or default_stack)
        self.mock = mock
        self.display = display
        self.verbose = False  # the progress display lists every resource (``up/down --verbose``)
        self._command = pulumi_command
        self._faults = tuple(faults)
        self._outputs: dict[str, Any] | None = None
        self._created_at: datetime | None = None
        self._state = "unknown"
        self._planned: int | None = None
        self._plans: dict[tuple[int, datetime | None], ClusterPlan] = {}
        self._attach: dict[int, tuple[ClusterSpec, dict[str, Any]]] = {}  # real mode: the attached volume, by try
        self._try = 0  # which failover try (0: the spec as written) the cluster is on
        self._options: tuple[Any, ...] | None = None  # the failover options (derived once for `auto`)
        self._fresh_nodes = False  # the next up follows a try without stock in the same region: replace its nodes

    @classmethod
    def from_spec(cls, spec: ClusterSpec | Mapping[str, Any], **kwargs: Any) -> Cluster:
        """A cluster from a spec object or mapping; ``stack`` defaults to the spec's name."""
        return cls(spec, **kwargs)

    @classmethod
    def from_stack(cls, name: str, **kwargs: Any) -> Cluster:
        """A cluster from ``stacks/Pulumi.<name>.yaml``, on stack ``name``."""
        return cls(name, **kwargs)

    # ------------------------------------------------------------------ plan
    def plan(self) -> ClusterPlan:
        """The validated plan (offer, zone, nodes, fabric, storage, cost). Creates nothing.

        The lifetime counts from the cluster's creation time when it exists, else from now.

        Raises:
            SpecError: the catalog cannot satisfy the spec. BudgetError: the cost cap refuses it.
        """
        return self._plan_at(self._known_created_at())

    def _plan_at(self, created: datetime | None) -> ClusterPlan:
        """The current try's plan, its lifetime counting from ``created`` (from now when ``None``), computed once."""
        key = (self._try, created)
        if key not in self._plans:
            self._plans[key] = self._plan_spec(self.effective_spec, created)
        return self._plans[key]

    def _plan_spec(self, spec: ClusterSpec, created: datetime | None = None) -> ClusterPlan:
        from provision.clouds.base import get_adapter
        from provision.ops.volumes import planned_spec

        # An attached volume: planned with its filesystem (read from its stack), priced beside the cluster.
        spec = planned_spec(spec, self.mock, self.root, self._command)
        return get_adapter(spec.cloud).plan(spec, now=created or self._known_created_at(), stack=self.stack)

    @property
    def effective_spec(self) -> ClusterSpec:
        """The spec of the try the cluster is on: the spec as written, or one of its failover options."""
        from provision.clouds import failover

        return failover.alternative(self.spec, self._try, self._failover_options())

    def _failover_options(self) -> tuple[Any, ...]:
        """The spec's failover options, derived once per ``Cluster`` for ``failover: auto``."""
        from provision.clouds import failover

        if self._options is None:
            self._options = failover.options(self.spec)
        return self._options

    def _use_try(self, index: int) -> None:
        self._try = index

    def _deployed_try(self) -> int | None:
        """Which failover try holds the deployed cluster (``None``: nothing deployed, or no try matches)."""
        from provision.clouds import failover

        if not self.spec.failover:
            return None
        if self.mock:
            state = self._store().load(self.stack)
            return failover.deployed_try(self.spec, state.spec if state else None, self._failover_options())
        from provision.engine import automation

        stack = self._open(create=False)
        if stack is None:
            return None
        raw = automation.run_operation("config", self.stack, lambda: automation.stack_config(stack)).get(
            failover.CONFIG_KEY
        )
        ok = raw and str(raw).isascii() and str(raw).isdigit()
        return int(raw) if ok and int(raw) < failover.tries(self.spec, self._failover_options()) else None

    def _print(self, line: str) -> None:
        if self.display != "none":
            print(line, file=sys.stderr)

    def _known_created_at(self) -> datetime | None:
        if self.mock:
            state = self._store().load(self.stack)
            return state.created_at if state else None
        return self._created_at

    # ------------------------------------------------------------------ operations
    def preview(self) -> OperationResult:
        """What ``up`` would change: resources to create, update (with the changed input keys) and delete."""
        self.plan()
        if self.mock:
            result = self._mock_up(apply=False)
        else:
            from provision.engine import automation

            self._attached()  # an attached volume is checked before the stack is made
            stack = self._open(create=True)
            assert stack is not None  # noqa: S101  # create=True always returns a stack
            created_at = automation.run_operation(
                "config", self.stack, lambda: automation.write_config(stack, self.spec, _now(), created=False)
            )
            program = self._program(created_at or _now())
            with self._progress("preview") as p:
                automation.run_operation(
                    "preview", self.stack, lambda: stack.preview(program=program, on_event=p.on_event), p
                )
                result = p.result(mock=False)
                from provision.clouds.replacement import node_replacement_warnings

                result.warnings += node_replacement_warnings(result.steps)
                p.finish(result)
        self._planned = result.changed
        return result

    def up(self, yes: bool = True) -> OperationResult | None:
        """Create or update the cluster; blocks until done. Safe to repeat (an unchanged spec changes nothing).

        With ``failover`` options in the spec, every try is planned and priced first; when the
        cloud has no stock for a try, what that try created is deleted and the next one is tried.
        A cluster that already landed on a try stays there (later tries only after it fails).

        Args:
            yes: ``False`` prints the plan and the preview and asks before changing anything.

        Returns:
            What changed, with the outputs; ``None`` when the user declined.

        Raises:
            SpecError, BudgetError: before anything is created (for any try).
            QuotaError: the account's quota is used up (no failover: another zone does not help).
            CapacityError: no try had capacity (each try's code is named; nothing of them remains).
            CloudError: the cloud or Pulumi failed (resources created so far remain; call :meth:`down`).
                CloudError also when the Pulumi CLI is missing.
        """
        from provision.clouds import failover, failover_auto

        # Validation and the cost cap of every try, first. Try 0 is the spec itself (``alternative(spec, 0) is
        # spec``): its plan is shared with :meth:`plan` both ways, so it is computed once.
        created = self._known_created_at()
        known = self._plans.get((0, created))
        opts = self._failover_options()
        plans = failover.plan_all(
            self.spec, lambda s: known if known is not None and s is self.spec else self._plan_spec(s, created), opts
        )
        self._plans.setdefault((0, created), plans[0])
        deployed = self._deployed_try()
        start = deployed or 0
        self._use_try(start)
        if not yes and not self._confirm(f"bring up {self.stack}", self.plan()):
            return None
        from provision.engine.preflight import PreflightError

        last = failover.tries(self.spec, opts) - 1
        failed: list[str] = []
        refused: list[Problem] = []
        for i in range(start, last + 1):
            self._use_try(i)
            try:
                return self._up_once()
            except PreflightError as e:
                # The account said no before anything existed: the next try costs nothing to attempt.
                named = [replace(p, rule=f"{failover.describe(self.spec, i, opts)}: {p.rule}") for p in e.problems]
                if i == last:
                    if not refused and not failed:
                        raise
                    tried = f" (before: {'; '.join(failed)})" if failed else ""
                    raise PreflightError(
                        f"no try of {self.stack!r} fits the account{tried}; the refused tries created nothing",
                        [*refused, *named],
                    ) from None
                refused += named
                self._print(f"{failover.describe(self.spec, i, opts)} does not fit the account; trying the next")
            except QuotaError:
                raise
            except CapacityError as e:
                failed.append(f"{failover.describe(self.spec, i, opts)}: {e.code or 'no capacity'}")
                if i == last:
                    if len(failed) == 1:
                        raise
                    raise CapacityError(
                        f"no try of {self.stack!r} found capacity ({'; '.join(failed)}). What the last try created "
                        "remains: call down() (or `provision down`) to remove it, or add failover options",
                        code=e.code,
                    ) from None
                if failover_auto.keeps_network(plans[i], plans[i + 1]):
                    # Same cloud and region: the next try's `up` keeps what stays valid (the network, a regional or
                    # same-zone filesystem) and replaces or removes only what differs, as its diff says.
                    self._print(
                        f"{failover.describe(self.spec, i, opts)} has no capacity ({e.code}); trying "
                        f"{failover.describe(self.spec, i + 1, opts)} in the same region, keeping what it can"
                    )
                    # The failed node group stays in the state (an empty instant fleet, a MIG that never became
                    # stable) and its inputs may not change with the try: the next up replaces it, always.
                    self._fresh_nodes = True
                    continue
                self._print(
                    f"{failover.describe(self.spec, i, opts)} has no capacity ({e.code}); removing what it created"
                )
                self.down()
        raise AssertionError("unreachable")  # pragma: no cover

    def _up_once(self) -> OperationResult:
        """``up`` of the current try (``self._try``), no questions asked, under the stack's lock."""
        try:
            with self._lock("up"):
                result = self._up_once_locked()
        finally:
            self._fresh_nodes = False
        from provision.ops.datalink import after_up

        after_up(self, result)  # GCP's object-store import is an API call once the stack exists
        return result

    def _up_once_locked(self) -> OperationResult:
        plan = self.plan()
        if self.mock:
            return self._mock_up(apply=True)
        from provision.ops.volumes import refuse_real_attach

        refuse_real_attach(self.spec)  # a cloud without a volume program has no real volume to attach
        self._attached()  # the attached volume's stack is read and checked before anything exists
        from provision.engine import automation, preflight

        skipped = preflight.check_before_up(plan)  # raises before anything exists when the account says no
        stack = self._open(create=True)
        assert stack is not None  # noqa: S101
        created_at = automation.run_operation(
            "config", self.stack, lambda: automation.write_config(stack, self.spec, _now())
        )
        if self.spec.failover:  # a bare `pulumi up` builds the same try, in the try's region
            settings = automation.failover_config(self._try, self.spec.cloud, plan.region)
            automation.run_operation("config", self.stack, lambda: stack.set_all_config(settings))
        assert created_at is not None  # noqa: S101  # up writes the creation time when it is missing
        self._created_at = created_at
        tags = self.plan().tags
        automation.run_operation("stack tag set", self.stack, lambda: automation.set_stack_tags(stack, tags))
        program = self._program(created_at)
        replace = automation.node_urns(stack) if self._fresh_nodes else []
        with self._progress("up") as p:
            try:
                res = automation.run_operation(
                    "up",
                    self.stack,
                    lambda: stack.up(program=program, on_event=p.on_event, color="never", replace=replace or None),
                    p,
                )
            except CloudError as e:
                listed = self._listed_capacity(plan, stack, e)
                if listed is not None:
                    raise listed from e
                raise
            self._outputs = {k: v.value for k, v in res.outputs.items()}
            result = p.result(self._outputs)
            result.warnings += [skipped] if skipped else []
            p.finish(result)
        self._state = "up"
        return result

    def _listed_capacity(self, plan: ClusterPlan, stack: auto.Stack, e: CloudError) -> CapacityError | None:
        """A failure without a stock code whose node group lists one (an instant EC2 Fleet, a GCP MIG), else None.

        Asking must never hide the failure itself: when the state or the cloud cannot be read, ``None``.
        """
        from provision.clouds.failover import listed_capacity_error
        from provision.engine import automation

        try:
            resources = automation.stack_resources(stack)
            return listed_capacity_error(plan, resources, f"up of {self.stack!r} failed", e.message)
        except Exception:  # noqa: BLE001 - no SDK, no credentials, an API error: keep the original failure
            return None

    def down(self, yes: bool = True) -> OperationResult | None:
        """Delete every resource of the cluster. Safe to repeat; a missing stack is "nothing to do".

        An interrupted earlier run can leave pending creates in the state; they are cleared
        once (a refresh) and the destroy retried, with a warning: such resources may exist
        without state, and the cloud-side TTL and ``provision reap`` catch them.

        Returns:
            What was deleted; ``None`` when the user declined.
        """
        if not yes and not self._confirm(f"delete every resource of {self.stack}", None):
            return None
        with self._lock("down"):
            return self._down_locked()

    def _recent_files_warning(self) -> list[str]:
        """What ``down`` is about to delete that was written lately (provision.ops.checkpoint_nodes), read from
        the head node before the filesystem goes; only once the stack is known to exist."""
        from provision.ops.checkpoint_nodes import down_warning

        recent = down_warning(self)
        return [] if recent is None else [recent["message"]]

    def _down_locked(self) -> OperationResult:
        if self.mock:
            recent = self._recent_files_warning() if self._store().load(self.stack) is not None else []
            result = self._mock_down()
            result.warnings.extend(recent)
            return result
        from provision.engine import automation

        stack = self._open(create=False)
        if stack is None:
            self._state, self._outputs, self._created_at = "none", {}, None
            return OperationResult("destroy", self.stack, mock=False)
        warnings: list[str] = self._recent_files_warning()
        from provision.ops.volume_adopt import adopt_after_down, read_retained

        try:
            retained = read_retained(self.spec, stack)  # what the destroy leaves in the cloud, before it runs
        except CloudError as e:  # never a reason not to tear down: the filesystem stays in the cloud as before
            retained = None
            warnings.append(f"the retained filesystem was not made a volume (reading the stack failed: {e})")
        with self._progress("destroy") as p:
            try:
                automation.run_operation("destroy", self.stack, lambda: stack.destroy(on_event=p.on_event), p)
            except CloudError as e:
                if e.code != automation.PENDING_OPERATIONS:
                    raise
                automation.run_operation(
                    "refresh", self.stack, lambda: stack.refresh(clear_pending_creates=True, color="never")
                )
                warnings.append(
                    "cleared pending creates left by an interrupted run; resources they made may exist "
                    "without state: check with `provision reap`"
                )
                p.forget_failures()
                automation.run_operation("destroy", self.stack, lambda: stack.destroy(on_event=p.on_event), p)
            result = p.result()
            if retained is not None:
                warnings.append(adopt_after_down(retained, stack, self.root, self._command))
            result.warnings = warnings
            p.finish(result)
        automation.forget_created_at(stack, failover=bool(self.spec.failover))
        self._state, self._outputs, self._created_at = "none", {}, None
        self.forget_access()
        return result

    def refresh(self, clear_pending_creates: bool = False) -> OperationResult:
        """Read the cloud's actual state into the stack (e.g. after a cloud-side TTL deleted nodes)."""
        with self._lock("refresh"):
            return self._refresh_locked(clear_pending_creates)

    def _refresh_locked(self, clear_pending_creates: bool) -> OperationResult:
        if self.mock:
            from provision.engine.progress import ResourceChange

            def unchanged() -> tuple[list[Any], dict[str, Any]]:
                state = self._store().load(self.stack)
                if state is None:
                    return [], {}
                return [ResourceChange("same", r.type, r.name) for r in state.resources], state.outputs

            return self._mock_operation("refresh", unchanged)
        from provision.engine import automation

        stack = self._open(create=False)
        if stack is None:
            return OperationResult("refresh", self.stack, mock=False)
        with self._progress("refresh") as p:
            automation.run_operation(
                "refresh",
                self.stack,
                lambda: stack.refresh(on_event=p.on_event, clear_pending_creates=clear_pending_creates or None),
                p,
            )
            result = p.result()
            p.finish(result)
        self._outputs = None
        return result

    def status(self) -> dict[str, Any]:
        """What exists: ``{"stack", "mock", "state": "up"|"none", "resources": [{type, name, id}], ...}``."""
        from provision.ops.bench import last_bench

        if self.mock:
            state = self._store().load(self.stack)
            resources = [{"type": r.type, "name": r.name, "id": r.id} for r in (state.resources if state else [])]
            created, outputs = (state.created_at, state.outputs) if state else (None, {})
        else:
            from provision.engine import automation
            from provision.engine.program import created_at_from

            stack = self._open(create=False)
            resources, outputs, created = [], {}, None
            if stack is not None:
                resources = automation.run_operation("status", self.stack, lambda: automation.stack_resources(stack))
                raw = automation.run_operation("status", self.stack, lambda: automation.stack_config(stack)).get(
                    automation.CREATED_AT_KEY
                )
                created = created_at_from(raw)
                if resources:
                    outs = automation.run_operation("outputs", self.stack, stack.outputs)
                    outputs = {k: v.value for k, v in outs.items()}
            self._created_at = created
        self._state = "up" if resources else "none"
        self._outputs = outputs
        cost = self.cost.as_dict()
        return {
            "stack": self.stack,
            "cluster": self.spec.name,
            "mock": self.mock,
            "state": self._state,
            "resources": resources,
            "created_at": cost["created_at"],
            "expires_at": cost["expires_at"],
            "hourly_usd": cost["hourly_usd"],
            "spent_usd": cost["spent_usd"],
            "head_node": outputs.get("head_node"),
            "nodes": self.nodes(),
            "bench": last_bench(self, cost["created_at"]),
        }

    @contextmanager
    def ephemeral(self) -> Iterator[Cluster]:
        """``up()`` on entry and ``down()`` on exit, always: on success, on error, on Ctrl-C, on SIGTERM.

        For CI: ``with Cluster("ci.yaml").ephemeral() as c: run_tests(c.hostfile())``. SIGTERM
        (a cancelled CI job) is turned into ``KeyboardInterrupt`` inside the block. A failed
        ``up`` still runs ``down()``, which deletes what was created.
        """
        # Failures that precede any resource (invalid spec, cost cap, no Pulumi CLI) need no teardown.
        self.plan()
        if not self.mock and self._command is None:
            from provision.engine import automation

            self._command = automation.pulumi_command()
        with sigterm_as_interrupt() as signals:
            try:
                self.up(yes=True)
                yield self
            finally:
                signals.tearing_down = True  # CI sends SIGTERM seconds after SIGINT: let the teardown finish
                self._teardown()

    def _teardown(self) -> None:
        try:
            self.down(yes=True)
        except BaseException as e:
            print(
                f"provision: teardown of {self.stack} failed ({type(e).__name__}: {e}); resources may still be "
                f"running. To fix: run `provision down {self.stack}{' --mock' if self.mock else ''}`",
                file=sys.stderr,
                flush=True,
            )
            raise

    # ------------------------------------------------------------------ outputs
    @property
    def outputs(self) -> dict[str, Any]:
        """The stack outputs (``hostfile``, ``head_node``, ``ssh_config``, ``nccl_env``, ...); ``{}`` when down."""
        if self._outputs is None:
            if self.mock:
                state = self._store().load(self.stack)
                self._outputs = dict(state.outputs) if state else {}
            else:
                from provision.engine import automation

                stack = self._open(create=False)
                self._outputs = {}
                if stack is not None:
                    outs = automation.run_operation("outputs", self.stack, stack.outputs)
                    self._outputs = {k: v.value for k, v in outs.items()}
        return self._outputs

    def _require(self, key: str) -> Any:
        value = self.outputs.get(key)
        if value is None:
            raise CloudError(
                f"cluster {self.stack!r} has no output {key!r}: it is not up. To fix: call up() first"
                + (" (mock mode)" if self.mock else "")
            )
        return value

    @property
    def hosts(self) -> list[str]:
        """Private IPs of the nodes, by rank."""
        return list(self._require("hosts"))

    def hostfile(self) -> str:
        """An MPI/DeepSpeed hostfile: ``<ip> slots=<gpus per node>`` per node, by rank."""
        value = self.outputs.get("hostfile")
        return str(value) if value else render_hostfile(self.hosts, self.plan().gpus_per_node)

    def ssh_config(self) -> str:
        """An ``~/.ssh/config`` fragment with one ``Host <name>-<rank>`` per node."""
        return str(self._require("ssh_config"))

    @property
    def nccl_env(self) -> dict[str, str]:
        """The NCCL / fabric environment for training jobs (known from the plan before ``up``)."""
        return dict(self.outputs.get("nccl_env") or self.plan().nccl_env)

    @property
    def cost(self) -> ClusterCost:
        """Estimated USD per hour, and spent since creation at that rate."""
        created = self._known_created_at()  # in mock mode a state file read: once
        plan = self._plan_at(created)
        now = _now()
        from provision.planning.cost import spent_usd

        elapsed = max(0.0, (now - created).total_seconds() / 3600) if created else 0.0
        hourly = plan.cost.hourly_usd
        return ClusterCost(
            hourly_usd=hourly,
            created_at=created,
            elapsed_hours=round(elapsed, 4),
            spent_usd=spent_usd(hourly, created, now) if created else (0.0 if hourly is not None else None),
            lifetime_usd=plan.cost.lifetime_usd,
            expires_at=plan.expires_at if created else None,
        )

    # ------------------------------------------------------------------ display
    def _facts(self) -> dict[str, str]:
        from provision.ops.cluster_display import facts

        state = self._state
        if self.mock:
            state = "up" if self._store().load(self.stack) else "none"
        return facts(self, state)

    def __repr__(self) -> str:
        from provision.ops.cluster_display import as_text

        return as_text(self._facts())

    def _repr_html_(self) -> str:
        from provision.ops.cluster_display import as_html

        return as_html(self._facts())

    # ------------------------------------------------------------------ internals
    def _lock(self, operation: str) -> Any:
        """This stack's exclusive lock for ``operation``; a second command gets ``StackBusyError`` (exit 1)."""
        from provision.engine.locks import stack_lock

        if not self.mock and self._command is None:
            from provision.engine import automation

            # A missing Pulumi CLI is reported before the lock folder (or anything else) is created.
            self._command = automation.pulumi_command()
        return stack_lock(self.stack, operation, self.mock)

    def _progress(self, operation: str) -> Progress:
        return Progress(operation, self.stack, display=self.display, total=self._planned, verbose=self.verbose)

    def _open(self, create: bool) -> auto.Stack | None:
        from provision.engine import automation

        program = self._program(self._created_at or _now())
        return automation.open_stack(self.stack, program, root=self.root, command=self._command, create=create)

    def _program(self, created_at: datetime) -> Any:
        """The inline program: the repository's program function, on this try's spec and creation time.

        With an attached volume the program runs on the spec :func:`provision.ops.volumes.attached_program_spec`
        gives (no filesystem of its own) and exports ``volume`` (how ``volume delete`` finds its users).
        """
        spec = self.effective_spec

        def program() -> None:
            import pulumi

            from provision.engine.program import main

            shared = spec.storage.shared
            if self.mock or shared is None or shared.volume is None:
                main(spec, created_at)
                return
            try:
                program_spec, outputs = self._attached()
            except ProvisionError as e:
                raise pulumi.RunError(str(e)) from None
            main(program_spec, created_at)
            for key, value in outputs.items():
                pulumi.export(key, value)

        return program

    def _attached(self) -> tuple[ClusterSpec, dict[str, Any]]:
        """This try's program spec and volume outputs (real mode), read from the volume's stack once per try.

        Raises:
            VolumeSpecError: the volume is missing or the cluster's nodes cannot mount it (every problem).
        """
        from provision.ops.volumes import attached_program_spec

        if self._try not in self._attach:
            spec = self.effective_spec
            self._attach[self._try] = attached_program_spec(spec, self.plan().zone, False, self.root, self._command)
        return self._attach[self._try]

    def _confirm(self, action: str, plan: ClusterPlan | None) -> bool:
        if plan is not None:
            cost = plan.cost
            price = f"${cost.hourly_usd:,.2f}/h" if cost.hourly_usd is not None else "unpriced"
            print(f"{plan.name}: {plan.nodes} x {plan.instance_type} ({plan.gpus} GPUs) in {plan.zone or plan.region}")
            print(f"cost: {price}; expires {plan.expires_at or 'never'}")
            preview = self.preview()
            print(preview.summary())
            for warning in preview.warnings:  # e.g. GPU nodes replaced: said before the question
                print(f"warning: {warning}")
        answer = input(f"{action}? [y/N] ")
        return answer.strip().lower() in ("y", "yes")


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(microsecond=0)
