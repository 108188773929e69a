"""``scheduler: slurm`` on AWS under the strict mocked cloud: the shipped stack's graph has the controller (private,
encrypted, with the cluster's lifetime), the GPU gang and the rendered Slurm files matching the plan."""

from __future__ import annotations

import base64
import gzip
import re

from conftest import shipped_preview

STACK = "aws-p5-16-slurm"
INSTANCE = "aws:ec2/instance:Instance"


def test_controller_is_private_encrypted_and_dies_with_the_cluster() -> None:
    result = shipped_preview(STACK)
    ctl = result.one(INSTANCE)
    assert ctl.name == f"{STACK}-ctl"
    assert ctl.inputs["associatePublicIpAddress"] is False
    assert ctl.inputs["rootBlockDevice"]["encrypted"] is True
    assert ctl.inputs["instanceInitiatedShutdownBehavior"] == "terminate"
    assert str(ctl.inputs["subnetId"]).startswith("subnet-")
    cloud_config = gzip.decompress(base64.b64decode(ctl.inputs["userDataBase64"])).decode()
    assert cloud_config.startswith("#cloud-config")
    assert "SLURM_ROLE=controller" in cloud_config and "SLURM_ACCOUNTING=1" in cloud_config
    assert "lifetime" in cloud_config  # the same shutdown timer as the nodes


def test_rendered_files_match_the_plan() -> None:
    result = shipped_preview(STACK)
    slurm = result.outputs["slurm"]
    hosts = result.outputs["hosts"]
    assert slurm["address"] == result.one(INSTANCE).outputs["privateIp"] and slurm["address"] not in hosts
    conf, gres, topo = (slurm["files"][f] for f in ("slurm.conf", "gres.conf", "topology.conf"))
    assert re.search(rf"SlurmctldHost={STACK}-ctl\({re.escape(slurm['address'])}\)", conf)
    for rank, ip in enumerate(hosts):
        assert re.search(rf"NodeName={STACK}-{rank} NodeAddr={re.escape(ip)} .*Gres=gpu:h100:8", conf)
    assert "AccountingStorageType=accounting_storage/slurmdbd" in conf
    assert f"NodeName={STACK}-[0-1] Name=gpu Type=h100 File=/dev/nvidia[0-7]" in gres
    islands = [line for line in topo.splitlines() if line.startswith(("BlockName", "SwitchName")) and "Nodes=" in line]
    assert len(islands) == 1 and f"{STACK}-[0-1]" in islands[0]


def test_ssh_config_has_the_controller_through_ssm() -> None:
    from provision.ops.slurm_access import controller, controller_ssh_block, is_controller

    outputs = shipped_preview(STACK).outputs
    slurm = controller(outputs)
    assert slurm is not None
    block = controller_ssh_block(STACK, slurm, outputs["access"], identity_file="/k", known_hosts="/kh")
    lines = block.splitlines()
    assert lines[0] == f"Host {STACK}-ctl" and f"  HostName {slurm['address']}" in lines
    assert f"  HostKeyAlias {STACK}-ctl" in lines
    proxy = next(line for line in lines if line.startswith("  ProxyCommand "))
    assert f"--target {slurm['instance_id']}" in proxy and "AWS-StartSSHSession" in proxy
    public = controller_ssh_block(STACK, slurm, {**outputs["access"], "via": "head"})
    assert f"  ProxyJump {STACK}-0" in public.splitlines() and "ProxyCommand" not in public
    assert is_controller(STACK, "ctl") and is_controller(STACK, f"{STACK}-ctl") and not is_controller(STACK, "0")
