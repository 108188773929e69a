"""Azure's way in: an opted-in Bastion (graph) and the ssh ProxyCommand that tunnels through it (real SSH)."""

from __future__ import annotations

import getpass
import ipaddress
import os
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from conftest import ROOT, isolated_home, preview, stack_spec
from sshnodes import fake_nodes

from provision.ops.exec import run_on_nodes, worst_exit
from provision.spec import load_spec

STACK = "azure-ndh100-64"


def _with_bastion(on: bool) -> Any:
    data = stack_spec(STACK).model_dump(mode="json", exclude_none=True)
    data.setdefault("azure", {})["bastion"] = on
    return preview(load_spec(data), stack=STACK)


def test_bastion_is_opt_in_standard_with_tunneling_in_its_own_subnet() -> None:
    off = _with_bastion(False)
    assert not off.of_type("azure-native:network:BastionHost")
    run = _with_bastion(True)
    host = run.one("azure-native:network:BastionHost").inputs
    assert host["sku"] == {"name": "Standard"} and host["enableTunneling"] is True and host["enableIpConnect"] is True
    subnet = next(
        s for s in run.of_type("azure-native:network:Subnet") if s.inputs["subnetName"] == "AzureBastionSubnet"
    )
    net = ipaddress.ip_network(subnet.inputs["addressPrefix"])
    assert net.prefixlen <= 26
    others = [
        ipaddress.ip_network(s.inputs["addressPrefix"])
        for s in run.of_type("azure-native:network:Subnet")
        if s is not subnet
    ]
    assert not any(net.overlaps(o) for o in others)
    node_nsg = [n for n in run.of_type("azure-native:network:NetworkSecurityGroup") if not n.name.endswith("-fs-nsg")]
    assert len(node_nsg) == 1
    nsg = node_nsg[0].inputs["securityRules"]
    allow = next(r for r in nsg if r["name"] == "allow-ssh-from-bastion")
    deny = next(r for r in nsg if r["access"] == "Deny")
    assert allow["sourceAddressPrefixes"] == [str(net)] and allow["priority"] < deny["priority"]
    access = run.outputs["access"]
    assert access["via"] == "bastion" and access["bastion"]["name"] == host["bastionHostName"]
    assert "ProxyCommand provision proxy azure-bastion --name" in run.outputs["ssh_config"]


FAKE_AZ = """\
#!{python}
# A stand-in `az`: `network bastion tunnel ... --target-ip-address IP --port L` forwards 127.0.0.1:L to the
# node's local SSH server (FAKE_NODES="ip=port,..."), as Bastion forwards to the VM.
import os, socket, sys, threading
args = sys.argv[1:]
open(os.environ["FAKE_AZ_LOG"], "a").write(" ".join(args) + "\\n")
if os.environ.get("FAKE_AZ_PIDFILE"): open(os.environ["FAKE_AZ_PIDFILE"], "w").write(str(os.getpid()))
assert args[:3] == ["network", "bastion", "tunnel"], args
ip = args[args.index("--target-ip-address") + 1]
local = int(args[args.index("--port") + 1])
port = dict(p.split("=") for p in os.environ["FAKE_NODES"].split(","))[ip]
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", local)); srv.listen(5)
def pipe(a, b):
    try:
        while True:
            d = a.recv(65536)
            if not d: break
            b.sendall(d)
    except OSError: pass
    finally:
        try: b.shutdown(socket.SHUT_WR)
        except OSError: pass
while True:
    c, _ = srv.accept()
    if os.environ.get("FAKE_AZ_ACCEPTED"): open(os.environ["FAKE_AZ_ACCEPTED"], "a").write("accepted\\n")
    if c.recv(1, socket.MSG_PEEK) == b"":  # the proxy's readiness probe
        c.close(); continue
    n = socket.create_connection(("127.0.0.1", int(port)))
    threading.Thread(target=pipe, args=(c, n), daemon=True).start()
    threading.Thread(target=pipe, args=(n, c), daemon=True).start()
"""


def test_exec_reaches_nodes_through_the_bastion_proxy_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolated_home(tmp_path, monkeypatch)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    az = bin_dir / "az"
    az.write_text(FAKE_AZ.format(python=sys.executable))
    az.chmod(0o755)
    shim = bin_dir / "provision"  # the ProxyCommand runs `provision`: this checkout's
    shim.write_text(f'#!/bin/sh\nPYTHONPATH={ROOT} exec {sys.executable} -m provision.cli "$@"\n')
    shim.chmod(0o755)
    log = tmp_path / "az.log"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_AZ_LOG", str(log))
    with fake_nodes(tmp_path, 2) as nodes:
        hosts = ["10.0.0.4", "10.0.0.5"]
        monkeypatch.setenv("FAKE_NODES", ",".join(f"{h}={p}" for h, p in zip(hosts, nodes.ports, strict=False)))
        monkeypatch.setenv("PROVISION_SSH_IDENTITY", str(nodes.client_key))
        user = getpass.getuser()
        outputs = {
            "cluster": "az",
            "hosts": hosts,
            "nodes": 2,
            "gpus": 16,
            "fabric": {"kind": "infiniband"},
            "nccl_env": {},
            "access": {"via": "bastion", "user": user, "bastion": {"name": "az-bastion", "resource_group": "az-rg"}},
        }
        spec = SimpleNamespace(name="az", access=SimpleNamespace(ssh_user=user, ssh_public_keys=()))
        cluster = SimpleNamespace(spec=spec, stack="az", mock=False, outputs=outputs)
        results = run_on_nodes(cluster, "echo via bastion $PROVISION_TEST_NODE", timeout=60)
    assert [(r.exit_code, r.stdout) for r in results] == [(0, "via bastion 0\n"), (0, "via bastion 1\n")], results
    assert worst_exit(results) == 0
    calls = log.read_text().splitlines()
    assert len(calls) == 2 and all("--name az-bastion --resource-group az-rg" in c for c in calls)
    assert {c.split("--target-ip-address ")[1].split()[0] for c in calls} == set(hosts)
    assert all("--resource-port 22" in c for c in calls)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(")")[-1].split()[0] == "Z")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
@pytest.mark.parametrize("signum", ["SIGKILL", "SIGTERM", "SIGHUP"])
def test_the_tunnel_stops_when_the_proxy_is_killed(tmp_path: Path, signum: str) -> None:
    """asyncssh SIGKILLs its ProxyCommand on close and OpenSSH sends SIGHUP: the az tunnel must not outlive it."""
    import signal
    import subprocess
    import time

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    az = bin_dir / "az"
    az.write_text(FAKE_AZ.format(python=sys.executable))
    az.chmod(0o755)
    pidfile = tmp_path / "az.pid"
    accepted = tmp_path / "az.accepted"
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "FAKE_AZ_LOG": str(tmp_path / "az.log"),
        "FAKE_NODES": "10.0.0.4=1",
        "FAKE_AZ_PIDFILE": str(pidfile),
        "FAKE_AZ_ACCEPTED": str(accepted),
        "PYTHONPATH": str(ROOT),
    }
    stderr = (tmp_path / "proxy.err").open("wb")
    proxy = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "provision.cli",
            "proxy",
            "azure-bastion",
            "--name",
            "b",
            "--resource-group",
            "g",
            "--host",
            "10.0.0.4",
        ],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=stderr,
    )
    try:
        for _ in range(600):  # the proxy is relaying once the fake az accepted its connection
            if accepted.exists() and pidfile.exists() and pidfile.read_text().strip():
                break
            time.sleep(0.05)
        tunnel = int(pidfile.read_text())
        proxy.send_signal(getattr(signal, signum))
        proxy.wait(timeout=30)
        stderr.close()
        said = (tmp_path / "proxy.err").read_text(errors="replace")
        # the proxy ends as the signal says (no abort at exit: "Fatal Python error", SIGABRT)
        assert proxy.returncode == (-9 if signum == "SIGKILL" else 128 + getattr(signal, signum)), said
        assert "Fatal Python error" not in said, said
        for _ in range(200):
            if not _alive(tunnel):
                break
            time.sleep(0.05)
        assert not _alive(tunnel), f"az network bastion tunnel (pid {tunnel}) outlived its proxy ({signum})"
    finally:
        stderr.close()
        proxy.kill()
        if pidfile.exists() and pidfile.read_text().strip() and _alive(int(pidfile.read_text())):
            os.kill(int(pidfile.read_text()), signal.SIGKILL)
