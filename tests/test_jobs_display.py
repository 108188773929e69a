"""How ``provision jobs`` names a job: a readable summary, never a generated script's base64."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from conftest import isolated_home
from test_jobs_mock import _detach, _up, _wait, cluster, runner  # noqa: F401  # the mocked 2-node cluster fixture

from provision.cli.app import app
from provision.ops.jobs.model import JobSpec, summary


def test_a_base64_blob_in_the_command_is_named_by_its_size() -> None:
    blob = base64.b64encode(b"print('hello')\n" * 200).decode()
    spec = JobSpec("0101-000000-abcd", "c", "cmd", "line", (0,), command=(f"echo {blob} | base64 -d > x.py",))
    text = summary(spec)
    assert blob[:64] not in text
    assert text.startswith("echo <base64, 3.0 kB> | base64 -d > x.py")
    assert summary(JobSpec("i", "c", "torchrun", "l", (0,), command=("train.py", "--lr", "3e-4"))) == (
        "torchrun train.py --lr 3e-4"
    )
    labelled = JobSpec("i", "c", "cmd", "l", (0,), command=(f"echo {blob}",), label="bench: 1B params")
    assert summary(labelled) == "bench: 1B params"
    long = summary(JobSpec("i", "c", "cmd", "l", (0,), command=("x " * 100,)))
    assert len(long) == 72 and long.endswith("\u2026")


def test_jobs_shows_a_summary_of_a_generated_script_not_its_base64(cluster: str) -> None:  # noqa: F811
    blob = base64.b64encode(b"import sys\nprint(sys.argv)\n" * 100).decode()
    job = _detach(cluster, "--cmd", "--", f"echo {blob} | base64 -d > /dev/null && echo done")
    assert _wait(cluster, job, {"succeeded", "failed"})["state"] == "succeeded"
    out = runner.invoke(app, ["jobs", cluster, "--mock"], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    assert blob[:40] not in out.stdout
    assert "echo <base64, 2.7 kB> | base64 -d > /dev/null" in out.stdout
    js = runner.invoke(app, ["jobs", cluster, "--mock", "--json"])
    assert '"summary": "echo <base64, 2.7 kB>' in js.stdout


def test_deepspeed_pdsh_in_a_container_is_refused_with_the_alternatives(cluster: str) -> None:  # noqa: F811
    out = runner.invoke(app, ["launch", cluster, "--mock", "--detach", "--deepspeed", "--", "train.py"])
    assert out.exit_code == 2, out.output
    text = " ".join(out.output.split())
    assert "outside the job container" in text
    assert "--torchrun --detach -- train.py --deepspeed --deepspeed_config ds.json" in text
    assert "runtime: {kind: node}" in text
    assert "Traceback" not in out.output
    assert runner.invoke(app, ["jobs", cluster, "--mock", "--json"]).stdout.count('"id"') == 0  # nothing started


def test_deepspeed_detached_runs_with_the_node_runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    isolated_home(tmp_path, monkeypatch)
    name = _up(tmp_path, runtime={"kind": "node"})
    job = _detach(name, "--deepspeed", "--", "train.py")
    assert _wait(name, job, {"succeeded", "failed", "cancelled"})["state"] in {"succeeded", "failed"}
