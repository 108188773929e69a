"""``provision run --restart-on-interruption N``: a command that fails because a node was replaced runs again on the
cluster brought back (at most N times, ``PROVISION_RESTART_COUNT`` one higher); a plain failure is not retried.
Exercised under ``--mock``, whose cloud replaces a node while the command runs."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import yaml
from conftest import MINIMAL_SPEC, isolated_home
from typer.testing import CliRunner

from provision.cli.app import app

runner = CliRunner()

#: The local command: records its attempt; while ``REPLACE_UNTIL`` > attempt, the mocked cloud replaces node 1 and the
#: command fails (as a training script does when its peer vanishes); then it exits ``FINAL``.
SCRIPT = """
import os, sys
from provision.ops.cluster import Cluster
from provision.ops.jobs.recover import replace_mock_node
n = int(os.environ["PROVISION_RESTART_COUNT"])
with open(sys.argv[1], "a") as f:
    f.write(f"{n}\\n")
if n < int(sys.argv[2]):
    replace_mock_node(Cluster(os.environ["PROVISION_STACK"], mock=True, display="none"), 1)
    sys.exit(1)
sys.exit(int(sys.argv[3]))
"""


@pytest.fixture
def spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(tmp_path)
    isolated_home(tmp_path, monkeypatch)
    (tmp_path / "attempt.py").write_text(SCRIPT, encoding="utf-8")
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump({**MINIMAL_SPEC, "name": "rerun"}), encoding="utf-8")
    return str(path)


def _run(spec: str, tmp_path: Path, restarts: int, replace_until: int, final: int) -> tuple[int, list[int], str]:
    attempts = tmp_path / "attempts"
    out = runner.invoke(
        app,
        ["run", spec, "--mock", "--max-usd", "500", "--ttl", "1h", "--restart-on-interruption", str(restarts)]
        + ["--", sys.executable, str(tmp_path / "attempt.py"), str(attempts), str(replace_until), str(final)],
    )
    seen = [int(x) for x in attempts.read_text().split()] if attempts.exists() else []
    return out.exit_code, seen, out.output


def test_a_replaced_node_brings_the_cluster_back_and_the_command_runs_again(spec: str, tmp_path: Path) -> None:
    code, seen, output = _run(spec, tmp_path, restarts=2, replace_until=1, final=0)
    assert code == 0, output
    assert seen == [0, 1]
    said = (
        r"rerun-\w+-1 was interrupted \(exit code 1\); bringing the cluster back and running again \(restart 1 of 2\)"
    )
    assert re.search(said, output), output
    assert "the cluster was torn down" in output


def test_restarts_are_bounded(spec: str, tmp_path: Path) -> None:
    code, seen, output = _run(spec, tmp_path, restarts=1, replace_until=99, final=0)
    assert code == 1, output
    assert seen == [0, 1]


def test_a_plain_failure_is_not_retried(spec: str, tmp_path: Path) -> None:
    code, seen, _ = _run(spec, tmp_path, restarts=3, replace_until=0, final=7)
    assert (code, seen) == (7, [0])
