"""Host keys read from the cloud before the first connection, against real local SSH nodes.

The mocked cloud is an EC2 client whose ``GetConsoleOutput`` answers, per instance, the console a
node would print at boot: cloud-init's host key block with the key the node really holds (its
``/etc/ssh/ssh_host_ed25519_key.pub``), base64-encoded as EC2 returns it.
"""

from __future__ import annotations

import asyncio
import base64
import getpass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import asyncssh
import pytest
from conftest import isolated_home
from sshnodes import FakeNodes, _handle, fake_nodes

from provision.clouds.aws import hostkeys as aws_hostkeys
from provision.ops.access import known_hosts_path
from provision.ops.exec import UNREACHABLE, run_on_nodes
from provision.ops.hostkeys import cloud_host_keys


def console(*keys: str) -> str:
    """What cloud-init's keys_to_console prints on a node's serial console at boot."""
    block = "\n".join(f"{k} root@ip-10-0-0-1" for k in keys)
    return (
        "[   10.1] cloud-init[900]: Cloud-init v. 24.1 running 'modules:final'\n"
        "-----BEGIN SSH HOST KEY FINGERPRINTS-----\n256 SHA256:abc root@ip (ED25519)\n"
        "-----END SSH HOST KEY FINGERPRINTS-----\n"
        f"-----BEGIN SSH HOST KEY KEYS-----\n{block}\n-----END SSH HOST KEY KEYS-----\n"
    )


class MockEc2:
    """``ec2.get_console_output`` of the mocked cloud: each instance's console shows its node's real key."""

    def __init__(self, nodes: FakeNodes, reported: dict[int, str] | None = None) -> None:
        self.nodes, self.reported, self.calls = nodes, reported or {}, 0

    def get_console_output(self, InstanceId: str, Latest: bool = False) -> dict[str, Any]:  # noqa: N803
        self.calls += 1
        rank = int(InstanceId.rsplit("-", 1)[1])
        home = self.nodes.homes[rank]
        key = self.reported.get(rank) or (home / "root/etc/ssh/ssh_host_ed25519_key.pub").read_text().strip()
        return {"InstanceId": InstanceId, "Output": base64.b64encode(console(key).encode()).decode()}


def _cluster(nodes: FakeNodes) -> Any:
    user = getpass.getuser()
    hosts = [f"10.0.0.{10 + i}" for i in range(len(nodes.ports))]
    outputs = {
        "cluster": "t",
        "hosts": hosts,
        "nodes": len(hosts),
        "head_node": hosts[0],
        "access": {
            "via": "direct",
            "user": user,
            "ports": list(nodes.ports),
            "hostnames": ["127.0.0.1"] * len(hosts),
            "node_ids": [f"i-0abc-{i}" for i in range(len(hosts))],
        },
    }
    spec = SimpleNamespace(
        name="t", cloud="aws", region="us-east-1", access=SimpleNamespace(ssh_user=user, ssh_public_keys=())
    )
    return SimpleNamespace(spec=spec, stack="t-stack", mock=False, outputs=outputs)


@pytest.fixture
def nodes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    isolated_home(tmp_path, monkeypatch)
    with fake_nodes(tmp_path, 3) as found:
        monkeypatch.setenv("PROVISION_SSH_IDENTITY", str(found.client_key))
        yield found


def _replace(nodes: FakeNodes, rank: int, cluster: Any) -> str:
    """Stop node ``rank`` and boot a new VM in its place: a new host key, published on its console."""
    client = asyncssh.read_private_key(str(nodes.client_key))
    authorized = asyncssh.import_authorized_keys(client.export_public_key().decode())
    host_key = asyncssh.generate_private_key("ssh-ed25519")
    home = nodes.homes[rank]

    async def swap() -> int:
        nodes.servers[rank].close()
        await nodes.servers[rank].wait_closed()
        server = await asyncssh.listen(
            "127.0.0.1",
            0,
            server_host_keys=[host_key],
            authorized_client_keys=authorized,
            process_factory=lambda p: _handle(p, rank, home, nodes.commands[rank], nodes.running),
            encoding=None,
        )
        nodes.servers[rank] = server
        return int(server.sockets[0].getsockname()[1])

    port = asyncio.run_coroutine_threadsafe(swap(), nodes.loop).result(30)
    cluster.outputs["access"]["ports"][rank] = port
    public = host_key.export_public_key().decode().strip()
    (home / "root/etc/ssh/ssh_host_ed25519_key.pub").write_text(public + "\n")
    return " ".join(public.split()[:2])


def test_a_replaced_node_is_reached_after_its_key_is_read_from_the_cloud(
    nodes: FakeNodes, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ec2 = MockEc2(nodes)
    monkeypatch.setattr(aws_hostkeys, "ec2_client", lambda region: ec2)
    cluster = _cluster(nodes)
    known = known_hosts_path(cluster)
    assert [r.exit_code for r in run_on_nodes(cluster, "true")] == [0, 0, 0]
    assert ec2.calls == 3  # every key came from the cloud before the first connection
    (known.parent / "prepared-abc").write_text("")

    new_key = _replace(nodes, 1, cluster)
    results = run_on_nodes(cluster, "echo hi")
    assert [r.exit_code for r in results] == [0, 0, 0], [r.error for r in results]
    pinned = dict(line.split(" ", 1) for line in known.read_text().splitlines())
    assert pinned["t-1"] == new_key
    assert not (known.parent / "prepared-abc").exists()  # the replaced node is prepared again
    assert "t-1 changed host key: the node was replaced" in capsys.readouterr().err


def test_a_node_presenting_a_key_the_cloud_did_not_report_is_refused(
    nodes: FakeNodes, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Node 2's address answers with a key its console never showed (a man in the middle, on first contact).
    other = " ".join(asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode().split()[:2])
    monkeypatch.setattr(aws_hostkeys, "ec2_client", lambda region: MockEc2(nodes, {2: other}))
    cluster = _cluster(nodes)
    results = run_on_nodes(cluster, "true")
    assert [r.exit_code for r in results] == [0, 0, UNREACHABLE]
    assert "not trusted" in (results[2].error or "")
    assert cloud_host_keys(cluster)["t-2"] == other  # not re-learned from what the node presented
    assert dict(line.split(" ", 1) for line in known_hosts_path(cluster).read_text().splitlines())["t-2"] == other


def test_without_a_cloud_answer_first_contact_still_records_and_says_why(
    nodes: FakeNodes, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def no_credentials(region: str) -> Any:
        raise RuntimeError("Unable to locate credentials")

    monkeypatch.setattr(aws_hostkeys, "ec2_client", no_credentials)
    cluster = _cluster(nodes)
    assert [r.exit_code for r in run_on_nodes(cluster, "true")] == [0, 0, 0]
    assert "could not read the nodes' host keys from the cloud" in capsys.readouterr().err


def test_the_ssh_config_is_strict_for_nodes_whose_key_the_cloud_gave(
    nodes: FakeNodes, monkeypatch: pytest.MonkeyPatch
) -> None:
    from provision.ops.access import ssh_argv

    monkeypatch.setattr(aws_hostkeys, "ec2_client", lambda region: MockEc2(nodes))
    cluster = _cluster(nodes)
    config = Path(ssh_argv(cluster, 1)[2]).read_text()
    blocks = {b.split()[0]: b for b in config.split("Host ")[1:]}
    assert all("StrictHostKeyChecking yes" in blocks[f"t-{i}"] for i in range(3))
    assert "StrictHostKeyChecking accept-new" not in config


def test_alibaba_and_gcp_clusters_read_their_keys_through_their_own_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from provision.clouds.alibaba import hostkeys as alibaba_hostkeys
    from provision.clouds.gcp import hostkeys as gcp_hostkeys

    key = " ".join(asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode().split()[:2])
    seen: list[tuple[str, ...]] = []

    def ecs(region: str, instance_id: str) -> dict[str, Any]:
        seen.append((region, instance_id))
        return {"InstanceId": instance_id, "ConsoleOutput": base64.b64encode(console(key).encode()).decode()}

    def guest(project: str, zone: str, instance: str) -> dict[str, Any]:
        seen.append((project, zone, instance))
        items = [{"namespace": "hostkeys", "key": "ssh-ed25519", "value": key.split()[1]}]
        return {"queryValue": {"items": items}}

    monkeypatch.setattr(alibaba_hostkeys, "sdk_fetch", ecs)
    monkeypatch.setattr(gcp_hostkeys, "rest_fetch", guest)
    access = {"node_ids": ["i-a", "i-b"]}
    ali = SimpleNamespace(
        spec=SimpleNamespace(name="a", cloud="alibaba", region="cn-wulanchabu"), mock=False, outputs={"access": access}
    )
    assert cloud_host_keys(ali) == {"a-0": key, "a-1": key}
    options = SimpleNamespace(project="proj")
    gcp = SimpleNamespace(
        spec=SimpleNamespace(
            name="g", cloud="gcp", region="us-central1", zone="us-central1-a", cloud_options=lambda: options
        ),
        mock=False,
        outputs={"access": {"node_ids": ["g-0"]}},
    )
    assert cloud_host_keys(gcp) == {"g-0": key}
    assert seen == [("cn-wulanchabu", "i-a"), ("cn-wulanchabu", "i-b"), ("proj", "us-central1-a", "g-0")]
