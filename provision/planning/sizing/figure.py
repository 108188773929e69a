"""The sizing report as a notebook figure: days and total cost against cluster size, one line per cloud.

matplotlib is optional (``pip install 'provision[notebook]'``) and imported only when a figure is asked for, so
``import provision`` and ``provision size`` never load it. The figure is built with matplotlib's object API
(``matplotlib.figure.Figure`` on an Agg canvas): no pyplot, no global figure registry, no display needed, so it
renders the same in a notebook, a script or a headless test. It shows itself in Jupyter through ``_repr_png_``
whether or not ``%matplotlib inline`` is active, and ``fig.savefig(...)`` writes it to a file.

The terminal twin is ``provision size --plot`` (plotext); both draw :func:`provision.planning.sizing.curve.curve`.
The report is duck-typed (a ``SizingReport``): this module must not import the models, which import it.
"""

from __future__ import annotations

import io
from typing import Any

from provision.planning.sizing.curve import curve, format_count

INSTALL_HINT = "pip install 'provision[notebook]'"


def figure(report: Any) -> Any:
    """A matplotlib ``Figure``: days (left) and total USD (right) against GPUs, per cloud; stars mark the choice.

    Raises:
        ImportError: matplotlib is not installed (the message names the extra to install).
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.ticker import FuncFormatter
    except ImportError:
        raise ImportError(f"SizingReport.figure() needs matplotlib: {INSTALL_HINT}") from None

    class SizingFigure(Figure):
        """A Figure that shows itself in notebooks (IPython calls ``_repr_png_``)."""

        def _repr_png_(self) -> bytes:
            buf = io.BytesIO()
            self.savefig(buf, format="png")
            return buf.getvalue()

    fig = SizingFigure(figsize=(10, 4), layout="constrained")
    FigureCanvasAgg(fig)  # an in-memory canvas: savefig and _repr_png_ work without any display
    days_ax, cost_ax = fig.subplots(1, 2, sharex=True)
    chosen = {o.cloud: o for o in report.clouds if o.gpus and o.wall_hours}
    unpriced = []
    for cloud, rows in curve(report).items():
        gpus = [r[0] for r in rows]
        (line,) = days_ax.plot(gpus, [r[1] for r in rows], marker="o", markersize=3, label=cloud)
        pick = chosen.get(cloud)
        if pick is not None and pick.wall_hours is not None:
            days_ax.plot([pick.gpus], [pick.wall_hours / 24], marker="*", markersize=12, color=line.get_color())
        if all(r[2] is not None for r in rows):
            cost_ax.plot(gpus, [r[2] for r in rows], marker="o", markersize=3, color=line.get_color(), label=cloud)
            if pick is not None and pick.total_usd is not None:
                cost_ax.plot([pick.gpus], [pick.total_usd], marker="*", markersize=12, color=line.get_color())
        else:
            unpriced.append(cloud)
    i = report.inputs
    fig.suptitle(f"{format_count(i.params)} parameters x {format_count(i.tokens)} tokens on {i.gpu}")
    for ax in (days_ax, cost_ax):
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v / 1e3:.0f}k" if v >= 1e4 else f"{v:,.0f}"))
        ax.set_xlabel("GPUs")
        ax.grid(True, which="both", alpha=0.3)
    cost_ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"${v / 1e6:,.1f}M"))
    days_ax.set_yscale("log")
    days_ax.set_ylabel("days (expected GPU-hours)")
    days_ax.legend(title="cloud (* = recommended)")
    cost_ax.set_ylabel("total USD (on-demand list prices)")
    cost_ax.set_title("unpriced: " + ", ".join(unpriced) if unpriced else "cost", fontsize="small")
    return fig
