"""`SizingReport.figure()` (issue 15.4, "a figure in notebooks"): matplotlib, optional and lazily imported."""

from __future__ import annotations

import subprocess
import sys

import pytest

from provision.planning.sizing import size_training
from provision.planning.sizing.curve import curve

pytest.importorskip("matplotlib", reason="pip install 'provision[notebook]'")


@pytest.fixture(scope="module")
def report():
    return size_training("70B", "2T", gpus=1024)


def test_figure_draws_days_and_cost_per_cloud_from_the_sizing_curve(report) -> None:
    fig = report.figure()
    days_ax, cost_ax = fig.axes
    lines = {ln.get_label(): ln for ln in days_ax.lines if not ln.get_label().startswith("_")}
    expected = curve(report)

    assert set(lines) == set(expected)
    for cloud, rows in expected.items():
        assert list(lines[cloud].get_xdata()) == [r[0] for r in rows]
        assert list(lines[cloud].get_ydata()) == pytest.approx([r[1] for r in rows])
    priced = {ln.get_label(): ln for ln in cost_ax.lines if not ln.get_label().startswith("_")}
    assert set(priced) == {c for c, rows in expected.items() if all(r[2] is not None for r in rows)}
    for cloud, ln in priced.items():
        assert list(ln.get_ydata()) == pytest.approx([r[2] for r in expected[cloud]])
    unpriced = sorted(set(expected) - set(priced))
    assert (cost_ax.get_title() == "cost") == (not unpriced)


def test_figure_renders_headless_and_shows_itself_in_notebooks(report) -> None:
    png = report.figure()._repr_png_()  # Agg canvas: no display, no pyplot
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10_000
    assert "matplotlib.pyplot" not in sys.modules


def test_missing_matplotlib_names_the_extra(report, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError

    with pytest.raises(ImportError, match=r"provision\[notebook\]"):
        report.figure()


def test_import_provision_and_sizing_load_no_matplotlib() -> None:
    code = (
        "import sys, provision\n"
        "from provision.planning.sizing import size_training\n"
        "size_training('7B', '1T').as_dict()\n"
        "assert not [m for m in sys.modules if m.startswith('matplotlib')], 'matplotlib loaded'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
