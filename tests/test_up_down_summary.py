"""``up`` and ``down`` end with a summary (counts by step and resource kind, time, what failed), not a line per
resource; progress still streams; ``--verbose`` lists every resource."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import MINIMAL_SPEC, isolated_home
from typer.testing import CliRunner

from provision.cli.app import app
from provision.engine.progress import Progress

runner = CliRunner()


def _spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(tmp_path)
    isolated_home(tmp_path, monkeypatch)
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump({**MINIMAL_SPEC, "name": "sum1"}), encoding="utf-8")
    return str(path)


def _resource_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.lstrip().startswith(("create ", "delete "))]


def test_up_and_down_print_a_summary_by_kind_not_every_resource(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = _spec(tmp_path, monkeypatch)
    up = runner.invoke(app, ["up", spec, "--mock", "--yes"])
    assert up.exit_code == 0, up.output
    assert _resource_lines(up.output) == []
    assert "up sum1: started" in up.output and "done (" in up.output  # progress lines while it runs
    assert "created: " in up.output and " Subnet" in up.output  # counts by resource kind
    down = runner.invoke(app, ["down", spec, "--mock", "--yes"])
    assert down.exit_code == 0, down.output
    assert _resource_lines(down.output) == []
    assert "deleted: " in down.output and " Subnet" in down.output


def test_verbose_lists_every_resource(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = _spec(tmp_path, monkeypatch)
    up = runner.invoke(app, ["up", spec, "--mock", "--yes", "--verbose"])
    assert up.exit_code == 0, up.output
    created = int(up.output.split(" created,")[0].rsplit(" ", 1)[-1])
    assert len(_resource_lines(up.output)) == created > 5
    down = runner.invoke(app, ["down", spec, "--mock", "--yes", "-v"])
    assert down.exit_code == 0, down.output
    assert len(_resource_lines(down.output)) == created


def test_the_summary_names_what_failed(capsys: pytest.CaptureFixture[str]) -> None:
    with Progress("up", "s", display="plain") as p:
        p.step_done("create", "aws:ec2/subnet:Subnet", "s-a")
        p.step_done("create", "aws:ec2/subnet:Subnet", "s-b")
        p.step_failed("create", "aws:ec2/fleet:Fleet", "s-fleet")
    p.finish(p.result())
    err = capsys.readouterr().err
    assert "s-a" not in err
    assert "  created: 2 Subnet" in err
    assert "1 failed" in err and "failed: create aws:ec2/fleet:Fleet s-fleet failed" in err
