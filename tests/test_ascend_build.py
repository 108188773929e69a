"""`size --gpu Ascend-910B [--build]`: Huawei's Ascend 910B is sized and built (Atlas 800T A2, HCCS inside, 200GE
RoCE between servers), honestly: its efficiency is an assumption fitted on Huawei's published throughput with a
deliberately wide range, said so in every output, and the unknown server price makes owning's cost "unknown"."""

from __future__ import annotations

import math

import pytest
from typer.testing import CliRunner

from provision.catalog import load_catalog
from provision.cli.app import app
from provision.planning.onprem import plan_build
from provision.planning.sizing import size_training
from provision.planning.sizing.calibration import BENCHMARKS, UNFITTED_WIDENING, benchmark_mfu
from provision.planning.sizing.estimates import calibration


@pytest.fixture(scope="module")
def report():
    return size_training("7B", "2T", gpu="Ascend-910B")


@pytest.fixture(scope="module")
def build(report):
    return plan_build(report)


def test_the_catalog_row_is_sized_with_its_published_peak_memory_and_a_sourced_server() -> None:
    g = load_catalog().gpu("Ascend 910B")
    assert g is not None and (g.name, g.vendor, g.generation) == ("Ascend-910B", "huawei", "davinci")
    assert (g.memory_gib, g.bf16_dense_tflops, g.fp8_dense_tflops, g.nvswitch) == (64, 256, None, False)
    assert load_catalog().known_accelerator("Ascend-910B") is None  # no longer "known but not sized"


def test_the_davinci_line_is_an_assumption_from_huaweis_benchmarks_with_a_wider_range_than_any_fitted_line() -> None:
    cal = calibration(load_catalog())
    line, borrowed = cal.line("Ascend-910B", "davinci")
    assert line.basis == "benchmarks" and not borrowed and "davinci" not in cal.lines
    assert set(line.runs) == {b.name for b in BENCHMARKS if b.gpu == "Ascend-910B"}
    assert line.sigma >= max(fitted.sigma for fitted in cal.lines.values()) * UNFITTED_WIDENING
    # The benchmarks' own throughput MFU against the same 256 TFLOPS peak: plausible, not invented.
    assert all(0.3 < benchmark_mfu(b, 256) < 0.7 for b in BENCHMARKS)


def test_size_says_the_efficiency_is_assumed_and_prints_a_wide_range(report) -> None:
    c = report.compute
    assert c.mfu_basis.startswith("ASSUMED") and "BENCHMARKS" in c.mfu_basis
    low, high = c.gpu_hours_range
    assert high / low > 2.5  # 80% interval exp(+/- 1.28 sigma) with sigma >= 0.5: wide on purpose
    assert low < c.gpu_hours < high
    assert any("ASSUMPTION, not a calibration" in a for a in report.assumptions)
    # The expected device-hours follow the vendor's measured 7B throughput (2730 tokens/s per NPU) x goodput 0.9.
    measured = 2e12 / 2730 / 3600 / 0.9
    assert 0.8 < c.gpu_hours / measured < 1.25


def test_the_build_uses_the_atlas_800t_a2_on_roce_with_power_and_an_unknown_price(build) -> None:
    assert build.server.id == "huawei-atlas-800t-a2"
    assert build.fabric.kind == "roce" and build.fabric.rails == 8
    assert build.decision.servers * 8 == build.decision.gpus and build.decision.cluster_days <= 30
    assert build.power.it_kw_max and build.power.bf16_tflops_per_watt  # power from the labelled 6 kW estimate
    assert math.isclose(build.power.server_bf16_tflops_per_watt, 256 * 8 / 6000, rel_tol=1e-6)
    assert build.costs.three_year_own_usd is None  # the server is unpriced: owning is unknown, never $0
    assert any("Atlas 800T A2" in u for u in build.costs.unpriced)
    # Huawei's own 200GE NICs: no NVIDIA ConnectX optics on the node side.
    names = [line.item for line in build.lines]
    assert not any("ConnectX" in n or "MMA4Z00-NS400" in n for n in names)
    assert any("node-side optics for the server's 200GE RoCE" in n for n in names)
    text = " ".join(build.warnings)
    assert "ASSUMED" in text and "CANN" in text and "6 kW" in text and "Price - unknown" in text


def test_the_cli_builds_it_and_prints_unknown_for_owning() -> None:
    out = CliRunner().invoke(
        app, ["size", "--params", "7B", "--tokens", "2T", "--gpu", "Ascend-910B", "--build"], env={"COLUMNS": "100"}
    )
    assert out.exit_code == 0, out.output
    assert "Traceback" not in out.output
    assert "Huawei Atlas 800T A2" in out.output and "roce" in out.output
    own = out.output[out.output.index("own versus renting") :]
    assert "unknown" in own.split("\n", 3)[3]
    assert "ASSUMED" in out.output and "TFLOPS/W" in out.output
