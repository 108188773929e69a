"""A ``scheduler: slurm`` spec end to end on the mocked cloud through the CLI: ``up --mock`` plans and builds it
(controller included), and ``launch --detach``, ``jobs``, ``logs``, ``cancel`` and ``down`` drive a real local
Slurm (Debian's slurm-wlm and munge, :mod:`provision.ops.slurm_local`)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import MINIMAL_SPEC, isolated_home
from typer.testing import CliRunner

from provision.cli.app import app
from provision.ops.jobs import slurm as slurm_jobs
from provision.ops.slurm_local import alive, missing

runner = CliRunner()
NAME = "slurme2e"


@pytest.fixture(autouse=True)
def _slurm_here() -> None:
    why = missing()
    if why is not None:
        if os.environ.get("CI"):
            pytest.fail(f"no local Slurm: {why}; .ci/run installs slurm-wlm and munge")
        pytest.skip(f"no local Slurm: {why}")


def _job(job_id: str) -> dict[str, Any]:
    out = runner.invoke(app, ["jobs", NAME, "--mock", "--json"])
    assert out.exit_code == 0, out.output
    return next(j for j in json.loads(out.stdout)["jobs"] if j["id"] == job_id)


def _wait(job_id: str, states: set[str], limit: float = 90.0) -> dict[str, Any]:
    """Poll until the job reaches one of ``states`` (the limit only bounds a hung test; nothing is timed)."""
    end = time.monotonic() + limit
    while True:
        job = _job(job_id)
        if job["state"] in states or time.monotonic() > end:
            return job
        time.sleep(0.3)


def test_a_slurm_spec_goes_up_runs_and_cancels_jobs_and_comes_down(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from provision.ops.access import ssh_dir
    from provision.ops.cluster import Cluster
    from provision.ops.slurm_local import LocalSlurm

    monkeypatch.chdir(tmp_path)
    isolated_home(tmp_path, monkeypatch)
    # `cancel` looks at the job more often than over SSH to a real login node
    monkeypatch.setattr(slurm_jobs, "CANCEL_POLL_S", 0.1)
    path = tmp_path / "cluster.yaml"
    spec = {**MINIMAL_SPEC, "name": NAME, "nodes": 1, "scheduler": {"kind": "slurm"}}
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    up = runner.invoke(app, ["up", str(path), "--mock", "--yes"])
    assert up.exit_code == 0, up.output
    cluster = Cluster(path, mock=True)
    assert cluster.outputs["slurm"]["controller"] == f"{NAME}-ctl"  # the build made the controller
    folder = ssh_dir(cluster) / "mock-nodes" / "slurm"
    try:
        out = runner.invoke(app, ["launch", NAME, "--mock", "--detach", "--cmd", "--", 'echo "on $SLURMD_NODENAME"'])
        assert out.exit_code == 0, out.output
        done_id = out.stdout.strip().splitlines()[0]
        done = _wait(done_id, {"succeeded", "failed", "cancelled"})
        assert done["state"] == "succeeded", done
        logs = runner.invoke(app, ["logs", NAME, done_id, "--mock"])
        assert logs.exit_code == 0 and f"on {NAME}-0" in logs.stdout, logs.output

        out = runner.invoke(app, ["launch", NAME, "--mock", "--detach", "--cmd", "--", "echo started; sleep 600"])
        assert out.exit_code == 0, out.output
        long_id = out.stdout.strip().splitlines()[0]
        assert _wait(long_id, {"running", "succeeded", "failed", "cancelled"})["state"] == "running"
        cancel = runner.invoke(app, ["cancel", NAME, long_id, "--mock"])
        assert cancel.exit_code == 0 and "cancelled" in cancel.stdout, cancel.output
        assert _job(long_id)["state"] == "cancelled"

        pids = LocalSlurm(folder, NAME)._pids()
        down = runner.invoke(app, ["down", NAME, "--mock", "--yes"])
        assert down.exit_code == 0, down.output
        assert pids and not any(alive(p) for p in pids.values())  # Slurm stopped with it
    finally:
        LocalSlurm(folder, NAME).stop()
