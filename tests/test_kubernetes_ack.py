"""scheduler: kubernetes on Alibaba (ACK): the plan, its refusals, the graph under the strict mocked cloud."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
from conftest import preview, shipped_preview
from strict_helpers import one, register, violations_of
from test_kubernetes_plan import plan_of, problems, variant

from provision.clouds.alibaba.strict_ack import ADDON, CLUSTER, POOL

STACK = "alibaba-gn8-64-ack"
PV = "kubernetes:core/v1:PersistentVolume"


@pytest.fixture(scope="module")
def ack() -> Any:
    return shipped_preview(STACK, stack=STACK)


def test_ack_plan_is_a_pro_cluster_with_an_erdma_gpu_pool_and_prices_the_control_plane() -> None:
    p = plan_of(variant(STACK))
    k = p.kubernetes
    assert k is not None and k.control_plane.service == "ack" and k.control_plane.hourly_usd == 0.09
    assert (k.gpu_pool.nodes, k.gpu_pool.instance_type, k.gpu_pool.fabric_devices_per_node) == (
        8,
        "ecs.ebmgn8v.48xlarge",
        2,
    )
    assert k.gpu_pool.placement == "LowLatency deployment set" and k.system_pool.nodes == 2
    assert {a.name for a in k.addons} >= {"ack-erdma-controller", "csi-plugin", "kueue", "kubeflow-trainer"}
    assert k.job.resources == {"nvidia.com/gpu": "8", "aliyun/erdma": "1"}
    assert k.job.env["NCCL_IB_HCA"] == "erdma" and k.job.queue_quota["aliyun/erdma"] == "8"
    # The VM path's image and MTU notes do not apply to ACK's nodes.
    assert not any("jumbo" in w or "image is resolved" in w for w in p.warnings)


def test_ack_refuses_a_lifetime_cpfs_a_short_version_an_overlapping_vpc_and_no_rsa_key_all_at_once() -> None:
    spec = variant(
        STACK,
        lifetime={"ttl": "12h"},
        storage={"shared": {"kind": "cpfs", "tier": "advance_200", "size_gib": 36000, "mount": "/shared"}},
        scheduler={"kind": "kubernetes", "version": "1.34"},
        alibaba={"vpc_cidr": "172.16.0.0/12"},
        access={"ssh_public_keys": ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHByb3Zpc2lvbi1leGFtcGxl x"]},
    )
    found = problems(spec)
    assert "release time" in found["lifetime"]
    assert "protocol export" in found["storage.shared.kind"]
    assert "full ACK version" in found["scheduler.version"]
    assert "overlaps ACK's" in found["alibaba.vpc_cidr"] and "outside the VPC" in found["alibaba.vpc_cidr"]
    assert "RSA or ECDSA" in found["access.ssh_public_keys"]


def test_ack_pool_over_one_deployment_set_goes_without_and_says_so() -> None:
    p = plan_of(variant(STACK, gpus=168))  # 21 nodes: a LowLatency set holds 20
    assert p.kubernetes.gpu_pool.nodes == 21 and not p.kubernetes.extra.deployment_set
    assert any("no LowLatency deployment set" in w for w in p.warnings)
    assert "capacity.type" in problems(variant(STACK, capacity={"type": "reservation", "reservation": "x"}))


def test_ack_cluster_uses_the_stacks_vswitch_security_group_and_nat_with_flannel_outside_the_vpc(ack: Any) -> None:
    c = ack.one(CLUSTER).inputs
    assert c["clusterSpec"] == "ack.pro.small" and c["newNatGateway"] is False
    assert c["vswitchIds"] == [ack.one("alicloud:vpc/switch:Switch").id]
    assert c["securityGroupId"] == ack.one("alicloud:ecs/securityGroup:SecurityGroup").id
    assert {a["name"] for a in c["addons"]} == {"flannel", "csi-plugin", "csi-provisioner"}
    assert (c["podCidr"], c["serviceCidr"]) == ("172.20.0.0/16", "172.21.0.0/20")
    rules = [r.inputs for r in ack.of_type("alicloud:ecs/securityGroupRule:SecurityGroupRule")]
    assert any(r["cidrIp"] == c["podCidr"] and r["ipProtocol"] == "all" for r in rules)


def test_ack_gpu_pool_pins_the_driver_taints_the_gpus_and_packs_the_nodes(ack: Any) -> None:
    pools = {r.inputs["nodePoolName"]: r.inputs for r in ack.of_type(POOL)}
    gpu = pools["gpu"]
    assert gpu["desiredSize"] == "8" and gpu["instanceTypes"] == ["ecs.ebmgn8v.48xlarge"]
    assert gpu["imageType"] == "AliyunLinux3" and gpu["spotStrategy"] == "NoSpot"
    labels = {x["key"]: x["value"] for x in gpu["labels"]}
    assert labels == {"provision-pool": "gpu", "ack.aliyun.com/nvidia-driver-version": "550.144.03"}
    assert gpu["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    ds = ack.one("alicloud:ecs/ecsDeploymentSet:EcsDeploymentSet")
    assert gpu["deploymentSetId"] == ds.id and ds.inputs["strategy"] == "LowLatency"
    key = ack.one("alicloud:ecs/ecsKeyPair:EcsKeyPair").outputs["keyPairName"]
    assert gpu["keyName"] == pools["system"]["keyName"] == key
    assert pools["system"]["desiredSize"] == "2" and "taints" not in pools["system"]


def test_ack_erdma_controller_exposes_the_devices_and_the_queue_covers_them(ack: Any) -> None:
    addon = ack.one(ADDON).inputs
    assert addon["name"] == "ack-erdma-controller"
    assert json.loads(addon["config"]) == {"preferDriver": "ofed", "allocateAllDevices": True}
    queue = ack.one("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue").inputs["spec"]
    assert "aliyun/erdma" in queue["resourceGroups"][0]["coveredResources"]


def test_ack_shared_volume_is_the_nas_mount_target_through_the_nas_csi_plugin(ack: Any) -> None:
    pv = ack.one(PV).inputs["spec"]
    target = ack.one("alicloud:nas/mountTarget:MountTarget").outputs["mountTargetDomain"]
    assert pv["csi"]["driver"] == "nasplugin.csi.alibabacloud.com"
    assert pv["csi"]["volumeAttributes"] == {"server": target, "path": "/share"}
    assert pv["csi"]["volumeHandle"] == ack.one(PV).inputs["metadata"]["name"]
    assert pv["mountOptions"] == ["nolock,tcp,noresvport", "vers=3"]
    # No RAM lookup role: the volume names the domain itself (the VM path's nodes look it up at boot).
    assert not ack.of_type("alicloud:ram/role:Role")


def test_ack_resource_count_does_not_grow_with_the_node_count_up_to_one_deployment_set() -> None:
    small = preview(variant(STACK, gpus=16), stack=STACK)
    large = preview(variant(STACK, gpus=160), stack=STACK)  # 20 nodes: one LowLatency set holds them
    assert Counter(r.type for r in small.resources) == Counter(r.type for r in large.resources)


GOOD_POOL = {
    "clusterId": "c1",
    "nodePoolName": "gpu",
    "desiredSize": "8",
    "keyName": "k",
    "systemDiskCategory": "cloud_essd",
    "systemDiskPerformanceLevel": "PL1",
    "systemDiskSize": 200,
    "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
}


@pytest.mark.parametrize(
    ("type_token", "good", "change", "field"),
    [
        (CLUSTER, {"name": "c"}, {"clusterSpec": "ack.pro.huge"}, "clusterSpec"),
        (CLUSTER, {"name": "c"}, {"nodeCidrMask": 30}, "nodeCidrMask"),
        (CLUSTER, {"name": "c"}, {"name": "-c"}, "name"),
        (CLUSTER, {"name": "c"}, {"addons": [{"name": "terraway"}]}, "addons[].name"),
        (CLUSTER, {"name": "c"}, {"podCidr": "172.20.0.0/16", "serviceCidr": "172.20.1.0/24"}, "serviceCidr"),
        (POOL, GOOD_POOL, {"keyName": None}, "keyName"),
        (POOL, GOOD_POOL, {"spotStrategy": "Cheap"}, "spotStrategy"),
        (POOL, GOOD_POOL, {"systemDiskSize": 4000}, "systemDiskSize"),
        (POOL, GOOD_POOL, {"taints": [{"key": "nvidia.com/gpu", "effect": "NoRun"}]}, "taints[].effect"),
        (POOL, GOOD_POOL, {"desiredSize": "eight"}, "desiredSize"),
        (ADDON, {"clusterId": "c1", "name": "ack-erdma-controller"}, {"config": '{"preferDriver": "rdma"}'}, "config"),
        (ADDON, {"clusterId": "c1", "name": "ack-erdma-controller"}, {"name": "erdma"}, "name"),
    ],
)
def test_the_mocked_ack_refuses_what_ack_refuses(type_token: str, good: dict, change: dict, field: str) -> None:
    register(type_token, "x", good)
    bad = {k: v for k, v in {**good, **change}.items() if v is not None}
    one(violations_of(type_token, "x", bad), field)
