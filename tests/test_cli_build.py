"""``provision size ... --build``: one JSON document, an 80-column table, a CSV export, errors all at once."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from typer.testing import CliRunner

from provision.cli.app import app

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, list(args))


def test_build_json_is_one_document_with_every_part() -> None:
    result = invoke("size", "--params", "70B", "--tokens", "2T", "--build", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    b = doc["build"]
    assert doc["cluster"]["nodes"] == b["decision"]["servers"]  # the sizing document is still there
    by_cat = {li["category"] for li in b["lines"]}
    assert {"servers", "compute fabric", "fabric links", "storage", "management network", "head nodes"} <= by_cat
    assert b["fabric"]["tiers"] == 2 and b["fabric"]["leaves"] > 0 and b["fabric"]["spines"] > 0
    assert b["power"]["it_kw_max"] > 0 and b["power"]["racks"] > 0
    assert b["costs"]["capex_priced_usd"] > 0 and b["costs"]["rent"]
    assert b["assumptions"] and b["software"]


def test_plain_size_json_has_no_build() -> None:
    result = invoke("size", "--params", "70B", "--tokens", "2T", "--json")
    assert result.exit_code == 0 and "build" not in json.loads(result.stdout)


def test_7b_build_is_one_server_when_one_server_meets_the_deadline() -> None:
    result = invoke("size", "--params", "7B", "--tokens", "50B", "--build", "--json")
    b = json.loads(result.stdout)["build"]
    assert b["decision"]["topology"] == "single-server" and b["decision"]["servers"] == 1
    assert b["fabric"]["tiers"] == 0


def test_7b_build_with_default_options_is_the_cluster_sizing_chose_for_the_default_deadline() -> None:
    result = invoke("size", "--params", "7B", "--tokens", "2T", "--build", "--json")
    doc = json.loads(result.stdout)
    b = doc["build"]
    assert b["decision"]["topology"] == "cluster" and b["decision"]["servers"] == doc["cluster"]["nodes"]
    assert b["decision"]["cluster_days"] <= doc["cluster"]["deadline_days"]


def test_table_fits_80_columns() -> None:
    result = invoke("size", "--params", "70B", "--tokens", "2T", "--build")
    assert result.exit_code == 0, result.output
    assert "bill of materials" in result.stdout and "own versus renting" in result.stdout
    widest = max(len(line) for line in result.stdout.splitlines())
    assert widest <= 80, widest


def test_csv_export_writes_the_procurement_lines(tmp_path: Path) -> None:
    out = tmp_path / "bom.csv"
    result = invoke("size", "--params", "70B", "--tokens", "2T", "--csv", str(out), "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)  # --csv implies --build; stdout is still one JSON document
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    assert len(rows) == len(doc["build"]["lines"]) + 1 and rows[-1]["category"] == "total"


def test_every_bad_input_is_reported_at_once(tmp_path: Path) -> None:
    result = invoke(
        "size",
        "--params",
        "lots",
        "--tokens",
        "2T",
        "--build",
        "--vendor",
        "acme",
        "--fabric",
        "myrinet",
        "--csv",
        str(tmp_path / "missing" / "bom.csv"),
        "--json",
    )
    assert result.exit_code == 2
    doc = json.loads(result.stdout)
    assert {p["path"] for p in doc["problems"]} == {"--params", "--vendor", "--fabric", "--csv"}
    assert not (tmp_path / "missing").exists()


def test_a_vendor_without_the_gpu_fails_cleanly() -> None:
    result = invoke("size", "--params", "70B", "--tokens", "2T", "--vendor", "huawei")
    assert result.exit_code == 2
    assert "--vendor" in result.output and "Traceback" not in result.output
