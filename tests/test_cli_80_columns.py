"""``offers`` and ``list`` fit 80 columns and never break a word: columns wrap at spaces only, and the least
important ones are left out (and named) when even that is too wide."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import MINIMAL_SPEC, isolated_home
from typer.testing import CliRunner

from provision.catalog import load_catalog
from provision.cli.app import app
from provision.cli.fit import Col, fit

runner = CliRunner()


def _lines(text: str) -> list[str]:
    return text.splitlines()


def test_offers_fit_80_columns_with_every_instance_type_whole() -> None:
    out = runner.invoke(app, ["offers"], env={"COLUMNS": "80"})
    assert out.exit_code == 0, out.output
    assert max(len(line) for line in _lines(out.stdout)) <= 80
    words = {w for line in _lines(out.stdout) for w in line.split()}
    types = {o.instance_type for o in load_catalog().instances}
    assert types <= words  # each type on one line, never folded (Standard_ND128isr_NDR_GB200_v6 too)
    assert "spot $/h" in out.stdout  # nothing had to be left out at 80


def test_list_fits_80_columns_with_names_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    isolated_home(tmp_path, monkeypatch)
    name = "a-rather-long-cluster-name-for-tests"
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({**MINIMAL_SPEC, "name": name}), encoding="utf-8")
    assert runner.invoke(app, ["up", str(path), "--mock", "--yes"]).exit_code == 0
    out = runner.invoke(app, ["list", "--mock"], env={"COLUMNS": "80"})
    assert out.exit_code == 0, out.output
    assert max(len(line) for line in _lines(out.stdout)) <= 80
    words = {w for line in _lines(out.stdout) for w in line.split()}
    assert name in words and "p5.48xlarge" in words and "us-east-1a" in words
    narrow = runner.invoke(app, ["list", "--mock"], env={"COLUMNS": "60"})
    assert max(len(line) for line in _lines(narrow.stdout)) <= 60
    assert name in {w for line in _lines(narrow.stdout) for w in line.split()}
    assert "left out to fit 60 columns" in " ".join(narrow.stdout.split())


def test_fit_leaves_out_the_least_important_columns_first() -> None:
    cols = [Col("a"), Col("b", priority=2), Col("c", priority=1), Col("d", wrap=True)]
    rows = [["x" * 10, "y" * 10, "z" * 10, "one two three"]]
    _, left_out = fit(cols, rows, 41)
    assert left_out == []
    _, left_out = fit(cols, rows, 30)
    assert left_out == ["b"]
    _, left_out = fit(cols, rows, 20)
    assert left_out == ["b", "c"]
