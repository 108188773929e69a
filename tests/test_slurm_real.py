"""A real Slurm on this machine (Debian's slurm-wlm and munge, installed by .ci/run): munged, slurmctld and
slurmd started with the project's rendered configuration; jobs submitted, watched, read and cancelled
through the same code ``provision launch --detach``, ``jobs``, ``logs`` and ``cancel`` use
(:mod:`provision.ops.jobs`), on a mocked one-node cluster whose scheduler is Slurm.
"""

from __future__ import annotations

import getpass
import os
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import MINIMAL_SPEC, isolated_home
from typer.testing import CliRunner

from provision.cli.app import app
from provision.ops import jobs
from provision.ops.jobs import slurm as slurm_jobs
from provision.ops.slurm_local import LocalSlurm, alive, missing

runner = CliRunner()


@pytest.fixture(scope="module", autouse=True)
def _slurm_here() -> None:
    why = missing()
    if why is not None:
        if os.environ.get("CI"):
            pytest.fail(f"no local Slurm: {why}; .ci/run installs slurm-wlm and munge")
        pytest.skip(f"no local Slurm: {why}")


@pytest.fixture(scope="module")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory, _slurm_here: None) -> Any:
    """A mocked 1-node cluster, up, then told its scheduler is Slurm; its local Slurm starts with the first job
    and serves this module's job tests (each cleans up after itself, see ``cluster``). At the end ``down`` stops it."""
    from provision.ops.cluster import Cluster
    from provision.spec.models import SchedulerSpec

    tmp_path = tmp_path_factory.mktemp("slurm1")
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.chdir(tmp_path)
        isolated_home(tmp_path, monkeypatch)
        spec = {**MINIMAL_SPEC, "name": "slurm1", "nodes": 1}
        path = tmp_path / "cluster.yaml"
        path.write_text(yaml.safe_dump(spec), encoding="utf-8")
        up = runner.invoke(app, ["up", str(path), "--mock", "--yes"])
        assert up.exit_code == 0, up.output
        c = Cluster(path, mock=True)
        c.spec = c.spec.model_copy(update={"scheduler": SchedulerSpec(kind="slurm")})
        from provision.ops.access import ssh_dir

        folder = ssh_dir(c) / "mock-nodes" / "slurm"
        try:
            yield c
            pids = LocalSlurm(folder, c.spec.name)._pids()
            down = runner.invoke(app, ["down", "slurm1", "--mock", "--yes"])
            assert down.exit_code == 0, down.output
            # `down` stopped the mocked cluster's local Slurm daemons
            assert pids and not any(alive(p) for p in pids.values())
        finally:
            LocalSlurm(folder, c.spec.name).stop()


@pytest.fixture
def cluster(slurm_cluster: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The module's Slurm cluster for one test, which leaves no job of its own in Slurm's queue for the next. The
    backend looks at a followed or cancelled job more often than over SSH to a real login node."""
    monkeypatch.setattr(slurm_jobs, "FOLLOW_POLL_S", 0.2)
    monkeypatch.setattr(slurm_jobs, "CANCEL_POLL_S", 0.1)
    yield slurm_cluster
    from provision.ops.access import ssh_dir

    local = LocalSlurm(ssh_dir(slurm_cluster) / "mock-nodes" / "slurm", slurm_cluster.spec.name)
    if not local.running():
        return
    env = {**os.environ, **local.env()}

    def queue() -> str:
        return subprocess.run(["squeue", "-h"], env=env, capture_output=True, text=True, check=True).stdout.strip()

    if queue():
        subprocess.run(["scancel", "--user", getpass.getuser()], env=env, check=True)
        end = time.monotonic() + 90
        while queue() and time.monotonic() < end:
            time.sleep(0.2)


def _wait(cluster: Any, job_id: str, states: set[str], limit: float = 90.0) -> jobs.JobStatus:
    """Poll until the job reaches one of ``states`` (the limit only bounds a hung test)."""
    end = time.monotonic() + limit
    while True:
        job = jobs.find(cluster, job_id)
        if job.state in states or time.monotonic() > end:
            return job
        time.sleep(0.2)


def test_a_job_runs_to_completion_under_slurm_and_its_log_reads_back(cluster: Any) -> None:
    spec = jobs.submit(cluster, jobs.CMD, ['echo "hello from slurm job $SLURM_JOB_ID on $SLURMD_NODENAME"'])
    assert jobs.backend(cluster).name == "slurm"
    done = _wait(cluster, spec.id, {"succeeded", "failed", "cancelled"})
    assert done.state == "succeeded", done.as_dict()
    assert done.ranks[0].exit_code == 0
    lines: list[tuple[int, str]] = []
    jobs.logs(cluster, spec.id, lambda r, t: lines.append((r, t)))
    said = [t for r, t in lines if r == 0 and t.startswith("hello from slurm job")]
    assert said and said[0].endswith("on slurm1-0"), lines
    assert said[0].split()[4].isdigit()  # Slurm's own job id


def test_a_failing_job_reads_back_failed_with_its_exit_code(cluster: Any) -> None:
    spec = jobs.submit(cluster, jobs.CMD, ["exit 3"])
    done = _wait(cluster, spec.id, {"succeeded", "failed", "cancelled"})
    assert done.state == "failed" and done.ranks[0].exit_code == 3, done.as_dict()


def test_a_running_job_is_cancelled_through_scancel(cluster: Any) -> None:
    spec = jobs.submit(cluster, jobs.CMD, ["echo started; sleep 600"])
    running = _wait(cluster, spec.id, {"running", "succeeded", "failed", "cancelled"})
    assert running.state == "running", running.as_dict()
    after = jobs.cancel(cluster, spec.id)
    assert after.state == "cancelled", after.as_dict()
    local = LocalSlurm(Path(jobs.backend(cluster).root).parent, cluster.spec.name)
    env = {**os.environ, **local.env()}
    queue = subprocess.run(["squeue", "-h"], env=env, capture_output=True, text=True, check=True)
    assert queue.stdout.strip() == ""  # Slurm no longer runs it


def test_the_local_slurm_is_the_projects_rendered_configuration(tmp_path: Path) -> None:
    s = LocalSlurm(tmp_path / "s", "render")
    try:
        s.start()
        conf = s.conf.read_text()
        assert "NodeName=render-0 " in conf and "Gres=gpu:1" in conf
        assert (s.conf.parent / "gres.conf").read_text().splitlines()[-1] == "NodeName=render-0 Name=gpu File=/dev/null"
        # what a one-node Slurm adds: batch jobs are not held back for a high submission rate
        shown = subprocess.run(
            ["scontrol", "show", "config"], env={**os.environ, **s.env()}, capture_output=True, text=True, check=True
        )
        assert re.search(r"^SchedulerParameters\s*=\s*batch_sched_delay=0$", shown.stdout, re.M), shown.stdout
    finally:
        s.stop()
    assert not s.running()


def test_following_a_jobs_log_streams_until_slurm_ends_it(cluster: Any, tmp_path: Path) -> None:
    # The job says "second" only if this test read "first" while the job ran (it waits for that, bounded: a follow
    # that does not stream fails, never hangs), after a quiet moment longer than the backend's poll.
    go = tmp_path / "go"
    wait_go = f"for i in $(seq 600); do [ -e {go} ] && break; sleep 0.05; done"
    spec = jobs.submit(cluster, jobs.CMD, [f"echo first; {wait_go}; sleep 0.5; [ -e {go} ] && echo second"])
    lines: list[str] = []

    def on_line(_rank: int, text: str) -> None:
        lines.append(text)
        if text == "first":
            go.touch()

    job = jobs.logs(cluster, spec.id, on_line, follow=True)
    assert job.spec.id == spec.id
    assert [t for t in lines if t in ("first", "second")] == ["first", "second"], lines
    assert jobs.find(cluster, spec.id).state == "succeeded"
