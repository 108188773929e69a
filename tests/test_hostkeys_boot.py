"""The node side: the host-keys boot step prints the public host keys on the console in cloud-init's block."""

from __future__ import annotations

import json
from pathlib import Path

import asyncssh
import pytest
from nodekit import files_of, plan_of, run_bootstrap, sandbox

from provision.clouds.consolekeys import console_host_keys, preferred
from provision.ops.nodes import mock_user_data


@pytest.mark.parametrize("stack", ["aws-p5-ci", "azure-ndh100-ci"])
def test_every_boot_the_console_shows_the_public_host_keys_and_never_a_private_one(stack: str, tmp_path: Path) -> None:
    text = mock_user_data(plan_of(stack))
    steps = json.loads(files_of(text)["/etc/provision/steps.json"])["steps"]
    step = next(s for s in steps if s["name"] == "host-keys")
    assert step["every_boot"] is True and step["critical"] is False
    root = sandbox(tmp_path, text)
    (root / "dev").mkdir(exist_ok=True)
    ssh = root / "etc/ssh"
    ssh.mkdir(parents=True, exist_ok=True)
    public = {}
    for kind, name in (("ssh-ed25519", "ed25519"), ("ecdsa-sha2-nistp256", "ecdsa")):
        key = asyncssh.generate_private_key(kind)
        (ssh / f"ssh_host_{name}_key").write_bytes(key.export_private_key())
        (ssh / f"ssh_host_{name}_key.pub").write_bytes(key.export_public_key())
        public[kind] = " ".join(key.export_public_key().decode().split()[:2])
    result = run_bootstrap(tmp_path, text, root=root)
    assert result["state"]["steps"]["host-keys"]["status"] == "ok"
    printed = (root / "dev/console").read_text()
    assert console_host_keys(printed) == [public["ssh-ed25519"], public["ecdsa-sha2-nistp256"]]
    assert preferred(console_host_keys(printed)) == public["ssh-ed25519"]
    assert "PRIVATE KEY" not in printed


def test_without_host_keys_the_step_fails_without_failing_the_boot(tmp_path: Path) -> None:
    text = mock_user_data(plan_of("aws-p5-ci"))
    result = run_bootstrap(tmp_path, text)
    assert result["state"]["steps"]["host-keys"]["status"] == "failed"
    assert "no ssh host keys" in result["output"] + json.dumps(result["state"])
