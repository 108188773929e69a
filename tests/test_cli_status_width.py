"""`provision status` stays readable in narrow terminals: one line per node, no name broken mid-way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import isolated_home
from typer.testing import CliRunner

from provision.cli.app import app

runner = CliRunner()
STACK = "gcp-a3-64"  # zonal DNS addresses: <vm>.us-central1-a.c.<project>.internal


@pytest.fixture
def addresses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    isolated_home(tmp_path, monkeypatch)
    assert runner.invoke(app, ["up", STACK, "--mock", "--yes", "--json"]).exit_code == 0
    doc = json.loads(runner.invoke(app, ["status", STACK, "--mock", "--json"]).stdout)
    found = [n["address"] for n in doc["nodes"]]
    assert len(found) == 8 and all(a.endswith(".internal") and len(a) > 50 for a in found)
    return found


def _status(columns: int, *extra: str) -> list[str]:
    result = runner.invoke(app, ["status", STACK, "--mock", *extra], env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    return result.stdout.splitlines()


def _node_block(lines: list[str]) -> list[str]:
    start = next(i for i, line in enumerate(lines) if line.split()[:2] == ["node", "address"])
    end = next(i for i, line in enumerate(lines) if line.split()[:2] == ["resource", "type"])
    return lines[start + 1 : end]


@pytest.mark.parametrize("columns", [80, 120])
def test_status_prints_one_line_per_node_within_the_terminal_width(addresses: list[str], columns: int) -> None:
    lines = _status(columns)
    assert all(len(line) <= columns for line in lines), max(lines, key=len)
    rows = _node_block(lines)
    assert len(rows) == len(addresses)  # no row continued on a second line
    for rank, (row, address) in enumerate(zip(rows, addresses, strict=True)):
        node, shown = row.split()[:2]
        assert node == f"llm-train-{rank}"
        # The address is whole, or its start (the unique VM name) followed by an ellipsis; never folded.
        assert shown == address or (shown.endswith("…") and address.startswith(shown[:-1]) and len(shown) > 20)


def test_status_at_80_columns_says_values_were_shortened_and_120_shows_them_whole(addresses: list[str]) -> None:
    narrow = "\n".join(_status(80))
    assert "--wide or --json shows them whole" in narrow
    assert not any(a in narrow for a in addresses)
    wide = "\n".join(_status(120))
    assert all(a in wide for a in addresses) and "shortened" not in wide


def test_status_wide_prints_every_address_whole_even_at_80_columns(addresses: list[str]) -> None:
    lines = _status(80, "--wide")
    rows = _node_block(lines)
    assert [row.split()[1] for row in rows] == addresses
    assert "gcp:compute/regionInstanceTemplate:RegionInstanceTemplate" in "\n".join(lines)
