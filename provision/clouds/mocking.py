"""The mocked cloud: Pulumi ``Mocks`` that answer like the four clouds, with a ledger and faults.

* Every registered resource is recorded in :attr:`CloudMocks.ledger` (type token, logical
  name, inputs as the engine sends them, id, outputs).
* Outputs look real: ids in each cloud's format, private IPs from the subnet's range, DNS
  names, ARNs. Each cloud's answers live in ``provision/clouds/<cloud>/mocks.py``, which
  defines ``resource(args, ctx) -> (id, outputs)`` and ``INVOKES: {token: fn(args, ctx)}``.
* An invoke token nobody stubbed raises :class:`UnknownInvokeError`, so a missing stub
  fails loudly instead of returning ``None`` fields.
* :class:`Fault` fails the k-th resource (or every resource of a type) with a cloud error code.
* **Strict** (the default): before it answers, every resource's inputs go through the cloud's own
  rules (``provision/clouds/<cloud>/strict.py``: vendor models, documented limits, autonamed
  physical names, create-time dependencies, create timeouts). A violation fails the registration
  with :class:`StrictViolationError`, as the real API would. Install the mocks with
  :func:`install` so rules also see each resource's dependencies and custom timeouts.
"""

from __future__ import annotations

import importlib
import ipaddress
import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import pulumi
from pulumi.runtime.mocks import MockMonitor

from provision.catalog import cloud_facts
from provision.catalog.models import CLOUDS
from provision.clouds import mockids
from provision.clouds.strict import Coverage, Leaf, Resource, Violation, account, go_duration_seconds

#: Pulumi package prefix of a type token -> our cloud folder: each cloud's ``facts.pulumi_package``
#: (``catalog/data/<cloud>.yaml``), plus the Kubernetes objects of ``clouds/k8s``.
PACKAGE_CLOUD: Mapping[str, str] = MappingProxyType(
    {**{cloud_facts(c).pulumi_package: c for c in CLOUDS}, "kubernetes": "k8s"}
)

#: Types no cloud receives: their inputs are waived, with the reason.
#: The type token of ``pulumi.StackReference`` (pulumi/stack_reference.py): read, not created.
STACK_REFERENCE = "pulumi:pulumi:StackReference"
LOCAL_TYPES = {
    "time:index/sleep:Sleep": Coverage(
        waived={
            "*": "pulumi-time's Sleep is a local timer (no cloud API call); its createDuration is read by the "
            "AWS instance-profile propagation rule (provision/clouds/aws/strict.py) and the Azure role propagation "
            "rule (provision/clouds/azure/strict_rbac.py)"
        }
    ),
}


class UnknownInvokeError(Exception):
    """The program called an invoke the mocked cloud has no stub for."""


class CloudFaultError(Exception):
    """A fault injected into the mocked cloud, carrying the cloud's error code."""

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        #: Resources registered before the failure (set by ``run_program``).
        self.partial: list[Registered] = []
        #: The node groups' error lists at the failure (``MockContext.listed_errors``; set by ``run_program``).
        self.listed: dict[str, list[dict[str, Any]]] = {}
        super().__init__(f"{code}: {message}" if code else message)


@dataclass(frozen=True)
class Fault:
    """Fail a resource registration.

    Attributes:
        code: the cloud's error code, e.g. ``InsufficientInstanceCapacity``.
        index: fail the resource registered k-th (0-based, counting every registration), or
        type_token: fail every resource of this Pulumi type (e.g. ``aws:ec2/fleet:Fleet``).
        where: only where the cluster is placed here (its region, zone, instance type or capacity
            type equals this, e.g. ``us-east-1a``) or a resource input equals it: a capacity fault
            in one place only, to rehearse failover.
        message: the error text.
    """

    code: str
    index: int | None = None
    type_token: str | None = None
    where: str | None = None
    message: str = "injected fault"
    #: How the cloud reports the fault. ``"error"`` (the default): the resource's create fails with ``code``
    #: in its message. ``"listed"``: the way a node group really reports a stock-out, where the create carries
    #: no code and the code is only in the group's own error list, which ``up`` then reads: an instant EC2
    #: Fleet is created with fewer instances than asked and lists the misses in DescribeFleets ``Errors``; a
    #: GCP managed instance group never becomes stable, its create waits out its timeout, and
    #: ``instanceGroupManagers.listErrors`` holds the stock-out (each cloud's ``mocks.listed_fault``).
    reported: str = "error"

    def __post_init__(self) -> None:
        if self.reported not in ("error", "listed"):
            raise ValueError(f"Fault.reported is {self.reported!r}; use 'error' or 'listed'")

    def hits(self, index: int, type_token: str, inputs: Any = None, placement: tuple[str, ...] = ()) -> bool:
        selected = (self.index is not None and self.index == index) or (
            self.type_token is not None and self.type_token == type_token
        )
        if not selected or self.where is None:
            return selected
        return self.where in placement or json.dumps(self.where) in json.dumps(inputs, default=str)


@dataclass
class Registered:
    """One resource as the mocked cloud saw it."""

    type: str
    name: str
    inputs: dict[str, Any]
    id: str
    outputs: dict[str, Any]
    custom: bool
    #: The engine's URN and the URNs it depends on (explicit ``depends_on`` and input sources); empty when
    #: the mocks were installed without :func:`install`.
    urn: str = ""
    dependencies: tuple[str, ...] = ()
    #: The program's ``replace_on_changes`` and ``delete_before_replace`` options (what a diff needs to say
    #: "replace" as the engine would); empty when installed without :func:`install`.
    replace_on_changes: tuple[str, ...] = ()
    delete_before_replace: bool = False
    #: The program's ``retain_on_delete`` (a destroy leaves the resource in the cloud) and the id it imports
    #: (``import_``: the resource adopted as it exists), both as the engine received them.
    retain_on_delete: bool = False
    imported: str = ""


class StrictViolationError(CloudFaultError):
    """The strict mocked cloud refused a resource: inputs the real cloud (or its provider) rejects.

    ``violations`` lists every problem of that resource at once; each names the resource (type and
    logical name), the field, the value, the rule and the rule's source.
    """

    def __init__(self, violations: list[Violation]) -> None:
        self.violations = list(violations)
        lines = "\n".join(f"  - {v}" for v in self.violations)
        super().__init__(
            "StrictMockViolation",
            f"a real cloud would reject {len(self.violations)} input(s):\n{lines}\n"
            "To fix: change the cloud code or the spec so the input meets the rule (docs/fidelity.md lists the rules).",
        )


@dataclass
class MockContext:
    """What cloud mock modules and strict rules may read: the ledger so far, and deterministic helpers."""

    ledger: list[Registered] = field(default_factory=list)
    region: str = ""
    #: Per-run memo for rule modules (loaded vendor models); never shared between runs.
    cache: dict[str, Any] = field(default_factory=dict)
    #: The time the program runs at (rules on release times compare with it); ``None``: the wall clock.
    now: Any = None
    #: What the mocked cloud lists as a node group's errors (``Fault(reported="listed")``), by resource id, in
    #: the cloud's own response shape (DescribeFleets ``Errors[]``, ``listErrors`` ``items[]``).
    listed_errors: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: The outputs of the stacks this run read through a ``pulumi.StackReference``, by stack name (rules on resources
    #: placed in another stack's network read that network's ranges here).
    references: dict[str, dict[str, Any]] = field(default_factory=dict)

    def ancestors(self, urn: str, direct: tuple[str, ...] | None = None) -> set[str]:
        """Every URN ``urn`` depends on, directly or through registered resources.

        ``direct`` gives the dependencies of a resource not in the ledger yet (the one registering).
        """
        deps = {r.urn: r.dependencies for r in self.ledger if r.urn}
        seen: set[str] = set()
        todo = list(direct if direct is not None else deps.get(urn, ()))
        while todo:
            u = todo.pop()
            if u not in seen:
                seen.add(u)
                todo.extend(deps.get(u, ()))
        return seen

    def hex_id(self, name: str, length: int = 17) -> str:
        """A stable hex id derived from the logical name (golden files stay stable)."""
        return mockids.hex_id(name, length)

    def num_id(self, name: str, digits: int = 19) -> str:
        return mockids.num_id(name, digits)

    def ips(self, cidr: str, count: int, skip: int = 4) -> list[str]:
        """``count`` addresses from ``cidr`` after the ``skip`` the cloud reserves."""
        net = ipaddress.ip_network(cidr, strict=False)
        hosts = net.hosts()
        out = []
        for i, ip in enumerate(hosts):
            if i < skip - 1:
                continue
            out.append(str(ip))
            if len(out) == count:
                break
        return out

    def find(self, type_token: str) -> list[Registered]:
        return [r for r in self.ledger if r.type == type_token]


@dataclass(frozen=True)
class _Request:
    """What the engine sent with a registration that ``MockResourceArgs`` leaves out."""

    urn: str
    dependencies: tuple[str, ...]
    custom_timeouts: dict[str, float]
    parent: str
    replace_on_changes: tuple[str, ...] = ()
    delete_before_replace: bool = False
    retain_on_delete: bool = False


class _RecordingMonitor(MockMonitor):
    """Pulumi's mock monitor, also handing each registration's dependencies and timeouts to the mocks.

    Registrations run on executor threads, so the request travels in a thread-local slot owned by
    the mocks: set here, read by :meth:`CloudMocks.new_resource` within the same call.
    """

    def __init__(self, mocks: CloudMocks) -> None:
        super().__init__(mocks)
        self._cloud = mocks

    def RegisterResource(self, request: Any) -> Any:  # noqa: N802  (the gRPC method's name)
        timeouts: dict[str, float] = {}
        ct = getattr(request, "customTimeouts", None)
        for op in ("create", "update", "delete"):
            seconds = go_duration_seconds(getattr(ct, op, "") if ct is not None else "")
            if seconds is not None:
                timeouts[op] = seconds
        urn = self.make_urn(request.parent, request.type, request.name)
        self._cloud._slot.request = _Request(
            urn,
            tuple(request.dependencies),
            timeouts,
            request.parent,
            tuple(getattr(request, "replaceOnChanges", ()) or ()),
            bool(getattr(request, "deleteBeforeReplace", False)),
            bool(getattr(request, "retainOnDelete", False)),
        )
        try:
            return super().RegisterResource(request)
        finally:
            self._cloud._slot.request = None


def install(mocks: CloudMocks, *, project: str, stack: str, preview: bool = False) -> None:
    """``pulumi.runtime.set_mocks`` with a monitor that lets strict rules see dependencies and timeouts."""
    pulumi.runtime.set_mocks(mocks, project=project, stack=stack, preview=preview, monitor=_RecordingMonitor(mocks))


class CloudMocks(pulumi.runtime.Mocks):
    """Pulumi mocks for all four clouds. Create one per program run.

    Args:
        faults: injected failures.
        region: the region mocks answer for.
        strict: check every resource against its cloud's rules before answering (the default);
            ``False`` accepts any input, as Pulumi's plain mocks do.
        fail_fast: refuse the first violating resource, as the cloud would (the default); ``False``
            answers anyway and collects every violation in :attr:`violations`, so a preview can report
            all of them at once.
        placement: the cluster's region, zone, instance type and capacity type (``Fault.where``).
        now: the time the program runs at (``datetime``), for rules on release times; default the wall clock.
        accounting: also record how every input leaf of every resource was accounted for (checked by a
            vendor-sourced rule, waived with a reason, or unchecked) in :attr:`accounting`.
    """

    def __init__(
        self,
        faults: tuple[Fault, ...] | list[Fault] = (),
        region: str = "",
        strict: bool = True,
        fail_fast: bool = True,
        placement: tuple[str, ...] = (),
        accounting: bool = False,
        now: Any = None,
        stack_outputs: Callable[[str], dict[str, Any] | None] | None = None,
        existing: list[Registered] | tuple[Registered, ...] = (),
        in_state: tuple[str, ...] | list[str] | set[str] = (),
    ) -> None:
        self.faults = tuple(faults)
        #: The resources that exist in the mocked cloud outside this stack, by id: what an ``import_`` adopts.
        self.existing = {r.id: r for r in existing if r.id}
        #: The ids an earlier ``up`` of this stack imported already: an ``import_`` of one of them is "treated like
        #: any other resource" (its inputs may differ: an update), github.com/pulumi/pulumi
        #: developer-docs/architecture/import.md.
        self.in_state = set(in_state)
        #: The outputs of another stack by name (a ``pulumi.StackReference``), ``None`` when it does not exist.
        self.stack_outputs = stack_outputs
        self.accounting_on = accounting
        #: How each input leaf was accounted for (when ``accounting``), in registration order.
        self.accounting: list[Leaf] = []
        #: Where the cluster is placed (region, zone, instance type, capacity type), for ``Fault.where``.
        self.placement = placement
        self.strict = strict
        self.fail_fast = fail_fast
        #: Violations collected when not ``fail_fast`` (in registration order).
        self.violations: list[Violation] = []
        self.ctx = MockContext(region=region, now=now)
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self._modules: dict[str, Any] = {}
        self._flight = threading.Condition()
        self._in_flight = 0
        self._failed = False
        #: The fault that failed the run (later registrations fail as "Cancelled").
        self.first_fault: CloudFaultError | None = None
        self._slot = threading.local()

    @property
    def ledger(self) -> list[Registered]:
        return self.ctx.ledger

    def _cloud_module(self, token: str) -> Any:
        package = token.split(":", 1)[0]
        cloud = PACKAGE_CLOUD.get(package)
        if cloud is None:
            return None
        if cloud not in self._modules:
            self._modules[cloud] = importlib.import_module(f"provision.clouds.{cloud}.mocks")
        return self._modules[cloud]

    def _rules(self, token: str) -> Any:
        cloud = PACKAGE_CLOUD.get(token.split(":", 1)[0])
        if cloud is None:
            return None
        key = f"{cloud}.strict"
        if key not in self._modules:
            self._modules[key] = importlib.import_module(f"provision.clouds.{cloud}.strict")
        return self._modules[key]

    def _coverage(self, token: str) -> Any:
        """The cloud's ``coverage`` module (its accounting), or ``None`` when it has none."""
        cloud = PACKAGE_CLOUD.get(token.split(":", 1)[0])
        if cloud is None:
            return None
        key = f"{cloud}.coverage"
        if key not in self._modules:
            try:
                self._modules[key] = importlib.import_module(f"provision.clouds.{cloud}.coverage")
            except ModuleNotFoundError:
                self._modules[key] = None
        return self._modules[key]

    def check(self, res: Resource) -> list[Violation]:
        """The violations of one registration under its cloud's strict rules (none for other packages)."""
        rules = self._rules(res.type)
        return list(rules.check(res, self.ctx)) if rules is not None else []

    def account(self, res: Resource) -> list[Leaf]:
        """How the strict rules account for every input leaf of one registration."""
        rules = self._coverage(res.type) or self._rules(res.type)
        if rules is not None and hasattr(rules, "account"):
            return list(rules.account(res, self.ctx))
        if res.type.startswith("pulumi:providers:"):
            reason = "a provider's own configuration (no cloud resource): the program builds it from outputs"
            return account(res, {}, Coverage(waived={"*": reason}))
        return account(res, {}, LOCAL_TYPES.get(res.type))

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        # Pulumi registers resources from executor threads. Like the engine, the mocked cloud
        # starts no new create once one has failed, and `settle` waits for those in flight, so
        # the partial state holds exactly what was created.
        with self._flight:
            if self._failed:
                raise CloudFaultError("Cancelled", f"not created: an earlier resource failed ({args.typ} {args.name})")
            self._in_flight += 1
        try:
            return self._new_resource(args)
        except CloudFaultError as e:
            with self._flight:
                self._failed = True
                self.first_fault = self.first_fault or e
            raise
        finally:
            with self._flight:
                self._in_flight -= 1
                self._flight.notify_all()

    def settle(self, timeout: float = 60.0) -> None:
        """Stop starting creates and wait (up to ``timeout`` s) until none is in flight."""
        with self._flight:
            self._failed = True
            self._flight.wait_for(lambda: self._in_flight == 0, timeout=timeout)

    def _new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        index = len(self.ctx.ledger)
        listed: Fault | None = None
        for fault in self.faults:
            if fault.hits(index, args.typ, args.inputs, self.placement):
                if fault.reported == "listed":
                    listed = listed or fault
                    continue
                raise CloudFaultError(fault.code, f"{fault.message} ({args.typ} {args.name})")
        request: _Request | None = getattr(self._slot, "request", None)
        urn, deps = (request.urn, request.dependencies) if request else ("", ())
        if args.typ == STACK_REFERENCE:
            return self._stack_reference(args)
        if args.resource_id and args.custom:
            return self._import(args, urn, deps)
        if self.strict and args.custom:
            res = Resource(
                args.typ,
                args.name,
                dict(args.inputs),
                urn=urn,
                dependencies=deps,
                custom_timeouts=dict(request.custom_timeouts) if request else {},
                parent=request.parent if request else "",
            )
            violations = self.check(res)
            if self.accounting_on:
                self.accounting.extend(self.account(res))
            if violations and self.fail_fast:
                raise StrictViolationError(violations)
            self.violations.extend(violations)
        module = self._cloud_module(args.typ) if args.custom else None
        if module is not None:
            rid, outputs = module.resource(args, self.ctx)
        else:
            rid, outputs = (f"{args.name}-id" if args.custom else None), dict(args.inputs)
        failure: CloudFaultError | None = None
        if listed is not None:
            hook = getattr(module, "listed_fault", None) if module is not None else None
            answer = hook(args.typ, rid or "", dict(outputs), listed, self.ctx) if hook is not None else None
            if answer is None:
                raise CloudFaultError(
                    "InvalidFault",
                    f"Fault(reported='listed') hit {args.typ} {args.name}, which keeps no error list in the mocked "
                    "cloud: use it on a node group (aws:ec2/fleet:Fleet, "
                    "gcp:compute/instanceGroupManager:InstanceGroupManager) or use reported='error'",
                )
            outputs, failure = answer
        self.ctx.ledger.append(
            Registered(
                args.typ,
                args.name,
                dict(args.inputs),
                rid or "",
                dict(outputs),
                bool(args.custom),
                urn,
                deps,
                request.replace_on_changes if request else (),
                request.delete_before_replace if request else False,
                request.retain_on_delete if request else False,
            )
        )
        if failure is not None:  # created (it is in the state), yet its create failed, as the provider reports it
            raise failure
        return rid, outputs

    def _import(
        self, args: pulumi.runtime.MockResourceArgs, urn: str, deps: tuple[str, ...]
    ) -> tuple[str | None, dict[str, Any]]:
        """An ``import_``: the existing resource's id and outputs, refused as the engine refuses it.

        The engine reads the resource and compares the program's inputs with its state: "If the resource's
        arguments differ from the imported state, the import will fail ... error: inputs to import do not match the
        existing resource" (www.pulumi.com/docs/iac/concepts/resources/options/import/).
        """
        found = self.existing.get(str(args.resource_id))
        if found is None or found.type != args.typ:
            raise CloudFaultError("ImportNotFound", f"{args.typ} {args.name}: no resource with id {args.resource_id}")
        declared = dict(args.inputs)
        differ = sorted(k for k in set(declared) | set(found.inputs) if declared.get(k) != found.inputs.get(k))
        if found.id in self.in_state:
            differ = []
        if differ:
            raise CloudFaultError(
                "ImportMismatch",
                f"{args.typ} {args.name}: inputs to import do not match the existing resource ({', '.join(differ)}: "
                + "; ".join(f"{k} declared {declared.get(k)!r}, exists {found.inputs.get(k)!r}" for k in differ)
                + ")",
            )
        self.ctx.ledger.append(
            Registered(args.typ, args.name, declared, found.id, dict(found.outputs), True, urn, deps, imported=found.id)
        )
        return found.id, dict(found.outputs)

    def _stack_reference(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        """A ``pulumi.StackReference`` read: the named stack's recorded outputs, as the Pulumi service answers it.

        Raises:
            CloudFaultError: the stack does not exist (Pulumi: "unknown stack").
        """
        name = str(args.inputs.get("name") or args.name)
        outputs = self.stack_outputs(name) if self.stack_outputs is not None else None
        if outputs is None:
            raise CloudFaultError("StackNotFound", f"unknown stack {name!r}: the referenced stack does not exist")
        self.ctx.references[name] = dict(outputs)
        return name, {"name": name, "outputs": dict(outputs), "secretOutputNames": []}

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict[str, Any]:  # type: ignore[override]  # a dict is a valid answer
        self.calls.append((args.token, dict(args.args)))
        module = self._cloud_module(args.token)
        handler = getattr(module, "INVOKES", {}).get(args.token) if module else None
        if handler is None:
            raise UnknownInvokeError(
                f"the mocked cloud has no stub for invoke {args.token!r}; add one to "
                f"provision/clouds/<cloud>/mocks.py INVOKES"
            )
        return handler(args, self.ctx)  # type: ignore[no-any-return]


def listed_session(cloud: str, listed: dict[str, list[dict[str, Any]]]) -> Any:
    """What ``Adapter.group_errors`` asks, answered from the mocked cloud's error lists (``reported="listed"``)."""
    module = importlib.import_module(f"provision.clouds.{cloud}.mocks")
    return module.ListedErrors(listed)


def strict_check(type_token: str, inputs: dict[str, Any], name: str = "resource") -> list[Violation]:
    """The strict cloud's violations of one resource, outside any program run.

    ``inputs`` are the resource's inputs as the Pulumi engine sends them (camelCase names, e.g.
    ``{"scalingConfig": {"minSize": 1, ...}}`` for ``aws:eks/nodeGroup:NodeGroup``). Rules that need the
    rest of the graph (dependencies, registered roles) see an empty one. Each violation names the field,
    the value, the rule and its vendor source.

    Raises:
        ValueError: the type token's package is not one the strict cloud knows.
    """
    package = type_token.split(":", 1)[0]
    cloud = PACKAGE_CLOUD.get(package)
    if cloud is None or type_token.count(":") != 2:
        known = ", ".join(sorted(PACKAGE_CLOUD))
        raise ValueError(
            f"{type_token!r} is not a Pulumi type token of a package the strict cloud checks ({known}); "
            "use the resource's type token, e.g. aws:eks/nodeGroup:NodeGroup"
        )
    rules = importlib.import_module(f"provision.clouds.{cloud}.strict")
    res = Resource(type_token, name, dict(inputs))
    return list(rules.check(res, MockContext()))
