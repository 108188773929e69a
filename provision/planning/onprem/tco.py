"""The ownership-cost (TCO) figures of a build: each one printed with where it comes from, each one a flag.

Owning for three years = capital charged to those years (straight-line over the depreciation period: all of it
at three years or less, ``3 / years`` of it over a longer period, the rest being the hardware's book value at the
end) + three years of energy, support, colocation and staff. Every figure is one :class:`TcoItem`: the user's flag
when given, else the catalog's sourced figure (``data/onprem-assumptions.yaml``), else a labelled assumption.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from provision.catalog.onprem import OnpremCatalog
from provision.planning.onprem.models import TcoFigure
from provision.spec.errors import Problem

#: The sizing planner's defaults for the two figures it already takes (``provision size --pue`` and the price).
DEFAULT_PUE = 1.3
#: Years the hardware is written off over when --depreciation-years is not given (an assumption: the span of
#: the own-versus-rent comparison and of a typical accelerator refresh).
DEFAULT_DEPRECIATION_YEARS = 3.0


#: The override flags: (name, unit, test, rule, fix).
_FLAGS: dict[str, tuple[str, str, Any, str, str]] = {
    "--depreciation-years": (
        "depreciation period",
        "years",
        lambda v: 1 <= v <= 10,
        "must be in [1, 10]",
        "give the years the hardware is written off over, e.g. 3 or 5",
    ),
    "--support-percent": (
        "support contract",
        "% of capital per year",
        lambda v: 0 <= v <= 100,
        "must be in [0, 100]",
        "give the yearly support contract as a percent of the hardware price, e.g. 20",
    ),
    "--colo-usd-per-kw-month": (
        "colocation",
        "USD per kW of IT capacity per month",
        lambda v: v >= 0,
        "must be 0 or more",
        "give the colocation rent per kW-month, or 0 for a facility you already own",
    ),
    "--staff-fte": (
        "staff",
        "full-time engineers",
        lambda v: v >= 0,
        "must be 0 or more",
        "give the engineers who run the cluster, e.g. 2 (0.5 for half of one)",
    ),
    "--staff-usd-per-fte-year": (
        "staff cost",
        "USD per FTE-year",
        lambda v: v >= 0,
        "must be 0 or more",
        "give one engineer's fully loaded yearly cost, e.g. 150000",
    ),
}
FLAGS: tuple[str, ...] = tuple(_FLAGS)


@dataclass(frozen=True)
class TcoOverrides:
    """What the user gave on the command line (``None``: not given)."""

    depreciation_years: float | None = None
    support_percent: float | None = None
    colo_usd_per_kw_month: float | None = None
    staff_fte: float | None = None
    staff_usd_per_fte_year: float | None = None


def parse_overrides(raw: dict[str, Any]) -> tuple[TcoOverrides, list[Problem]]:
    """The flags' text (``{"--staff-fte": "2", ...}``) as numbers, with every bad value as a problem."""
    values: dict[str, float | None] = {}
    problems: list[Problem] = []
    for flag, (_, _, ok, rule, fix) in _FLAGS.items():
        text = raw.get(flag)
        key = flag.removeprefix("--").replace("-", "_")
        values[key] = None
        if text is None:
            continue
        try:
            number = float(text) if isinstance(text, (int, float, str)) and not isinstance(text, bool) else math.nan
        except ValueError:
            number = math.nan
        if not math.isfinite(number):
            problems.append(Problem(flag, text, "is not a number", fix))
        elif not ok(number):
            problems.append(Problem(flag, text, rule, fix))
        else:
            values[key] = number
    return TcoOverrides(**values), problems


def _sourced(cat: OnpremCatalog, aid: str) -> tuple[float, str]:
    a = cat.assumption(aid)
    s = a.sources[0]
    return a.value, f"{s.url} (read {s.retrieved.isoformat()})"


def tco_figures(
    cat: OnpremCatalog,
    *,
    electricity_usd_per_kwh: float,
    pue: float,
    gpus: int,
    overrides: TcoOverrides | None = None,
) -> tuple[TcoFigure, ...]:
    """Every ownership-cost figure the build uses, in print order, each with its basis."""
    o = overrides or TcoOverrides()
    out: list[TcoFigure] = []

    def add(name: str, flag: str, unit: str, given: float | None, default: tuple[float, str] | None, why: str) -> None:
        if given is not None:
            out.append(TcoFigure(name=name, flag=flag, value=given, unit=unit, basis="flag", source=f"your {flag}"))
        elif default is not None:
            out.append(TcoFigure(name=name, flag=flag, value=default[0], unit=unit, basis="source", source=default[1]))
        else:
            raise ValueError(name)
        out[-1] = out[-1].model_copy(update={"source": out[-1].source + (f"; {why}" if why else "")})

    price, price_src = _sourced(cat, "electricity_usd_per_kwh")
    if electricity_usd_per_kwh == price:
        add("power price", "--electricity-usd-per-kwh", "USD per kWh", None, (price, price_src), "")
    else:
        add("power price", "--electricity-usd-per-kwh", "USD per kWh", electricity_usd_per_kwh, None, "")
    if pue == DEFAULT_PUE:
        out.append(
            TcoFigure(
                name="PUE",
                flag="--pue",
                value=pue,
                unit="facility power / IT power",
                basis="assumption",
                source="assumption: a modern air-cooled facility; no published figure for your site was read",
            )
        )
    else:
        add("PUE", "--pue", "facility power / IT power", pue, None, "")
    if o.depreciation_years is None:
        out.append(
            TcoFigure(
                name="depreciation period",
                flag="--depreciation-years",
                value=DEFAULT_DEPRECIATION_YEARS,
                unit="years (straight-line)",
                basis="assumption",
                source="assumption: the 3-year span of the own-versus-rent comparison; no residual value",
            )
        )
    else:
        add("depreciation period", "--depreciation-years", "years (straight-line)", o.depreciation_years, None, "")
    add(
        "support contract",
        "--support-percent",
        "% of capital per year",
        o.support_percent,
        _sourced(cat, "support_percent_per_year"),
        "",
    )
    add(
        "colocation",
        "--colo-usd-per-kw-month",
        "USD per kW of IT capacity per month",
        o.colo_usd_per_kw_month,
        _sourced(cat, "colo_usd_per_kw_month"),
        "electricity billed separately at the power price x PUE",
    )
    per_fte, fte_src = _sourced(cat, "staff_gpus_per_fte")
    add(
        "staff",
        "--staff-fte",
        "full-time engineers",
        o.staff_fte,
        (float(max(1, math.ceil(gpus / per_fte))), fte_src),
        "" if o.staff_fte is not None else f"ceil({gpus:,} GPUs / {per_fte:g} per engineer), at least 1",
    )
    add(
        "staff cost",
        "--staff-usd-per-fte-year",
        "USD per FTE-year",
        o.staff_usd_per_fte_year,
        _sourced(cat, "staff_usd_per_fte_year"),
        "",
    )
    return tuple(out)


def figure(figures: tuple[TcoFigure, ...], name: str) -> float:
    """The value of the figure called ``name``."""
    return next(f.value for f in figures if f.name == name)


def describe(figures: tuple[TcoFigure, ...]) -> list[str]:
    """One line per figure for the report's assumptions."""
    return [
        f"TCO {f.name}: {f.value:,.6g} {f.unit} ({f.basis}: {f.source.removeprefix('assumption: ')})"
        + ("" if f.basis == "flag" else f"; override with {f.flag}")
        for f in figures
    ]
