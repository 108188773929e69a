"""A Slurm cluster's controller host key is read from the cloud like the nodes' (by the instance the ``slurm`` output
names, on the outputs each shipped Slurm stack's program really exports), pinned as ``<name>-ctl``, and its ssh_config
entry then checks it strictly instead of trusting the first connection."""

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
    return f"Booting\n-----BEGIN SSH HOST KEY KEYS-----\n{key} root@host\n-----END SSH HOST KEY KEYS-----\nlogin: \n"


def _cluster(stack: str) -> Any:
    return SimpleNamespace(spec=stack_spec(stack), mock=False, outputs=shipped_preview(stack, stack=stack).outputs)


def _check(cluster: Any, keys: dict[str, str], ctl_id: str) -> None:
    name = cluster.spec.name
    found = read_from_cloud(cluster)
    assert found[f"{name}-ctl"] == keys[ctl_id]
    pinned = cloud_host_keys(cluster)
    assert pinned[f"{name}-ctl"] == keys[ctl_id]
    assert {a for a in pinned if a != f"{name}-ctl"} == {f"{name}-{r}" for r in range(cluster.spec.nodes or 2)}


def test_aws_controller_key_comes_from_its_ec2_console_output(monkeypatch: pytest.MonkeyPatch) -> None:
    from provision.clouds.aws import hostkeys as aws

    cluster = _cluster("aws-p5-16-slurm")
    ids = [*cluster.outputs["access"]["node_ids"], cluster.outputs["slurm"]["instance_id"]]
    keys = {i: _key() for i in ids}
    console = SimpleNamespace(
        get_console_output=lambda InstanceId, Latest=True: {  # noqa: N803 (boto3's parameter names)
            "Output": base64.b64encode(_console(keys[InstanceId]).encode()).decode()
        }
    )
    monkeypatch.setattr(aws, "ec2_client", lambda region: console)
    _check(cluster, keys, ids[-1])


def test_gcp_controller_key_comes_from_its_guest_attributes(monkeypatch: pytest.MonkeyPatch) -> None:
    from provision.clouds.gcp import hostkeys as gcp

    cluster = _cluster("gcp-a3-16-slurm")
    names = [*cluster.outputs["access"]["node_ids"], cluster.outputs["slurm"]["instance_id"]]
    keys = {n: _key() for n in names}

    def guest_attributes(project: str, zone: str, instance: str) -> dict[str, Any]:
        items = [{"namespace": "hostkeys", "key": "ssh-ed25519", "value": keys[instance].split()[1]}]
        return {"queryPath": "hostkeys/", "queryValue": {"items": items}}

    monkeypatch.setattr(gcp, "rest_fetch", guest_attributes)
    _check(cluster, keys, names[-1])
    # The controller publishes its keys there: the guest agent's attributes are on for it too.
    ctl = next(r for r in shipped_preview("gcp-a3-16-slurm").resources if r.name.endswith("-ctl"))
    assert ctl.inputs["metadata"]["enable-guest-attributes"] == "TRUE"


def test_alibaba_controller_key_comes_from_its_ecs_console_output(monkeypatch: pytest.MonkeyPatch) -> None:
    from provision.clouds.alibaba import hostkeys as alibaba

    cluster = _cluster("alibaba-gn8-16-slurm")
    ids = [*cluster.outputs["access"]["node_ids"], cluster.outputs["slurm"]["instance_id"]]
    keys = {i: _key() for i in ids}

    def console_output(region: str, instance_id: str) -> dict[str, Any]:
        return {"ConsoleOutput": base64.b64encode(_console(keys[instance_id]).encode()).decode()}

    monkeypatch.setattr(alibaba, "sdk_fetch", console_output)
    _check(cluster, keys, ids[-1])


def test_azure_controller_key_comes_from_its_vm_boot_diagnostics(monkeypatch: pytest.MonkeyPatch) -> None:
    from provision.clouds.azure import hostkeys as azure

    cluster = _cluster("azure-ndh100-16-slurm")
    sets, hosts = cluster.outputs["scale_sets"], cluster.outputs["hosts"]
    group, (vmss,) = sets["resource_group"], sets["names"]
    vm_name = cluster.outputs["slurm"]["instance_id"]
    keys = {"0": _key(), "1": _key(), vm_name: _key()}
    asked: list[tuple[str, str]] = []

    def uri(path: str) -> Any:
        return SimpleNamespace(serial_console_log_blob_uri=f"https://md.blob.core.windows.net/{path}/serial.log?sig=x")

    vms = SimpleNamespace(
        list=lambda g, s: iter(
            SimpleNamespace(instance_id=i, os_profile=SimpleNamespace(computer_name=hosts[int(i)])) for i in ("0", "1")
        ),
        retrieve_boot_diagnostics_data=lambda g, s, i, sas_uri_expiration_time_in_minutes: uri(i),
    )

    def vm_log(g: str, name: str, *, sas_uri_expiration_time_in_minutes: int) -> Any:
        asked.append((g, name))
        return uri(name)

    client = SimpleNamespace(
        virtual_machine_scale_set_vms=vms, virtual_machines=SimpleNamespace(retrieve_boot_diagnostics_data=vm_log)
    )
    monkeypatch.setattr(azure, "compute_client", lambda subscription: client)
    monkeypatch.setattr(azure, "download", lambda u: _console(keys[u.split("/")[-2]]))
    _check(cluster, keys, vm_name)
    assert set(asked) == {(group, vm_name)} and vmss  # its own VM, in the cluster's group


def test_a_pinned_controller_is_checked_strictly_in_its_ssh_config() -> None:
    from provision.ops.slurm_access import controller, controller_ssh_block

    stack = "aws-p5-16-slurm"
    outputs = shipped_preview(stack, stack=stack).outputs
    slurm = controller(outputs)
    assert slurm is not None
    pinned = controller_ssh_block(stack, slurm, outputs["access"], known_hosts="/kh", pinned={f"{stack}-ctl"})
    first_use = controller_ssh_block(stack, slurm, outputs["access"], known_hosts="/kh", pinned=set())
    assert "  StrictHostKeyChecking yes" in pinned.splitlines()
    assert "  StrictHostKeyChecking accept-new" in first_use.splitlines()
