"""Cost-capped ephemeral clusters for CI: priced before launch, refused over the cap, always destroyed.

    >>> from provision.ops.ephemeral import ephemeral_cluster
    >>> with ephemeral_cluster("aws-p5-ci", max_cost_usd=250, ttl="2h") as c:
    ...     run_nccl_tests(c.hostfile())

The defences, outermost last:

1. **Bounded.** A cluster without a cloud-side lifetime (``plan.expires_at``) or without a cost
   cap (``lifetime.max_cost_usd``) is refused with a ``BudgetError`` (exit 3) naming both fields.
2. **Priced before launch.** The plan (catalog price, cap, lifetime) is computed and printed before
   the first resource; a projected cost over the cap is a ``BudgetError`` and nothing is created.
3. **Unique per run.** Without ``stack=``, the stack is ``<name>-ci-<run id>-<nonce>`` and the
   cluster is renamed ``<name>-<nonce>``: GitHub's run id is shared by every job and matrix leg of
   a run, and names such as Azure's resource group or Alibaba's key pair are unique per account,
   so two runs of one spec must not share them (nor tear down each other's cluster).
4. **Always destroyed.** :meth:`Cluster.ephemeral` runs ``down()`` on success, error, Ctrl-C and
   SIGTERM (turned into ``KeyboardInterrupt`` inside the block), and after an ``up`` that failed
   half-way. A failed teardown is a ``CloudError`` naming the stack and the way out.
5. **Recorded.** Before the first resource, ``$PROVISION_HOME/ephemeral/<stack>.json`` records the
   stack and spec; a clean teardown removes it. A cancelled GitHub job gets about 10 s between
   SIGINT and SIGKILL, far too little to destroy a GPU cluster, so the job's ``if: always()`` step
   runs ``python -m provision.ops.ephemeral cleanup``, which destroys what the killed run left.
6. **Backstops.** The lifetime enforced by the cloud (GCP ``max_run_duration``, Alibaba
   ``auto_release_time``, the AWS shutdown timer, Azure's node timer deleting the resource group)
   and ``provision reap --yes`` after the expiry, also for a runner that died with its disk.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import secrets
import socket
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from provision.catalog import cloud_facts
from provision.ops.cluster import Cluster
from provision.spec import PROJECT, ClusterSpec, load_spec
from provision.spec.errors import MISSING, BudgetError, CloudError, Problem, ProvisionError, UnsupportedError
from provision.spec.loading import resolve_target, stack_of_file
from provision.spec.units import format_time

if TYPE_CHECKING:
    from pulumi import automation as auto

    from provision.engine.progress import OperationResult
    from provision.planning.plan import ClusterPlan

#: CI variables naming one run or job, in order of preference. GitHub's run id is shared by all jobs
#: and matrix legs of a run (and by its re-runs, hence the attempt), so a random nonce is added too.
RUN_ID_VARS = ("GITHUB_RUN_ID", "CI_JOB_ID", "BUILDKITE_JOB_ID")
#: Longest cluster name the spec allows (``NAME_PATTERN``).
NAME_MAX = 40
_UNSAFE = re.compile(r"[^A-Za-z0-9-]+")
_SAFE_FILE = re.compile(r"[^A-Za-z0-9._-]")


# ---------------------------------------------------------------------- naming


def ci_run_id(env: Mapping[str, str] | None = None) -> str | None:
    """The CI run's id from ``GITHUB_RUN_ID`` (+ ``GITHUB_RUN_ATTEMPT``), ``CI_JOB_ID`` or ``BUILDKITE_JOB_ID``."""
    env = os.environ if env is None else env
    for var in RUN_ID_VARS:
        value = env.get(var, "").strip()
        if not value:
            continue
        if var == "GITHUB_RUN_ID" and env.get("GITHUB_RUN_ATTEMPT", "").strip():
            value = f"{value}-{env['GITHUB_RUN_ATTEMPT'].strip()}"
        return _UNSAFE.sub("-", value).strip("-")[:40] or None
    return None


def unique_names(name: str, env: Mapping[str, str] | None = None, nonce: str | None = None) -> tuple[str, str]:
    """``(stack, cluster name)`` for one run of spec ``name``: ``<name>-ci-<run id>-<nonce>`` (one ``-ci`` when
    ``name`` already ends with it) and ``<name>-<nonce>``."""
    nonce = nonce or secrets.token_hex(3)
    run = ci_run_id(env)
    base = name if name.endswith("-ci") else f"{name}-ci"  # `aws-p5-ci` -> aws-p5-ci-<nonce>, not aws-p5-ci-ci-...
    stack = f"{base}-{run}-{nonce}" if run else f"{base}-{nonce}"
    cluster = f"{name[: NAME_MAX - len(nonce) - 1].rstrip('-')}-{nonce}"
    return stack, cluster


# ---------------------------------------------------------------------- spec and bounds


def with_overrides(
    spec: ClusterSpec, *, name: str | None = None, ttl: Any = None, max_cost_usd: float | None = None
) -> ClusterSpec:
    """A new spec with ``name`` / ``lifetime.ttl`` / ``lifetime.max_cost_usd`` replaced, validated again.

    Raises:
        SpecError: an override breaks a rule (e.g. a ttl under 30m); the path names the field.
    """
    if name is None and ttl is None and max_cost_usd is None:
        return spec
    data = spec.model_dump(mode="json", exclude_none=True)
    lifetime = dict(data.get("lifetime") or {})
    if ttl is not None:
        lifetime["ttl"] = ttl
    if max_cost_usd is not None:
        lifetime["max_cost_usd"] = max_cost_usd
    data["lifetime"] = lifetime
    if name is not None:
        data["name"] = name
    return load_spec(data)


def require_bounds(plan: ClusterPlan) -> None:
    """Refuse a plan without a cloud-side lifetime or a cost cap: an ephemeral cluster must be bounded.

    Raises:
        BudgetError: listing each missing bound with a fix (exit 3). Nothing has been created.
    """
    problems = []
    if plan.expires_at is None:
        problems.append(
            Problem(
                "lifetime.ttl",
                MISSING,
                "is not set and no cost cap derives a lifetime, so nothing deletes the cluster in the cloud "
                "if the CI runner dies",
                "pass ttl='2h' to ephemeral_cluster (or set lifetime.ttl in the spec)",
            )
        )
    elif plan.lifetime_enforced_by is None:
        problems.append(
            Problem(
                "lifetime.ttl",
                plan.spec.lifetime.ttl,
                f"sets an expiry, but nothing in {plan.cloud} deletes the nodes at it with this spec, so a dead CI "
                "runner leaves the cluster billing",
                "enable the cloud's lifetime (on Azure: azure.delete_at_expiry: true)",
            )
        )
    if plan.spec.lifetime.max_cost_usd is None:
        projected = plan.cost.lifetime_usd
        example = math.ceil(projected) if projected else 500
        problems.append(
            Problem(
                "lifetime.max_cost_usd",
                MISSING,
                "is not set, so nothing bounds what the cluster may cost",
                f"pass max_cost_usd={example} to ephemeral_cluster (or set lifetime.max_cost_usd in the spec)",
            )
        )
    if problems:
        raise BudgetError("an ephemeral cluster needs a cloud-side lifetime and a cost cap", problems)


def _iso(t: datetime | None) -> str:
    return format_time(t) if t else "never"


def _announce(plan: ClusterPlan, stack: str, mock: bool) -> None:
    cost = plan.cost
    hourly = f"${cost.hourly_usd:,.2f}/h" if cost.hourly_usd is not None else "unpriced"
    cap = plan.spec.lifetime.max_cost_usd or 0.0
    print(
        f"provision: ephemeral cluster {plan.name} (stack {stack}{', mock' if mock else ''}): {plan.nodes} x "
        f"{plan.instance_type} in {plan.zone or plan.region}, {hourly}, capped at ${cap:,.2f}; "
        f"expires {_iso(plan.expires_at)}",
        file=sys.stderr,
        flush=True,
    )
    for warning in plan.warnings:
        print(f"provision: warning: {warning}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------- stack config (real mode)


def read_stack_file_config(path: Path) -> tuple[dict[str, str], list[str], list[str]]:
    """A stack file's config outside the ``provision:`` namespace: ``(plain, secret keys, structured keys)``.

    Plain values are text as Pulumi stores them (``true``, ``3``); structured values are JSON text.
    """
    import yaml

    doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    plain: dict[str, str] = {}
    secret: list[str] = []
    structured: list[str] = []
    for key, value in (doc.get("config") or {}).items():
        full = key if ":" in key else f"{PROJECT}:{key}"
        if full.startswith(f"{PROJECT}:"):
            continue
        if isinstance(value, dict) and set(value) == {"secure"}:
            secret.append(full)
        elif isinstance(value, (dict, list)):
            structured.append(full)
            plain[full] = json.dumps(value)
        else:
            plain[full] = value if isinstance(value, str) else json.dumps(value)
    return plain, secret, structured


def provider_config(spec: ClusterSpec, source: Path | None, stack: str) -> dict[str, str]:
    """Provider config a new stack needs: the source stack file's (``aws:region``, ``gcp:project``, ...).

    A stack other than the file's own starts with empty config, and the default provider would then
    deploy wherever ``AWS_REGION`` points. Clouds whose default provider picks the region get it
    from the spec when the file does not set it.

    Raises:
        UnsupportedError: the file holds secret or structured provider config, which cannot be
            copied into a new stack's config (secrets are encrypted per stack).
    """
    config: dict[str, str] = {}
    source_stack = stack_of_file(source) if source else None
    if source is not None and source_stack != stack:
        plain, secret, structured = read_stack_file_config(source)
        if secret or structured:
            keys = ", ".join(secret + structured)
            raise UnsupportedError(
                f"the stack file {source.name} holds secret or structured provider config ({keys}), which a new "
                f"per-run stack cannot copy. To fix: pass stack={source_stack!r} to run on that stack itself, or "
                "give the value through the environment (e.g. AWS_PROFILE, ALIBABA_CLOUD_ACCESS_KEY_SECRET)"
            )
        config.update(plain)
    # The default provider's region, for clouds whose resources go where the provider points (catalog facts).
    facts = cloud_facts(spec.cloud)
    key = facts.provider_region_key if facts.region_from_provider else None
    if key and key not in config and source_stack != stack:
        config[key] = spec.region
    return config


def _open_stack(cluster: Cluster, command: auto.PulumiCommand | None, create: bool) -> auto.Stack | None:
    """The cluster's stack in its workspace, for config and housekeeping (no program runs)."""
    from provision.engine import automation

    return automation.open_stack(cluster.stack, lambda: None, root=cluster.root, command=command, create=create)


def _write_provider_config(cluster: Cluster, command: auto.PulumiCommand | None, config: dict[str, str]) -> None:
    from pulumi import automation as auto

    from provision.engine import automation

    stack = _open_stack(cluster, command, create=True)
    assert stack is not None  # noqa: S101  # create=True always returns a stack
    values = {k: auto.ConfigValue(v) for k, v in config.items()}
    automation.run_operation("config", cluster.stack, lambda: stack.set_all_config(values))


def _remove_stack(cluster: Cluster, command: auto.PulumiCommand | None) -> None:
    """Remove an emptied per-run stack (and its ``stacks/Pulumi.<stack>.yaml``); warn on failure.

    ``pulumi stack rm`` without ``--force`` refuses a stack that still holds resources.
    """
    from provision.engine import automation

    try:
        stack = _open_stack(cluster, command, create=False)
        if stack is not None:
            automation.run_operation("stack rm", cluster.stack, lambda: stack.workspace.remove_stack(cluster.stack))
    except ProvisionError as e:
        print(f"provision: warning: could not remove the empty stack {cluster.stack}: {e}", file=sys.stderr)


# ---------------------------------------------------------------------- the cluster and the context


class EphemeralCluster(Cluster):
    """A :class:`~provision.ops.cluster.Cluster` whose failed teardown says how to clean up.

    Attributes:
        expires_at: when the cloud-side lifetime ends (from the plan at launch).
        up_started: ``up()`` was called, so resources may exist.
        torn_down: ``down()`` finished without error.
    """

    expires_at: datetime | None = None
    up_started = False
    torn_down = False

    def __enter__(self) -> EphemeralCluster:
        """The cluster (already up): ``with ephemeral_cluster(...) as c:`` works on the pytest fixture too."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Tear down now (a later teardown by the fixture or the block finds nothing to do)."""
        if self.up_started and not self.torn_down:
            self.down(yes=True)

    def up(self, yes: bool = True) -> OperationResult | None:
        self.up_started = True
        return super().up(yes=yes)

    def down(self, yes: bool = True) -> OperationResult | None:
        """``Cluster.down``; a failure becomes a ``CloudError`` naming the stack and ``provision reap --yes``.

        ``KeyboardInterrupt`` passes through unchanged: the user asked to stop.
        """
        try:
            result = super().down(yes=yes)
        except Exception as e:
            mock = " --mock" if self.mock else ""
            raise CloudError(
                f"teardown of ephemeral cluster {self.spec.name!r} (stack {self.stack!r}) failed: {e}\n"
                "Its resources may still exist and bill. To fix: run `python -m provision.ops.ephemeral cleanup` "
                f"now, or `provision reap --yes{mock}` once it expires at {_iso(self.expires_at)}; until then "
                "the cloud-side lifetime deletes the nodes at the expiry",
                code=getattr(e, "code", ""),
            ) from e
        if result is not None:
            self.torn_down = True
        return result


@contextmanager
def ephemeral_cluster(
    target: ClusterSpec | Mapping[str, Any] | str | Path,
    *,
    max_cost_usd: float | None = None,
    ttl: str | float | timedelta | None = None,
    mock: bool = False,
    stack: str | None = None,
    root: Path | str | None = None,
    display: str = "auto",
    pulumi_command: auto.PulumiCommand | None = None,
) -> Iterator[EphemeralCluster]:
    """Bring a bounded cluster up for the block and always tear it down.

    Args:
        target: a stack name in ``stacks/``, a spec or stack YAML path, a mapping or a ``ClusterSpec``.
        max_cost_usd: replaces ``lifetime.max_cost_usd`` (the cap on the whole lifetime).
        ttl: replaces ``lifetime.ttl`` (``"2h"``, hours as a number, or a ``timedelta``).
        mock: use the mocked cloud with local state (no CLI, no credentials, no spend).
        stack: the Pulumi stack; default a new one per run (and a cluster name with the same nonce).
        root: the folder with ``Pulumi.yaml`` and ``stacks/`` (as for ``Cluster``).
        display: progress display (``auto``, ``rich``, ``plain``, ``none``); ``none`` also silences
            the launch line and the plan's warnings on stderr.
        pulumi_command: the ``PulumiCommand`` to run (default: the installed CLI).

    Yields:
        The cluster, up (``c.hosts``, ``c.hostfile()``, ``c.outputs``).

    Raises:
        SpecError: the target or an override is invalid (exit 2). UnsupportedError: likewise.
        BudgetError: no lifetime or no cap, or the projected cost is over the cap (exit 3).
            These are raised before anything is created.
        CloudError: the CLI is missing (before anything is created); ``up`` failed (after a
            teardown of what it created); or the teardown failed (names the stack and the fix).
    """
    from provision.clouds.base import plan_spec

    root_path = Path(root) if root else None
    spec, source = resolve_target(target, root_path)  # stack names: <root or working dir>/stacks first
    generated = stack is None
    name = None
    if stack is None:
        stack, name = unique_names(spec.name)
    spec = with_overrides(spec, name=name, ttl=ttl, max_cost_usd=max_cost_usd)
    plan = plan_spec(spec, stack=stack)  # SpecError, or BudgetError over the cap: nothing exists yet
    require_bounds(plan)
    config: dict[str, str] = {}
    if not mock:
        config = provider_config(spec, source, stack)
        if pulumi_command is None:
            from provision.engine import automation

            pulumi_command = automation.pulumi_command()
    cluster = EphemeralCluster(
        spec, stack=stack, mock=mock, root=root_path, display=display, pulumi_command=pulumi_command
    )
    cluster.expires_at = plan.expires_at
    if display != "none":
        _announce(plan, stack, mock)
    record = _record(cluster, generated)
    try:
        if config:
            _write_provider_config(cluster, pulumi_command, config)
        with cluster.ephemeral():
            yield cluster
    finally:
        if cluster.torn_down or not cluster.up_started:
            if generated and not mock:
                _remove_stack(cluster, pulumi_command)
            record.unlink(missing_ok=True)
        else:
            _release(record)  # the block is over: `cleanup` may take it although this process lives on


# ---------------------------------------------------------------------- leftovers of killed runs


def ledger_dir() -> Path:
    """``$PROVISION_HOME/ephemeral`` (0700): one JSON file per ephemeral cluster not yet torn down."""
    from provision.engine.automation import private_dir, provision_home

    return private_dir(provision_home() / "ephemeral")


def _record(cluster: EphemeralCluster, generated: bool) -> Path:
    path = ledger_dir() / f"{_SAFE_FILE.sub('_', cluster.stack)}.json"
    entry = {
        "stack": cluster.stack,
        "cluster": cluster.spec.name,
        "mock": cluster.mock,
        "generated_stack": generated,
        "root": str(cluster.root) if cluster.root else None,
        "spec": cluster.spec.model_dump(mode="json", exclude_none=True),
        "expires_at": _iso(cluster.expires_at),
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "recorded_at": format_time(datetime.now(timezone.utc)),
    }
    _write_json(path, entry)
    return path


def _write_json(path: Path, doc: Mapping[str, Any]) -> None:
    """Write atomically, owner-only (the spec may name accounts and networks)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
    os.replace(tmp, path)


def _release(path: Path) -> None:
    """Mark a record as no longer held by a live block (its teardown failed or was interrupted)."""
    try:
        entry = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    _write_json(path, {**entry, "pid": None})


def _owner_alive(entry: Mapping[str, Any]) -> bool:
    """The block that recorded ``entry`` may still be open: its process runs (or runs elsewhere)."""
    pid = int(entry.get("pid") or 0)
    if pid <= 0:
        return False  # released: the block ended without a teardown
    if entry.get("host") != socket.gethostname():
        return True  # cannot tell: leave it to its own machine, or to --force
    from provision.engine.mockstate import process_alive

    return process_alive(pid)


def _destroy(entry: Mapping[str, Any], display: str, command: auto.PulumiCommand | None) -> None:
    mock = bool(entry["mock"])
    if not mock and command is None:
        from provision.engine import automation

        command = automation.pulumi_command()
    cluster = Cluster(
        load_spec(entry["spec"]),
        stack=entry["stack"],
        mock=mock,
        root=entry.get("root"),
        display=display,
        pulumi_command=command,
    )
    try:
        cluster.down()
    except CloudError as e:
        # A run killed mid-operation leaves the stack locked; its owner is gone (checked by the caller).
        if mock or "pulumi cancel" not in str(e):
            raise
        stack = _open_stack(cluster, command, create=False)
        if stack is None:
            raise
        from provision.engine import automation

        automation.run_operation("cancel", cluster.stack, stack.cancel)
        cluster.down()
    if entry.get("generated_stack") and not mock:
        _remove_stack(cluster, command)


def cleanup(
    *, force: bool = False, display: str = "none", pulumi_command: auto.PulumiCommand | None = None
) -> list[dict[str, Any]]:
    """Destroy the ephemeral clusters recorded on this machine whose run ended without a teardown.

    Entries whose recording process still runs here are skipped (``force`` takes them too). A
    stack its killed run left locked is unlocked (``pulumi cancel``) and destroyed. Idempotent: a
    stack that no longer exists counts as deleted.

    Returns:
        One row per entry: ``{"stack", "cluster", "mock", "status": deleted|running|failed, "error"?}``.
    """
    rows: list[dict[str, Any]] = []
    for path in sorted(ledger_dir().glob("*.json")):
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
            row: dict[str, Any] = {"stack": entry["stack"], "cluster": entry.get("cluster"), "mock": entry["mock"]}
            if not isinstance(entry["spec"], dict):  # _destroy plans the teardown from it
                raise ValueError("'spec' is not a mapping")
        except (OSError, ValueError, KeyError, TypeError) as e:
            rows.append({"stack": path.stem, "status": "failed", "error": f"unreadable record {path}: {e!r}"})
            continue
        if not force and _owner_alive(entry):
            rows.append({**row, "status": "running"})
            continue
        try:
            _destroy(entry, display, pulumi_command)
        except ProvisionError as e:
            rows.append({**row, "status": "failed", "error": str(e)})
            continue
        path.unlink(missing_ok=True)
        rows.append({**row, "status": "deleted"})
    return rows


def main(argv: list[str] | None = None) -> int:
    """``python -m provision.ops.ephemeral cleanup [--force] [--json]``: exit 0, or 1 when a teardown failed."""
    parser = argparse.ArgumentParser(prog="python -m provision.ops.ephemeral", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    clean = sub.add_parser("cleanup", help="destroy ephemeral clusters that a killed or cancelled run left")
    clean.add_argument("--force", action="store_true", help="also take entries whose process still runs")
    clean.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args(argv)
    rows = cleanup(force=args.force, display="none" if args.json else "plain")
    if args.json:
        print(json.dumps({"ephemeral": rows}, indent=1))
    elif not rows:
        print("no ephemeral clusters left over")
    for row in rows if not args.json else []:
        mode = " (mock)" if row.get("mock") else ""
        detail = f": {row['error']}" if row.get("error") else ""
        print(f"{row['status']}: {row['stack']}{mode}{detail}")
    return 1 if any(r["status"] == "failed" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
