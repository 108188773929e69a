"""``provision size``: the sizing planner on the command line.

Numbers are taken as text and parsed by :func:`provision.planning.sizing.size_training`, so one run reports every bad
option at once (exit 2, no traceback) instead of stopping at the first one.
"""

from __future__ import annotations

from typing import Any

import typer

from provision.cli.common import console, emit_json, run_command

GIB = 1024**3


def size(
    params: str | None = typer.Option(None, "--params", help="Model parameters: 70B, 7e9, 500M.", show_default=False),
    tokens: str | None = typer.Option(None, "--tokens", help="Training tokens: 2T, 1.5T, 300B.", show_default=False),
    gpu: str = typer.Option("H100", "--gpu", help="Accelerator model from the catalog."),
    gpus: str | None = typer.Option(None, "--gpus", metavar="N", help="Total GPUs (whole nodes); default: derived."),
    deadline_days: str | None = typer.Option(
        None, "--deadline-days", metavar="DAYS", help="Finish within this many days (default 30 without --gpus)."
    ),
    mfu: str | None = typer.Option(
        None, "--mfu", metavar="FLOAT", help="Measured MFU against the BF16 peak, in (0, 1]; default: calibrated."
    ),
    mfu_from: str | None = typer.Option(
        None,
        "--mfu-from",
        metavar="BENCH.json",
        help="Scale the calibrated MFU by measured/planned from `provision bench --json` (same GPU).",
    ),
    goodput: str | None = typer.Option(
        None, "--goodput", metavar="FLOAT", help="Share of wall time spent training (default 0.9, Llama 3)."
    ),
    active_params: str | None = typer.Option(
        None, "--active-params", help="MoE: parameters each token passes through, e.g. 37B.", show_default=False
    ),
    mode: str = typer.Option("pretrain", "--mode", help="pretrain, finetune, lora or qlora."),
    trainable_params: str | None = typer.Option(
        None, "--trainable-params", help="LoRA/QLoRA adapter parameters (default 1% of --params).", show_default=False
    ),
    precision: str = typer.Option("bf16", "--precision", help="bf16 or fp8 (FP8 runs at its own measured speed-up)."),
    optimizer: str = typer.Option("adamw", "--optimizer", help="adamw, adafactor or sgd."),
    seq_len: str = typer.Option("4096", "--seq-len", metavar="TOKENS", help="Training sequence length."),
    checkpoint_minutes: str = typer.Option(
        "5", "--checkpoint-minutes", metavar="MIN", help="Time allowed to write one checkpoint."
    ),
    electricity_usd_per_kwh: str = typer.Option(
        "0.12", "--electricity-usd-per-kwh", metavar="USD", help="Electricity price for an owned server."
    ),
    pue: str = typer.Option("1.3", "--pue", metavar="FLOAT", help="Data-centre power usage effectiveness."),
    utilisation: str = typer.Option(
        "0.8", "--utilisation", metavar="FLOAT", help="Share of hours an owned server is busy."
    ),
    cloud: str | None = typer.Option(None, "--cloud", help="With --write-spec: the cloud whose option to write."),
    write_spec: str | None = typer.Option(
        None, "--write-spec", metavar="FILE", help="Write a cluster spec for --cloud's option that `plan` accepts."
    ),
    write_volume: str | None = typer.Option(
        None,
        "--write-volume",
        metavar="FILE",
        help="With --write-spec: also write the shared filesystem as a volume spec (provision volume create FILE); "
        "the cluster spec then attaches it by name.",
    ),
    plot: bool = typer.Option(
        False, "--plot", help="Draw GPUs vs days vs cost per cloud in the terminal (notebooks: the report's .figure())."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON document on stdout and nothing else."),
    build: bool = typer.Option(False, "--build", help="On-premises bill of materials, power, racks, own vs rent."),
    vendor: str | None = typer.Option(None, "--vendor", metavar="V", help="Server vendor: nvidia, dell, hpe, ..."),
    fabric: str | None = typer.Option(None, "--fabric", metavar="FABRIC", help="infiniband or roce."),
    csv_path: str | None = typer.Option(None, "--csv", metavar="FILE", help="Write the bill of materials as CSV."),
    depreciation_years: str | None = typer.Option(
        None, "--depreciation-years", metavar="YEARS", help="--build: years the hardware is written off over (3)."
    ),
    support_percent: str | None = typer.Option(
        None, "--support-percent", metavar="PCT", help="--build: yearly support contract, % of capital."
    ),
    colo_usd_per_kw_month: str | None = typer.Option(
        None, "--colo-usd-per-kw-month", metavar="USD", help="--build: colocation rent per kW-month (0: own site)."
    ),
    staff_fte: str | None = typer.Option(
        None, "--staff-fte", metavar="N", help="--build: engineers running the cluster (default by GPU count)."
    ),
    staff_usd_per_fte_year: str | None = typer.Option(
        None, "--staff-usd-per-fte-year", metavar="USD", help="--build: one engineer's loaded yearly cost."
    ),
) -> None:
    """Size a training run: FLOPs, GPU-hours, memory per GPU, GPUs and time, clouds, storage, buy versus rent."""
    from provision.cli import build as onprem
    from provision.planning.sizing import size_training

    tco = {
        k: v
        for k, v in {
            "--depreciation-years": depreciation_years,
            "--support-percent": support_percent,
            "--colo-usd-per-kw-month": colo_usd_per_kw_month,
            "--staff-fte": staff_fte,
            "--staff-usd-per-fte-year": staff_usd_per_fte_year,
        }.items()
        if v is not None
    }
    build = build or bool(tco)  # the ownership-cost flags only make sense with a bill of materials
    report = run_command(
        as_json,
        lambda: onprem.checked(
            build,
            vendor,
            fabric,
            csv_path,
            lambda: size_training(
                params,
                tokens,
                gpu=gpu,
                gpus=gpus,
                deadline_days=deadline_days,
                mfu=mfu,
                mfu_scale=_mfu_scale(mfu_from, gpu),
                goodput=goodput,
                active_params=active_params,
                mode=mode,
                trainable_params=trainable_params,
                precision=precision,
                optimizer=optimizer,
                seq_len=seq_len,
                checkpoint_minutes=checkpoint_minutes,
                electricity_usd_per_kwh=electricity_usd_per_kwh,
                pue=pue,
                utilisation=utilisation,
            ),
            tco,
        ),
    )
    if onprem.wanted(build, vendor, fabric, csv_path):
        onprem.emit_build(report, vendor=vendor, fabric=fabric, csv_path=csv_path, as_json=as_json, tco=tco)
        return
    written = run_command(as_json, lambda: _write_spec(report, cloud, write_spec, write_volume)) if write_spec else None
    if as_json:
        doc = report.as_dict()
        if written:
            doc["spec_written"] = written
        emit_json(doc)
        return
    print_report(report.as_dict())
    if written:
        console().print(f"spec written to {written} (check it with: provision plan {written})", markup=False)
    if plot:
        _plot(report)


def _mfu_scale(path: str | None, gpu: str) -> float | None:
    """The measured/planned MFU ratio of a bench result (provision/ops/bench.py), or None without --mfu-from."""
    if path is None:
        return None
    from provision.ops.bench import mfu_scale_from

    return mfu_scale_from(path, gpu)


def _write_spec(report: Any, cloud: str | None, path: str, volume_path: str | None = None) -> str:
    """Validate and write the spec for ``cloud``'s option (and its volume spec to ``volume_path``); returns the path."""
    from pathlib import Path

    import yaml

    from provision.catalog.models import CLOUDS as clouds
    from provision.planning.sizing.handoff import spec_for, storage_notes, volume_for
    from provision.spec import load_spec
    from provision.spec.errors import Problem, SpecError

    c = (cloud or "").strip().lower()
    if c not in clouds:
        raise SpecError(
            "--write-spec needs a cloud",
            [Problem("--cloud", cloud, "is not a cloud", f"use one of: {', '.join(clouds)}")],
        )
    try:
        spec, notes = spec_for(report, c)
    except ValueError as e:
        raise SpecError("no spec to write", [Problem("--cloud", c, str(e), "pick another --cloud")]) from None
    notes += _sized_options(report, c, spec)
    notes += storage_notes(report, c)
    volume = volume_for(report, c, spec) if volume_path else None
    if volume_path and volume is None:
        raise SpecError(
            "no volume to write",
            [Problem("--write-volume", volume_path, f"the sizing chose no {c} filesystem", "drop --write-volume")],
        )
    if volume is not None and volume_path:
        from provision.spec.volume import load_volume_spec

        load_volume_spec(volume)  # the volume models accept it, or this raises with every problem
        mount = spec.get("storage", {}).get("shared", {}).get("mount", "/shared")
        spec["storage"] = {"shared": {"volume": volume["name"], "mount": mount}}
        notes.append(
            f"storage.shared attaches volume {volume['name']}: create it first (provision volume create {volume_path})"
        )
    load_spec(spec)  # the spec models accept it, or this raises with every problem
    _check_plans(spec, path)  # and `provision plan` accepts it, or nothing is written
    if volume is not None and volume_path:  # both valid: write the volume next to the spec
        Path(volume_path).write_text(
            "# Written by provision size: the shared filesystem the sizing chose, as a volume.\n"
            + yaml.safe_dump(volume, sort_keys=False),
            encoding="utf-8",
        )
    notes.append(_cost_cap(spec))
    # One comment line per line of a note: a note that spans lines must not end the comment (and break the YAML).
    header = "".join(f"# {line}\n" for n in ["Written by provision size.", *notes] for line in n.splitlines())
    target = Path(path)
    target.write_text(header + yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return str(target)


def _sized_options(report: Any, cloud: str, spec: dict[str, Any]) -> list[str]:
    """Add the ``<cloud>:`` options the cluster's node count needs to plan (very large runs); their reasons."""
    from provision.clouds.base import get_adapter

    option = next(o for o in report.clouds if o.cloud == cloud)
    extra, why = get_adapter(cloud).sized_options(option.nodes or 0)
    if extra:
        spec.setdefault(cloud, {}).update(extra)
    return list(why)


def _check_plans(spec: dict[str, Any], path: str) -> None:
    """Raise with `provision plan`'s own problems (the limit and its fix) when it would refuse ``spec``."""
    from provision.clouds.validate import load_and_plan
    from provision.spec.errors import BudgetError, Problem, ProvisionError, SpecError

    try:
        load_and_plan(spec)
    except BudgetError:
        return  # no cap is written yet; _cost_cap sets one `plan` accepts
    except SpecError as e:
        raise SpecError(
            f"no spec written: `provision plan` would refuse it ({e.message})",
            [
                Problem(
                    f"--write-spec ({p.path})" if p.path else "--write-spec",
                    p.value,
                    p.rule,
                    f"{p.fix}; or size a smaller cluster (--gpus, a longer --deadline-days) or another --cloud",
                )
                for p in e.problems
            ]
            or [Problem("--write-spec", path, e.message, "size a smaller cluster or another --cloud")],
        ) from None
    except ProvisionError as e:
        raise SpecError(
            "no spec written",
            [Problem("--write-spec", path, f"`provision plan` would refuse it: {e}", "size another --cloud")],
        ) from None


def _cost_cap(spec: dict[str, Any]) -> str:
    """Set ``lifetime.max_cost_usd`` to what `plan` projects for the spec's ttl; the note says what happened."""
    import math

    from provision.clouds.validate import load_and_plan
    from provision.spec import MAX_COST_USD
    from provision.spec.errors import ProvisionError

    ttl = spec.get("lifetime", {}).get("ttl")
    if ttl is None:
        return "no lifetime.max_cost_usd: the spec has no ttl to price"
    try:
        cost = load_and_plan(spec).cost
    except ProvisionError as e:
        return f"no lifetime.max_cost_usd: plan does not price this spec yet ({e})"
    if cost.lifetime_usd is None:
        return "no lifetime.max_cost_usd: the nodes have no catalog price"
    if math.ceil(cost.lifetime_usd) > MAX_COST_USD:
        return (
            f"no lifetime.max_cost_usd: plan projects {cost.lifetime_usd:,.0f} USD for the ttl ({ttl}), above the "
            f"{MAX_COST_USD:,.0f} USD a spec's cap may hold (a guard against typos); the ttl still ends the cluster"
        )
    spec["lifetime"]["max_cost_usd"] = math.ceil(cost.lifetime_usd)
    note = f"lifetime.max_cost_usd {math.ceil(cost.lifetime_usd):,} is what plan projects for the ttl ({ttl})"
    if cost.unpriced:
        note += f"; it leaves out what the catalog does not price: {', '.join(cost.unpriced)}"
    return note


def _plot(report: Any) -> None:
    """GPUs (x) against days (y) per cloud, with the total cost at each point in the legend's last value."""
    try:
        import plotext as plt
    except ImportError:
        console(stderr=True).print("--plot needs plotext: pip install 'provision[plot]'", markup=False)
        return
    import sys

    from provision.planning.sizing.curve import curve

    plt.clf()
    plt.plotsize(78, 20)
    import os

    plain = not sys.stdout.isatty() or bool(os.environ.get("NO_COLOR"))  # https://no-color.org
    if plain:
        plt.theme("clear")  # no colour codes in pipes and logs
    for cloud, rows in curve(report).items():
        gpus = [r[0] for r in rows]
        days = [r[1] for r in rows]
        cost = rows[0][2]
        label = f"{cloud} (${cost / 1e6:,.2f}M)" if cost is not None else f"{cloud} (unpriced)"
        plt.plot(gpus, days, label=label, marker="dot")
    plt.xlabel("GPUs")
    plt.ylabel("days")
    plt.title("training time by cluster size (legend: total cost at the smallest size)")
    text = plt.build()
    if plain:  # plotext still ends lines with a reset code under the clear theme
        import re

        text = re.sub(r"\x1b\[[0-9;]*m", "", text)
    print(text)


def register(app: typer.Typer) -> None:
    """Add the ``size`` command to ``app``."""
    app.command("size")(size)


def _usd(v: float | None) -> str:
    return "unpriced" if v is None else f"${v:,.0f}" if v >= 100 else f"${v:,.2f}"


def _bytes(v: float) -> str:
    for scale, unit in ((1e15, "PB"), (1e12, "TB"), (1e9, "GB"), (1e6, "MB")):
        if v >= scale:
            return f"{v / scale:,.2f} {unit}"
    return f"{v:,.0f} B"


def _table(title: str, rows: list[tuple[str, str]]) -> Any:
    from rich.table import Table

    t = Table(show_header=False, title=title, title_justify="left")
    t.add_column(style="bold")
    t.add_column(overflow="fold")
    for k, v in rows:
        t.add_row(k, v)
    return t


def print_report(r: dict[str, Any]) -> None:
    """Readable rich output of a sizing report (``SizingReport.as_dict()``)."""
    from rich.table import Table

    from provision.planning.sizing import format_count

    out = console()
    i, c, m, k, s, b = r["inputs"], r["compute"], r["memory"], r["cluster"], r["storage"], r["buy_vs_rent"]
    out.print(
        _table(
            f"compute: {format_count(i['params'])} parameters x {format_count(i['tokens'])} tokens on {i['gpu']}",
            [
                ("formula", c["formula"]),
                ("training FLOPs", f"{c['training_flops']:.3e} ({c['tokens_per_param']:.1f} tokens/param)"),
                (
                    "per GPU",
                    f"{c['peak_tflops_per_gpu']:g} BF16 TFLOPS peak x MFU {c['mfu']:.2f} x goodput {c['goodput']:g} "
                    f"= {c['achieved_tflops_per_gpu']:,.0f} TFLOPS",
                ),
                ("MFU basis", c["mfu_basis"]),
                (
                    "GPU-hours",
                    f"{c['gpu_hours']:,.0f} (range {c['gpu_hours_range'][0]:,.0f} - {c['gpu_hours_range'][1]:,.0f})",
                ),
            ],
        )
    )
    lay = r.get("layout")
    if lay:
        ep = f" x EP {lay['expert_parallel']}" if lay["expert_parallel"] else ""
        out.print(
            _table(
                "parallel layout",
                [
                    (
                        "layout",
                        f"TP {lay['tensor_parallel']} x PP {lay['pipeline_parallel']} x DP {lay['data_parallel']}{ep}",
                    ),
                    ("batch", f">= {lay['min_global_batch_tokens']:,} tokens per step (micro-batch 1)"),
                    ("memory", f"{lay['memory_per_gpu_bytes'] / GIB:,.1f} GiB per GPU"),
                    ("recompute", lay["recomputation"]),
                ],
            )
        )
    per = " + ".join(f"{v:g} {n}" for n, v in m["bytes_per_param"].items())
    allowance = ", ".join(f"{n} {v / GIB:,.1f}" for n, v in m["allowance_per_gpu"].items())
    out.print(
        _table(
            f"memory per GPU at {m['gpus']} GPUs ({i['optimizer']}, full sharding: ZeRO-3 / FSDP)",
            [
                ("bytes/param", f"{per} = {m['bytes_per_param_total']:g}"),
                ("weights", f"{m['weights_per_gpu_bytes'] / GIB:,.2f} GiB"),
                ("gradients", f"{m['gradients_per_gpu_bytes'] / GIB:,.2f} GiB"),
                ("optimizer states", f"{m['optimizer_per_gpu_bytes'] / GIB:,.2f} GiB (incl. fp32 master)"),
                ("allowance", f"{m['allowance_per_gpu_bytes'] / GIB:,.1f} GiB ({allowance})"),
                ("total", f"{m['total_per_gpu_bytes'] / GIB:,.1f} of {m['gpu_memory_bytes'] / GIB:g} GiB"),
                ("fits from", f"{m['min_gpus']} GPUs ({m['min_nodes']} node(s))" if m["min_gpus"] else "no GPU count"),
            ],
        )
    )
    out.print(
        _table(
            f"cluster: {k['topology']}",
            [
                ("GPUs", f"{k['gpus']} = {k['nodes']} x {k['gpus_per_node']}"),
                ("why", k["basis"]),
                ("wall time", f"{k['wall_hours']:,.1f} h = {k['wall_days']:,.1f} days"),
                ("recommendation", k["recommendation"]),
            ],
        )
    )
    # Fits 80 columns: instance and region fold onto a second line; money and days never truncate.
    clouds = Table(title="recommended cluster per cloud (on-demand list prices)", title_justify="left", padding=(0, 1))
    for col, wrap in (
        ("cloud", False),
        ("instance / region", True),
        ("GPUs", False),
        ("$/h", False),
        ("total", False),
        ("days", False),
    ):
        clouds.add_column(
            col, no_wrap=not wrap, overflow="fold", justify="right" if col in ("$/h", "total", "days") else "left"
        )
    for o in r["clouds"]:
        clouds.add_row(
            o["cloud"],
            f"{o['instance_type'] or '-'} {o['region'] or ''}".strip(),
            f"{o['gpus']} x {o['gpu']}" if o["gpu"] else "-",
            _usd(o["hourly_usd"]) + ("*" if o.get("price_estimated") else ""),
            _usd(o["total_usd"]) + ("*" if o.get("price_estimated") else ""),
            f"{o['wall_hours'] / 24:,.1f}" if o["wall_hours"] else "-",
        )
    out.print(clouds)
    if any(o.get("price_estimated") for o in r["clouds"]):
        out.print("  * a labelled ESTIMATE, not a vendor price (the cloud's note says how it was made)", markup=False)
    fabrics = ", ".join(f"{o['cloud']} {o['fabric_name']}" for o in r["clouds"] if o.get("fabric_name"))
    if fabrics:
        out.print(f"  fabric: {fabrics}", markup=False)
    for o in r["clouds"]:
        for note in o["notes"]:
            out.print(f"  {o['cloud']}: {note}", markup=False)
    fs = [(f["cloud"], f["note"]) for f in s["filesystems"]]
    out.print(
        _table(
            "storage",
            [
                ("checkpoint", f"{_bytes(s['checkpoint_bytes'])} ({s['checkpoint_bytes_per_param']:g} bytes/param)"),
                ("write within", f"{s['checkpoint_minutes']:g} min -> {s['required_write_gbps']:,.2f} GB/s"),
                (
                    "dataset",
                    f"{_bytes(s['dataset_tokenized_bytes'])} tokenized, {_bytes(s['dataset_raw_text_bytes'])} raw",
                ),
                ("shared capacity", f"{_bytes(s['shared_capacity_bytes'])} (+{s['retained_checkpoints']} checkpoints)"),
                *fs,
            ],
        )
    )
    owned = ", ".join(
        f"{a['years']} years: {_usd(a['owned_usd_per_node_hour'])}/h ({a['cheaper']} is cheaper)"
        if a["owned_usd_per_node_hour"] is not None
        else f"{a['years']} years: unknown"
        for a in b["amortisation"]
    )
    out.print(
        _table(
            f"buy versus rent: one 8x {b['gpu']} server",
            [
                ("server", f"{_usd(b['server_price_usd']) if b['server_price_usd'] else 'unknown price'}"),
                (
                    "power",
                    f"{b['typical_power_kw']:.1f} kW typical of {b['max_power_kw']:g} kW max, PUE {b['pue']:g}, "
                    f"${b['electricity_usd_per_kwh']:g}/kWh -> {_usd(b['energy_usd_per_node_hour'])}/h"
                    if b["typical_power_kw"]
                    else "unknown",
                ),
                ("rent", f"{_usd(b['rent_usd_per_node_hour'])}/h ({b['rent_offer'] or 'no on-demand price'})"),
                ("owned per busy hour", owned),
                ("verdict", b["verdict"]),
            ],
        )
    )
    out.print("[bold]assumptions[/]")
    for a in r["assumptions"]:
        out.print(f"  - {a}", markup=False)
    for w in r["warnings"]:
        out.print(f"[yellow]warning:[/] {w}", markup=True)
