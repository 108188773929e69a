"""`provision exec` and node preparation over real SSH: asyncssh servers on 127.0.0.1 stand in for the nodes."""

from __future__ import annotations

import getpass
import json
import os
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from conftest import isolated_home
from sshnodes import FakeNodes, fake_nodes

from provision.ops.access import cluster_key, known_hosts_path, ssh_config_text
from provision.ops.exec import TIMED_OUT, UNREACHABLE, run_on_nodes, select_nodes, worst_exit
from provision.ops.prepare import prepare_nodes
from provision.spec.errors import SpecError

NCCL = {"FI_PROVIDER": "efa", "NCCL_SOCKET_IFNAME": "^docker,lo"}


def _cluster(nodes: FakeNodes, name: str = "t", ports: list[int] | None = None) -> Any:
    """A stand-in for an up Cluster whose nodes are the local servers (private IPs 10.0.0.x)."""
    user = getpass.getuser()
    hosts = [f"10.0.0.{10 + i}" for i in range(len(nodes.ports))]
    outputs = {
        "cluster": name,
        "hosts": hosts,
        "nodes": len(hosts),
        "gpus": 8 * len(hosts),
        "fabric": {"kind": "efa"},
        "nccl_env": NCCL,
        "head_node": hosts[0],
        "access": {
            "via": "direct",
            "user": user,
            "ports": ports or nodes.ports,
            "hostnames": ["127.0.0.1"] * len(hosts),
        },
    }
    spec = SimpleNamespace(name=name, access=SimpleNamespace(ssh_user=user, ssh_public_keys=()))
    return SimpleNamespace(spec=spec, stack=f"{name}-stack", mock=False, outputs=outputs)


@pytest.fixture
def nodes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    isolated_home(tmp_path, monkeypatch)
    with fake_nodes(tmp_path, 3) as found:
        monkeypatch.setenv("PROVISION_SSH_IDENTITY", str(found.client_key))
        yield found


def test_exec_streams_prefixed_lines_and_exits_with_the_worst_node(nodes: FakeNodes) -> None:
    seen: list[tuple[str, str, str]] = []
    lock = threading.Lock()

    def on_line(result: Any, stream: str, line: str) -> None:
        with lock:
            seen.append((result.node, stream, line))

    results = run_on_nodes(
        _cluster(nodes),
        "echo out $PROVISION_TEST_NODE; echo err >&2; exit $((PROVISION_TEST_NODE * 3))",
        on_line=on_line,
    )
    assert [(r.node, r.exit_code, r.stdout) for r in results] == [
        ("t-0", 0, "out 0\n"),
        ("t-1", 3, "out 1\n"),
        ("t-2", 6, "out 2\n"),
    ]
    assert worst_exit(results) == 6
    assert sorted(seen) == sorted(
        [(f"t-{i}", "stdout", f"out {i}") for i in range(3)] + [(f"t-{i}", "stderr", "err") for i in range(3)]
    )


def test_exec_on_chosen_nodes_feeds_stdin(nodes: FakeNodes) -> None:
    results = run_on_nodes(_cluster(nodes), "cat", nodes="0,2", stdin=lambda rank: f"to {rank}\n")
    assert [(r.node, r.stdout) for r in results] == [("t-0", "to 0\n"), ("t-2", "to 2\n")]
    assert [c for c in nodes.commands[1]] == []


def test_a_slow_node_times_out_with_124_and_the_others_finish(nodes: FakeNodes) -> None:
    results = run_on_nodes(
        _cluster(nodes), 'if [ "$PROVISION_TEST_NODE" = 1 ]; then sleep 30; fi; echo done', timeout=2
    )
    assert [r.exit_code for r in results] == [0, TIMED_OUT, 0]
    assert "timed out" in (results[1].error or "")
    assert worst_exit(results) == TIMED_OUT


def test_a_command_still_running_on_a_fake_node_is_killed_when_the_nodes_stop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The client gives up at the timeout; the node's command runs on (as under sshd without a tty). The fake nodes
    must not leave it running past the test, nor its asyncio transport to a loop they closed."""
    isolated_home(tmp_path, monkeypatch)
    pidfile = tmp_path / "pid"
    with fake_nodes(tmp_path, 1) as one:
        monkeypatch.setenv("PROVISION_SSH_IDENTITY", str(one.client_key))
        (result,) = run_on_nodes(_cluster(one), f"echo $$ > {pidfile}; exec sleep 30", timeout=1)
        assert result.exit_code == TIMED_OUT
        pid = int(pidfile.read_text())
        os.kill(pid, 0)  # still running after the client left
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_an_unreachable_node_is_255_and_named(nodes: FakeNodes) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    results = run_on_nodes(_cluster(nodes, ports=[nodes.ports[0], dead, nodes.ports[2]]), "true", timeout=20)
    assert [r.exit_code for r in results] == [0, UNREACHABLE, 0]
    assert "cannot reach t-1" in (results[1].error or "")


def test_fanout_bounds_the_nodes_running_at_once(nodes: FakeNodes, tmp_path: Path) -> None:
    log = tmp_path / "concurrency.log"
    cmd = f"echo start >> {log}; sleep 0.5; echo end >> {log}"
    run_on_nodes(_cluster(nodes), cmd, fanout=1)
    events = log.read_text().split()
    running = peak = 0
    for e in events:
        running += 1 if e == "start" else -1
        peak = max(peak, running)
    assert peak == 1 and len(events) == 6


def test_host_keys_are_pinned_per_cluster(nodes: FakeNodes) -> None:
    cluster = _cluster(nodes)
    assert worst_exit(run_on_nodes(cluster, "true")) == 0
    known = known_hosts_path(cluster)
    recorded = dict(line.split(" ", 1) for line in known.read_text().splitlines())
    assert recorded == {
        f"t-{i}": nodes.host_keys[i].split(" ", 2)[0] + " " + nodes.host_keys[i].split()[1] for i in range(3)
    }
    # A different key for t-1 (a man in the middle, or a replaced node): refused, not re-learned.
    other = recorded["t-0"]
    known.write_text("".join(f"{k} {other if k == 't-1' else v}\n" for k, v in recorded.items()))
    results = run_on_nodes(cluster, "true")
    assert [r.exit_code for r in results] == [0, UNREACHABLE, 0]
    assert "not trusted" in (results[1].error or "")


def test_ssh_config_names_identity_and_pinned_known_hosts(nodes: FakeNodes) -> None:
    text = ssh_config_text(_cluster(nodes))
    assert f"IdentityFile {nodes.client_key}" in text
    assert "HostKeyAlias t-2" in text and "UserKnownHostsFile" in text


def test_select_nodes_refuses_ranks_outside_the_cluster() -> None:
    assert select_nodes(4, "HEAD") == [0] and select_nodes(4, "3,1") == [1, 3] and select_nodes(2, "all") == [0, 1]
    for bad in ("4", "x", "-1"):
        with pytest.raises(SpecError) as e:
            select_nodes(4, bad)
        assert e.value.problems[0].path == "--nodes"


def test_prepare_nodes_installs_env_hostfile_key_and_pinned_host_keys(nodes: FakeNodes) -> None:
    cluster = _cluster(nodes)
    prepare_nodes(cluster, sudo="")
    private, public = cluster_key(cluster)
    assert private.stat().st_mode & 0o777 == 0o600
    for rank, home in enumerate(nodes.homes):
        root = home / "root"
        env = (root / "etc/provision/env").read_text()
        assert f"NODE_RANK={rank}\n" in env and "MASTER_ADDR=10.0.0.10\n" in env and "FI_PROVIDER=efa\n" in env
        assert (root / "etc/provision/hostfile").read_text() == "".join(f"10.0.0.{10 + i} slots=8\n" for i in range(3))
        known = (root / "etc/provision/known_hosts").read_text().splitlines()
        assert [line.split()[2] for line in known] == [k.split()[1] for k in nodes.host_keys]
        assert known[0].startswith("10.0.0.10 ")  # the cloud's address; not what the node says it has
        user_home = next(p for p in root.iterdir() if p.is_dir() and p.name != "etc")
        ssh = user_home / ".ssh" if (user_home / ".ssh").exists() else next(user_home.rglob(".ssh"))
        auth = (ssh / "authorized_keys2").read_text()
        assert auth.startswith('from="') and public in auth
        assert (ssh / "id_provision").stat().st_mode & 0o777 == 0o600
        conf = (root / "etc/ssh/ssh_config.d/provision.conf").read_text()
        assert "StrictHostKeyChecking yes" in conf and "10.0.0.12" in conf
    # The private key travelled on stdin only: never on a command line.
    secret = private.read_text().splitlines()[1]
    assert not any(secret in cmd for log in nodes.commands for cmd in log)
    assert secret not in json.dumps(cluster.outputs)
