"""Shorthand types parsed once: durations (``6h``, ``90m``, ``1d12h``) and sizes (``36TiB``, ``4800GiB``).

They are pydantic ``Annotated`` types, so a spec field declared ``Duration`` accepts
``"6h"``, ``6.5`` (hours) or a ``timedelta``, and always holds a ``timedelta``. Also here: the
one ISO 8601 UTC time format every module writes and reads (:func:`format_time`, :func:`parse_time`).
"""

from __future__ import annotations

import ipaddress
import math
import re
from datetime import datetime, timedelta, timezone
from fractions import Fraction
from typing import Annotated, Any

from pydantic import BeforeValidator, PlainSerializer, WithJsonSchema

# re.ASCII: \d is [0-9] and \s ASCII white space only. Python's \d, int() and float() also take
# full-width or Arabic-Indic digits ("６h"), which the published JSON Schema pattern refuses.
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)\s*(d|h|m|s)", re.IGNORECASE | re.ASCII)
_DURATION_WHOLE = re.compile(r"^\s*(?:\d+(?:\.\d+)?\s*[dhms]\s*)+$", re.IGNORECASE | re.ASCII)
_UNIT_SECONDS = {"d": 86400, "h": 3600, "m": 60, "s": 1}

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$", re.ASCII)
# Binary units (KiB, Ki) are powers of 1024; decimal units (KB, K) powers of 1000, as in Kubernetes.
_SIZE_BYTES = {
    "": 1024**3,
    "b": 1,
    **{f"{p}ib": 1024 ** (i + 1) for i, p in enumerate("kmgtp")},
    **{f"{p}i": 1024 ** (i + 1) for i, p in enumerate("kmgtp")},
    **{f"{p}b": 1000 ** (i + 1) for i, p in enumerate("kmgtp")},
    **{p: 1000 ** (i + 1) for i, p in enumerate("kmgtp")},
}


def ascii_digits(text: str) -> bool:
    """``text`` is a whole number in ASCII digits (``str.isdigit`` alone also takes "６" and "٦")."""
    return text.isascii() and text.isdigit()


def ascii_number_text(value: str, what: str, example: str) -> str:
    """``value`` when it is plain ASCII; else a ValueError naming the rule (no look-alike digits or spaces).

    Every number parsed from text goes through here or an ``re.ASCII`` pattern: ``"６h"``, ``"٦h"`` or
    ``"1\u200bh"`` are refused, not read as 6 hours.
    """
    if value.isascii():
        return value
    odd = next(c for c in value if not c.isascii())
    raise ValueError(
        f"is not a {what}: it contains the non-ASCII character U+{ord(odd):04X}"
        f"{' (a digit of another script)' if odd.isdigit() else ''}; write numbers with ASCII digits, like {example!r}"
    )


def parse_duration(value: Any) -> timedelta:
    """Parse ``"6h"``, ``"90m"``, ``"1d12h"``, a number of hours, or a ``timedelta``.

    Raises:
        ValueError: the text is not a duration, or the number is not finite.
    """
    if isinstance(value, timedelta):
        return value
    if isinstance(value, bool):
        raise ValueError("is not a duration; write it like '6h', '90m' or '1d12h'")
    try:
        if isinstance(value, (int, float)):
            if not math.isfinite(value):
                raise ValueError("is not a finite duration; write it like '6h'")
            return timedelta(hours=value)
        if isinstance(value, str) and _DURATION_WHOLE.match(ascii_number_text(value, "duration", "6h")):
            seconds = sum(float(n) * _UNIT_SECONDS[u.lower()] for n, u in _DURATION_PART.findall(value))
            return timedelta(seconds=seconds)
    except OverflowError:
        # timedelta tops out near 2.7 million years; a 400-digit number must be a ValueError, not a crash.
        raise ValueError("is far too long to be a duration; write it like '6h'") from None
    raise ValueError("is not a duration; write it like '6h', '90m' or '1d12h'")


def format_duration(td: timedelta) -> str:
    """The shortest shorthand for ``td``: ``timedelta(hours=6)`` -> ``"6h"``.

    Exact to the microsecond (``"1h0.5s"``), so ``parse_duration(format_duration(td)) == td``
    for every non-negative ``td``; negative durations format as ``"0s"``.
    """
    micros = (td.days * 86400 + td.seconds) * 1_000_000 + td.microseconds
    if micros <= 0:
        return "0s"
    total, frac = divmod(micros, 1_000_000)
    parts = []
    for unit, size in _UNIT_SECONDS.items():
        n, total = divmod(total, size)
        if unit == "s" and frac:
            parts.append(f"{n}.{frac:06d}".rstrip("0") + "s")
        elif n:
            parts.append(f"{n}{unit}")
    return "".join(parts)


def format_time(t: datetime) -> str:
    """``t`` in UTC to the second, as ISO 8601 with ``Z``: ``2026-11-29T19:55:00Z`` (state, outputs, JSON)."""
    return t.astimezone(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def parse_time(value: str) -> datetime:
    """An ISO 8601 time (``Z`` or an offset) as an aware UTC ``datetime``; inverse of :func:`format_time`.

    Raises:
        ValueError: not an ISO 8601 time.
    """
    return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(timezone.utc)


def parse_network(value: str, example: str = "10.0.0.0/16") -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    """``value`` as an IP network in CIDR form (host bits clear).

    Raises:
        ValueError: it is not one; the message shows the form with ``example``.
    """
    try:
        return ipaddress.ip_network(value, strict=True)
    except ValueError as e:
        raise ValueError(f"{value!r} is not a network in CIDR form ({e}); write it like '{example}'") from e


def parse_size_gib(value: Any) -> int:
    """Parse ``"36TiB"``, ``"4800GiB"``, ``"1.2TB"`` or a bare number (GiB) into whole GiB.

    Decimal units (TB, GB) are converted exactly and rounded up to a whole GiB.

    Raises:
        ValueError: not a size, or not finite.
    """
    if isinstance(value, bool):
        raise ValueError("is not a size; write it like '36TiB' or '4800GiB'")
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("is not a finite size; write it like '36TiB' or '4800GiB'")
        return math.ceil(value)
    if isinstance(value, str):
        m = _SIZE.match(ascii_number_text(value, "size", "36TiB"))
        if m and m.group(2).lower() in _SIZE_BYTES:
            # Exact arithmetic: '1B' is 1 GiB (not 0), '1.2TB' rounds up exactly, and a number of a
            # few hundred digits stays finite (the field's range check then refuses it).
            size_bytes = Fraction(m.group(1)) * _SIZE_BYTES[m.group(2).lower()]
            return math.ceil(size_bytes / 1024**3)
    raise ValueError("is not a size; write it like '36TiB' or '4800GiB'")


def format_size_gib(gib: int) -> str:
    if gib >= 1024 and gib % 1024 == 0:
        return f"{gib // 1024}TiB"
    return f"{gib}GiB"


Duration = Annotated[
    timedelta,
    BeforeValidator(parse_duration),
    PlainSerializer(format_duration, return_type=str, when_used="json"),
    WithJsonSchema({"type": "string", "pattern": r"^(\d+(\.\d+)?[dhms])+$", "examples": ["6h", "90m", "1d12h"]}),
]

SizeGiB = Annotated[
    int,
    BeforeValidator(parse_size_gib),
    WithJsonSchema({"anyOf": [{"type": "integer"}, {"type": "string", "examples": ["36TiB", "4800GiB"]}]}),
]
