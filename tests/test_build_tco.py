"""`size --build`: every ownership-cost figure is printed with its source (or labelled an assumption), and each
one has a flag that overrides it and moves owning's cost by exactly what it should."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from provision.cli.app import app
from provision.planning.onprem import plan_build
from provision.planning.onprem.costs import YEARS
from provision.planning.sizing import size_training

FIGURES = ("power price", "PUE", "depreciation period", "support contract", "colocation", "staff", "staff cost")


@pytest.fixture(scope="module")
def r70():
    return size_training("70B", "2T")


@pytest.fixture(scope="module")
def b70(r70):
    return plan_build(r70)


def by_name(build):
    return {f.name: f for f in build.costs.tco}


def test_every_figure_has_a_source_or_is_labelled_an_assumption(b70) -> None:
    figs = by_name(b70)
    assert tuple(figs) == FIGURES
    for f in figs.values():
        assert f.flag.startswith("--")
        if f.basis == "source":
            assert "https://" in f.source or "http://" in f.source
        else:
            assert f.basis == "assumption" and f.source.startswith("assumption:")
    assert {n for n, f in figs.items() if f.basis == "assumption"} == {"PUE", "depreciation period"}
    assert figs["staff"].value == 5  # ceil(1,120 GPUs / 250 per engineer)


def test_the_cli_prints_each_figure_its_basis_and_its_flag() -> None:
    out = CliRunner().invoke(app, ["size", "--params", "70B", "--tokens", "2T", "--build"], env={"COLUMNS": "80"})
    assert out.exit_code == 0, out.output
    table = out.output[out.output.index("ownership (TCO) figures") :]
    for name, flag in [
        ("power price", "--electricity-usd-per-kwh"),
        ("PUE", "--pue"),
        ("depreciation period", "--depreciation-years"),
        ("support contract", "--support-percent"),
        ("colocation", "--colo-usd-per-kw-month"),
        ("staff", "--staff-fte"),
        ("staff cost", "--staff-usd-per-fte-year"),
    ]:
        assert name in table and flag in table
    assert table.count("[assumption]") == 2 and table.count("[source]") == 5
    assert "colocation / year" in out.output and "staff / year" in out.output


@pytest.mark.parametrize(
    ("flags", "name", "value"),
    [
        ({"--colo-usd-per-kw-month": "0"}, "colocation", 0.0),
        ({"--staff-fte": "2"}, "staff", 2.0),
        ({"--staff-usd-per-fte-year": "250000"}, "staff cost", 250000.0),
        ({"--support-percent": "8"}, "support contract", 8.0),
        ({"--depreciation-years": "6"}, "depreciation period", 6.0),
    ],
)
def test_each_flag_overrides_its_figure_and_moves_owning_by_what_it_costs(r70, b70, flags, name, value) -> None:
    b = plan_build(r70, tco=flags)
    f = by_name(b)[name]
    assert (f.value, f.basis) == (value, "flag")
    was, now = b70.costs, b.costs
    kw, priced = b70.power.it_kw_max, was.capex_priced_usd
    old = by_name(b70)
    delta = {
        "colocation": lambda: YEARS * 12 * kw * (value - old["colocation"].value),
        "staff": lambda: YEARS * (value - old["staff"].value) * old["staff cost"].value,
        "staff cost": lambda: YEARS * old["staff"].value * (value - old["staff cost"].value),
        "support contract": lambda: YEARS * priced * (value - old["support contract"].value) / 100,
        "depreciation period": lambda: -priced * (1 - YEARS / value),  # after 3 of 6 years half is book value
    }[name]()
    assert now.three_year_own_priced_usd - was.three_year_own_priced_usd == pytest.approx(delta)


def test_power_price_and_pue_flags_are_labelled_as_the_users(r70) -> None:
    b = plan_build(size_training("70B", "2T", electricity_usd_per_kwh="0.05", pue="1.1"))
    figs = by_name(b)
    assert (figs["power price"].value, figs["power price"].basis) == (0.05, "flag")
    assert (figs["PUE"].value, figs["PUE"].basis) == (1.1, "flag")


def test_bad_values_are_reported_together_with_their_flags() -> None:
    out = CliRunner().invoke(
        app,
        [
            "size",
            "--params",
            "70B",
            "--tokens",
            "2T",
            "--staff-fte",
            "many",
            "--depreciation-years",
            "40",
            "--colo-usd-per-kw-month",
            "-5",
            "--json",
        ],
    )
    assert out.exit_code == 2
    doc = json.loads(out.stdout)
    paths = {p["path"] for p in doc["problems"]}
    assert {"--staff-fte", "--depreciation-years", "--colo-usd-per-kw-month"} <= paths
