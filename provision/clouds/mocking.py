"""The mocked cloud: Pulumi ``Mocks`` that answer like the four clouds, with a ledger and faults.

* Every registered resource is recorded in :attr:`CloudMocks.ledger` (type token, logical
  name, inputs as the engine sends them, id, outputs).
* Outputs look real: ids in each cloud's format, private IPs from the subnet's range, DNS
  names, ARNs. Each cloud's answers live in ``provision/clouds/<cloud>/mocks.py``, which
  defines ``resource(args, ctx) -> (id, outputs)`` and ``INVOKES: {token: fn(args, ctx)}``.
* An invoke token nobody stubbed raises :class:`UnknownInvokeError`, so a missing stub
  fails loudly instead of returning ``None`` fields.
* :class:`Fault` fails the k-th resource (or every resource of a type) with a cloud error code.
"""

from __future__ import annotations

import hashlib
import importlib
import ipaddress
import json
from dataclasses import dataclass, field
from typing import Any

import pulumi

#: Pulumi package prefix of a type token -> our cloud folder.
PACKAGE_CLOUD = {"aws": "aws", "gcp": "gcp", "azure-native": "azure", "alicloud": "alibaba"}


class UnknownInvokeError(Exception):
    """The program called an invoke the mocked cloud has no stub for."""


class CloudFaultError(Exception):
    """A fault injected into the mocked cloud, carrying the cloud's error code."""

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        #: Resources registered before the failure (set by ``run_program``).
        self.partial: list[Registered] = []
        super().__init__(f"{code}: {message}")


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


@dataclass
class MockContext:
    """What cloud mock modules may read: the ledger so far, and deterministic helpers."""

    ledger: list[Registered] = field(default_factory=list)
    region: str = ""

    def hex_id(self, name: str, length: int = 17) -> str:
        """A stable hex id derived from the logical name (golden files stay stable)."""
        return hashlib.sha256(name.encode()).hexdigest()[:length]

    def num_id(self, name: str, digits: int = 19) -> str:
        return str(int(hashlib.sha256(name.encode()).hexdigest(), 16))[:digits]

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


class CloudMocks(pulumi.runtime.Mocks):
    """Pulumi mocks for all four clouds. Create one per program run."""

    def __init__(
        self, faults: tuple[Fault, ...] | list[Fault] = (), region: str = "", placement: tuple[str, ...] = ()
    ) -> None:
        self.faults = tuple(faults)
        #: Where the cluster is placed (region, zone, instance type, capacity type), for ``Fault.where``.
        self.placement = placement
        self.ctx = MockContext(region=region)
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self._modules: dict[str, Any] = {}

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

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        index = len(self.ctx.ledger)
        for fault in self.faults:
            if fault.hits(index, args.typ, args.inputs, self.placement):
                raise CloudFaultError(fault.code, f"{fault.message} ({args.typ} {args.name})")
        module = self._cloud_module(args.typ) if args.custom else None
        if module is not None:
            rid, outputs = module.resource(args, self.ctx)
        else:
            rid, outputs = (f"{args.name}-id" if args.custom else None), dict(args.inputs)
        self.ctx.ledger.append(
            Registered(args.typ, args.name, dict(args.inputs), rid or "", dict(outputs), bool(args.custom))
        )
        return rid, outputs

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
