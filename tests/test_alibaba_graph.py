"""The Alibaba resource graph under the mocked cloud: nodes, eRDMA, placement, lifetime, security, storage."""

from __future__ import annotations

import base64
import dataclasses
import gzip
import importlib
import inspect
import ipaddress
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import assert_golden, golden_graph, preview, shipped_preview

from provision.catalog import load_catalog
from provision.clouds.alibaba.userdata import render as render_user_data
from provision.engine import mockrun as run_module
from provision.planning.bootstrap import materialize, parse
from provision.spec import load_spec
from provision.spec.errors import SpecError

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHByb3Zpc2lvbi1leGFtcGxlLWtleS1kby1ub3QtdXNl provision-example"
INSTANCE = "alicloud:ecs/instance:Instance"
DEPLOYMENT_SET = "alicloud:ecs/ecsDeploymentSet:EcsDeploymentSet"
RULE = "alicloud:ecs/securityGroupRule:SecurityGroupRule"
EIP_ASSOC = "alicloud:ecs/eipAssociation:EipAssociation"
KEY_PAIR = "alicloud:ecs/ecsKeyPair:EcsKeyPair"
RSA_KEY = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQCwcHJvdmlzaW9uLWV4YW1wbGUtcnNhLWtleQ== rsa-example"


def spec(**overrides: Any) -> Any:
    data: dict[str, Any] = {
        "name": "ali-graph",
        "cloud": "alibaba",
        "region": "cn-hangzhou",
        "zone": "cn-hangzhou-i",
        "instance_type": "ecs.ebmgn8v.48xlarge",
        "nodes": 3,
        "access": {"ssh_public_keys": [KEY], "allowed_cidrs": ["203.0.113.0/24"]},
        "storage": {"shared": {"kind": "nas", "tier": "Performance"}},
        "lifetime": {"ttl": "3h"},
    }
    data.update(overrides)
    return load_spec(data)


#: Regions the graph tests rely on, independent of what the data file records today (the golden tests
#: of the stacks use the packaged catalog as it is).
TEST_REGIONS = {
    "gn8": {"cn-hangzhou": {"zones": [], "sales_only": True}},
    "gn8v": {"cn-hangzhou": {"zones": [], "sales_only": True}},
    "gn7ex": {"cn-beijing": {"zones": ["cn-beijing-l"]}},
    "gn7e": {"cn-beijing": {"zones": ["cn-beijing-l"]}},
}


def _test_catalog() -> Any:
    base = load_catalog()
    rows = tuple(
        o.model_validate({**o.model_dump(), "regions": TEST_REGIONS[o.family]})
        if o.cloud == "alibaba" and o.family in TEST_REGIONS
        else o
        for o in base.instances
    )
    return dataclasses.replace(base, instances=rows)


@pytest.fixture(scope="module", autouse=True)
def test_catalog() -> Any:
    with pytest.MonkeyPatch.context() as mp:
        catalog = _test_catalog()
        mp.setattr("provision.clouds.base.load_catalog", lambda: catalog)
        yield catalog


@pytest.fixture(scope="module")
def gn8(test_catalog: Any) -> Any:
    return preview(spec())


def _args_class(type_token: str) -> Any:
    """The pulumi_alicloud ``*Args`` class of a type token, e.g. alicloud:ecs/instance:Instance."""
    module, cls = type_token.split(":")[1].split("/")[0], type_token.split(":")[2]
    return getattr(importlib.import_module(f"pulumi_alicloud.{module}"), f"{cls}Args")


# ---------------------------------------------------------------- nodes


def test_one_instance_per_node_and_no_per_nic_resources(gn8: Any) -> None:
    nodes = gn8.of_type(INSTANCE)
    assert [n.name for n in sorted(nodes, key=lambda n: n.name)] == [f"ali-graph-node-{i}" for i in range(3)]
    types = {r.type for r in gn8.resources}
    assert not any("networkInterface" in t or "launchTemplate" in t or "ess/" in t for t in types)
    assert all(n.inputs["instanceType"] == "ecs.ebmgn8v.48xlarge" for n in nodes)


def test_nodes_get_eris_in_high_performance_mode_on_both_cards(gn8: Any) -> None:
    for node in gn8.of_type(INSTANCE):
        assert node.inputs["networkInterfaceTrafficMode"] == "HighPerformance"
        assert node.inputs["networkCardIndex"] == 0
        secondary = node.inputs["networkInterfaces"]
        assert secondary["networkInterfaceTrafficMode"] == "HighPerformance"
        assert secondary["networkCardIndex"] == 1
        assert secondary["vswitchId"] == node.inputs["vswitchId"]
        assert secondary["securityGroupIds"] == node.inputs["securityGroups"]
        assert "enableJumboFrame" not in node.inputs  # not documented for ebmgn8v (test_cloudfix_alibaba)


def test_nodes_share_one_lowlatency_deployment_set(gn8: Any) -> None:
    (ds,) = gn8.of_type(DEPLOYMENT_SET)
    assert ds.inputs["strategy"] == "LowLatency"
    assert {n.inputs["deploymentSetId"] for n in gn8.of_type(INSTANCE)} == {ds.id}


def test_45_nodes_spread_over_three_deployment_sets() -> None:
    result = preview(spec(nodes=45, storage={}, lifetime={}))
    sets = {d.id for d in result.of_type(DEPLOYMENT_SET)}
    assert len(sets) == 3
    per_set: dict[str, int] = {}
    for node in result.of_type(INSTANCE):
        per_set[node.inputs["deploymentSetId"]] = per_set.get(node.inputs["deploymentSetId"], 0) + 1
    assert set(per_set) == sets and sorted(per_set.values()) == [15, 15, 15]


def test_every_node_releases_itself_at_the_expiry(gn8: Any) -> None:
    assert {n.inputs["autoReleaseTime"] for n in gn8.of_type(INSTANCE)} == {"2026-11-29T15:00:00Z"}
    assert {n.inputs["instanceChargeType"] for n in gn8.of_type(INSTANCE)} == {"PostPaid"}
    assert gn8.outputs["expires_at"] == "2026-11-29T15:00:00Z"


def test_subscription_nodes_carry_no_auto_release_time() -> None:
    result = preview(spec(lifetime={}, alibaba={"subscription_months": 1}, storage={}))
    for node in result.of_type(INSTANCE):
        assert "autoReleaseTime" not in node.inputs
        assert node.inputs["instanceChargeType"] == "PrePaid" and node.inputs["period"] == 1
        # The provider refuses to delete a PrePaid instance without force_delete, so `down` would fail.
        assert node.inputs["forceDelete"] is True


def test_disks_are_encrypted_with_the_kms_key(gn8: Any) -> None:
    result = preview(spec(alibaba={"kms_key_id": "key-hzz62c7dd9d", "data_disk_gib": 500}, storage={}))
    for node in result.of_type(INSTANCE):
        assert node.inputs["systemDiskEncrypted"] is True
        assert node.inputs["systemDiskKmsKeyId"] == "key-hzz62c7dd9d"
        (disk,) = node.inputs["dataDisks"]
        assert disk["encrypted"] is True and disk["kmsKeyId"] == "key-hzz62c7dd9d" and disk["deleteWithInstance"]
    for node in gn8.of_type(INSTANCE):
        assert node.inputs["systemDiskEncrypted"] is True and "dataDisks" not in node.inputs


def test_nodes_have_no_public_ip_and_log_in_by_key_only(gn8: Any) -> None:
    # The spec's only key is ed25519, which ECS ImportKeyPair rejects: no key pair, login through user data.
    assert not gn8.of_type(KEY_PAIR)
    for node in gn8.of_type(INSTANCE):
        assert node.inputs["internetMaxBandwidthOut"] == 0
        assert "allocatePublicIp" not in node.inputs
        assert "password" not in node.inputs and "kmsEncryptedPassword" not in node.inputs
        assert "keyName" not in node.inputs
        assert KEY in _text(node.inputs["userData"])
    # The only EIP is the NAT gateway's: nothing is associated with a node.
    (assoc,) = gn8.of_type(EIP_ASSOC)
    assert assoc.inputs["instanceType"] == "Nat"
    assert gn8.outputs["head_node"] == gn8.outputs["hosts"][0]


def test_an_rsa_key_becomes_the_nodes_key_pair() -> None:
    result = preview(spec(access={"ssh_public_keys": [KEY, RSA_KEY], "allowed_cidrs": []}, storage={}))
    (key,) = result.of_type(KEY_PAIR)
    assert key.inputs["publicKey"] == RSA_KEY
    assert {n.inputs["keyName"] for n in result.of_type(INSTANCE)} == {key.inputs["keyPairName"]}


def test_public_head_node_gets_the_only_node_eip() -> None:
    result = preview(
        spec(access={"ssh_public_keys": [KEY], "allowed_cidrs": ["203.0.113.0/24"], "public_head_node": True})
    )
    node0 = next(n for n in result.of_type(INSTANCE) if n.name.endswith("-node-0"))
    to_nodes = [a for a in result.of_type(EIP_ASSOC) if a.inputs.get("instanceType") != "Nat"]
    assert [a.inputs["instanceId"] for a in to_nodes] == [node0.id]
    assert ipaddress.ip_address(result.outputs["head_node"]) in ipaddress.ip_network("198.51.100.0/24")


def test_nat_gateway_gives_egress_to_the_node_vswitch(gn8: Any) -> None:
    nat = gn8.one("alicloud:vpc/natGateway:NatGateway")
    assert nat.inputs["natType"] == "Enhanced" and nat.inputs["networkType"] == "internet"
    snat = gn8.one("alicloud:vpc/snatEntry:SnatEntry")
    vsw = gn8.one("alicloud:vpc/switch:Switch")
    eip = gn8.one("alicloud:ecs/eipAddress:EipAddress")
    assert snat.inputs["sourceVswitchId"] == vsw.id and snat.inputs["snatIp"] == eip.outputs["ipAddress"]
    assert snat.inputs["snatTableId"] == nat.outputs["snatTableIds"]
    assert vsw.inputs["zoneId"] == "cn-hangzhou-i" and vsw.inputs["cidrBlock"] == "10.0.0.0/18"


# ---------------------------------------------------------------- security


def test_security_group_is_open_inside_and_ssh_only_from_allowed_cidrs(gn8: Any) -> None:
    sg = gn8.one("alicloud:ecs/securityGroup:SecurityGroup")
    assert sg.inputs["innerAccessPolicy"] == "Accept"
    (rule,) = gn8.of_type(RULE)
    assert rule.inputs["securityGroupId"] == sg.id
    assert (rule.inputs["type"], rule.inputs["ipProtocol"], rule.inputs["portRange"]) == ("ingress", "tcp", "22/22")
    assert rule.inputs["cidrIp"] == "203.0.113.0/24" and rule.inputs["nicType"] == "intranet"


@pytest.mark.parametrize(
    ("cidrs", "expected"),
    [([], []), (["203.0.113.0/24", "2001:db8::/32"], [("cidrIp", "203.0.113.0/24"), ("ipv6CidrIp", "2001:db8::/32")])],
)
def test_ssh_rules_follow_allowed_cidrs_and_never_the_world(cidrs: list[str], expected: list[tuple[str, str]]) -> None:
    result = preview(spec(access={"ssh_public_keys": [KEY], "allowed_cidrs": cidrs}, storage={}))
    got = sorted((k, r.inputs[k]) for r in result.of_type(RULE) for k in ("cidrIp", "ipv6CidrIp") if k in r.inputs)
    assert got == sorted(expected)
    assert not any(v in ("0.0.0.0/0", "::/0") for _, v in got)


def test_every_taggable_resource_carries_the_cluster_tags(gn8: Any) -> None:
    tagged = 0
    for r in gn8.resources:
        if not r.custom:
            continue
        if "tags" in inspect.signature(_args_class(r.type).__init__).parameters:
            tagged += 1
            assert r.inputs["tags"].items() >= gn8.plan.tags.items(), r.name
            assert r.inputs["tags"]["provision-expires-at"] == "20261129t1500z"
    assert tagged >= 8  # vpc, vswitch, sg, nat, eip, key pair, file system, the nodes
    for node in gn8.of_type(INSTANCE):
        assert node.inputs["volumeTags"] == gn8.plan.tags


def test_user_data_is_base64_small_and_holds_no_secret(gn8: Any) -> None:
    for node in gn8.of_type(INSTANCE):
        encoded = node.inputs["userData"]
        assert len(encoded) < 32 * 1024
        text = _text(encoded)
        assert "PRIVATE KEY" not in text and "password" not in text.lower()
        assert "ERDMA_INSTALLER_SHA256=" in text and "sha256sum -c" in text and "install.sh --batch" in text
        assert "MTU=1400" in text and "export NCCL_IB_HCA=erdma" in text  # ebmgn8v: no jumbo frames


def test_user_data_scripts_are_valid_bash(gn8: Any) -> None:
    doc = parse(_text(gn8.of_type(INSTANCE)[0].inputs["userData"]))
    scripts = [f["content"] for f in doc["write_files"] if f["content"].startswith("#!/bin/bash")]
    assert len(scripts) > 5
    for script in scripts:
        subprocess.run(["bash", "-n"], input=script, text=True, check=True)


def test_login_keys_go_to_the_users_real_home(gn8: Any) -> None:
    # With ed25519 keys only, authorized_keys is the sole way in: it must land in root's /root, not /home/root.
    root = gn8.plan.model_copy(update={"access": gn8.plan.access.model_copy(update={"ssh_user": "root"})})
    setup = render_user_data(root)
    assert "/home/root" not in setup and 'getent passwd "$SSH_USER"' in setup and "SSH_USER=root" in setup


def test_erdma_runs_in_roce_compat_mode_at_every_boot(gn8: Any) -> None:
    # nccl_env selects RoCEv2 GIDs, which erdma exposes in compat mode (Alibaba's eRDMA controller loads the
    # GPU driver with compat_mode=Y); modprobe.d keeps it across reboots.
    text = _text(gn8.of_type(INSTANCE)[0].inputs["userData"])
    assert "options erdma compat_mode=Y" in text and "modprobe erdma compat_mode=Y" in text


def _text(encoded: str) -> str:
    raw = base64.b64decode(encoded)
    return (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode()


def test_network_setup_is_reapplied_at_every_boot(gn8: Any) -> None:
    # User data runs once, and the setup may reboot the node to load drivers: MTU and the secondary ERI's
    # address must come back after any reboot, so they live in a boot-time unit, not in one-off `ip` calls.
    text = _text(gn8.of_type(INSTANCE)[0].inputs["userData"])
    files = {f["path"]: f["content"] for f in parse(text)["write_files"]}
    steps = json.loads(files["/etc/provision/steps.json"])
    assert next(s for s in steps["steps"] if s["name"] == "network")["every_boot"] is True
    assert "/usr/local/lib/provision/provision-net" in text
    assert "dhclient" not in text  # a DHCP default route on eth1 would take eth0's traffic


def test_network_script_gives_the_secondary_eri_its_address_below_eth0s_routes(gn8: Any, tmp_path: Path) -> None:
    node = tmp_path / "node"
    materialize(render_user_data(gn8.plan), node)
    script = node / "usr/local/lib/provision/provision-net"
    sysfs, fakebin, log = tmp_path / "net", tmp_path / "bin", tmp_path / "calls"
    for ifname, mac in (("eth0", "00:16:3e:00:00:01"), ("eth1", "00:16:3e:00:00:02")):
        (sysfs / ifname).mkdir(parents=True)
        (sysfs / ifname / "address").write_text(mac + "\n")
    fakebin.mkdir()
    (fakebin / "ip").write_text(
        f'#!/bin/bash\necho "ip $*" >> {log}\n[ "$*" = "-4 addr show dev eth0" ] && echo "inet 10.0.0.1/18"\nexit 0\n'
    )
    metadata = {
        "00:16:3e:00:00:02/primary-ip-address": "10.0.0.9",
        "00:16:3e:00:00:02/vswitch-cidr-block": "10.0.0.0/18",
    }
    cases = "\n".join(f'  */{k}) echo "{v}";;' for k, v in metadata.items())
    (fakebin / "curl").write_text(
        f'#!/bin/bash\ncase "$*" in *api/token*) echo token; exit 0;; esac\ncase "${{@: -1}}" in\n{cases}\n'
        "  *) exit 22;;\nesac\n"
    )
    for tool in ("ip", "curl"):
        (fakebin / tool).chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{fakebin}:{os.environ['PATH']}",
        "PROVISION_NET_SYSFS": str(sysfs),
        "PROVISION_ROOT": str(node),
    }
    subprocess.run(["bash", str(script)], env={**env, "PROVISION_NET_METADATA": "http://md/latest"}, check=True)
    calls = log.read_text().splitlines()
    assert "ip link set dev eth0 mtu 1400" in calls and "ip link set dev eth1 mtu 1400" in calls
    assert "ip addr add 10.0.0.9/18 dev eth1 noprefixroute" in calls
    assert "ip route replace 10.0.0.0/18 dev eth1 metric 200" in calls
    assert not any(c.startswith(("ip addr add", "ip route")) and "eth0" in c for c in calls)


# ---------------------------------------------------------------- storage


def test_nas_is_reachable_only_from_the_node_vswitch(gn8: Any) -> None:
    fs = gn8.one("alicloud:nas/fileSystem:FileSystem")
    assert (fs.inputs["fileSystemType"], fs.inputs["protocolType"], fs.inputs["storageType"]) == (
        "standard",
        "NFS",
        "Performance",
    )
    assert fs.inputs["encryptType"] == 1 and "capacity" not in fs.inputs
    rule = gn8.one("alicloud:nas/accessRule:AccessRule")
    assert rule.inputs["sourceCidrIp"] == gn8.plan.extra.vswitch_cidr
    assert (rule.inputs["rwAccessType"], rule.inputs["userAccessType"]) == ("RDWR", "no_squash")
    target = gn8.one("alicloud:nas/mountTarget:MountTarget")
    group = gn8.one("alicloud:nas/accessGroup:AccessGroup")
    assert target.inputs["accessGroupName"] == group.inputs["accessGroupName"] == rule.inputs["accessGroupName"]
    assert target.inputs["vswitchId"] == gn8.one("alicloud:vpc/switch:Switch").id
    shared = gn8.outputs["shared_fs"]
    assert shared["source"] == f"{target.outputs['mountTargetDomain']}:/"
    assert shared["mount_command"].startswith("sudo mkdir -p /shared && sudo mount -t nfs -o vers=3,")
    text = _text(gn8.of_type(INSTANCE)[0].inputs["userData"])
    # The nodes do not wait for the mount target: they find it by the file system's description at boot.
    assert shared["source"] not in text and f"FS_DESCRIPTION={fs.inputs['description']}" in text


def test_cpfs_gets_a_protocol_service_export_in_the_node_network() -> None:
    result = preview(spec(storage={"shared": {"kind": "cpfs", "tier": "advance_200", "size_gib": 7200}}))
    fs = result.one("alicloud:nas/fileSystem:FileSystem")
    vsw, vpc = result.one("alicloud:vpc/switch:Switch"), result.one("alicloud:vpc/network:Network")
    assert fs.inputs["fileSystemType"] == "cpfs" and fs.inputs["storageType"] == "advance_200"
    assert fs.inputs["capacity"] == 7200 and fs.inputs["zoneId"] == "cn-hangzhou-i"
    assert (fs.inputs["vpcId"], fs.inputs["vswitchId"]) == (vpc.id, vsw.id)
    service = result.one("alicloud:nas/protocolService:ProtocolService")
    assert (service.inputs["protocolType"], service.inputs["protocolSpec"]) == ("NFS", "General")
    export = result.one("alicloud:nas/protocolMountTarget:ProtocolMountTarget")
    assert export.inputs["protocolServiceId"] == service.outputs["protocolServiceId"] and export.inputs["path"] == "/"
    shared = result.outputs["shared_fs"]
    assert shared["export_id"] == export.outputs["exportId"] and fs.id in shared["lookup_command"]
    assert "${CPFS_EXPORT_DOMAIN}" in shared["mount_command"]


def test_extreme_nas_has_a_capacity_and_mounts_share() -> None:
    result = preview(spec(storage={"shared": {"kind": "nas-extreme", "size_gib": 100}}))
    fs = result.one("alicloud:nas/fileSystem:FileSystem")
    assert fs.inputs["fileSystemType"] == "extreme" and fs.inputs["capacity"] == 100
    assert result.outputs["shared_fs"]["source"].endswith(".extreme.nas.aliyuncs.com:/share")


# ---------------------------------------------------------------- image, outputs, GN7


def test_image_is_looked_up_once_and_exported_as_image_pin(gn8: Any) -> None:
    (call,) = [c for c in gn8.calls if c[0] == "alicloud:ecs/getImages:getImages"]
    assert call[1]["owners"] == "system" and call[1]["instanceType"] == "ecs.ebmgn8v.48xlarge"
    assert {n.inputs["imageId"] for n in gn8.of_type(INSTANCE)} == {gn8.outputs["image_pin"]}


def test_hostfile_lists_private_ips_from_the_vswitch_by_rank(gn8: Any) -> None:
    net = ipaddress.ip_network(gn8.plan.extra.vswitch_cidr)
    assert len(gn8.outputs["hosts"]) == 3 and all(ipaddress.ip_address(ip) in net for ip in gn8.outputs["hosts"])
    assert gn8.outputs["hostfile"].splitlines()[0] == f"{gn8.outputs['hosts'][0]} slots=8"


@pytest.mark.parametrize(
    ("instance_type", "eri", "secondary_eri"),
    [("ecs.ebmgn7ex.32xlarge", True, True), ("ecs.gn7e-c16g1.32xlarge", False, False)],
)
def test_gn7_types_come_from_the_same_code(instance_type: str, eri: bool, secondary_eri: bool) -> None:
    result = preview(spec(instance_type=instance_type, region="cn-beijing", zone="cn-beijing-l"))
    for node in result.of_type(INSTANCE):
        assert node.inputs["instanceType"] == instance_type
        assert ("networkInterfaceTrafficMode" in node.inputs) is eri
        assert ("networkInterfaces" in node.inputs) is secondary_eri  # ebmgn7ex: up to 2 eRDMA devices
        assert "networkCardIndex" not in node.inputs  # card indices unpublished for GN7: ECS chooses
        assert "enableJumboFrame" not in node.inputs  # 7th generation: no jumbo frames
    assert result.plan.image.family == "ubuntu_22_04_x64"


# ---------------------------------------------------------------- a bad spec creates nothing


def test_bad_spec_creates_no_resource(monkeypatch: pytest.MonkeyPatch) -> None:
    created: list[Any] = []

    class Recording(run_module.CloudMocks):
        def __init__(self, *a: Any, **kw: Any) -> None:
            super().__init__(*a, **kw)
            created.append(self)

    monkeypatch.setattr(run_module, "CloudMocks", Recording)
    bad = spec(storage={"shared": {"kind": "cpfs-lingjun", "size_gib": 10240}}, zone=None)
    with pytest.raises(SpecError) as err:
        preview(bad)
    assert {p.path for p in err.value.problems} >= {"storage.shared.kind", "zone"}
    assert all(not m.ledger for m in created)


# ---------------------------------------------------------------- golden graphs of the stacks


@pytest.mark.parametrize("stack", ["alibaba-gn8-64", "alibaba-gn8-ci", "alibaba-gn8-16-slurm"])
def test_stack_graph_matches_golden(stack: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("provision.clouds.base.load_catalog", load_catalog)  # the packaged data, as deployed
    graph = golden_graph(shipped_preview(stack, stack=stack))
    # Registration order follows Pulumi's async scheduling, which varies between runs: pin the set, not the order.
    graph["resources"].sort(key=lambda r: (r["type"], r["name"]))
    assert_golden(stack, graph)
