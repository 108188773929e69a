"""The VM backend's text: systemd units that systemd-analyze accepts, the rank script, and the status read-back."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from provision.ops.jobs.model import JobSpec, JobStatus, RankStatus, rank_status, unit_name
from provision.ops.jobs.systemd import STATUS_SCRIPT, parse_status
from provision.ops.jobs.units import rank_script, unit_text

SPEC = JobSpec("1201-221500-ab12", "c2", "torchrun", "echo hi", (0, 1), ("train.py",), max_restarts=2)


@pytest.mark.skipif(
    shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed (.ci/run installs systemd)"
)
@pytest.mark.parametrize("restarts", [0, 2])
def test_unit_passes_systemd_analyze_verify(tmp_path: Path, restarts: int) -> None:
    spec = JobSpec(SPEC.id, "c2", "torchrun", "echo hi", (0, 1), max_restarts=restarts)
    unit = tmp_path / unit_name(spec.id)
    unit.write_text(unit_text(spec, 1, "/shared/provision/jobs/" + spec.id, "ubuntu"))
    done = subprocess.run(
        ["systemd-analyze", "verify", "--man=no", str(unit)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == "", done.stderr
    text = unit.read_text()
    assert ("Restart=on-failure" in text) == (restarts > 0)
    assert f"StartLimitBurst={restarts + 1}" in text and "KillMode=control-group" in text
    assert "StandardOutput=append:/shared/provision/jobs/1201-221500-ab12/rank-1.log" in text


def test_a_broken_unit_is_refused_by_systemd_analyze(tmp_path: Path) -> None:
    """The check above can fail: a unit with a bad setting does not verify."""
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze not installed (.ci/run installs systemd)")
    unit = tmp_path / unit_name(SPEC.id)
    unit.write_text(unit_text(SPEC, 0, "/j", "ubuntu").replace("Type=exec", "Type=nonsense"))
    done = subprocess.run(["systemd-analyze", "verify", "--man=no", str(unit)], capture_output=True, text=True)
    assert "nonsense" in done.stderr


def test_rank_script_records_the_attempt_and_the_exit_code(tmp_path: Path) -> None:
    spec = JobSpec("j1", "c2", "cmd", "echo out; exit 3", (0,), workdir=str(tmp_path))
    (tmp_path / "rank-0.sh").write_text(rank_script(spec, 0, str(tmp_path)))
    done = subprocess.run(["bash", str(tmp_path / "rank-0.sh")], capture_output=True, text=True)
    assert done.returncode == 3 and "out" in done.stdout
    files = {k: (tmp_path / f"rank-0.{k}").read_text() for k in ("started", "pid", "restarts", "exit")}
    status = rank_status(0, files, alive=False, cancelled=False)
    assert (status.state, status.exit_code, status.restarts) == ("failed", 3, 0)


def test_status_script_output_reads_back_as_states(tmp_path: Path) -> None:
    """What the VM backend runs on a node (STATUS_SCRIPT) parses into the same states as the mock's files."""
    job = tmp_path / SPEC.id
    job.mkdir()
    (job / "job.json").write_text(SPEC.to_json())
    (job / "rank-0.started").write_text("100.5\n")
    (job / "rank-0.exit").write_text("0 160.5\n")
    (job / "rank-1.started").write_text("101\n")
    (job / "rank-1.restarts").write_text("1\n")
    (job / "rank-1.exit").write_text("137 170\n")
    out = subprocess.run(["bash", "-c", STATUS_SCRIPT, "status", str(tmp_path)], capture_output=True, text=True)
    files, active = parse_status(out.stdout)
    assert set(files) == {SPEC.id} and set(active) == {SPEC.id}
    got = files[SPEC.id]
    assert JobSpec.from_json(got["job.json"]) == SPEC
    ranks = tuple(
        rank_status(
            r,
            {k: got[f"rank-{r}.{k}"] for k in ("started", "exit", "restarts") if f"rank-{r}.{k}" in got},
            alive=False,
            cancelled=False,
        )
        for r in (0, 1)
    )
    job_status = JobStatus(SPEC, ranks)
    assert [(r.state, r.exit_code, r.restarts) for r in ranks] == [("succeeded", 0, 0), ("failed", 137, 1)]
    assert job_status.state == "failed" and job_status.duration() == pytest.approx(69.5)


def test_job_state_rules() -> None:
    def st(*states: Any) -> str:
        return JobStatus(SPEC, tuple(RankStatus(i, s) for i, s in enumerate(states))).state

    assert st("running", "failed") == "running"
    assert st("pending", "pending") == "pending"
    assert st("succeeded", "cancelled") == "cancelled"
    assert st("succeeded", "failed") == "failed"
    assert st("succeeded", "succeeded") == "succeeded"
    assert rank_status(0, {"started": "1"}, alive=True, cancelled=False).state == "running"
    assert rank_status(0, {}, alive=True, cancelled=False).state == "pending"
    assert rank_status(0, {"started": "1"}, alive=False, cancelled=False).state == "failed"  # lost: no exit code


@pytest.mark.skipif(
    shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed (.ci/run installs systemd)"
)
def test_container_job_unit_runs_the_runtime_setup_first_and_verifies(tmp_path: Path) -> None:
    """A VM stack's job: its line in the plan's container, the runtime prepared once per node (ExecStartPre=+)."""
    from conftest import ROOT

    from provision.clouds.base import plan_spec
    from provision.planning.runtime import container_line, runtime_setup_script
    from provision.spec import load_target

    runtime = plan_spec(load_target("gcp-a3-64", ROOT)).runtime
    assert runtime is not None
    line = container_line(runtime, "torchrun train.py", ["/shared"], "/shared/w", pass_env=("PROVISION_JOB_ID",))
    spec = JobSpec(SPEC.id, "c2", "torchrun", line, (0, 1), max_restarts=1)
    unit = tmp_path / unit_name(spec.id)
    unit.write_text(unit_text(spec, 0, "/shared/provision/jobs/" + spec.id, None, runtime_setup_script(runtime)))
    done = subprocess.run(["systemd-analyze", "verify", "--man=no", str(unit)], capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr.strip() == "", done.stderr
    text = unit.read_text()
    assert "User=" not in text and 'ExecStartPre=+/bin/bash -c "docker image inspect provision-runtime:' in text
    assert "$$" in text or "$" not in runtime_setup_script(runtime)


@pytest.mark.parametrize("engine", ["systemd", "slurm"])
def test_a_rank_ending_between_the_two_reads_is_not_read_as_lost(tmp_path: Path, engine: str) -> None:
    """The status scripts ask the engine (systemctl / squeue) before they read the files: a fake engine that
    finishes the rank when asked (writes its exit file, then says "ended") must read back as succeeded. Read in
    the other order, the files show no exit and the engine says ended: "failed" with no exit code (a CI run
    of tests/test_slurm_e2e.py caught this)."""
    from provision.ops.jobs import slurm

    root, bin_dir = tmp_path / "jobs", tmp_path / "bin"
    job = root / SPEC.id
    job.mkdir(parents=True)
    bin_dir.mkdir()
    spec = JobSpec(SPEC.id, "c2", "cmd", "true", (0,))
    (job / "job.json").write_text(spec.to_json())
    (job / "rank-0.started").write_text("100\n")
    (job / "slurm.jobid").write_text("7\n")
    finish = f'echo "0 150" > {job}/rank-0.exit\n'
    tools = {
        "systemctl": f"#!/bin/bash\n{finish}echo inactive\n",
        "squeue": f"#!/bin/bash\n{finish}echo 'slurm_load_jobs error: Invalid job id specified' >&2; exit 1\n",
    }
    for name, text in tools.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    script, parse = (STATUS_SCRIPT, parse_status) if engine == "systemd" else (slurm.STATUS_SCRIPT, slurm.parse_status)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    out = subprocess.run(["bash", "-c", script, "status", str(root)], capture_output=True, text=True, env=env)
    files, engine_state = parse(out.stdout)
    got = files[SPEC.id]
    assert engine_state[SPEC.id] in {"inactive", slurm.GONE}
    found = {k: got[f"rank-0.{k}"] for k in ("started", "exit") if f"rank-0.{k}" in got}
    status = rank_status(0, found, alive=False, cancelled=False)
    assert (status.state, status.exit_code) == ("succeeded", 0)
