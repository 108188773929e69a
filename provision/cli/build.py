"""``provision size ... --build``: the on-premises bill of materials on the command line.

The ``size`` command calls :func:`checked` around its sizing call (so bad build options are reported together with
bad sizing inputs) and :func:`emit_build` after it. Tables fit 80 columns; ``--json`` adds a ``build`` key to the
sizing document; ``--csv FILE`` writes the procurement lines.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from provision.cli.common import console, emit_json, run_command

T = TypeVar("T")
WIDTH = 80


def wanted(build: bool, vendor: str | None, fabric: str | None, csv_path: str | None) -> bool:
    """--vendor, --fabric and --csv only make sense with a bill of materials, so each implies --build."""
    return bool(build or vendor or fabric or csv_path)


def checked(
    build: bool,
    vendor: str | None,
    fabric: str | None,
    csv_path: str | None,
    size: Callable[[], T],
    tco: dict[str, Any] | None = None,
) -> T:
    """Run the sizing call; with --build, report its problems together with the build options' problems
    (``tco``: the ownership-cost flags' text by flag name).

    Raises:
        SpecError: every problem found (exit 2).
    """
    if not wanted(build, vendor, fabric, csv_path):
        return size()
    from provision.planning.onprem import with_option_checks
    from provision.spec.errors import Problem, SpecError

    extra = []
    if csv_path is not None and not Path(csv_path).expanduser().resolve().parent.is_dir():
        extra.append(
            Problem("--csv", csv_path, "is in a directory that does not exist", "create it or give another path")
        )
    try:
        result = with_option_checks(size, vendor, fabric, tco)
    except SpecError as e:
        raise SpecError(e.message, problems=[*e.problems, *extra]) from None
    if extra:
        raise SpecError("the build options are invalid", problems=extra)
    return result


def emit_build(
    report: Any,
    *,
    vendor: str | None,
    fabric: str | None,
    csv_path: str | None,
    as_json: bool,
    tco: dict[str, Any] | None = None,
) -> None:
    """Plan the build for the sizing ``report`` and print it (tables, or one JSON document), writing --csv."""
    from provision.planning.onprem import plan_build
    from provision.planning.onprem.export import csv_text

    build = run_command(as_json, lambda: plan_build(report, vendor=vendor, fabric=fabric, tco=tco))
    if csv_path is not None:
        path = Path(csv_path).expanduser()
        run_command(as_json, lambda: path.write_text(csv_text(build), encoding="utf-8"))
    if as_json:
        emit_json({**report.as_dict(), "build": build.as_dict()})
    else:
        print_build(build.as_dict(), csv_path)


def _usd(v: float | None) -> str:
    if v is None:
        return "unpriced"
    return f"${v / 1e6:,.2f}M" if v >= 1e6 else f"${v:,.0f}"


def _unknown_or(value: float | None, text: str, *, own: bool) -> str:
    """A figure, or why there is none: owning's cost is "unknown" (a line is unpriced); a rent price is "-"."""
    if value is not None:
        return text
    return "unknown" if own else "-"


def _table(title: str, columns: list[tuple[str, dict[str, Any]]]) -> Any:
    from rich.table import Table

    t = Table(title=title, title_justify="left", width=WIDTH, show_lines=False, pad_edge=False)
    for name, kw in columns:
        t.add_column(name, **kw)
    return t


def _kv(title: str, rows: list[tuple[str, str]]) -> Any:
    t = _table(title, [("", {"style": "bold", "no_wrap": True}), ("", {"overflow": "fold", "ratio": 1})])
    t.show_header = False
    for k, v in rows:
        t.add_row(k, v)
    return t


def print_build(b: dict[str, Any], csv_path: str | None = None) -> None:
    """Readable 80-column output of a build report (``BuildReport.as_dict()``)."""
    from rich.markup import escape

    out = console()
    d, s, f, st, p, c = b["decision"], b["server"], b["fabric"], b["storage"], b["power"], b["costs"]
    run = b["sized"]
    out.print(
        _kv(
            f"on-premises build: {run['params'] / 1e9:g}B params x {run['tokens'] / 1e12:g}T tokens on {run['gpu']}",
            [
                ("decision", escape(d["reason"])),
                ("server", f"{d['servers']} x {s['name']} ({d['gpus']} {s['accelerator']})"),
                (
                    "config",
                    escape(
                        f"CPU {s['cpu'] or 'per vendor'}; RAM {s['memory_note']}; NVMe "
                        f"{s['nvme_tb'] or '?'} TB; {s['compute_nics']} x {s['compute_nic']}"
                    ),
                ),
                ("fabric", escape(f"{f['kind']}: {f['rule']}")),
                ("storage", escape(st["chosen"]["note"] if st["chosen"] else "no catalog block fits; see options")),
                ("needs", f"{st['capacity_needed_tb']:,.1f} TB, {st['write_needed_gb_s']:,.2f} GB/s checkpoint write"),
                *(
                    ("or", escape(o["note"]))
                    for o in st["options"]
                    if not st["chosen"] or o["block"] != st["chosen"]["block"]
                ),
                ("power", _power(p)),
                ("cooling", escape(p["cooling_reason"])),
                (
                    "racks",
                    f"{p['racks']} ({p['compute_racks']} compute at {p['servers_per_rack']} servers each, "
                    f"{p['support_racks']} network/storage/management)",
                ),
            ],
        )
    )
    bom = _table(
        "bill of materials",
        [
            ("item", {"overflow": "fold", "ratio": 1}),
            ("qty", {"justify": "right", "no_wrap": True}),
            ("unit", {"justify": "right", "no_wrap": True}),
            ("total", {"justify": "right", "no_wrap": True}),
        ],
    )
    for li in b["lines"]:
        total = "(in links)" if li["priced_in"] else _usd(li["total_usd"])
        unit = "" if li["priced_in"] else _usd(li["unit_usd"])
        bom.add_row(escape(f"[{li['category']}] {li['item']}"), f"{li['quantity']:,}", unit, total)
    out.print(bom)
    capex = [(k, _usd(v)) for k, v in c["capex_by_category"].items()]
    out.print(
        _kv(
            "costs",
            [
                *capex,
                ("capital (priced)", _usd(c["capex_priced_usd"])),
                ("power / year", _usd(c["energy_usd_per_year"])),
                ("support / year", f"{_usd(c['support_usd_per_year'])} ({c['support_percent']:g}% of priced capital)"),
                ("colocation / year", _usd(c.get("colo_usd_per_year"))),
                ("staff / year", _usd(c.get("staff_usd_per_year"))),
                (
                    "written off, 3 years",
                    f"{_usd(c.get('capital_charged_priced_usd'))} of priced capital over {c['depreciation_years']:g} "
                    f"years; book value left {_usd(c.get('residual_value_priced_usd'))}",
                ),
                (
                    "network share",
                    f"{c['network_share']:.0%} of priced capital (Epoch AI: ~19% on average)"
                    if c["network_share"] is not None
                    else "-",
                ),
            ],
        )
    )
    if c.get("tco"):
        out.print(
            _kv(
                "ownership (TCO) figures: each flag overrides its figure",
                [
                    (
                        t["name"],
                        escape(
                            f"{t['value']:,.6g} {t['unit']} [{t['basis']}] "
                            + (
                                t["source"]
                                if t["basis"] == "flag"
                                else f"{t['source'].removeprefix('assumption: ')}; {t['flag']}"
                            )
                        ),
                    )
                    for t in c["tco"]
                ],
            )
        )
    rent = _table(
        "3 years: own versus renting the same GPU-hours",
        [
            ("option", {"overflow": "fold", "ratio": 1}),
            ("$/GPU-h", {"justify": "right", "no_wrap": True}),
            ("3-year", {"justify": "right", "no_wrap": True}),
            ("x own", {"justify": "right", "no_wrap": True}),
        ],
    )
    for r in c["rent"]:
        rent.add_row(
            escape(r["option"] + (f" ({r['note']})" if r["note"] else "")),
            _unknown_or(r["usd_per_gpu_hour"], f"{r['usd_per_gpu_hour'] or 0:,.2f}", own=r["capacity"] == "own"),
            "unknown" if r["capacity"] == "own" and r["three_year_usd"] is None else _usd(r["three_year_usd"]),
            "unknown" if r["vs_own"] is None else f"{r['vs_own']:.2f}",
        )
    out.print(rent)
    from provision.planning.onprem.export import cost_chart_text
    from provision.planning.onprem.models import CostPlan

    out.print("[bold]cumulative cost[/]")
    for line in cost_chart_text(CostPlan.model_validate(c)):
        out.print(escape(line), markup=False)
    sw = _table(
        "software stack",
        [
            ("layer", {"overflow": "fold", "ratio": 2}),
            ("item", {"overflow": "fold", "ratio": 3}),
            ("version / note", {"overflow": "fold", "ratio": 5}),
        ],
    )
    for item in b["software"]:
        sw.add_row(item["layer"], item["item"], escape(" ".join(x for x in (item["version"], item["note"]) if x)))
    out.print(sw)
    out.print("[bold]assumptions[/]")
    for a in b["assumptions"]:
        out.print(textwrap.fill(a, WIDTH - 2, initial_indent="  - ", subsequent_indent="    "), markup=False)
    for w in b["warnings"]:
        out.print(textwrap.fill(f"warning: {w}", WIDTH - 2, subsequent_indent="  "), markup=False)
    if csv_path:
        out.print(f"bill of materials written to {escape(csv_path)}")


def _power(p: dict[str, Any]) -> str:
    if p["it_kw_max"] is None:
        return "unknown (no published server power)"
    text = (
        f"IT {p['it_kw_max']:,.1f} kW max ({p['it_kw_typical']:,.1f} typical), facility {p['facility_kw']:,.1f} kW "
        f"at PUE {p['pue']:g}; {p['rack_kw']:,.1f} kW per rack"
    )
    if p.get("bf16_tflops_per_watt") is not None:
        text += (
            f"; {p['bf16_tflops_per_watt']:.3f} dense BF16 TFLOPS/W at maximum power "
            f"({p['server_bf16_tflops_per_watt']:.3f} per server alone)"
        )
    return text
