"""The error hierarchy and the `Problem` record every user-facing error carries.

Every error raised for a user's mistake lists *all* the problems found, each naming the
path into the spec, the offending value, the rule it breaks and how to fix it. The CLI
prints them without a traceback and exits 2 (input), 3 (policy or budget) or 1.
"""

from __future__ import annotations

import reprlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from provision.spec.secrets import REDACTED_TEMPLATE, scrub, secret_kind

#: Values longer than this are shortened in messages, so a pasted blob never floods a log.
_MAX_VALUE_CHARS = 80
#: Values echoed in ``--json`` are shortened too (a 20 MB value must not become a 20 MB document).
_MAX_JSON_CHARS = 200
#: Containers are shown through a bounded repr: a few items, a few levels. Converting a whole
#: value first would make an alias bomb (9 levels of 9 shared lists) take forever and GiBs.
_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxlist, _REPR.maxtuple, _REPR.maxdict = 3, 6, 6, 6
_REPR.maxstring, _REPR.maxother, _REPR.maxlong = _MAX_VALUE_CHARS, _MAX_VALUE_CHARS, 40
#: What a secret scan of a container looks at: enough of each string to see a key's header.
_SCAN_REPR = reprlib.Repr()
_SCAN_REPR.maxlevel, _SCAN_REPR.maxlist, _SCAN_REPR.maxtuple, _SCAN_REPR.maxdict = 3, 20, 20, 20
_SCAN_REPR.maxstring, _SCAN_REPR.maxother = 400, 400


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the user's input.

    Attributes:
        path: dotted path into the spec, e.g. ``storage.shared.size_gib``; ``""`` for the whole spec.
        value: the offending value, already redacted when it may be a secret.
        rule: what the value breaks, in one sentence.
        fix: what to do instead, starting with a verb.
    """

    path: str
    value: Any
    rule: str
    fix: str = ""

    def __post_init__(self) -> None:
        # No secret is ever echoed: a value holding a key or token is replaced (the kind is kept),
        # and keys or tokens quoted inside a rule or fix are cut out.
        if isinstance(self.value, str):
            kind = secret_kind(self.value[:100_000], blobs=True)
        elif isinstance(self.value, (list, tuple, dict, set)):  # a container echoes its items (bounded)
            kind = secret_kind(_SCAN_REPR.repr(self.value), blobs=True)
        else:
            kind = None
        if kind:
            object.__setattr__(self, "value", REDACTED_TEMPLATE.format(kind=kind))
        object.__setattr__(self, "path", scrub(str(self.path), blobs=True))
        object.__setattr__(self, "rule", scrub(str(self.rule), blobs=True))
        object.__setattr__(self, "fix", scrub(str(self.fix), blobs=True))

    def __str__(self) -> str:
        where = self.path or "(spec)"
        text = f"{where}: {_show(self.value)} {self.rule}"
        if self.fix:
            text += f"; to fix: {self.fix}"
        return text

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "value": _jsonable(self.value), "rule": self.rule, "fix": self.fix}


def _bounded_text(value: Any, limit: int) -> str:
    """``value`` as text of at most ``limit`` characters, cut *before* converting (never ``str(value)`` whole)."""
    if isinstance(value, str):
        text = repr(value[: limit + 1])
    elif isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        text = f"(an integer of about {int(value.bit_length() * 0.30103) + 1} digits)"
    else:
        text = _REPR.repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _show(value: Any) -> str:
    if value is _MISSING:
        return "(missing)"
    return _bounded_text(value, _MAX_VALUE_CHARS)


def _jsonable(value: Any) -> Any:
    if value is _MISSING:
        return None
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, str):
        return value if len(value) <= _MAX_JSON_CHARS else value[: _MAX_JSON_CHARS - 3] + "..."
    if isinstance(value, int) and value.bit_length() <= 128:
        return value
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else str(value)
    return _bounded_text(value, _MAX_JSON_CHARS)


class _Missing:
    def __repr__(self) -> str:
        return "(missing)"


#: Stands for a required value the user did not give.
_MISSING: Any = _Missing()
MISSING = _MISSING

#: Shown instead of anything that may be a secret.
REDACTED = "<redacted>"


class ProvisionError(Exception):
    """Base of every error this library raises on purpose.

    Attributes:
        problems: every problem found; may be empty for errors that are not about input.
        exit_code: the CLI exit code for this class of error.
    """

    exit_code = 1
    title = "provision failed"

    def __init__(self, message: str = "", problems: Iterable[Problem] = ()) -> None:
        self.problems: tuple[Problem, ...] = tuple(problems)
        self.message = scrub(message or self.title, blobs=True)
        super().__init__(self.render())

    def render(self) -> str:
        if not self.problems:
            return self.message
        n = len(self.problems)
        head = f"{self.message} ({n} problem{'s' if n != 1 else ''}):"
        return "\n".join([head, *(f"  - {p}" for p in self.problems)])

    def as_dict(self) -> dict[str, Any]:
        return {
            "error": type(self).__name__,
            "message": self.message,
            "problems": [p.as_dict() for p in self.problems],
        }


class SpecError(ProvisionError):
    """The cluster spec is malformed or cannot be satisfied by the catalog (exit 2)."""

    exit_code = 2
    title = "the cluster spec is invalid"


class UnsupportedError(ProvisionError):
    """The spec asks for something an adapter or this installation cannot do (exit 2)."""

    exit_code = 2
    title = "not supported"


class BudgetError(ProvisionError):
    """Refused by the cost cap or another policy before anything was created (exit 3)."""

    exit_code = 3
    title = "refused by the cost policy"


class _CodedError(ProvisionError):
    """An error that may carry the cloud's error code.

    Attributes:
        code: the cloud's error code when known, e.g. ``InsufficientInstanceCapacity``.
    """

    def __init__(self, message: str = "", problems: Iterable[Problem] = (), code: str = "") -> None:
        self.code = code
        super().__init__(message, problems)


class CapacityError(_CodedError):
    """The cloud has no capacity or quota for the request (exit 1)."""

    exit_code = 1
    title = "the cloud has no capacity for this cluster"


class QuotaError(CapacityError):
    """The account's quota is used up (exit 1): no other zone or region helps, so failover stops."""

    title = "the account's quota is used up"


class CloudError(_CodedError):
    """A cloud or Pulumi operation failed (exit 1)."""

    exit_code = 1
    title = "a cloud operation failed"


class ProblemCollector:
    """Collects problems so that validation can report every one at once.

    Example::

        found = ProblemCollector()
        found.add("gpus", 12, "is not a multiple of 8", "use 8, 16 or 24")
        found.raise_if_any(SpecError)
    """

    def __init__(self) -> None:
        self._problems: list[Problem] = []

    def add(self, path: str, value: Any, rule: str, fix: str = "") -> None:
        self._problems.append(Problem(path, value, rule, fix))

    def extend(self, problems: Iterable[Problem]) -> None:
        self._problems.extend(problems)

    @property
    def problems(self) -> tuple[Problem, ...]:
        return tuple(self._problems)

    def __bool__(self) -> bool:
        return bool(self._problems)

    def raise_if_any(self, kind: type[ProvisionError] = SpecError, message: str = "") -> None:
        if self._problems:
            raise kind(message, self._problems)
