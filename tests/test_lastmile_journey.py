"""The new user's journey under --mock: up, then everything by cluster name alone with the spec file gone.

Bar (issue 14): ``up`` -> ``list`` -> ``ssh --print`` -> ``exec -- hostname`` -> ``launch --torchrun --print``
-> ``down``, by cluster name, after the spec file was deleted; ``run ... --max-usd 1`` exits 3 before
anything exists; a job's exit code passes through and nothing is left afterwards.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, default_signals, isolated_home
from typer.testing import CliRunner

from provision.cli.app import app

runner = CliRunner()

SPEC = {
    "name": "my-train",
    "cloud": "aws",
    "region": "us-east-1",
    "gpu": "H100",
    "gpus": 16,
    "access": {
        "ssh_public_keys": ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHByb3Zpc2lvbi1leGFtcGxlLWtleS1kby1ub3QtdXNl me"]
    },
    "lifetime": {"ttl": "2h", "max_cost_usd": 500},
}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)  # no stacks/ here: names can only come from the state
    return isolated_home(tmp_path, monkeypatch)


def _spec_file(tmp_path: Path, **changes: object) -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump({**SPEC, **changes}), encoding="utf-8")
    return path


def test_journey_by_cluster_name_after_the_spec_file_is_deleted(home: Path, tmp_path: Path) -> None:
    spec = _spec_file(tmp_path)
    up = runner.invoke(app, ["up", str(spec), "--mock", "--yes"])
    assert up.exit_code == 0, up.output
    spec.unlink()

    listed = runner.invoke(app, ["list", "--mock", "--json"])
    assert listed.exit_code == 0, listed.output
    rows = json.loads(listed.stdout)["clusters"]
    assert [(r["stack"], r["name"], r["cloud"], r["nodes"], r["gpus"]) for r in rows] == [
        ("my-train", "my-train", "aws", 2, 16)
    ]
    assert rows[0]["hourly_usd"] > 0 and rows[0]["expires_at"]
    table = runner.invoke(app, ["list", "--mock"])
    assert table.exit_code == 0 and "my-train" in table.stdout
    assert max(len(line) for line in table.stdout.splitlines()) <= 80

    ssh = runner.invoke(app, ["ssh", "my-train", "--print", "--mock"])
    assert ssh.exit_code == 0, ssh.output
    argv = shlex.split(ssh.stdout.strip())
    assert argv[0] == "ssh" and argv[1] == "-F" and argv[-1] == "my-train-0"
    config = Path(argv[2]).read_text(encoding="utf-8")
    assert "Host my-train-1" in config
    assert "ProxyCommand aws ssm start-session --target i-" in config  # AWS: SSM Session Manager, private

    hostname = runner.invoke(app, ["exec", "my-train", "--mock", "--", "hostname"])
    assert hostname.exit_code == 0, hostname.output
    lines = hostname.stdout.splitlines()
    assert sorted(lines) == [f"[my-train-0] {socket.gethostname()}", f"[my-train-1] {socket.gethostname()}"]

    ranks = runner.invoke(app, ["exec", "my-train", "--mock", "--", "sh", "-c", "echo $NODE_RANK/$NNODES $MASTER_ADDR"])
    assert ranks.exit_code == 0, ranks.output
    head = json.loads(runner.invoke(app, ["outputs", "my-train", "--mock", "--json"]).stdout)["head_node"]
    assert sorted(ranks.stdout.splitlines()) == [f"[my-train-0] 0/2 {head}", f"[my-train-1] 1/2 {head}"]

    launch = runner.invoke(
        app, ["launch", "my-train", "--torchrun", "--print", "--mock", "--", "train.py", "--lr", "3e-4"]
    )
    assert launch.exit_code == 0, launch.output
    assert "torchrun --nnodes=$NNODES --nproc-per-node=$NPROC_PER_NODE --node-rank=$NODE_RANK" in launch.stdout
    assert launch.stdout.rstrip().endswith("train.py --lr 3e-4")

    down = runner.invoke(app, ["down", "my-train", "--mock", "--yes"])
    assert down.exit_code == 0, down.output
    assert json.loads(runner.invoke(app, ["list", "--mock", "--json"]).stdout) == {"clusters": []}
    assert not (home / "ssh" / "my-train").exists()
    gone = runner.invoke(app, ["status", "my-train", "--mock"])
    assert gone.exit_code == 2  # neither a file nor a cluster any more


def test_run_over_the_cap_exits_3_before_anything_exists(home: Path, tmp_path: Path) -> None:
    spec = _spec_file(tmp_path)
    result = runner.invoke(app, ["run", str(spec), "--mock", "--max-usd", "1", "--", "true"])
    assert result.exit_code == 3, result.output
    assert "max_cost_usd" in result.output
    assert not (home / "mock").exists() or not list((home / "mock").glob("*.json"))
    assert not list((home / "ephemeral").glob("*.json")) if (home / "ephemeral").exists() else True


@pytest.mark.parametrize("code", [0, 7])
def test_run_passes_the_exit_code_through_and_leaves_nothing(home: Path, tmp_path: Path, code: int) -> None:
    spec = _spec_file(tmp_path)
    marker = tmp_path / "seen.txt"
    cmd = f'echo "$PROVISION_CLUSTER $(cat "$PROVISION_HOSTFILE" | wc -l)" > {marker}; exit {code}'
    result = runner.invoke(app, ["run", str(spec), "--mock", "--", "sh", "-c", cmd])
    assert result.exit_code == code, result.output
    name, nodes = marker.read_text().split()
    assert name.startswith("my-train-") and nodes == "2"
    assert json.loads(runner.invoke(app, ["list", "--mock", "--json"]).stdout) == {"clusters": []}
    assert not list((home / "ephemeral").glob("*.json"))


def test_a_real_up_without_the_pulumi_cli_says_how_to_get_it_and_leaves_nothing(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")  # no `pulumi`, and ~/.pulumi/versions is empty too
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    spec = _spec_file(tmp_path)
    for args in (["up", str(spec), "--yes"], ["status", str(spec)], ["list"], ["down", str(spec), "--yes"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 1, (args, result.output)
        assert "provision install-pulumi" in result.output and "--mock" in result.output
        assert "Traceback" not in result.output
    assert not home.exists()  # no passphrase, no state folder, no mock folder


def test_install_pulumi_uses_the_sdk_installer_and_is_found_afterwards(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pulumi import automation as auto

    from provision.engine import automation

    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.setenv("PATH", "/nonexistent")
    calls: list[object] = []

    def fake_install(root: object = None, version: object = None, skip_version_check: bool = False) -> object:
        calls.append(version)
        target = tmp_path / "user" / ".pulumi" / "versions" / "3.200.0" / "bin"
        target.mkdir(parents=True)
        (target / "pulumi").write_text("#!/bin/sh\necho v3.200.0\n")
        (target / "pulumi").chmod(0o755)
        return type("Cmd", (), {"version": "3.200.0", "command": str(target / "pulumi")})()

    monkeypatch.setattr(auto.PulumiCommand, "install", staticmethod(fake_install))
    result = runner.invoke(app, ["install-pulumi", "--version", "3.200.0", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["version"] == "3.200.0" and len(calls) == 1
    assert automation.installed_cli_root() == tmp_path / "user" / ".pulumi" / "versions" / "3.200.0"
    bad = runner.invoke(app, ["install-pulumi", "--version", "latest"])
    assert bad.exit_code == 2 and "--version" in bad.output


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_run_tears_down_on_sigterm_and_ctrl_c(home: Path, tmp_path: Path, signum: int) -> None:
    spec = _spec_file(tmp_path)
    started = tmp_path / "started"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PROVISION_HOME": str(home)}
    cmd = [sys.executable, "-m", "provision.cli", "run", str(spec), "--mock", "--"]
    straggler = tmp_path / "straggler.pid"  # a child of the command, not holding the output open
    cmd += ["sh", "-c", f"sleep 300 >/dev/null 2>&1 & echo $! > {straggler}; touch {started}; sleep 60"]
    # The child gets SIGINT's default action even when this test runs from a background shell (which ignores it).
    proc = subprocess.Popen(
        cmd,
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_signals,
    )
    deadline = time.monotonic() + 120
    while not started.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert started.exists(), proc.communicate()
    states = list((home / "mock").glob("*.json"))
    assert len(states) == 1  # the cluster is up while the job runs
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert not list((home / "mock").glob("*.json")) and not list((home / "ephemeral").glob("*.json"))
    pid = int(straggler.read_text())  # the command's own children went with it (its process group)
    assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text().lower(), pid


def test_mock_launch_runs_the_real_line_per_node_with_that_nodes_env(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "torchrun"  # records what each node's torchrun was given
    fake.write_text('#!/bin/sh\necho "$@ | FI_PROVIDER=$FI_PROVIDER WORLD_SIZE=$WORLD_SIZE"\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    assert runner.invoke(app, ["up", str(_spec_file(tmp_path)), "--mock", "--yes"]).exit_code == 0
    result = runner.invoke(app, ["launch", "my-train", "--torchrun", "--mock", "--json", "--", "train.py", "--lr", "1"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["runs_on"] == "all" and doc["exit_code"] == 0
    lines = {n["node"]: n["stdout"].strip() for n in doc["nodes"]}
    head = json.loads(runner.invoke(app, ["outputs", "my-train", "head_node", "--mock", "--json"]).stdout)
    for rank in (0, 1):
        assert lines[f"my-train-{rank}"] == (
            f"--nnodes=2 --nproc-per-node=8 --node-rank={rank} --master-addr={head} --master-port=29500 "
            "train.py --lr 1 | FI_PROVIDER=efa WORLD_SIZE=16"
        )
    failing = runner.invoke(app, ["launch", "my-train", "--mpirun", "--mock", "--", "x"])
    assert failing.exit_code == 127  # no mpirun here: the head node's exit code passes through


def test_python_api_gives_launch_lines_nodes_and_runs_commands(home: Path, tmp_path: Path) -> None:
    from provision import Cluster

    cluster = Cluster(str(_spec_file(tmp_path)), mock=True, display="none")
    cluster.up()
    same = Cluster("my-train", mock=True)
    line = same.launch_command("deepspeed", "train.py", "--zero", "3")
    assert "deepspeed --hostfile=$PROVISION_HOSTFILE" in line and line.endswith("train.py --zero 3")
    assert [n["name"] for n in same.nodes()] == ["my-train-0", "my-train-1"]
    results = same.run_on_nodes("echo $NODE_RANK", nodes="head")
    assert [(r.node, r.stdout) for r in results] == [("my-train-0", "0\n")]
    same.down()
    assert Cluster(SPEC, mock=True).status()["nodes"] == []


def test_exec_and_ssh_errors_are_exit_2_with_the_fix(home: Path, tmp_path: Path) -> None:
    assert runner.invoke(app, ["up", str(_spec_file(tmp_path)), "--mock", "--yes"]).exit_code == 0
    no_cmd = runner.invoke(app, ["exec", "my-train", "--mock"])
    assert no_cmd.exit_code == 2 and "after --" in no_cmd.output
    bad_nodes = runner.invoke(app, ["exec", "my-train", "--mock", "--nodes", "5", "--", "true"])
    assert bad_nodes.exit_code == 2 and "--nodes" in bad_nodes.output
    two = runner.invoke(app, ["launch", "my-train", "--torchrun", "--mpirun", "--mock", "--", "x"])
    assert two.exit_code == 2 and "exactly one" in two.output
    on_node = runner.invoke(app, ["ssh", "my-train", "1", "--mock", "--", "sh", "-c", "echo $NODE_RANK"])
    assert on_node.exit_code == 0 and on_node.stdout == "1\n"
    js = json.loads(runner.invoke(app, ["exec", "my-train", "--mock", "--json", "--", "true"]).stdout)
    assert js["exit_code"] == 0 and [n["node"] for n in js["nodes"]] == ["my-train-0", "my-train-1"]


def test_a_private_path_without_its_local_tool_says_which_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    from provision.cli.access import _check_tools
    from provision.spec.errors import CloudError

    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(CloudError) as e:
        _check_tools("ssm")
    assert (
        "aws" in str(e.value) and "session-manager-plugin" in str(e.value) and "Session Manager plugin" in str(e.value)
    )
