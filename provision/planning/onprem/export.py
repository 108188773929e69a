"""Presentation helpers without heavy dependencies: CSV rows for procurement and a cost-over-time figure.

The figure is plain SVG (notebooks render it inline, no matplotlib needed) or a few lines of text for a terminal.
"""

from __future__ import annotations

import csv
import html
import io
from typing import Any

# The report models import this module for ``_repr_html_``; annotations stay ``Any`` so there is no import circle.
BuildReport = Any
CostPlan = Any

CSV_COLUMNS = ("category", "item", "part", "quantity", "unit_usd", "total_usd", "note", "sources")

_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b")


def csv_text(report: BuildReport) -> str:
    """The bill of materials as CSV, one line item per row, with a total row for the priced items."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for li in report.lines:
        w.writerow(
            [
                li.category,
                li.item,
                li.part or "",
                li.quantity,
                "" if li.unit_usd is None else f"{li.unit_usd:.2f}",
                "" if li.total_usd is None else f"{li.total_usd:.2f}",
                li.note,
                " ".join(li.sources),
            ]
        )
    c = report.costs
    w.writerow(
        [
            "total",
            "capital (priced lines)",
            "",
            "",
            "",
            f"{c.capex_priced_usd:.2f}",
            f"unpriced: {'; '.join(c.unpriced)}" if c.unpriced else "all lines priced",
            "",
        ]
    )
    return out.getvalue()


def cost_chart_svg(costs: CostPlan, width: int = 640, height: int = 320) -> str:
    """Cumulative cost (USD) per month for owning and for the cheapest rental of each kind, as an SVG line chart."""
    months = costs.months
    series = {k: v for k, v in costs.series.items() if all(x is not None for x in v)}
    pad_l, pad_r, pad_t, pad_b = 70, 170, 20, 40
    top = max((max(v) for v in series.values() if v), default=1.0) or 1.0  # type: ignore[type-var]
    x_max = months[-1] or 1

    def xy(m: int, usd: float) -> str:
        x = pad_l + (width - pad_l - pad_r) * m / x_max
        y = height - pad_b - (height - pad_t - pad_b) * usd / top
        return f"{x:.1f},{y:.1f}"

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
        'font-size="11">',
        f'<line x1="{pad_l}" y1="{height - pad_b}" x2="{width - pad_r}" y2="{height - pad_b}" stroke="#444"/>',
        f'<line x1="{pad_l}" y1="{pad_t}" x2="{pad_l}" y2="{height - pad_b}" stroke="#444"/>',
        f'<text x="{(width - pad_r + pad_l) / 2:.0f}" y="{height - 8}" text-anchor="middle">months</text>',
    ]
    for m in months[:: max(1, len(months) // 6)]:
        x = xy(m, 0).split(",")[0]
        parts.append(f'<text x="{x}" y="{height - pad_b + 14}" text-anchor="middle">{m}</text>')
    for frac in (0.5, 1.0):
        y = xy(0, top * frac).split(",")[1]
        parts.append(f'<text x="{pad_l - 6}" y="{y}" text-anchor="end">${top * frac / 1e6:,.1f}M</text>')
    for i, (name, values) in enumerate(series.items()):
        colour = _COLOURS[i % len(_COLOURS)]
        points = " ".join(xy(m, v or 0.0) for m, v in zip(months, values, strict=True))
        parts.append(
            f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{points}"><title>'
            f"{html.escape(name)}</title></polyline>"
        )
        ly = pad_t + 14 * i + 6
        parts.append(f'<rect x="{width - pad_r + 10}" y="{ly - 8}" width="10" height="3" fill="{colour}"/>')
        parts.append(f'<text x="{width - pad_r + 24}" y="{ly}">{html.escape(name)}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def cost_chart_text(costs: CostPlan, width: int = 40) -> list[str]:
    """The same figure as text bars: cumulative cost after 1, 2 and 3 years per option."""
    lines = []
    series = {k: v for k, v in costs.series.items() if all(x is not None for x in v)}
    top = max((max(v) for v in series.values() if v), default=0.0) or 1.0  # type: ignore[type-var]
    for year in (1, 2, 3):
        i = costs.months.index(12 * year)
        lines.append(f"after {year} year(s):")
        for name, values in series.items():
            usd = values[i] or 0.0
            bar = "#" * max(1, round(width * usd / top))
            lines.append(f"  {name[:22]:<22} {bar} ${usd / 1e6:,.2f}M")
    return lines


def report_html(report: BuildReport) -> str:
    """A compact HTML summary with the cost figure, for ``_repr_html_`` in notebooks."""
    d, c, p = report.decision, report.costs, report.power
    rows = [
        ("decision", d.reason),
        ("servers", f"{d.servers} x {report.server.name}"),
        ("fabric", report.fabric.rule),
        ("power", f"IT {p.it_kw_max or 0:,.1f} kW max, facility {p.facility_kw or 0:,.1f} kW at PUE {p.pue:g}"),
        ("racks", f"{p.racks} ({p.servers_per_rack} servers per rack)"),
        (
            "capital",
            f"${c.capex_priced_usd:,.0f} priced" + (f"; unpriced: {', '.join(c.unpriced)}" if c.unpriced else ""),
        ),
    ]
    body = "".join(
        f"<tr><th style='text-align:left'>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in rows
    )
    return f"<table>{body}</table>{cost_chart_svg(c)}"
