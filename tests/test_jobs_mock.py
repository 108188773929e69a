"""Jobs as objects under --mock: each mocked node is a local process tree under a systemd-like supervisor.

Bar: on a 2-node cluster found by name, ``launch --detach`` returns a job id while the job runs; ``jobs``
shows it running, then succeeded with both ranks' exit codes; ``logs --rank 1`` shows rank 1's lines; a
sleeping job is cancelled and none of its processes is left; a job whose rank 1 is killed restarts under
``--max-restarts 1`` and succeeds; ``--workdir`` reaches every node (and the shared folder) and a changed
file is there on the next launch. The state is read from the nodes' files, not from this process.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import MINIMAL_SPEC, isolated_home
from typer.testing import CliRunner

from provision.cli.app import app

runner = CliRunner()


def _up(tmp_path: Path, **changes: Any) -> str:
    spec = {**MINIMAL_SPEC, "name": "jobs2", **changes}
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    up = runner.invoke(app, ["up", str(path), "--mock", "--yes"])
    assert up.exit_code == 0, up.output
    path.unlink()  # found by name from here on
    return str(spec["name"])


@pytest.fixture
def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(tmp_path)
    isolated_home(tmp_path, monkeypatch)
    return _up(tmp_path)


def _jobs(name: str) -> list[dict[str, Any]]:
    out = runner.invoke(app, ["jobs", name, "--mock", "--json"])
    assert out.exit_code == 0, out.output
    return json.loads(out.stdout)["jobs"]  # type: ignore[no-any-return]


def _job(name: str, job_id: str) -> dict[str, Any]:
    return next(j for j in _jobs(name) if j["id"] == job_id)


def _wait(name: str, job_id: str, states: set[str], limit: float = 60.0) -> dict[str, Any]:
    """Poll until the job reaches one of ``states`` (the limit only bounds a hung test; nothing is timed)."""
    end = time.monotonic() + limit
    while True:
        job = _job(name, job_id)
        if job["state"] in states or time.monotonic() > end:
            return job
        time.sleep(0.1)


def _detach(name: str, *words: str) -> str:
    out = runner.invoke(app, ["launch", name, "--mock", "--detach", *words])
    assert out.exit_code == 0, out.output
    return out.stdout.strip().splitlines()[0]


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def _files(name: str, job_id: str, suffix: str) -> list[int]:
    from provision.engine.automation import provision_home

    found = sorted((provision_home() / "ssh" / name / "mock-nodes").rglob(f"{job_id}/rank-*.{suffix}"))
    words = [p.read_text().split() for p in found]
    return [int(w[0]) for w in words if w]  # an empty file is one the rank is still writing: not there yet


def test_detach_returns_while_running_then_jobs_and_logs_read_the_nodes(cluster: str) -> None:
    gate = Path("gate")  # the job waits for it: launch --detach must have returned while the job runs
    job_id = _detach(
        cluster,
        "--cmd",
        "--",
        f'echo "rank $NODE_RANK of $NNODES"; while [ ! -e {gate.resolve()} ]; do sleep 0.05; done',
    )
    job = _job(cluster, job_id)
    assert job["state"] in {"pending", "running"}, job
    assert [r["rank"] for r in job["ranks"]] == [0, 1]
    assert _wait(cluster, job_id, {"running"})["state"] == "running"
    table = runner.invoke(app, ["jobs", cluster, "--mock"])
    assert job_id in table.stdout and "running" in table.stdout
    assert max(len(line) for line in table.stdout.splitlines()) <= 80
    gate.touch()
    done = _wait(cluster, job_id, {"succeeded", "failed", "cancelled"})
    assert done["state"] == "succeeded", done
    assert [(r["rank"], r["state"], r["exit_code"]) for r in done["ranks"]] == [
        (0, "succeeded", 0),
        (1, "succeeded", 0),
    ]
    assert done["duration_s"] is not None and done["started"] is not None

    one = runner.invoke(app, ["logs", cluster, job_id, "--rank", "1", "--mock"])
    assert one.exit_code == 0, one.output
    assert "rank 1 of 2" in one.stdout and "rank 0 of 2" not in one.stdout
    both = runner.invoke(app, ["logs", cluster, "--mock"])  # default: the newest job, every rank prefixed
    assert "[rank 0] rank 0 of 2" in both.stdout and "[rank 1] rank 1 of 2" in both.stdout
    followed = runner.invoke(app, ["logs", cluster, job_id[:9], "--rank", "0", "-f", "--mock"])
    assert followed.exit_code == 0 and "rank 0 of 2" in followed.stdout


def test_cancel_stops_every_rank_and_leaves_no_process(cluster: str) -> None:
    job_id = _detach(cluster, "--cmd", "--", "sleep 300 & sleep 300; wait")
    assert _wait(cluster, job_id, {"running"})["state"] == "running"
    end = time.monotonic() + 30
    while len(_files(cluster, job_id, "pid")) < 2 and time.monotonic() < end:
        time.sleep(0.05)
    pids = _files(cluster, job_id, "pid") + _files(cluster, job_id, "supervisor")
    assert len(pids) == 4 and all(_alive(p) for p in pids)
    groups = {os.getpgid(p) for p in _files(cluster, job_id, "pid")}
    out = runner.invoke(app, ["cancel", cluster, job_id, "--mock"])
    assert out.exit_code == 0, out.output
    assert "cancelled" in out.stdout
    assert not [p for p in pids if _alive(p)]
    for group in groups:  # the backgrounded sleeps of each rank too
        with pytest.raises(ProcessLookupError):
            os.killpg(group, 0)
    assert _job(cluster, job_id)["state"] == "cancelled"


def test_a_killed_rank_restarts_under_max_restarts_and_the_job_succeeds(cluster: str) -> None:
    line = (
        'if [ "$NODE_RANK" = 1 ] && [ "$PROVISION_RESTART_COUNT" = 0 ]; then sleep 300; fi; '
        'echo "ok $PROVISION_RESTART_COUNT"'
    )
    job_id = _detach(cluster, "--cmd", "--max-restarts", "1", "--", line)
    end = time.monotonic() + 30
    while len(_files(cluster, job_id, "pid")) < 2 and time.monotonic() < end:
        time.sleep(0.05)
    assert _wait(cluster, job_id, {"running"})["ranks"][1]["state"] == "running"
    rank1 = _files(cluster, job_id, "pid")[1]
    os.kill(rank1, signal.SIGKILL)
    done = _wait(cluster, job_id, {"succeeded", "failed", "cancelled"})
    assert done["state"] == "succeeded", done
    assert [(r["exit_code"], r["restarts"]) for r in done["ranks"]] == [(0, 0), (0, 1)]
    log = runner.invoke(app, ["logs", cluster, job_id, "--rank", "1", "--mock"]).stdout
    assert "attempt 2" in log and "ok 1" in log


def test_without_restarts_a_killed_rank_fails_the_job(cluster: str) -> None:
    job_id = _detach(cluster, "--cmd", "--", 'if [ "$NODE_RANK" = 1 ]; then sleep 300; fi')
    end = time.monotonic() + 30
    while len(_files(cluster, job_id, "pid")) < 2 and time.monotonic() < end:
        time.sleep(0.05)
    os.kill(_files(cluster, job_id, "pid")[1], signal.SIGKILL)
    done = _wait(cluster, job_id, {"succeeded", "failed", "cancelled"})
    assert done["state"] == "failed"
    assert [r["exit_code"] for r in done["ranks"]] == [0, 137]


def test_restarted_rank_resumes_from_the_newest_checkpoint(cluster: str, tmp_path: Path) -> None:
    ck = tmp_path / "ck"
    (ck / "step-100").mkdir(parents=True)
    line = 'echo "resume=${PROVISION_RESUME_FROM:-none}"; [ "$PROVISION_RESTART_COUNT" = 1 ]'
    job_id = _detach(cluster, "--cmd", "--max-restarts", "1", "--checkpoint-dir", str(ck), "--", line)
    done = _wait(cluster, job_id, {"succeeded", "failed", "cancelled"})
    assert done["state"] == "succeeded" and [r["restarts"] for r in done["ranks"]] == [1, 1]
    log = runner.invoke(app, ["logs", cluster, job_id, "--rank", "0", "--mock"]).stdout
    assert f"resume={ck}/step-100" in log


def test_bad_job_and_rank_are_input_errors(cluster: str) -> None:
    out = runner.invoke(app, ["logs", cluster, "nope", "--mock"])
    assert out.exit_code == 2 and "JOB" in out.output
    job_id = _detach(cluster, "--cmd", "--", "true")
    out = runner.invoke(app, ["logs", cluster, job_id, "--rank", "5", "--mock"])
    assert out.exit_code == 2 and "--rank" in out.output
    out = runner.invoke(app, ["launch", cluster, "--mock", "--cmd", "--max-restarts", "1", "--", "true"])
    assert out.exit_code == 2 and "--detach" in out.output


def test_workdir_reaches_every_node_respects_gitignore_and_resyncs_changes(cluster: str, tmp_path: Path) -> None:
    src = tmp_path / "proj"
    (src / "data").mkdir(parents=True)
    (src / "train.py").write_text("print('v1')\n")
    (src / ".gitignore").write_text("data/\n*.ckpt\n")
    (src / "data" / "big.bin").write_text("x")
    (src / "w.ckpt").write_text("x")
    line = "cat train.py; ls data w.ckpt 2>&1 | head -n 2"
    first = _detach(cluster, "--cmd", "--workdir", str(src), "--", line)
    assert _wait(cluster, first, {"succeeded", "failed"})["state"] == "succeeded"
    log = runner.invoke(app, ["logs", cluster, first, "--mock"]).stdout
    assert "[rank 0] print('v1')" in log and "[rank 1] print('v1')" in log
    assert "No such file" in log  # git-ignored files stay local
    (src / "train.py").write_text("print('v2')\n")
    os.utime(src / "train.py", (time.time() + 5, time.time() + 5))
    second = _detach(cluster, "--cmd", "--workdir", str(src), "--", "cat train.py")
    assert _wait(cluster, second, {"succeeded", "failed"})["state"] == "succeeded"
    log = runner.invoke(app, ["logs", cluster, second, "--mock"]).stdout
    assert "[rank 0] print('v2')" in log and "[rank 1] print('v2')" in log


def test_workdir_goes_to_the_shared_folder_when_there_is_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    isolated_home(tmp_path, monkeypatch)
    name = _up(tmp_path, storage={"shared": {"kind": "auto", "size_gib": 1200}})
    src = tmp_path / "proj"
    src.mkdir()
    (src / "train.py").write_text("print('shared')\n")
    out = runner.invoke(
        app, ["launch", name, "--mock", "--detach", "--json", "--cmd", "--workdir", str(src), "--", "pwd; cat train.py"]
    )
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert doc["workdir"]["destination"].startswith("/shared/provision/workdir/")
    assert len(doc["workdir"]["to"]) == 1 and doc["workdir"]["to"][0].endswith("/shared/provision/workdir/" + name)
    assert _wait(name, doc["job"], {"succeeded", "failed"})["state"] == "succeeded"
    log = runner.invoke(app, ["logs", name, doc["job"], "--mock"]).stdout
    assert log.count("print('shared')") == 2 and "mock-nodes/shared/provision/workdir" in log


def test_exec_streams_with_bounded_memory(tmp_path: Path) -> None:
    """100k lines (10 MB) on each of 8 mocked nodes through `provision exec`: the CLI's peak RSS stays under 150 MB.

    The CLI's own peak is about 76 MB with no output; keeping the 800k lines (80 MB of text, about 130 MB as
    Python strings) would take it past 200 MB, so the bound catches a collector that holds output."""
    import resource

    env = {**os.environ, "PROVISION_HOME": str(tmp_path / "home"), "COLUMNS": "80"}
    spec = {**MINIMAL_SPEC, "name": "mem8", "nodes": 8}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(spec))
    cli = [sys.executable, "-m", "provision.cli"]
    subprocess.run([*cli, "up", str(tmp_path / "c.yaml"), "--mock", "--yes"], env=env, check=True, capture_output=True)
    line = f"yes {'0123456789' * 10} | head -n 100000"  # 101 bytes a line
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    # One child at a time is measured: ru_maxrss of RUSAGE_CHILDREN is the largest waited-for descendant.
    probe = (
        "import resource, subprocess, sys; "
        "p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL); "
        "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, *cli, "exec", "mem8", "--mock", "--", "bash", "-c", line],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    code, peak_kib = (int(w) for w in out.stdout.split())
    assert code == 0
    assert peak_kib < 150 * 1024, f"peak RSS {peak_kib / 1024:.0f} MB"
    assert before >= 0


def test_down_stops_the_mocked_nodes_running_jobs(cluster: str) -> None:
    job_id = _detach(cluster, "--cmd", "--", "sleep 300")
    end = time.monotonic() + 30
    while len(_files(cluster, job_id, "pid")) < 2 and time.monotonic() < end:
        time.sleep(0.05)
    pids = _files(cluster, job_id, "pid") + _files(cluster, job_id, "supervisor")
    assert len(pids) == 4 and all(_alive(p) for p in pids)
    down = runner.invoke(app, ["down", cluster, "--mock", "--yes"])
    assert down.exit_code == 0, down.output
    assert not [p for p in pids if _alive(p)]


def test_each_node_gets_its_tf_config(cluster: str) -> None:
    """TensorFlow's MultiWorkerMirroredStrategy reads TF_CONFIG: every node a worker, its own index its rank."""
    out = runner.invoke(app, ["exec", cluster, "--mock", "--json", "--", "bash", "-c", 'echo "$TF_CONFIG"'])
    assert out.exit_code == 0, out.output
    docs = [json.loads(n["stdout"]) for n in json.loads(out.stdout)["nodes"]]
    assert [d["task"] for d in docs] == [{"type": "worker", "index": 0}, {"type": "worker", "index": 1}]
    assert docs[0]["cluster"] == docs[1]["cluster"] == {"worker": ["10.0.0.10:12345", "10.0.0.11:12345"]}


def test_top_samples_every_node_and_the_newest_job(cluster: str) -> None:
    job_id = _detach(cluster, "--cmd", "--", "true")
    _wait(cluster, job_id, {"succeeded", "failed"})
    out = runner.invoke(app, ["top", cluster, "--mock", "--json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert [n["rank"] for n in doc["nodes"]] == [0, 1] and all(n["gpus"] == 8 for n in doc["nodes"])
    assert all(n["util_pct"] is not None and n["power_w"] and n["temp_max_c"] for n in doc["nodes"])
    assert doc["job"]["id"] == job_id and doc["job"]["state"] == "succeeded"
    screen = runner.invoke(app, ["top", cluster, "--mock", "--once"])
    assert screen.exit_code == 0 and f"{cluster}-1" in screen.stdout and job_id in screen.stdout
    assert max(len(line) for line in screen.stdout.splitlines()) <= 80


def test_top_parses_nvidia_smi_and_marks_a_node_without_gpus() -> None:
    from provision.ops.top import summarize

    row = summarize(0, "h", 0, "0, 50, 1024, 81559, 300.5, 60\n1, 70, 2048, 81559, 310.5, 65\n")
    assert (row["gpus"], row["util_pct"], row["power_w"], row["temp_max_c"]) == (2, 60.0, 611.0, 65.0)
    down = summarize(1, "h", 255, "")
    assert not down["ok"] and down["util_pct"] is None
