"""Commands on nodes mean what they say: `provision ssh` and `exec` pass every word through unchanged.

OpenSSH joins the words after the host with spaces and the node's shell splits them again, so
the words are sent as one quoted string (as `exec` sends them); one word stays a shell line.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import MINIMAL_SPEC, isolated_home
from sshnodes import FakeNodes, fake_nodes
from test_exec_ssh import _cluster
from typer.testing import CliRunner

from provision.cli.app import app
from provision.ops.access import ssh_argv

runner = CliRunner()
WORDS = ["echo", "a  b", "$(id -u)", "it's", '"q"', ";", "echo", "INJECTED"]
#: What `echo` prints when every word arrives unchanged.
SAID = 'a  b $(id -u) it\'s "q" ; echo INJECTED\n'


@pytest.fixture
def up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    isolated_home(tmp_path, monkeypatch)
    spec = tmp_path / "c.yaml"
    spec.write_text(yaml.safe_dump({**MINIMAL_SPEC, "name": "qc", "lifetime": {"ttl": "2h"}}), encoding="utf-8")
    result = runner.invoke(app, ["up", str(spec), "--mock", "--yes"])
    assert result.exit_code == 0, result.output
    return "qc"


def test_ssh_and_exec_under_mock_pass_spaces_quotes_substitutions_and_semicolons_unchanged(up: str) -> None:
    ssh = runner.invoke(app, ["ssh", up, "1", "--mock", "--", *WORDS])
    assert ssh.exit_code == 0 and ssh.stdout == SAID
    ex = runner.invoke(app, ["exec", up, "--mock", "--nodes", "1", "--", *WORDS])
    assert ex.exit_code == 0 and ex.stdout == f"[{up}-1] {SAID}"


def test_the_real_ssh_command_line_survives_openssh_joining_and_the_node_shell(up: str) -> None:
    printed = json.loads(runner.invoke(app, ["ssh", up, "1", "--mock", "--json", "--", *WORDS]).stdout)
    argv = printed["argv"]
    # What OpenSSH does with the words after the host: join with spaces; the node runs `$SHELL -c` on that.
    remote = " ".join(argv[argv.index("--") + 1 :])
    ran = subprocess.run(["bash", "-c", remote], capture_output=True, text=True, check=False)  # noqa: S603, S607
    assert ran.stdout == SAID, ran.stdout


def test_one_word_stays_a_shell_line_as_with_openssh(up: str) -> None:
    ssh = runner.invoke(app, ["ssh", up, "1", "--mock", "--", "echo one; echo two"])
    assert ssh.exit_code == 0 and ssh.stdout == "one\ntwo\n"


@pytest.fixture
def nodes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    isolated_home(tmp_path, monkeypatch)
    with fake_nodes(tmp_path, 2) as found:
        monkeypatch.setenv("PROVISION_SSH_IDENTITY", str(found.client_key))
        yield found


@pytest.mark.skipif(shutil.which("ssh") is None, reason="needs the OpenSSH client")
def test_openssh_against_a_local_node_runs_the_words_unchanged(nodes: FakeNodes) -> None:
    argv = ssh_argv(_cluster(nodes), 1, WORDS)
    argv[1:1] = ["-o", "BatchMode=yes"]
    ran = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)  # noqa: S603
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == SAID
    assert nodes.commands[1][-1] == argv[-1]  # one quoted string reached the node


# ------------------------------------------------------------------ prepare_nodes trusts no self-report


def test_prepare_ignores_an_address_a_node_makes_up_and_refuses_a_key_it_did_not_present(
    nodes: FakeNodes, monkeypatch: pytest.MonkeyPatch
) -> None:
    import provision.ops.prepare as prepare
    from provision.spec.errors import CloudError

    key = '"${PROVISION_ROOT:-}/etc/ssh/ssh_host_ed25519_key.pub"'
    evil = 'if [ "$PROVISION_TEST_NODE" = 1 ]; then printf "%s " \'*",command="id\'; else printf "10.9.9.9 "; fi; '
    monkeypatch.setattr(prepare, "HOST_KEY_COMMAND", evil + f"cat {key}")
    cluster = _cluster(nodes)
    prepare.prepare_nodes(cluster, sudo="")
    for home in nodes.homes:
        root = home / "root"
        auth = next(root.rglob("authorized_keys2")).read_text()
        assert auth.startswith('from="10.0.0.10,10.0.0.11"'), auth  # the cloud's addresses only
        conf = (root / "etc/ssh/ssh_config.d/provision.conf").read_text()
        assert "command=" not in conf and "*" not in conf
    # Node 1 vouches for node 0's host key: refused, naming the node.
    zero = nodes.host_keys[0].split()[:2]
    monkeypatch.setattr(
        prepare,
        "HOST_KEY_COMMAND",
        f'printf "10.0.0.1 "; if [ "$PROVISION_TEST_NODE" = 1 ]; then echo "{zero[0]} {zero[1]}"; else cat {key}; fi',
    )
    with pytest.raises(CloudError) as err:
        prepare.prepare_nodes(cluster, sudo="")
    assert "t-1" in str(err.value) and "other than the one it presented" in str(err.value)


# ------------------------------------------------------------------ host keys from the cloud


def _cloud_reports(cluster: Any, keys: dict[int, str]) -> Any:
    cluster.outputs["host_keys"] = {rank: " ".join(k.split()[:2]) for rank, k in keys.items()}
    return cluster


def test_a_node_presenting_a_key_the_cloud_does_not_report_is_refused_on_first_contact(nodes: FakeNodes) -> None:
    from provision.ops.exec import UNREACHABLE, run_on_nodes

    cluster = _cloud_reports(_cluster(nodes), {0: nodes.host_keys[0], 1: nodes.host_keys[0]})  # t-1: not its key
    results = run_on_nodes(cluster, "true")
    assert [r.exit_code for r in results] == [0, UNREACHABLE]
    assert "not trusted" in (results[1].error or "")


def test_a_replaced_node_is_reached_after_its_key_is_read_from_the_cloud(
    nodes: FakeNodes, capsys: pytest.CaptureFixture[str]
) -> None:
    from provision.ops.access import known_hosts_path, ssh_dir
    from provision.ops.exec import run_on_nodes, worst_exit

    cluster = _cluster(nodes)
    assert worst_exit(run_on_nodes(cluster, "true")) == 0  # no report from the cloud: keys recorded at first use
    known = known_hosts_path(cluster)
    old = {line.split(" ", 1)[0]: line.split(" ", 1)[1] for line in known.read_text().splitlines()}
    # t-1 was pinned with its old VM's key; the new VM behind it presents another, which the cloud reports.
    known.write_text(f"t-0 {old['t-0']}\nt-1 {old['t-0']}\n")
    marker = ssh_dir(cluster) / "prepared-0123456789abcdef"
    marker.touch()
    assert worst_exit(run_on_nodes(cluster, "true")) != 0  # without the cloud's report: refused
    _cloud_reports(cluster, dict(enumerate(nodes.host_keys)))
    assert worst_exit(run_on_nodes(cluster, "true")) == 0
    assert "t-1 changed host key: the node was replaced" in capsys.readouterr().err
    assert not marker.exists()  # the nodes are prepared again on the next launch
    assert f"t-1 {' '.join(nodes.host_keys[1].split()[:2])}" in known.read_text()
