"""read_from_cloud on the outputs a shipped stack's program really exports (mocked preview), per cloud.

Each cloud's reader is replaced by a fake fetcher in the documented shape of its API answer; the test
checks that the ids/names the program exports reach that reader and that the keys come back by rank.
"""

from __future__ import annotations

import base64
from types import SimpleNamespace
from typing import Any

import asyncssh
import pytest
from conftest import shipped_preview, stack_spec

from provision.ops.hostkeys import cloud_host_keys, read_from_cloud


def _key() -> str:
    return " ".join(asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode().split()[:2])


def _console(key: str) -> str:
    """cloud-init's keys_to_console block as a node prints it on its serial console at boot."""
    return f"Booting\n-----BEGIN SSH HOST KEY KEYS-----\n{key} root@node\n-----END SSH HOST KEY KEYS-----\nlogin: \n"


def _cluster(name: str) -> Any:
    """A cluster handle (spec + outputs) as `provision` has it after `up` of the shipped stack ``name``."""
    run = shipped_preview(name)
    return SimpleNamespace(spec=stack_spec(name), mock=False, outputs=run.outputs)


def test_an_alibaba_stack_exports_its_instance_ids_and_keys_are_read_through_ecs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from provision.clouds.alibaba import hostkeys as alibaba

    cluster = _cluster("alibaba-gn8-ci")
    ids = cluster.outputs["access"]["node_ids"]
    instances = [r for r in shipped_preview("alibaba-gn8-ci").resources if r.type == "alicloud:ecs/instance:Instance"]
    assert len(ids) == cluster.spec.nodes and ids == [
        next(r.id for r in instances if r.name == f"{cluster.spec.name}-node-{rank}") for rank in range(len(ids))
    ]
    keys = {i: _key() for i in ids}
    asked: list[tuple[str, str]] = []

    def console_output(region: str, instance_id: str) -> dict[str, Any]:  # GetInstanceConsoleOutput's body
        asked.append((region, instance_id))
        encoded = base64.b64encode(_console(keys[instance_id]).encode()).decode()
        return {"InstanceId": instance_id, "ConsoleOutput": encoded}

    monkeypatch.setattr(alibaba, "sdk_fetch", console_output)
    assert read_from_cloud(cluster) == {rank: keys[i] for rank, i in enumerate(ids)}
    assert asked == [(cluster.spec.region, i) for i in ids]
    assert cloud_host_keys(cluster) == {f"{cluster.spec.name}-{rank}": keys[i] for rank, i in enumerate(ids)}
