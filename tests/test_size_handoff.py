"""From sizing to a cluster: `size --write-spec` writes a spec `plan` accepts, `--plot`, the 80-column table."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml
from rich.console import Console
from typer.testing import CliRunner

from provision.catalog import load_catalog
from provision.cli.app import app
from provision.planning.sizing import size_training
from provision.planning.sizing.handoff import curve, spec_for


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


@pytest.mark.parametrize("cloud", ["aws", "gcp", "azure"])
def test_written_spec_is_accepted_by_plan(cloud: str, tmp_path: Path) -> None:
    path = tmp_path / f"{cloud}.yaml"

    sized = invoke(
        "size", "--params", "7B", "--tokens", "200B", "--cloud", cloud.upper(), "--write-spec", str(path), "--json"
    )

    assert sized.exit_code == 0, sized.output
    doc = json.loads(sized.stdout)
    assert doc["spec_written"] == str(path)
    spec = yaml.safe_load(path.read_text())
    option = next(o for o in doc["clouds"] if o["cloud"] == cloud)
    assert (spec["cloud"], spec["instance_type"], spec["gpus"]) == (cloud, option["instance_type"], option["gpus"])
    planned = invoke("plan", str(path), "--json")
    assert planned.exit_code == 0, planned.output
    plan = json.loads(planned.stdout)
    assert plan["gpus"] == option["gpus"] and plan["instance_type"] == option["instance_type"]


def test_spec_ttl_covers_the_run_with_a_margin() -> None:
    report = size_training("7B", "200B", mfu=0.4, goodput=1.0)
    spec, notes = spec_for(report, "aws")
    option = next(o for o in report.clouds if o.cloud == "aws")

    hours = int(spec["lifetime"]["ttl"].removesuffix("h"))
    assert option.wall_hours * 1.1 <= hours < option.wall_hours * 1.1 + 1
    assert any("EXAMPLE key" in n for n in notes)


def test_write_spec_needs_a_cloud_and_refuses_alibaba_without_zones(tmp_path: Path) -> None:
    missing = invoke("size", "--params", "7B", "--tokens", "200B", "--write-spec", str(tmp_path / "x.yaml"), "--json")
    alibaba = invoke(
        "size",
        "--params",
        "7B",
        "--tokens",
        "200B",
        "--cloud",
        "alibaba",
        "--write-spec",
        str(tmp_path / "y.yaml"),
        "--json",
    )

    assert missing.exit_code == 2 and json.loads(missing.stdout)["problems"][0]["path"] == "--cloud"
    assert alibaba.exit_code == 2 and "zone" in json.loads(alibaba.stdout)["problems"][0]["rule"]
    assert not (tmp_path / "x.yaml").exists() and not (tmp_path / "y.yaml").exists()


def test_curve_trades_gpus_for_days_at_a_constant_gpu_hour_count() -> None:
    report = size_training("70B", "2T", mfu=0.4, goodput=1.0)
    rows = curve(report)["aws"]

    gpus = [g for g, _, _ in rows]
    assert gpus == sorted(gpus) and len(gpus) >= 4
    assert all(g % 8 == 0 for g in gpus)
    products = {round(g * d) for g, d, _ in rows}
    assert max(products) - min(products) <= 1  # GPUs x days stays the GPU-hour budget
    assert rows[0][2] == pytest.approx(rows[-1][2])  # the same run costs the same at any size


def test_plot_draws_in_the_terminal() -> None:
    result = invoke("size", "--params", "70B", "--tokens", "2T", "--plot")

    assert result.exit_code == 0, result.output
    assert "GPUs" in result.stdout and "days" in result.stdout and "aws ($" in result.stdout


def test_report_fits_80_columns_without_cutting_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    import provision.cli.size as size_cli

    screen = Console(width=80, record=True)
    monkeypatch.setattr(size_cli, "console", lambda stderr=False: screen)

    report = size_training("70B", "2T").as_dict()
    size_cli.print_report(report)

    text = screen.export_text()
    assert all(len(line) <= 80 for line in text.splitlines())
    table = text[text.index("recommended cluster per cloud") : text.index("fabric:")]
    widest = max(c["total_usd"] for c in report["clouds"] if c["total_usd"] is not None)
    assert f"${widest:,.0f}" in table and "…" not in table


@pytest.mark.parametrize("cloud", ["aws", "gcp", "azure"])
def test_written_spec_carries_the_zone_plan_would_choose_and_a_cost_cap_plan_accepts(cloud: str) -> None:
    from provision.cli.size import _cost_cap
    from provision.clouds.validate import load_and_plan

    report = size_training("7B", "200B")
    spec, _ = spec_for(report, cloud)
    note = _cost_cap(spec)
    plan = load_and_plan(spec)  # the cap equals the projection for the ttl: accepted, not exceeded

    option = next(o for o in report.clouds if o.cloud == cloud)
    zones = load_catalog().instance(cloud, option.instance_type).regions[option.region].zones
    assert spec.get("zone") == (zones[0] if zones else None) == plan.zone
    assert spec["lifetime"]["max_cost_usd"] == math.ceil(plan.cost.lifetime_usd)
    assert "max_cost_usd" in note


@pytest.mark.parametrize("cloud", ["aws", "gcp", "azure"])
@pytest.mark.parametrize(("params", "tokens"), [("1B", "100B"), ("7B", "1T"), ("70B", "2T"), ("405B", "15T")])
def test_written_storage_is_what_kind_auto_creates_and_writes_checkpoints_in_time(
    cloud: str, params: str, tokens: str
) -> None:
    from provision.planning.resolve import resolve
    from provision.spec import load_spec
    from provision.spec.errors import ProblemCollector

    def storage(data: dict) -> tuple[str, str, int, int | None]:
        res = resolve(load_spec(data), load_catalog(), ProblemCollector())  # the catalog half of `plan`
        assert res.storage is not None
        return res.storage.kind, res.storage.tier, res.storage_size_gib, res.storage_throughput

    report = size_training(params, tokens)
    spec, notes = spec_for(report, cloud)
    shared = spec["storage"]["shared"]
    per_tib = math.ceil(report.storage.required_write_gbps * 1000 * 1024 / shared["size_gib"])
    auto = {**spec, "storage": {"shared": {"kind": "auto", "size_gib": shared["size_gib"]}}}
    auto["storage"]["shared"]["throughput_mbps_per_tib"] = per_tib

    kind, tier, size, throughput = storage(spec)
    assert (kind, tier, size) == storage(auto)[:3]
    # The checkpoint the sizing wrote down fits in its window on what the spec creates.
    assert throughput is None or throughput * size / 1024 >= report.storage.required_write_gbps * 1000
    assert any(n.startswith(f"storage: {kind} {tier}") and "kind: auto" in n for n in notes)
