"""How ``provision jobs`` names a job: a readable summary, never a generated script's base64."""

from __future__ import annotations

import base64

from test_jobs_mock import _detach, _wait, cluster, runner  # noqa: F401  # the mocked 2-node cluster fixture

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
