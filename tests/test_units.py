"""Shorthand units: durations (``6h``, ``1d12h``) and sizes (``36TiB``, ``1.2TB``), parsed once."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from provision.spec import MAX_TTL
from provision.spec.units import (
    Duration,
    SizeGiB,
    format_duration,
    format_size_gib,
    format_time,
    parse_duration,
    parse_size_gib,
    parse_time,
)

GIB = 1024**3

# ------------------------------------------------------------------------------------- durations


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("6h", timedelta(hours=6)),
        ("90m", timedelta(minutes=90)),
        ("1d12h", timedelta(days=1, hours=12)),
        ("1d 12h", timedelta(days=1, hours=12)),
        ("  2h30m  ", timedelta(hours=2, minutes=30)),
        ("6H", timedelta(hours=6)),
        ("1.5h", timedelta(minutes=90)),
        ("0.25d", timedelta(hours=6)),
        ("45s", timedelta(seconds=45)),
        ("1h0.5s", timedelta(hours=1, milliseconds=500)),
        ("2h2h", timedelta(hours=4)),  # parts add up
        ("90d", timedelta(days=90)),
    ],
)
def test_parse_duration_text(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize(
    ("number", "expected"),
    [(6, timedelta(hours=6)), (6.5, timedelta(hours=6, minutes=30)), (0, timedelta(0)), (0.5, timedelta(minutes=30))],
)
def test_parse_duration_number_means_hours(number: float, expected: timedelta) -> None:
    assert parse_duration(number) == expected


def test_parse_duration_passes_timedelta_through() -> None:
    td = timedelta(hours=3, microseconds=7)

    assert parse_duration(td) is td


@pytest.mark.parametrize(
    "garbage",
    ["", "6", "h", "6x", "six hours", "6 hours", "-6h", "6h-", "+6h", "1e3h", "6h and 5m", "nan", "inf", "1,5h", "ⅵh"],
)
def test_parse_duration_rejects_garbage_text(garbage: str) -> None:
    with pytest.raises(ValueError, match="is not a duration"):
        parse_duration(garbage)


@pytest.mark.parametrize("garbage", [None, [], {}, ("6h",), True, False, b"6h"])
def test_parse_duration_rejects_other_types(garbage: Any) -> None:
    with pytest.raises(ValueError, match="is not a duration"):
        parse_duration(garbage)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_parse_duration_rejects_non_finite_numbers(value: float) -> None:
    with pytest.raises(ValueError, match="not a finite duration"):
        parse_duration(value)


@pytest.mark.parametrize("value", [1e12, -1e12, 10**400, "9" * 30 + "d", "9" * 400 + "s"])
def test_parse_duration_overflow_is_a_value_error(value: Any) -> None:
    with pytest.raises(ValueError, match="far too long"):
        parse_duration(value)


@pytest.mark.parametrize(
    ("td", "text"),
    [
        (timedelta(hours=6), "6h"),
        (timedelta(minutes=90), "1h30m"),
        (timedelta(days=1, hours=12), "1d12h"),
        (timedelta(days=90), "90d"),
        (timedelta(seconds=59), "59s"),
        (timedelta(hours=1, seconds=1), "1h1s"),
        (timedelta(hours=1, milliseconds=500), "1h0.5s"),
        (timedelta(microseconds=1), "0.000001s"),
        (timedelta(0), "0s"),
        (timedelta(hours=-1), "0s"),
    ],
)
def test_format_duration_is_the_shortest_shorthand(td: timedelta, text: str) -> None:
    assert format_duration(td) == text


@settings(max_examples=300, deadline=None)
@given(st.timedeltas(min_value=timedelta(0), max_value=MAX_TTL * 10))
def test_duration_round_trips_to_the_microsecond(td: timedelta) -> None:
    assert parse_duration(format_duration(td)) == td


@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=0, max_value=24 * 90, allow_nan=False))
def test_hours_as_a_number_round_trip_through_text(hours: float) -> None:
    td = parse_duration(hours)

    assert parse_duration(format_duration(td)) == td
    assert abs(td.total_seconds() - hours * 3600) < 1e-3


# ----------------------------------------------------------------------------------------- sizes


@pytest.mark.parametrize(
    ("text", "gib"),
    [
        ("36TiB", 36 * 1024),
        ("4800GiB", 4800),
        ("4800", 4800),  # a bare number is GiB
        ("36 TiB", 36 * 1024),
        ("36tib", 36 * 1024),
        ("1Ti", 1024),
        ("1PiB", 1024**2),
        ("1024MiB", 1),
        ("1025MiB", 2),  # rounded up to a whole GiB
        ("1048576KiB", 1),
        ("0.5GiB", 1),
        ("1.5TiB", 1536),
        ("1B", 1),
        ("0", 0),
    ],
)
def test_parse_size_binary_units(text: str, gib: int) -> None:
    assert parse_size_gib(text) == gib


@pytest.mark.parametrize(
    ("text", "gib"),
    [
        ("1TB", math.ceil(1e12 / GIB)),  # 931.3 GiB -> 932
        ("1T", math.ceil(1e12 / GIB)),
        ("1.2TB", math.ceil(1.2e12 / GIB)),  # 1117.6 -> 1118
        ("1000GB", math.ceil(1e12 / GIB)),
        ("1GB", 1),  # 0.93 GiB -> 1
        ("2GB", 2),  # 1.86 GiB -> 2
        ("1PB", math.ceil(1e15 / GIB)),
        ("36000G", math.ceil(36000e9 / GIB)),
    ],
)
def test_parse_size_decimal_units_round_up(text: str, gib: int) -> None:
    assert parse_size_gib(text) == gib


def test_decimal_units_are_smaller_than_binary_ones() -> None:
    assert parse_size_gib("1TB") < parse_size_gib("1TiB") == 1024
    assert parse_size_gib("1000GB") < parse_size_gib("1000GiB") == 1000
    assert parse_size_gib("1PB") < parse_size_gib("1PiB")


@pytest.mark.parametrize(("number", "gib"), [(4800, 4800), (1.5, 2), (0.1, 1), (-5, -5), (10**30, 10**30)])
def test_parse_size_numbers_are_gib_rounded_up(number: float, gib: int) -> None:
    assert parse_size_gib(number) == gib


@pytest.mark.parametrize(
    "garbage",
    ["", "TiB", "36XB", "-1GiB", "1e3GiB", "36 TiB extra", "36TiBs", "lots", "nan", "inf", "1,5TiB", "½TiB", "36 Ti B"],
)
def test_parse_size_rejects_garbage_text(garbage: str) -> None:
    with pytest.raises(ValueError, match="is not a size"):
        parse_size_gib(garbage)


@pytest.mark.parametrize("garbage", [None, [], {}, True, False, b"36TiB"])
def test_parse_size_rejects_other_types(garbage: Any) -> None:
    with pytest.raises(ValueError, match="is not a size"):
        parse_size_gib(garbage)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_parse_size_rejects_non_finite(value: Any) -> None:
    with pytest.raises(ValueError, match="not a finite size"):
        parse_size_gib(value)


def test_parse_size_is_exact_for_huge_numbers() -> None:
    assert parse_size_gib("9" * 400 + "PiB") == int("9" * 400) * 1024**2
    assert parse_size_gib("1.0000000001GiB") == 2  # above 1 GiB, so 2 whole GiB


@pytest.mark.parametrize(
    ("gib", "text"), [(36 * 1024, "36TiB"), (1024, "1TiB"), (4800, "4800GiB"), (1000, "1000GiB"), (1, "1GiB")]
)
def test_format_size(gib: int, text: str) -> None:
    assert format_size_gib(gib) == text


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=0, max_value=100 * 1024**2))
def test_size_round_trips(gib: int) -> None:
    assert parse_size_gib(format_size_gib(gib)) == gib


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=1, max_value=10**6), st.sampled_from(["KB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "TiB"]))
def test_size_is_never_below_the_bytes_asked_for(n: int, unit: str) -> None:
    factor = {"K": 1000, "M": 1000**2, "G": 1000**3, "T": 1000**4}[unit[0]] if "i" not in unit else None
    factor = factor or {"K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}[unit[0]]

    gib = parse_size_gib(f"{n}{unit}")

    assert gib * GIB >= n * factor
    assert (gib - 1) * GIB < n * factor  # and never a whole GiB too many


# --------------------------------------------------------------------------- as pydantic field types


class _Model(BaseModel):
    ttl: Duration
    size: SizeGiB


def test_types_parse_in_models_and_dump_as_shorthand() -> None:
    m = _Model(ttl="1d12h", size="36TiB")

    assert (m.ttl, m.size) == (timedelta(hours=36), 36 * 1024)
    assert m.model_dump(mode="json") == {"ttl": "1d12h", "size": 36 * 1024}
    assert m.model_dump()["ttl"] == timedelta(hours=36)  # python mode keeps the timedelta
    assert _Model.model_validate(m.model_dump(mode="json")) == m


def test_types_report_errors_as_validation_errors() -> None:
    with pytest.raises(ValidationError) as info:
        _Model(ttl="soon", size="huge")

    assert [e["loc"] for e in info.value.errors()] == [("ttl",), ("size",)]
    assert all(e["type"] == "value_error" for e in info.value.errors())


def test_json_schema_describes_the_shorthand() -> None:
    props = _Model.model_json_schema()["properties"]

    assert props["ttl"]["type"] == "string"
    assert "6h" in props["ttl"]["examples"]
    assert {"type": "integer"} in props["size"]["anyOf"]


def test_times_are_written_in_utc_to_the_second_with_z_and_read_back() -> None:
    berlin = datetime(2026, 11, 29, 20, 55, 7, 999_999, tzinfo=timezone(timedelta(hours=1)))
    assert format_time(berlin) == "2026-11-29T19:55:07Z"
    assert parse_time("2026-11-29T19:55:07Z") == berlin.replace(microsecond=0)
    assert parse_time("2026-11-29T20:55:07+01:00").tzinfo == timezone.utc
    with pytest.raises(ValueError):
        parse_time("yesterday")
