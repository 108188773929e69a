"""``scheduler: slurm`` on each cloud under the strict mocked cloud: the shipped Slurm stack's graph has the controller
(private, encrypted, with the cluster's lifetime), the GPU nodes and the rendered Slurm files matching the plan, and
``provision ssh`` reaches the controller through the cluster's way in."""

from __future__ import annotations

import base64
import gzip
import re
from typing import Any

import pytest
from conftest import shipped_preview

#: stack -> the controller's resource type.
STACKS = {
    "aws-p5-16-slurm": "aws:ec2/instance:Instance",
    "gcp-a3-16-slurm": "gcp:compute/instance:Instance",
    "azure-ndh100-16-slurm": "azure-native:compute:VirtualMachine",
    "alibaba-gn8-16-slurm": "alicloud:ecs/instance:Instance",
}


def _cloud_config(ctl: Any) -> str:
    if "userDataBase64" in ctl.inputs:  # AWS: gzip + base64
        return gzip.decompress(base64.b64decode(ctl.inputs["userDataBase64"])).decode()
    if "userData" in ctl.inputs:  # Alibaba: gzip + base64
        return gzip.decompress(base64.b64decode(ctl.inputs["userData"])).decode()
    if "osProfile" in ctl.inputs:  # Azure: base64
        return base64.b64decode(ctl.inputs["osProfile"]["customData"]).decode()
    return str(ctl.inputs["metadata"]["user-data"])  # GCP


def _controller(result: Any, stack: str) -> Any:
    """The controller VM (on Alibaba the nodes are ECS instances too: the one named ``<cluster>-ctl``)."""
    (ctl,) = [r for r in result.of_type(STACKS[stack]) if r.name == f"{result.plan.name}-ctl"]
    return ctl


def _private_encrypted_expiring(stack: str, ctl: Any, plan: Any, result: Any) -> None:
    i = ctl.inputs
    if stack.startswith("aws"):
        assert i["associatePublicIpAddress"] is False and str(i["subnetId"]).startswith("subnet-")
        assert i["rootBlockDevice"]["encrypted"] is True
        assert i["instanceInitiatedShutdownBehavior"] == "terminate"
    elif stack.startswith("gcp"):
        assert all(not nic.get("accessConfigs") for nic in i["networkInterfaces"])  # no external IP
        assert i["scheduling"]["instanceTerminationAction"] == "DELETE"
        assert i["scheduling"]["terminationTime"] == plan.expires_at.strftime("%Y-%m-%dT%H:%M:%SZ")
    elif stack.startswith("alibaba"):
        assert i["internetMaxBandwidthOut"] == 0  # no public address, and the only EIP is the NAT gateway's:
        assert all(
            a.inputs["instanceType"] == "Nat" for a in result.of_type("alicloud:ecs/eipAssociation:EipAssociation")
        )
        assert i["systemDiskEncrypted"] is True and i["systemDiskCategory"] == "cloud_essd"
        assert i["autoReleaseTime"] == plan.expires_at.strftime("%Y-%m-%dT%H:%M:%SZ")
        assert i["instanceChargeType"] == "PostPaid" and not i.get("deploymentSetId")
    elif stack.startswith("azure"):
        (ref,) = i["networkProfile"]["networkInterfaces"]
        assert ref["deleteOption"] == "Delete" and i["storageProfile"]["osDisk"]["deleteOption"] == "Delete"
        assert i["storageProfile"]["osDisk"]["managedDisk"]["storageAccountType"] == "Premium_LRS"  # encrypted at rest
        assert i["identity"]["userAssignedIdentities"]  # the nodes' identity: its timer deletes the VM
        assert 'meta["name"]' in _cloud_config(ctl) and "/virtualMachines/" in _cloud_config(ctl)
        nic = result.one("azure-native:network:NetworkInterface")
        assert all(not c.get("publicIPAddress") for c in nic.inputs["ipConfigurations"])  # no public IP
        role = result.one("azure-native:authorization:RoleDefinition")
        assert "Microsoft.Compute/virtualMachines/delete" in role.inputs["permissions"][0]["actions"]


@pytest.mark.parametrize("stack", sorted(STACKS))
def test_controller_is_private_encrypted_and_dies_with_the_cluster(stack: str) -> None:
    result = shipped_preview(stack, stack=stack)
    ctl = _controller(result, stack)
    assert ctl.name == f"{result.plan.name}-ctl"
    _private_encrypted_expiring(stack, ctl, result.plan, result)
    cloud_config = _cloud_config(ctl)
    assert cloud_config.startswith("#cloud-config")
    assert f"\nhostname: {result.plan.name}-ctl\n" in cloud_config  # slurmctld's host is its SlurmctldHost
    accounting = "1" if result.plan.extra.slurm.accounting else "0"
    assert "SLURM_ROLE=controller" in cloud_config and f"SLURM_ACCOUNTING={accounting}" in cloud_config
    # The same timer as the nodes; Alibaba's nodes and controller have none: ECS releases them (autoReleaseTime).
    assert ("OnCalendar=" in cloud_config) is not stack.startswith("alibaba")


@pytest.mark.parametrize("stack", sorted(STACKS))
def test_rendered_files_match_the_plan(stack: str) -> None:
    result = shipped_preview(stack, stack=stack)
    name, gpu = result.plan.name, result.plan.offer.gpu.lower()
    slurm = result.outputs["slurm"]
    hosts = result.outputs["hosts"]
    assert slurm["address"] and slurm["address"] not in hosts
    conf, gres, topo = (slurm["files"][f] for f in ("slurm.conf", "gres.conf", "topology.conf"))
    assert re.search(rf"SlurmctldHost={name}-ctl\({re.escape(slurm['address'])}\)", conf)
    for rank, ip in enumerate(hosts):
        assert re.search(rf"NodeName={name}-{rank} NodeAddr={re.escape(ip)} .*Gres=gpu:{gpu}:8", conf)
    assert ("AccountingStorageType=accounting_storage/slurmdbd" in conf) == result.plan.extra.slurm.accounting
    assert f"NodeName={name}-[0-{len(hosts) - 1}] Name=gpu Type={gpu} File=/dev/nvidia[0-7]" in gres
    islands = [line for line in topo.splitlines() if line.startswith(("BlockName", "SwitchName")) and "Nodes=" in line]
    assert len(islands) == len(result.plan.islands) == 1 and f"{name}-[0-{len(hosts) - 1}]" in islands[0]


def test_ssh_config_has_the_aws_controller_through_ssm() -> None:
    from provision.ops.slurm_access import controller, controller_ssh_block, is_controller

    stack = "aws-p5-16-slurm"
    outputs = shipped_preview(stack, stack=stack).outputs
    slurm = controller(outputs)
    assert slurm is not None
    block = controller_ssh_block(stack, slurm, outputs["access"], identity_file="/k", known_hosts="/kh")
    lines = block.splitlines()
    assert lines[0] == f"Host {stack}-ctl" and f"  HostName {slurm['address']}" in lines
    assert f"  HostKeyAlias {stack}-ctl" in lines
    proxy = next(line for line in lines if line.startswith("  ProxyCommand "))
    assert f"--target {slurm['instance_id']}" in proxy and "AWS-StartSSHSession" in proxy
    public = controller_ssh_block(stack, slurm, {**outputs["access"], "via": "head"})
    assert f"  ProxyJump {stack}-0" in public.splitlines() and "ProxyCommand" not in public
    assert is_controller(stack, "ctl") and is_controller(stack, f"{stack}-ctl") and not is_controller(stack, "0")


def test_ssh_config_has_the_gcp_controller_through_iap() -> None:
    from provision.ops.slurm_access import controller, controller_ssh_block

    stack = "gcp-a3-16-slurm"
    result = shipped_preview(stack, stack=stack)
    slurm = controller(result.outputs)
    assert slurm is not None and slurm["instance_id"] == result.one(STACKS[stack]).outputs["name"]
    block = controller_ssh_block(result.plan.name, slurm, result.outputs["access"])
    proxy = next(line for line in block.splitlines() if line.startswith("  ProxyCommand "))
    assert f"start-iap-tunnel {slurm['instance_id']} %p" in proxy


def test_ssh_config_has_the_azure_controller_through_bastion() -> None:
    from provision.ops.slurm_access import controller, controller_ssh_block

    stack = "azure-ndh100-16-slurm"
    result = shipped_preview(stack, stack=stack)
    slurm = controller(result.outputs)
    assert slurm is not None and slurm["instance_id"] == f"{stack}-ctl"
    block = controller_ssh_block(result.plan.name, slurm, result.outputs["access"])
    lines = block.splitlines()
    assert f"  HostName {slurm['address']}" in lines  # its private IP: the Bastion's IP connect reaches it
    proxy = next(line for line in lines if line.startswith("  ProxyCommand "))
    assert f"azure-bastion --name {stack}-bastion" in proxy and "--host %h --port %p" in proxy


@pytest.mark.parametrize("stack", sorted(STACKS))
def test_shipped_slurm_stack_goes_up_and_down_on_the_mocked_cloud(
    stack: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from conftest import isolated_home
    from typer.testing import CliRunner

    from provision.cli.app import app
    from provision.engine.mockstate import MockStore

    home = isolated_home(tmp_path, monkeypatch)
    runner = CliRunner()
    up = runner.invoke(app, ["up", stack, "--mock", "--yes", "--json"])
    assert up.exit_code == 0, up.output
    state = MockStore(home).load(stack)
    assert (
        state is not None and sum(r.type == STACKS[stack] and r.name.endswith("-ctl") for r in state.resources) == 1
    )  # the controller
    down = runner.invoke(app, ["down", stack, "--mock", "--yes", "--json"])
    assert down.exit_code == 0, down.output
    after = MockStore(home).load(stack)
    assert after is None or not after.resources, json.dumps([r.type for r in after.resources])


def test_ssh_config_has_the_alibaba_controller_by_its_private_address() -> None:
    from provision.ops.slurm_access import controller, controller_ssh_block

    stack = "alibaba-gn8-16-slurm"
    result = shipped_preview(stack, stack=stack)
    slurm = controller(result.outputs)
    assert slurm is not None and slurm["instance_id"] == _controller(result, stack).id
    block = controller_ssh_block(result.plan.name, slurm, result.outputs["access"])
    lines = block.splitlines()
    # No private path on Alibaba: the allowed networks (VPN, Express Connect) reach its private IP directly.
    assert f"  HostName {slurm['address']}" in lines and not any("Proxy" in line for line in lines)
