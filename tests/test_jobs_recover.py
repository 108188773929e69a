"""A detached job outlives a replaced node: under ``--mock``, the mocked cloud replaces a node while the job runs
(its processes end with no exit code, its local files are gone) and the rank resumes on the new node from the newest
checkpoint, within ``--max-restarts``, without the user relaunching anything."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from conftest import isolated_home
from test_jobs_mock import _detach, _files, _jobs, _up, _wait, cluster, runner  # noqa: F401  # the 2-node mock

from provision.cli.app import app
from provision.ops.cluster import Cluster
from provision.ops.jobs import recover as recover_module
from provision.ops.jobs.model import RankStatus
from provision.ops.jobs.recover import lost, replace_mock_node

#: Rank 1's first attempt waits to be preempted; every other attempt says where it resumes from and ends.
LINE = (
    'if [ "$NODE_RANK" = 1 ] && [ "$PROVISION_RESTART_COUNT" = 0 ]; then sleep 300; fi; '
    'echo "resume=${PROVISION_RESUME_FROM:-none} restart=$PROVISION_RESTART_COUNT"'
)


def _running(name: str, job_id: str) -> None:
    end = time.monotonic() + 30
    while len(_files(name, job_id, "pid")) < 2 and time.monotonic() < end:
        time.sleep(0.05)
    assert _wait(name, job_id, {"running"})["ranks"][1]["state"] == "running"


def test_a_rank_lost_with_a_replaced_node_resumes_there_from_the_newest_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a shared filesystem the job's records outlive the node: the lost rank is seen and resumed at once."""
    monkeypatch.chdir(tmp_path)
    isolated_home(tmp_path, monkeypatch)
    name = _up(tmp_path, storage={"shared": {"kind": "auto", "size_gib": 1200}})
    ck = tmp_path / "ck"
    (ck / "step-100").mkdir(parents=True)
    job_id = _detach(name, "--cmd", "--max-restarts", "2", "--checkpoint-dir", str(ck), "--", LINE)
    _running(name, job_id)
    (ck / "step-200").mkdir()  # written by the job before the node went
    assert replace_mock_node(Cluster(name, mock=True, display="none"), 1) == 1
    listed = runner.invoke(app, ["jobs", name, "--mock"])  # the user only looks
    assert listed.exit_code == 0, listed.output
    assert f"job {job_id}: rank 1 was lost with its node; resumed" in listed.output
    done = _wait(name, job_id, {"succeeded", "failed", "cancelled"})
    assert done["state"] == "succeeded", done
    assert [(r["exit_code"], r["restarts"]) for r in done["ranks"]] == [(0, 0), (0, 1)]
    log = runner.invoke(app, ["logs", name, job_id, "--rank", "1", "--mock"]).stdout
    assert f"resume={ck}/step-200 restart=1" in log


def test_without_a_shared_filesystem_the_replaced_node_rank_resumes_after_the_start_grace(
    cluster: str,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The replaced node's records are gone with it: the rank counts as lost once the job is past the grace."""
    ck = tmp_path / "ck"
    (ck / "step-100").mkdir(parents=True)
    job_id = _detach(cluster, "--cmd", "--max-restarts", "1", "--checkpoint-dir", str(ck), "--", LINE)
    _running(cluster, job_id)
    replace_mock_node(Cluster(cluster, mock=True, display="none"), 1)
    first = runner.invoke(app, ["jobs", cluster, "--mock"])
    assert "resumed" not in first.output  # within the grace: it might still be starting
    monkeypatch.setattr(recover_module, "LOST_AFTER_S", 0.0)
    assert "rank 1 was lost with its node; resumed" in runner.invoke(app, ["jobs", cluster, "--mock"]).output
    done = _wait(cluster, job_id, {"succeeded", "failed", "cancelled"})
    assert done["state"] == "succeeded" and done["ranks"][1]["restarts"] == 1
    log = runner.invoke(app, ["logs", cluster, job_id, "--rank", "1", "--mock"]).stdout
    assert f"resume={ck}/step-100 restart=1" in log


def test_a_rank_not_started_yet_is_not_lost_within_the_grace() -> None:
    pending = RankStatus(0, "failed")  # no supervisor yet, no records: a fan-out still under way
    assert not lost(pending, created=1000.0, now=1005.0)
    assert lost(pending, created=1000.0, now=1000.0 + recover_module.LOST_AFTER_S + 1)
    assert lost(RankStatus(0, "failed", started=1001.0), created=1000.0, now=1002.0)
    assert not lost(RankStatus(0, "failed", started=1001.0, exit_code=1), created=1000.0, now=5000.0)


def test_a_lost_rank_without_restarts_left_fails_the_job_and_is_not_resumed(cluster: str) -> None:  # noqa: F811
    job_id = _detach(cluster, "--cmd", "--", LINE)
    _running(cluster, job_id)
    replace_mock_node(Cluster(cluster, mock=True, display="none"), 1)
    job = _wait(cluster, job_id, {"succeeded", "failed", "cancelled"})
    assert job["state"] == "failed"
    assert [(r["state"], r["exit_code"]) for r in job["ranks"]][1] == ("failed", None)
    assert [j["state"] for j in _jobs(cluster) if j["id"] == job_id] == ["failed"]  # still, after another look


def test_a_cancelled_job_is_not_resumed(cluster: str) -> None:  # noqa: F811
    job_id = _detach(cluster, "--cmd", "--max-restarts", "3", "--", "sleep 300")
    _running(cluster, job_id)
    assert runner.invoke(app, ["cancel", cluster, job_id, "--mock"]).exit_code == 0
    replace_mock_node(Cluster(cluster, mock=True, display="none"), 1)
    assert _wait(cluster, job_id, {"cancelled", "failed", "succeeded"})["state"] == "cancelled"
