"""ACK plan for ``scheduler: kubernetes`` (pure: no Pulumi, no SDK). Built by ``AlibabaAdapter.kubernetes_plan``.

An ACK managed cluster Pro (``cluster_spec`` ``ack.pro.small``) in the VM path's VPC and vSwitch, with a system
node pool and ONE GPU node pool of the VM path's type, in a LowLatency deployment set. Sources:

* Cluster and node pools: pulumi-alicloud 4.0.0 ``cs.ManagedKubernetes`` / ``cs.NodePool`` / ``cs.KubernetesAddon``
  docstrings (aliyun/terraform-provider-alicloud ``resource_alicloud_cs_managed_kubernetes.go``,
  ``resource_alicloud_cs_kubernetes_node_pool.go``). Flannel pod networking (``pod_cidr`` + ``service_cidr``
  outside the VPC): with Terway, ENIs the eRDMA controller attaches would need a Terway whitelist first
  (ACK "Use eRDMA to accelerate container networks in ACK clusters", Step 1 note).
* eRDMA in pods: the ACK eRDMA Controller add-on (``ack-erdma-controller``) attaches ERIs to the nodes,
  installs the eRDMA driver and registers the devices as the ``aliyun/erdma`` extended resource; pods
  request it in their limits. ``preferDriver: ofed`` is the driver mode for GPU instances running NCCL
  (same page, Step 1 parameters); ``allocateAllDevices: true`` gives a pod every eRDMA device of its node.
  eRDMA nodes need ACK 1.24 or later and, with GPUs, an NVIDIA driver later than 470 (ACK "Add eRDMA nodes
  to ACK clusters").
* GPU drivers: ACK installs the NVIDIA driver and its device plugin on GPU node pools; the node label
  ``ack.aliyun.com/nvidia-driver-version`` pins the version (ACK "Customize the GPU driver version of a node
  by specifying a version number", example 550.144.03; "ACK supported NVIDIA driver versions" recommends 550
  and warns that the default changes over time).
* Shared filesystem: NAS (general-purpose or Extreme) as a static volume of the NAS CSI plugin
  (``nasplugin.csi.alibabacloud.com``: ``server`` = the mount target's domain, ``path``; mount options
  ``nolock,tcp,noresvport`` and ``vers=3``, ACK "Mount a statically provisioned NAS volume"). CPFS
  general-purpose mounts through its protocol export's domain (``mountProtocol: cpfs-nfs``), which
  pulumi-alicloud 4.0 does not return, so it is refused here (the VM path looks it up at boot).
* Lifetime: ACK node pools (ESS scaling groups) take no release time and ACK's own node pool API has no
  expiry, so a lifetime would not be enforced by the cloud: it is refused (``lifetime``).
"""

from __future__ import annotations

import ipaddress
import json
import re
from typing import Any

from pydantic import Field

from provision.clouds.k8s.addons import training_addons
from provision.planning import kubeparts
from provision.planning.kubernetes import (
    POOL_LABEL,
    AddonPlan,
    JobProfile,
    KubernetesCloudPlan,
    KubernetesPlan,
    system_pool,
)
from provision.planning.resolve import Resolution, shared_kind
from provision.spec import ClusterSpec
from provision.spec.errors import ProblemCollector

CLUSTER_SPEC = "ack.pro.small"
#: A full ACK version (``1.34.1-aliyun.1``: ``aliyun cs DescribeKubernetesVersionMetadata``); unset, ACK
#: creates the cluster with its latest version (cs.ManagedKubernetes ``version`` docstring).
VERSION_PATTERN = r"1\.\d+\.\d+-aliyun\.\d+"
ACK_TYPES = ("ecs.ebmgn8v.48xlarge", "ecs.gn8v-8x.48xlarge")
CAPACITY = {"on-demand": "NoSpot", "spot": "SpotAsPriceGo"}
STORAGE_KINDS = ("nas", "nas-extreme")
#: Flannel pod and service ranges (outside any VPC range this library creates: clouds/alibaba/adapter.py).
POD_CIDR = "172.20.0.0/16"
SERVICE_CIDR = "172.21.0.0/20"
NODE_CIDR_MASK = 24
#: ACK's pinned NVIDIA driver for the GPU pool (module docstring).
NVIDIA_DRIVER = "550.144.03"
DRIVER_LABEL = "ack.aliyun.com/nvidia-driver-version"
ERDMA_ADDON = "ack-erdma-controller"
ERDMA_CONFIG = {"preferDriver": "ofed", "allocateAllDevices": True}
#: Add-ons ACK installs at cluster creation (cs.ManagedKubernetes ``addons``): Flannel, the CSI plugin and
#: provisioner (NAS volumes), and the managed ingress-less default set stays ACK's.
CLUSTER_ADDONS = ("flannel", "csi-plugin", "csi-provisioner")
#: eRDMA needs Alibaba Cloud Linux 3 (kernel 5.10.134-17 or later: alibabacloud-erdma-controller README).
IMAGE_TYPE = "AliyunLinux3"
DEFAULT_IMAGE = "nvcr.io/nvidia/pytorch:25.01-py3"
GPU_LABELS = {POOL_LABEL: "gpu", DRIVER_LABEL: NVIDIA_DRIVER}
#: A LowLatency deployment set holds at most 20 instances (ECS "Deployment sets" limits); a node pool takes one.
DEPLOYMENT_SET_MAX = 20
ERDMA_RESOURCE = "aliyun/erdma"


class AckPlan(KubernetesCloudPlan):
    """The ACK decisions (``KubernetesPlan.extra`` of an Alibaba cluster)."""

    cluster_spec: str
    version: str | None = Field(description="Full ACK version; None: ACK's latest at creation.")
    pod_cidr: str
    service_cidr: str
    node_cidr_mask: int
    cluster_addons: tuple[str, ...]
    erdma_addon: str | None
    erdma_config: dict[str, Any]
    image_type: str
    gpu_labels: dict[str, str]
    spot_strategy: str
    deployment_set: bool = Field(description="The GPU pool's nodes share one LowLatency deployment set.")
    system_disk_gib: int
    public_endpoint: bool


def ack(k8s: KubernetesPlan) -> AckPlan:
    """The ACK decisions of ``k8s`` (an Alibaba plan's ``kubernetes``)."""
    assert isinstance(k8s.extra, AckPlan), type(k8s.extra)  # noqa: S101
    return k8s.extra


def check(spec: ClusterSpec, res: Resolution, found: ProblemCollector) -> None:
    """ACK's own rules, beside every other problem."""
    opts = spec.cloud_options()
    kubeparts.check_instance_type(res, found, ACK_TYPES, "ACK")
    if spec.capacity.type not in CAPACITY:
        found.add(
            "capacity.type",
            spec.capacity.type,
            "is not a capacity type of ACK node pools here (pay-as-you-go or spot)",
            f"use one of: {', '.join(CAPACITY)}",
        )
    if opts.subscription_months is not None:
        found.add(
            "alibaba.subscription_months",
            opts.subscription_months,
            "cannot be used with scheduler.kind kubernetes: the ACK node pools here are pay-as-you-go",
            "drop alibaba.subscription_months",
        )
    if spec.lifetime.ttl is not None or spec.lifetime.max_cost_usd is not None:
        found.add(
            "lifetime",
            "ttl" if spec.lifetime.ttl is not None else "max_cost_usd",
            "cannot be enforced on ACK: node pools (ESS scaling groups) take no release time, so the nodes "
            "would keep billing after the expiry",
            "drop lifetime.ttl / lifetime.max_cost_usd and run `provision down` yourself, or use "
            "scheduler.kind: none (nodes with auto_release_time)",
        )
    from provision.clouds.alibaba.plan import key_pair_public_key

    if key_pair_public_key(spec.access.ssh_public_keys) is None:
        found.add(
            "access.ssh_public_keys",
            "no RSA or ECDSA key",
            "is needed on ACK: a node pool takes an ECS key pair (or a password), and ECS key pairs take RSA or "
            "ECDSA keys only (cs.NodePool key_name; ECS ImportKeyPair)",
            "add an RSA or ECDSA public key (e.g. ~/.ssh/id_rsa.pub)",
        )
    kind = shared_kind(spec, res)
    volume = spec.storage.shared.volume if spec.storage.shared is not None else None
    if kind is not None and kind not in STORAGE_KINDS and volume is not None:  # the kind is the attached volume's
        found.add(
            "storage.shared.volume",
            volume,
            f"names a {kind} volume, which this alibaba Kubernetes cluster cannot mount: ACK mounts NAS only here "
            "(NAS CSI static volume; a CPFS export's domain is not returned by pulumi-alicloud 4.0)",
            "attach a nas or nas-extreme volume, or attach this one to VM nodes (scheduler.kind: none or slurm)",
        )
    elif kind is not None and kind not in STORAGE_KINDS:
        found.add(
            "storage.shared.kind",
            kind,
            "cannot be mounted by ACK here: a CPFS volume needs its protocol export's domain, which "
            "pulumi-alicloud 4.0 does not return",
            "use kind nas or nas-extreme (NAS CSI static volume), or scheduler.kind: none",
        )
    version = spec.scheduler.version
    if version is not None and not re.fullmatch(VERSION_PATTERN, version):
        found.add(
            "scheduler.version",
            version,
            "is not a full ACK version (like 1.34.1-aliyun.1)",
            "pick one from `aliyun cs DescribeKubernetesVersionMetadata`, or drop it for ACK's latest",
        )
    vpc = ipaddress.ip_network(opts.vpc_cidr)
    for field, cidr in (("pod", POD_CIDR), ("service", SERVICE_CIDR)):
        if vpc.overlaps(ipaddress.ip_network(cidr)):
            found.add(
                "alibaba.vpc_cidr",
                opts.vpc_cidr,
                f"overlaps ACK's {field} range {cidr} (Flannel: pod and service ranges must be outside the VPC)",
                "use a VPC range in 10.0.0.0/8 or 192.168.0.0/16",
            )


def job_profile(spec: ClusterSpec, res: Resolution, claim: str | None, eris: int, env: dict[str, str]) -> JobProfile:
    """What every training pod on this ACK cluster needs (module docstring)."""
    assert res.nodes is not None  # noqa: S101
    return kubeparts.job_profile(
        spec,
        res,
        claim,
        image=DEFAULT_IMAGE,
        env=env,
        fabric_resource=ERDMA_RESOURCE if eris else None,
        fabric_devices_per_node=eris,
        # allocateAllDevices: one aliyun/erdma gives the pod every eRDMA device of its node.
        fabric_requests={ERDMA_RESOURCE: "1"} if eris else None,
        fabric_quota={ERDMA_RESOURCE: str(res.nodes)} if eris else None,
    )


def _addons(erdma: bool, shared: bool) -> list[AddonPlan]:
    purposes = {
        "flannel": "pod networking (pod and service ranges outside the VPC)",
        "csi-plugin": "mounts the NAS file system as a static volume" if shared else "volume mounts",
        "csi-provisioner": "dynamic volumes (ACK default)",
    }
    out = [kubeparts.system_addon(a, f"ACK add-on {a}", p) for a, p in purposes.items()]
    out.append(
        kubeparts.system_addon(
            "nvidia-device-plugin",
            "ACK GPU node pool",
            "the NVIDIA driver (pinned by node label) and device plugin (nvidia.com/gpu)",
            version=f"driver {NVIDIA_DRIVER}",
        )
    )
    if erdma:
        out.append(
            kubeparts.system_addon(
                ERDMA_ADDON,
                f"ACK add-on {ERDMA_ADDON} ({json.dumps(ERDMA_CONFIG, sort_keys=True)})",
                "attaches ERIs, installs the eRDMA driver, exposes aliyun/erdma to pods",
            )
        )
    return out + training_addons()


def kubernetes_plan(
    spec: ClusterSpec, res: Resolution, eris: int, system_disk_gib: int, env: dict[str, str]
) -> KubernetesPlan:
    """The ACK cluster for ``spec``; ``eris`` is the VM path's ERI count per node and ``env`` its NCCL environment
    (``NCCL_IB_HCA=erdma``: pods see the node's eRDMA devices through ``aliyun/erdma``)."""
    assert res.nodes is not None  # noqa: S101
    nodes, cap = res.nodes, spec.capacity.type
    claim = "shared" if shared_kind(spec, res) in STORAGE_KINDS else None
    cidrs = tuple(spec.access.allowed_cidrs)
    set_ok = cap != "spot" and nodes <= DEPLOYMENT_SET_MAX
    control = kubeparts.control_plane(
        spec,
        "ack",
        version=spec.scheduler.version or "ACK's latest at creation",
        endpoint_access="public API endpoint (CLB) authenticated by RAM (ack-ram-tool); nodes and the "
        "control plane talk inside the VPC",
        authorized_networks=cidrs,
    )
    gpu = kubeparts.gpu_pool(
        spec,
        res,
        fabric_devices_per_node=eris,
        placement="LowLatency deployment set" if set_ok else f"none ({'spot' if cap == 'spot' else 'over 20 nodes'})",
    )
    sched = spec.scheduler
    decisions = AckPlan(
        node_image=f"{IMAGE_TYPE} (ACK GPU node image, NVIDIA driver {NVIDIA_DRIVER})",
        cluster_spec=CLUSTER_SPEC,
        version=spec.scheduler.version,
        pod_cidr=POD_CIDR,
        service_cidr=SERVICE_CIDR,
        node_cidr_mask=NODE_CIDR_MASK,
        cluster_addons=CLUSTER_ADDONS,
        erdma_addon=ERDMA_ADDON if eris else None,
        erdma_config=dict(ERDMA_CONFIG),
        image_type=IMAGE_TYPE,
        gpu_labels=dict(GPU_LABELS),
        spot_strategy=CAPACITY.get(cap, "NoSpot"),
        deployment_set=set_ok,
        system_disk_gib=system_disk_gib,
        public_endpoint=True,
    )
    return KubernetesPlan(
        control_plane=control,
        system_pool=system_pool("alibaba", spec.region, sched.system_nodes, sched.system_instance_type),
        gpu_pool=gpu,
        addons=tuple(_addons(bool(eris), claim is not None)),
        job=job_profile(spec, res, claim, eris, env),
        extra=decisions,
    )
