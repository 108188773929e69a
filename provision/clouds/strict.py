"""Shared pieces of the strict mocked cloud: violations, the resource view rules read, and checks.

Each cloud's ``provision/clouds/<cloud>/strict.py`` defines ``check(res, ctx) -> list[Violation]``
from these helpers; :class:`provision.clouds.mocking.CloudMocks` calls it before it answers a
registration. Rules carry their source (a vendor model, document or provider file) so a failure
says where the rule comes from, and ``docs/fidelity.md`` lists them.

No Pulumi import here: rules are plain functions over the inputs the engine sends.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

#: Pulumi autonaming: logical name + "-" + 7 random hex characters when the name input is absent
#: (pulumi-terraform-bridge ``AutoName``: ``Separator: "-"``, ``Randlen: 7``).
AUTONAME_SUFFIX = "-" + "f" * 7
AUTONAME_SOURCE = "pulumi-terraform-bridge tfbridge.AutoName: logical name + '-' + 7 random hex characters"

_GO_DURATION = re.compile(r"(\d+(?:\.\d+)?)(h|ms|m|s)")
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


@dataclass(frozen=True)
class Violation:
    """One input a real cloud (or its provider) would reject.

    Attributes:
        type: the Pulumi type token, e.g. ``aws:ec2/securityGroup:SecurityGroup``.
        name: the resource's logical name.
        field: the input path as the engine sends it (camelCase), e.g. ``description``.
        value: the offending value (the computed physical name for autonamed names).
        rule: what the cloud requires.
        source: where the rule comes from (vendor model, document or provider source file).
    """

    type: str
    name: str
    field: str
    value: Any
    rule: str
    source: str

    def __str__(self) -> str:
        shown = repr(self.value)
        if len(shown) > 160:
            shown = shown[:157] + "..."
        return f"{self.type} {self.name!r}: {self.field} = {shown}: {self.rule} (source: {self.source})"


@dataclass
class Resource:
    """What a rule sees of one registration.

    ``dependencies`` are the URNs the engine reported (explicit ``depends_on`` plus every resource
    an input came from); ``custom_timeouts`` are seconds per operation (``create``/``update``/``delete``),
    only for those the program set.
    """

    type: str
    name: str
    inputs: dict[str, Any]
    urn: str = ""
    dependencies: tuple[str, ...] = ()
    custom_timeouts: dict[str, float] = field(default_factory=dict)
    parent: str = ""

    def violation(self, field: str, value: Any, rule: str, source: str) -> Violation:
        return Violation(self.type, self.name, field, value, rule, source)

    def physical_name(self, key: str = "name") -> tuple[str, str]:
        """(the name the cloud will see, how it was found): the input, or the autonamed worst case."""
        given = self.inputs.get(key)
        if isinstance(given, str) and given:
            return given, key
        return self.name + AUTONAME_SUFFIX, f"{key} (autonamed)"


def go_duration_seconds(text: str) -> float | None:
    """Seconds in a Go duration such as ``60m`` or ``1h30m`` (what ``CustomTimeouts`` carries)."""
    text = (text or "").strip()
    if not text:
        return None
    parts = _GO_DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    return sum(float(n) * _UNIT_SECONDS[u] for n, u in parts)


def walk(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Every scalar leaf of ``value`` with its path (``a.b[].c``)."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            yield from walk(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from walk(v, f"{path}[]")
    else:
        yield path, value


def values_at(inputs: Mapping[str, Any], path: str) -> list[Any]:
    """The values at ``path`` (``a.b[].c``; ``[]`` steps into every list item); absent paths give []."""
    current: list[Any] = [inputs]
    for part in path.split("."):
        many = part.endswith("[]")
        key = part[:-2] if many else part
        nxt: list[Any] = []
        for item in current:
            if isinstance(item, Mapping) and key in item and item[key] is not None:
                v = item[key]
                if many and isinstance(v, (list, tuple)):
                    nxt.extend(x for x in v if x is not None)
                elif not many:
                    nxt.append(v)
        current = nxt
    return current


@dataclass(frozen=True)
class NameRule:
    """Length and character rules of one cloud resource name."""

    min_len: int
    max_len: int
    pattern: str
    describe: str
    source: str

    def check(self, res: Resource, key: str) -> list[Violation]:
        value, how = res.physical_name(key)
        out = []
        if not self.min_len <= len(value) <= self.max_len:
            out.append(
                res.violation(
                    how, value, f"must be {self.min_len}-{self.max_len} characters (is {len(value)})", self.source
                )
            )
        if not re.fullmatch(self.pattern, value):
            out.append(res.violation(how, value, f"{self.describe} (pattern {self.pattern})", self.source))
        return out


def check_enum(res: Resource, field: str, value: Any, allowed: Iterable[str], source: str) -> list[Violation]:
    allowed = list(allowed)
    if isinstance(value, str) and value not in allowed:
        return [res.violation(field, value, f"must be one of {', '.join(allowed)}", source)]
    return []


def check_range(
    res: Resource, field: str, value: Any, lo: float | None, hi: float | None, source: str, what: str = "value"
) -> list[Violation]:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return []
    if (lo is not None and number < lo) or (hi is not None and number > hi):
        return [res.violation(field, value, f"{what} must be {_bounds(lo, hi)}", source)]
    return []


def _bounds(lo: float | None, hi: float | None) -> str:
    def fmt(x: float) -> str:
        return f"{x:,.0f}" if float(x).is_integer() else f"{x:g}"

    if lo is not None and hi is not None:
        return f"between {fmt(lo)} and {fmt(hi)}"
    return f"at least {fmt(lo)}" if lo is not None else f"at most {fmt(hi)}"  # type: ignore[arg-type]


def check_step(
    res: Resource, field: str, value: Any, allowed: Callable[[int], bool], rule: str, source: str
) -> list[Violation]:
    try:
        number = int(value)
    except (TypeError, ValueError):
        return [res.violation(field, value, f"must be a whole number; {rule}", source)]
    return [] if allowed(number) else [res.violation(field, value, rule, source)]


def timeout_rule(
    res: Resource, operation: str, provider_default_s: float, needed_s: float, source: str
) -> list[Violation]:
    """A create (or delete) the vendor says takes longer than the provider waits needs ``custom_timeouts``."""
    have = res.custom_timeouts.get(operation, provider_default_s)
    if have >= needed_s:
        return []
    return [
        res.violation(
            f"customTimeouts.{operation}",
            f"{have / 60:g}m" + ("" if operation in res.custom_timeouts else " (provider default)"),
            f"the vendor states {operation} can take up to {needed_s / 60:g} minutes; set "
            f"custom_timeouts({operation}='{int(needed_s // 60)}m') or more",
            source,
        )
    ]


# ---------------------------------------------------------------------- accounting: what was checked

#: How the strict cloud accounted for one input leaf.
CHECKED, WAIVED, UNCHECKED = "checked", "waived", "unchecked"
#: Why a provider flag no API model names is not checked.
BOOLEAN_WAIVER = "a boolean the provider's schema types: both values are valid inputs"


@dataclass(frozen=True)
class Leaf:
    """One input leaf of one resource and how the strict cloud accounted for it.

    Attributes:
        path: the leaf's input path with ``[]`` for list items (``tags.team``, ``disks[].diskSizeGb``).
        status: :data:`CHECKED` (a vendor-sourced rule applies), :data:`WAIVED` (deliberately not checked,
            with a written reason) or :data:`UNCHECKED` (nothing applies: a blind spot).
        basis: the rule's source, or the waiver's reason; empty when unchecked.
    """

    type: str
    name: str
    path: str
    status: str
    basis: str = ""

    def as_dict(self) -> dict[str, str]:
        return {"type": self.type, "name": self.name, "path": self.path, "status": self.status, "basis": self.basis}


@dataclass(frozen=True)
class Coverage:
    """Input paths of one type checked by hand-written rules (pattern -> source) or waived (pattern -> reason).

    A pattern is a leaf path (``[]`` for list items) that also covers everything under it; ``*`` matches
    one path segment (``tags.*``) and a lone ``*`` every leaf.
    """

    checked: Mapping[str, str] = field(default_factory=dict)
    waived: Mapping[str, str] = field(default_factory=dict)


def path_matches(path: str, pattern: str) -> bool:
    """Whether ``pattern`` covers the leaf ``path`` (itself, anything under it, ``*`` for one segment)."""
    if pattern == "*":
        return True
    regex = re.escape(pattern).replace(r"\*", r"[^.\[\]]+")
    return re.fullmatch(rf"{regex}(?:[.\[].*)?", path) is not None


def _first(path: str, patterns: Mapping[str, str]) -> str | None:
    for pattern, basis in patterns.items():
        if path_matches(path, pattern):
            return basis
    return None


def account(res: Resource, model: Mapping[str, str], *coverages: Coverage | None) -> list[Leaf]:
    """Every input leaf of ``res``: checked by the vendor model (``model``: leaf path -> source) or a rule of
    ``coverages``, else waived by one of them, else unchecked. Absent (``None``) values are no input."""
    out = []
    for path, value in walk(res.inputs):
        if value is None or not path:
            continue
        basis = model.get(path)
        status = CHECKED
        for cov in coverages:
            if basis is None and cov is not None:
                basis = _first(path, cov.checked)
        if basis is None:
            status = WAIVED
            for cov in coverages:
                if basis is None and cov is not None:
                    basis = _first(path, cov.waived)
        if basis is None and isinstance(value, bool):
            basis = BOOLEAN_WAIVER
        if basis is None:
            status, basis = UNCHECKED, ""
        out.append(Leaf(res.type, res.name, path, status, basis))
    return out


def tally(leaves: Iterable[Leaf]) -> dict[str, int]:
    """``{"checked": n, "waived": n, "unchecked": n}``."""
    counts = {CHECKED: 0, WAIVED: 0, UNCHECKED: 0}
    for leaf in leaves:
        counts[leaf.status] += 1
    return counts
