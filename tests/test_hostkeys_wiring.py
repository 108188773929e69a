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


class FakeScaleSetVms:
    """``ComputeManagementClient.virtual_machine_scale_set_vms`` in the SDK's shape (azure-mgmt-compute).

    ``list(resource_group_name, virtual_machine_scale_set_name)`` yields ``VirtualMachineScaleSetVM`` s
    (``instance_id``, ``os_profile.computer_name``); ``retrieve_boot_diagnostics_data(resource_group_name,
    vm_scale_set_name, instance_id, sas_uri_expiration_time_in_minutes=)`` returns a
    ``RetrieveBootDiagnosticsDataResult`` (``console_screenshot_blob_uri``, ``serial_console_log_blob_uri``).
    """

    def __init__(self, vms: dict[tuple[str, str], list[tuple[str, str]]]) -> None:
        self.vms, self.asked = vms, []  # (group, scale set) -> [(instance id, computer name)]

    def list(self, resource_group_name: str, virtual_machine_scale_set_name: str) -> Any:
        for instance_id, name in self.vms[(resource_group_name, virtual_machine_scale_set_name)]:
            yield SimpleNamespace(instance_id=instance_id, os_profile=SimpleNamespace(computer_name=name))

    def retrieve_boot_diagnostics_data(
        self,
        resource_group_name: str,
        vm_scale_set_name: str,
        instance_id: str,
        sas_uri_expiration_time_in_minutes: int,
    ) -> Any:
        self.asked.append((resource_group_name, vm_scale_set_name, instance_id))
        uri = f"https://md-x.blob.core.windows.net/{vm_scale_set_name}/{instance_id}/serialconsole.log?sig=x"
        return SimpleNamespace(console_screenshot_blob_uri=None, serial_console_log_blob_uri=uri)


def test_an_azure_stack_names_its_scale_sets_and_keys_are_read_from_each_vms_serial_log(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from provision.clouds.azure import hostkeys as azure

    cluster = _cluster("azure-ndh100-ci")
    sets, hosts = cluster.outputs["scale_sets"], cluster.outputs["hosts"]
    group, (vmss,) = sets["resource_group"], sets["names"]
    subscription = sets["resource_group_id"].split("/")[2]
    # Instance ids are the scale set's (not ranks); the list comes out of rank order, with a VM of no rank.
    listed = [("7", hosts[1]), ("3", hosts[0]), ("9", "someone-else000009")]
    vms = FakeScaleSetVms({(group, vmss): listed})
    keys = {instance_id: _key() for instance_id, _ in listed}
    made: list[str] = []

    def client(sub: str) -> Any:
        made.append(sub)
        return SimpleNamespace(virtual_machine_scale_set_vms=vms)

    def blob(uri: str) -> str:
        return _console(keys[uri.split("/")[-2]])

    monkeypatch.setattr(azure, "compute_client", client)
    monkeypatch.setattr(azure, "download", blob)
    assert read_from_cloud(cluster) == {0: keys["3"], 1: keys["7"]}
    assert made == [subscription]
    assert vms.asked == [(group, vmss, "7"), (group, vmss, "3")]  # the VM of no rank is not read
    assert cloud_host_keys(cluster) == {f"{cluster.spec.name}-0": keys["3"], f"{cluster.spec.name}-1": keys["7"]}


def test_a_gcp_stack_s_outputs_say_where_its_nodes_are_without_the_spec_naming_a_zone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from provision.clouds.gcp import hostkeys as gcp

    outputs = shipped_preview("gcp-a3-ci").outputs
    names = outputs["access"]["node_ids"]
    # The spec as `provision` may hold it: no zone and no project of its own.
    spec = SimpleNamespace(name="gcp-ci", cloud="gcp", region="us-central1", zone=None)
    cluster = SimpleNamespace(spec=spec, mock=False, outputs=outputs)
    keys = {n: _key() for n in names}
    asked: list[tuple[str, str, str]] = []

    def guest_attributes(project: str, zone: str, instance: str) -> dict[str, Any]:  # getGuestAttributes' body
        asked.append((project, zone, instance))
        items = [{"namespace": "hostkeys", "key": "ssh-ed25519", "value": keys[instance].split()[1]}]
        return {"kind": "compute#guestAttributes", "queryPath": "hostkeys/", "queryValue": {"items": items}}

    monkeypatch.setattr(gcp, "rest_fetch", guest_attributes)
    assert read_from_cloud(cluster) == {rank: keys[n] for rank, n in enumerate(names)}
    # The MIG's zone and the project, as the instances' internal DNS names in `hosts` report them.
    assert asked == [("my-ml-project", "us-central1-a", n) for n in names]
    assert [h.split(".")[1] for h in outputs["hosts"]] == ["us-central1-a"] * len(names)
