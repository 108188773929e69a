"""The Slurm job backend's reading of Slurm (no Slurm needed: a stand-in squeue on PATH): a job Slurm no longer
knows has ended, a job squeue could not answer for has not (a busy slurmctld must not fail a running job)."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from provision.ops.jobs.model import JobSpec
from provision.ops.jobs.slurm import LocalRunner, SlurmBackend, batch_script


def _backend(tmp_path: Path, squeue: str) -> SlurmBackend:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "squeue").write_text(f"#!/bin/bash\n{squeue}\n")
    (bin_dir / "squeue").chmod(0o755)
    root = tmp_path / "jobs"
    folder = root / "j1"
    folder.mkdir(parents=True)
    (folder / "job.json").write_text(JobSpec(id="j1", cluster="c", kind="cmd", line="true", ranks=(0,)).to_json())
    (folder / "slurm.jobid").write_text("7\n")
    (folder / "rank-0.started").write_text("1000.0\n")
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    return SlurmBackend(SimpleNamespace(), LocalRunner(env), str(root), nodes=1)


@pytest.mark.parametrize(
    ("squeue", "state"),
    [
        ("echo RUNNING", "running"),
        ("echo 'slurm_load_jobs error: Socket timed out on send/recv operation' >&2; exit 1", "running"),
        ("echo 'slurm_load_jobs error: Invalid job id specified' >&2; exit 1", "failed"),
        ("echo COMPLETED", "failed"),  # ended without the rank's exit file: the node lost it
        ("echo PENDING", "running"),  # requeued after a start: the attempt's files say it ran
    ],
)
def test_squeue_answers_read_as_states(tmp_path: Path, squeue: str, state: str) -> None:
    (job,) = _backend(tmp_path, squeue).statuses()
    assert job.state == state


def test_the_batch_script_runs_one_step_of_one_task_per_rank_and_retries_under_max_restarts() -> None:
    spec = JobSpec(id="j2", cluster="c", kind="torchrun", line="true", ranks=(0, 1, 2), max_restarts=2)
    text = batch_script(spec, "/shared/provision/jobs/j2", 3, "gpu")
    assert "#SBATCH --nodes=3\n" in text and "#SBATCH --partition=gpu\n" in text
    assert "srun --nodes=3 --ntasks=3 --ntasks-per-node=1" in text and '"$attempt" -ge 2' in text
    head_only = batch_script(JobSpec(id="j3", cluster="c", kind="mpirun", line="true", ranks=(0,)), "/j", 4)
    assert "#SBATCH --nodes=4\n" in head_only and "srun --nodes=1 --ntasks=1" in head_only


def test_the_status_of_one_job_asks_squeue_about_that_job_only(tmp_path: Path) -> None:
    """A followed or cancelled job is looked at every poll: one squeue for it, not one per job folder."""
    calls = tmp_path / "squeue.calls"
    backend = _backend(tmp_path, f'echo "$@" >> {calls}; echo RUNNING')
    other = Path(backend.root) / "j2"
    other.mkdir()
    (other / "job.json").write_text(JobSpec(id="j2", cluster="c", kind="cmd", line="true", ranks=(0,)).to_json())
    (other / "slurm.jobid").write_text("8\n")
    (job,) = backend.statuses("j1")
    assert job.spec.id == "j1" and job.state == "running"
    assert calls.read_text().split("\n")[:-1] == ["-h -j 7 -o %T"]
    calls.unlink()
    assert sorted(j.spec.id for j in backend.statuses()) == ["j1", "j2"]
    assert sorted(calls.read_text().split("\n")[:-1]) == ["-h -j 7 -o %T", "-h -j 8 -o %T"]
