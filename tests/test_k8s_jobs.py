"""``launch --detach`` / ``jobs`` / ``logs`` / ``cancel`` on the four managed Kubernetes clusters: a job is a TrainJob.

The mocked clusters have no API server, so a fake ``kubectl`` first on ``PATH`` answers: it keeps the applied
TrainJobs in a folder, lists them by label selector, invents the JobSet's pods (one per node, with the completion
index label) and their logs, and records every call.
"""

from __future__ import annotations

import json
import os
import re
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from conftest import isolated_home
from typer.testing import CliRunner

from provision.cli.app import app
from provision.ops.cluster import Cluster

runner = CliRunner()
STACKS = ("gcp-a3-64-gke", "aws-p5-64-eks", "azure-ndh100-64-aks", "alibaba-gn8-64-ack")

FAKE_KUBECTL = textwrap.dedent(
    """\
    import json, os, re, sys

    state = os.environ["FAKE_KUBECTL_DIR"]
    argv = sys.argv[1:]
    stdin = sys.stdin.read() if "apply" in argv else ""
    with open(os.path.join(state, "calls.jsonl"), "a") as f:
        f.write(json.dumps({"argv": argv, "stdin": stdin}) + "\\n")
    jobs_dir = os.path.join(state, "trainjobs")
    os.makedirs(jobs_dir, exist_ok=True)

    def opt(name):
        return argv[argv.index(name) + 1] if name in argv else ""

    def matches(labels, selector):
        for term in filter(None, selector.split(",")):
            key, _, value = term.partition("=")
            if labels.get(key) != value:
                return False
        return True

    def jobs():
        out = []
        for name in sorted(os.listdir(jobs_dir)):
            doc = json.load(open(os.path.join(jobs_dir, name)))
            status = os.path.join(state, "status-" + name)
            if os.path.exists(status):
                doc["status"] = json.load(open(status))
            out.append(doc)
        return out

    verb = next(a for a in argv if a in ("apply", "get", "logs", "delete"))
    if verb == "apply":
        import yaml  # only here: most calls are reads, and each call is a new interpreter

        for doc in yaml.safe_load_all(stdin):
            if doc["kind"] == "TrainJob":
                doc["metadata"]["creationTimestamp"] = "2026-12-02T02:00:00Z"
                json.dump(doc, open(os.path.join(jobs_dir, doc["metadata"]["name"] + ".json"), "w"))
            print(doc["kind"].lower() + "/" + doc["metadata"]["name"] + " created")
    elif verb == "get" and argv[argv.index("get") + 1].startswith("trainjobs"):
        found = [d for d in jobs() if matches(d["metadata"].get("labels", {}), opt("-l"))]
        print(json.dumps({"kind": "List", "items": found}))
    elif verb == "get":  # pods of a JobSet: one per node, plus an unrelated initializer pod
        name = opt("-l").split("=", 1)[1]
        job = json.load(open(os.path.join(jobs_dir, name + ".json")))
        pods = [{"metadata": {"name": name + "-dataset-initializer-0-0-aaaaa",
                              "labels": {"jobset.sigs.k8s.io/replicatedjob-name": "dataset-initializer"}}}]
        for r in range(job["spec"]["trainer"]["numNodes"]):
            pods.append({"metadata": {"name": f"{name}-node-0-{r}-x{r}", "labels": {
                "jobset.sigs.k8s.io/jobset-name": name,
                "jobset.sigs.k8s.io/replicatedjob-name": "node",
                "batch.kubernetes.io/job-completion-index": str(r)}}})
        print(json.dumps({"kind": "List", "items": pods}))
    elif verb == "logs":
        sel = opt("-l")
        name = re.search(r"jobset-name=([^,]+)", sel).group(1)
        ranks = [int(x) for x in re.search(r"in \\(([0-9,]+)\\)", sel).group(1).split(",")]
        for r in ranks:
            for step in range(2):
                print(f"[pod/{name}-node-0-{r}-x{r}/node] rank {r} step {step}")
    elif verb == "delete":
        kind = argv[argv.index("delete") + 1]
        if kind.startswith("trainjobs"):
            path = os.path.join(jobs_dir, argv[argv.index("delete") + 2] + ".json")
            if os.path.exists(path):
                os.unlink(path)
            print("trainjob deleted")
    """
)


@pytest.fixture
def kubectl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake kubectl first on PATH; returns its state folder (``calls.jsonl``, ``trainjobs/``)."""
    bin_dir, state = tmp_path / "bin", tmp_path / "kubectl-state"
    bin_dir.mkdir()
    state.mkdir()
    script = bin_dir / "kubectl"
    script.write_text(f"#!{sys.executable}\n{FAKE_KUBECTL}")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_KUBECTL_DIR", str(state))
    return state


def calls(state: Path) -> list[list[str]]:
    path = state / "calls.jsonl"
    return [json.loads(line)["argv"] for line in path.read_text().splitlines()] if path.exists() else []


@pytest.fixture(scope="module", params=STACKS)
def stack(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    mp = pytest.MonkeyPatch()
    isolated_home(tmp_path_factory.mktemp("k8s-jobs"), mp)
    cluster = Cluster(request.param, mock=True, display="none")
    cluster.up()
    yield request.param
    cluster.down()
    mp.undo()


def test_detach_jobs_logs_cancel_on_a_managed_cluster(stack: str, kubectl: Path) -> None:
    sent = runner.invoke(app, ["launch", stack, "--mock", "--torchrun", "--detach", "--", "train.py", "--lr", "3e-4"])
    assert sent.exit_code == 0, sent.output
    job_id = sent.stdout.splitlines()[0]
    assert re.fullmatch(r"\d{4}-\d{6}-[0-9a-f]{4}", job_id)
    assert f"provision logs {stack} {job_id} -f --mock" in " ".join(sent.stderr.split())
    apply = next(c for c in calls(kubectl) if "apply" in c)
    assert apply[0] == "--kubeconfig"
    (stored,) = (kubectl / "trainjobs").glob("*.json")
    doc = json.loads(stored.read_text())
    name = doc["metadata"]["name"]
    assert doc["metadata"]["labels"]["provision.dev/job-id"] == job_id
    assert doc["spec"]["trainer"]["args"] == ["train.py", "--lr", "3e-4"]

    listed = runner.invoke(app, ["jobs", stack, "--mock", "--json"])
    assert listed.exit_code == 0, listed.output
    (job,) = json.loads(listed.stdout)["jobs"]
    assert job["id"] == job_id and job["state"] == "pending" and len(job["ranks"]) == 8
    assert job["command"] == ["train.py", "--lr", "3e-4"]
    (kubectl / f"status-{name}.json").write_text(
        json.dumps({"conditions": [], "jobsStatus": [{"name": "node", "active": 8, "ready": 8}]})
    )
    table = runner.invoke(app, ["jobs", stack, "--mock"])
    assert job_id in table.stdout and "running" in table.stdout

    one = runner.invoke(app, ["logs", stack, job_id[:11], "--rank", "1", "--mock"])
    assert one.exit_code == 0, one.output
    assert one.stdout.splitlines() == ["rank 1 step 0", "rank 1 step 1"]
    logs_call = [c for c in calls(kubectl) if "logs" in c][-1]
    assert "--tail=-1" in logs_call and "--follow" not in logs_call and logs_call[logs_call.index("-c") + 1] == "node"
    every = runner.invoke(app, ["logs", stack, "--mock", "-f", "--tail", "5"])  # the newest job, every rank
    assert every.exit_code == 0, every.output
    lines = every.stdout.splitlines()
    assert len(lines) == 16 and "[rank 7] rank 7 step 1" in lines and "[rank 0] rank 0 step 0" in lines
    logs_call = [c for c in calls(kubectl) if "logs" in c][-1]
    assert "--follow" in logs_call and "--tail=5" in logs_call and "--max-log-requests=8" in logs_call
    bad = runner.invoke(app, ["logs", stack, job_id, "--rank", "8", "--mock"])
    assert bad.exit_code == 2 and "--rank" in bad.output

    done = runner.invoke(app, ["cancel", stack, job_id, "--mock", "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["state"] == "cancelled"
    deletes = [c for c in calls(kubectl) if "delete" in c]
    assert [c[c.index("delete") + 1 :][:2] for c in deletes] == [
        ["trainjobs.trainer.kubeflow.org", name],
        ["configmaps", "-l"],
    ]
    assert f"provision.dev/trainjob={name}" in deletes[1]
    after = runner.invoke(app, ["jobs", stack, "--mock", "--json"])
    assert json.loads(after.stdout)["jobs"] == []


def test_launch_k8s_detach_sends_the_workdir_and_prints_the_id(kubectl: Path, tmp_path: Path) -> None:
    home = tmp_path / "h"
    mp = pytest.MonkeyPatch()
    isolated_home(home, mp)
    cluster = Cluster("aws-p5-64-eks", mock=True, display="none")
    cluster.up()
    try:
        code = tmp_path / "code"
        code.mkdir()
        (code / "train.py").write_text("print(1)\n")
        sent = runner.invoke(
            app, ["launch", "aws-p5-64-eks", "--mock", "--k8s", "--detach", "--workdir", str(code), "--", "train.py"]
        )
        assert sent.exit_code == 0, sent.output
        job_id = sent.stdout.splitlines()[0]
        stdin = [json.loads(line)["stdin"] for line in (kubectl / "calls.jsonl").read_text().splitlines()][0]
        assert "kind: ConfigMap" in stdin and f"provision.dev/job-id: {job_id}" in stdin
        listed = runner.invoke(app, ["jobs", "aws-p5-64-eks", "--mock", "--json"])
        assert [j["id"] for j in json.loads(listed.stdout)["jobs"]] == [job_id]
        refused = runner.invoke(
            app,
            ["launch", "aws-p5-64-eks", "--mock", "--deepspeed", "--detach", "--max-restarts", "2", "--", "t.py"],
        )
        assert refused.exit_code == 2
        assert "--deepspeed" in refused.output and "--max-restarts" in refused.output
        printed = runner.invoke(app, ["k8s-launch", "aws-p5-64-eks", "--mock", "--print", "--json", "--", "t.py"])
        labels = json.loads(printed.stdout)["job"]["metadata"]["labels"]
        assert labels["provision.dev/cluster"] == "aws-p5-64-eks" and labels["provision.dev/job-id"]
    finally:
        cluster.down()
        mp.undo()


def _doc(conditions: list[dict[str, str]], jobs_status: list[dict[str, int]] | None = None, **meta: str) -> Any:
    return {
        "metadata": {"name": "j", "creationTimestamp": "2026-12-02T02:00:00Z", **meta},
        "spec": {"trainer": {"numNodes": 2, "args": ["t.py"]}},
        "status": {"conditions": conditions, "jobsStatus": jobs_status or []},
    }


def _c(kind: str, status: str = "True") -> dict[str, str]:
    return {"type": kind, "status": status, "lastTransitionTime": "2026-12-02T03:00:00Z"}


@pytest.mark.parametrize(
    ("doc", "state"),
    [
        (_doc([]), "pending"),
        (_doc([_c("Created")]), "pending"),
        (_doc([_c("Suspended")]), "pending"),  # Kueue has not admitted it
        (_doc([_c("Created"), _c("Suspended", "False")], [{"active": 2}]), "running"),
        (_doc([_c("Running")]), "running"),
        (_doc([_c("Created"), _c("Complete")]), "succeeded"),
        (_doc([_c("Created"), _c("Failed")], [{"failed": 1}]), "failed"),
        (_doc([_c("Complete", "False")], [{"ready": 1}]), "running"),
        (_doc([_c("Running")], deletionTimestamp="2026-12-02T03:00:00Z"), "cancelled"),
    ],
)
def test_train_job_states(doc: Any, state: str) -> None:
    from provision.ops.jobs.kubernetes import job_status, train_job_state

    assert train_job_state(doc) == state
    job = job_status(doc, "c")
    assert job.state == state and job.spec.ranks == (0, 1) and job.spec.id == "j"
    if state in ("succeeded", "failed"):
        assert job.duration() == 3600.0
