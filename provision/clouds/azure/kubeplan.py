"""AKS plan for ``scheduler: kubernetes`` (pure: no Pulumi, no SDK). Built by ``AzureAdapter.kubernetes_plan``.

The GPU agent pool reuses the VM path's decisions (``plan.extra``): the VNet and its node subnet behind the
NAT gateway, the Managed Lustre file system in its own subnet, and the island rule (one InfiniBand fabric is
one scale set, at most ``azure.max_island_nodes`` VMs, in one proximity placement group). Sources:

* InfiniBand on AKS: Azure/aks-rdma-infiniband (Microsoft's guide, azure.github.io/aks-rdma-infiniband):
  the subscription feature ``Microsoft.ContainerService/AKSInfinibandSupport`` keeps a pool's nodes on one
  InfiniBand network; the NVIDIA Network Operator (Helm ``nvidia/network-operator``, repo
  helm.ngc.nvidia.com/nvidia, with its Node Feature Discovery, whose workers stay off the system pool) and a
  ``NicClusterPolicy`` with the DOCA/OFED driver (``configs/nicclusterpolicy/base/nic.yaml``: doca-driver
  ``doca3.2.0-25.10-1.2.8.0-2``, nodes with the NFD label ``feature.node.kubernetes.io/pci-15b3.present``) and
  the RDMA shared device plugin (``configs/nicclusterpolicy/rdma-shared-device-plugin/rdma.yaml``: resource
  ``shared_ib``, ``rdmaHcaMax`` 63, selectors vendor ``15b3`` + link type ``infiniband``; the plugin's
  resource prefix is ``rdma``, so pods request ``rdma/shared_ib``: one unit gives a pod every IB HCA).
  The ``network-operator`` namespace is labelled ``pod-security.kubernetes.io/enforce=privileged``.
* GPUs: GPUDirect RDMA needs the GPU Operator with ``driver.rdma.enabled`` (nvidia-peermem against the
  operator's OFED) and NFD off (the Network Operator runs it): aks-rdma-infiniband
  ``configs/values/gpu-operator/values.yaml``. The AKS driver must then be skipped on the pool
  (learn.microsoft.com/azure/aks/nvidia-gpu-operator: "the automatic GPU driver installation should be
  skipped"; API field ``gpuProfile.driver: None``, pulumi-azure-native ``GPUDriver.NONE`` "Skip driver
  install").
* Azure Managed Lustre: the CSI driver chart ``oci://mcr.microsoft.com/microsoft.azuremanagedlustre/
  azurelustre-csi-driver`` 0.6.0 in ``kube-system`` (kubernetes-sigs/azurelustre-csi-driver charts/README.md
  "Released chart versions"); it works only on Ubuntu node pools (learn.microsoft.com/azure/azure-managed-
  lustre/use-csi-driver-kubernetes), and AKS nodes must not share the Lustre subnet (the VM path already
  gives it its own). Static volume: driver ``azurelustre.csi.azure.com`` with ``mgs-ip-address`` and
  ``fs-name`` (AKS "Statically provision Azure Managed Lustre volumes").
* Node pool names: Linux pools 1-12 lowercase alphanumerics starting with a letter (AKS "Create node pools":
  "Linux node pools ... must be between 1 and 12 characters"); pods per node 10-250 with Azure CNI
  (AKS "Configure Azure CNI networking": maximum pods per node).
* Pod ``securityContext.capabilities.add: [IPC_LOCK]``: RDMA pins memory (aks-rdma-infiniband test pods).
"""

from __future__ import annotations

import ipaddress
import json
import re
from typing import Any

from provision.clouds.azure.plan import AksPlan, AzurePlan, HelmChart
from provision.clouds.k8s.addons import training_addons
from provision.planning import kubeparts
from provision.planning.kubeparts import GPU_TOLERATION
from provision.planning.kubernetes import POOL_LABEL, AddonPlan, JobProfile, KubernetesPlan, system_pool
from provision.planning.resolve import Resolution
from provision.spec import ClusterSpec
from provision.spec.errors import ProblemCollector

DEFAULT_VERSION = "1.34"
#: AKS minor versions accepted here (AKS "Supported Kubernetes versions": three GA minors at a time; run
#: ``az aks get-versions -l REGION`` for the current list).
SUPPORTED_VERSIONS = ("1.33", "1.34", "1.35")
AKS_TYPES = ("Standard_ND96isr_H100_v5", "Standard_ND96isr_H200_v5")
#: Linux agent pool names (AKS "Create node pools": lowercase alphanumerics, 1-12, start with a letter).
POOL_NAME = re.compile(r"^[a-z][a-z0-9]{0,11}$")
POOL_NAME_SOURCE = (
    "learn.microsoft.com/azure/aks/create-node-pools (node pool naming: Linux pools 1-12 lowercase "
    "alphanumerics starting with a letter)"
)
MAX_PODS = 110
POD_CIDR = "10.244.0.0/16"
SERVICE_CIDR = "10.96.0.0/16"
DNS_SERVICE_IP = "10.96.0.10"
RDMA_RESOURCE = "rdma/shared_ib"
#: Pinned charts (module docstring).
HELM = {
    "network-operator": HelmChart(
        repo="https://helm.ngc.nvidia.com/nvidia",
        chart="network-operator",
        version="25.10.0",
        namespace="network-operator",
    ),
    "gpu-operator": HelmChart(
        repo="https://helm.ngc.nvidia.com/nvidia", chart="gpu-operator", version="v25.10.0", namespace="gpu-operator"
    ),
    "azurelustre-csi-driver": HelmChart(
        repo=None,
        chart="oci://mcr.microsoft.com/microsoft.azuremanagedlustre/azurelustre-csi-driver",
        version="0.6.0",
        namespace="kube-system",
    ),
}
DOCA_DRIVER = "doca3.2.0-25.10-1.2.8.0-2"
RDMA_PLUGIN_VERSION = "network-operator-v25.10.0"
#: NVIDIA's PyTorch container (NCCL with IB verbs inside; nvcr.io "PyTorch" release 25.01).
DEFAULT_IMAGE = "nvcr.io/nvidia/pytorch:25.01-py3"
GPU_LABELS = {POOL_LABEL: "gpu", "nvidia.com/gpu.present": "true"}
#: Beside the GPU pool's taint (kubernetes.py, tolerated by ``GPU_TOLERATION``), the one AKS puts on every Spot
#: pool (AKS "Add an Azure Spot node pool": kubernetes.azure.com/scalesetpriority=spot:NoSchedule). Whatever runs
#: on GPU nodes tolerates both.
SPOT_TOLERATION = {
    "key": "kubernetes.azure.com/scalesetpriority",
    "operator": "Equal",
    "value": "spot",
    "effect": "NoSchedule",
}


#: The AKS expiry job's custom role: its id's seed kind (``expiry.role_guid``) and display-name suffix, shared by
#: ``kubeexpiry.py`` (which creates it) and ``sweeper.py`` (which deletes it after the group).
AKS_ROLE_KIND = "aks-expiry-definition"
AKS_ROLE_SUFFIX = "-aks"


def gpu_tolerations(spot: bool) -> list[dict[str, str]]:
    """What a pod or DaemonSet on the GPU pool tolerates."""
    return [dict(GPU_TOLERATION), *([dict(SPOT_TOLERATION)] if spot else [])]


#: The NCCL settings a pod gets: the VM path's NDv5 set without the host paths a pod does not have
#: (``NCCL_TOPO_FILE`` lives in the ubuntu-hpc image; NCCL detects the topology from the pod's devices).
POD_ENV_DROPPED = ("NCCL_TOPO_FILE",)


def pool_name(base: str) -> str:
    """A Linux agent pool name from ``base`` (already one in the shipped plan; the strict cloud checks it)."""
    return re.sub(r"[^a-z0-9]", "", base.lower())[:12]


def dns_prefix(name: str) -> str:
    """The cluster's DNS prefix: 1-54 alphanumerics and hyphens, starting and ending alphanumeric."""
    cut = re.sub(r"[^A-Za-z0-9-]", "-", name)[:54].strip("-")
    return cut or "aks"


def _overlaps(a: str, b: str) -> bool:
    return ipaddress.ip_network(a, strict=False).overlaps(ipaddress.ip_network(b, strict=False))


def check(spec: ClusterSpec, res: Resolution, found: ProblemCollector) -> None:
    """AKS's own rules, beside every other problem."""
    opts = spec.cloud_options()
    kubeparts.check_instance_type(res, found, AKS_TYPES, "AKS (InfiniBand through the Network Operator)")
    if spec.capacity.type not in ("on-demand", "spot"):
        found.add(
            "capacity.type",
            spec.capacity.type,
            "is not a priority of AKS agent pools (Regular or Spot)",
            "use on-demand or spot",
        )
    if opts.split_islands:
        found.add(
            "azure.split_islands",
            True,
            "cannot be used with scheduler.kind kubernetes: the GPU pool is one agent pool, one scale set and one "
            "InfiniBand island",
            f"drop it and use at most {opts.max_island_nodes} nodes",
        )
    if not spec.access.allowed_cidrs:
        found.add(
            "access.allowed_cidrs",
            [],
            "is empty: the AKS API server would accept no network, so provision (Helm, the job queues) and "
            "kubectl could not reach it",
            "list the networks you run provision and kubectl from, e.g. [203.0.113.0/24]",
        )
    if opts.bastion:
        found.add(
            "azure.bastion",
            True,
            "has nothing to reach under scheduler.kind kubernetes (use kubectl through the API server)",
            "drop azure.bastion",
        )
    shared = spec.storage.shared
    if res.storage is not None and res.storage.kind != "amlfs" and shared is not None and shared.volume is not None:
        found.add(  # the kind is the attached volume's (ops/volumes.py attached_shared)
            "storage.shared.volume",
            shared.volume,
            f"names a {res.storage.kind} volume, which this azure Kubernetes cluster cannot mount: AKS mounts Azure "
            "Managed Lustre only here (azurelustre.csi.azure.com static volume)",
            "attach an amlfs volume, or attach this one to VM nodes (scheduler.kind: none or slurm)",
        )
    elif res.storage is not None and res.storage.kind != "amlfs":
        found.add(
            "storage.shared.kind",
            res.storage.kind,
            "has no CSI driver wired on AKS here; Azure Managed Lustre has (azurelustre.csi.azure.com)",
            "use kind: amlfs, or drop storage.shared",
        )
    if shared is not None and shared.retain:
        found.add(
            "storage.shared.retain",
            True,
            "is not wired on AKS yet: the file system would outlive a cluster whose network it shares",
            "drop retain, or use scheduler.kind: none",
        )
    for cidr, what in ((POD_CIDR, "pod"), (SERVICE_CIDR, "service")):
        try:
            clash = _overlaps(opts.vnet_cidr, cidr)
        except ValueError:
            continue  # the VM path's check already names a bad vnet_cidr
        if clash:
            found.add(
                "azure.vnet_cidr",
                opts.vnet_cidr,
                f"overlaps the AKS {what} range {cidr}; AKS refuses a {what} CIDR that overlaps the cluster's VNet "
                "(learn.microsoft.com/azure/aks/azure-cni-overlay, configure-kubenet: service CIDR)",
                "use a range outside 10.244.0.0/16 and 10.96.0.0/16, e.g. 10.0.0.0/16",
            )
    version = spec.scheduler.version
    if version is not None and version not in SUPPORTED_VERSIONS:
        found.add(
            "scheduler.version",
            version,
            f"is not a Kubernetes minor version AKS supports ({', '.join(SUPPORTED_VERSIONS)})",
            f"use {DEFAULT_VERSION} or drop scheduler.version",
        )


def nic_cluster_policy(spot: bool = False) -> dict[str, Any]:
    """The Network Operator's ``NicClusterPolicy`` body (``spec``): DOCA driver + RDMA shared device plugin, whose
    DaemonSets tolerate the GPU pool's taints (``spec.tolerations``, network-operator NicClusterPolicySpec)."""
    plugin_config = {
        "configList": [
            {
                "resourceName": RDMA_RESOURCE.split("/", 1)[1],
                "rdmaHcaMax": 63,
                "selectors": {"vendors": ["15b3"], "linkTypes": ["infiniband"]},
            }
        ]
    }
    return {
        "tolerations": gpu_tolerations(spot),
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "feature.node.kubernetes.io/pci-15b3.present", "operator": "In", "values": ["true"]}
                        ]
                    }
                ]
            }
        },
        "ofedDriver": {
            "repository": "nvcr.io/nvidia/mellanox",
            "image": "doca-driver",
            "version": DOCA_DRIVER,
            "upgradePolicy": {"autoUpgrade": True, "maxParallelUpgrades": 1},
        },
        "rdmaSharedDevicePlugin": {
            "repository": "nvcr.io/nvidia/mellanox",
            "image": "k8s-rdma-shared-dev-plugin",
            "version": RDMA_PLUGIN_VERSION,
            "config": json.dumps(plugin_config, indent=2),
        },
    }


def helm_values(name: str, spot: bool = False) -> dict[str, Any]:
    """Each pinned chart's values (module docstring); DaemonSets on the GPU pool tolerate its taints."""
    tolerate = gpu_tolerations(spot)
    if name == "network-operator":
        not_system = {"key": "kubernetes.azure.com/mode", "operator": "NotIn", "values": ["system"]}
        terms = {"nodeSelectorTerms": [{"matchExpressions": [not_system]}]}
        affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": terms}}
        return {"node-feature-discovery": {"worker": {"affinity": affinity, "tolerations": tolerate}}}
    if name == "gpu-operator":
        return {
            "nfd": {"enabled": False},
            "driver": {"rdma": {"enabled": True}},
            "migManager": {"enabled": False},
            "vgpuDeviceManager": {"enabled": False},
            "vfioManager": {"enabled": False},
            "sandboxDevicePlugin": {"enabled": False},
            "daemonsets": {"tolerations": tolerate},
        }
    return {}


def job_profile(spec: ClusterSpec, res: Resolution, claim: str | None, env: dict[str, str]) -> JobProfile:
    """What every training pod on this AKS cluster needs (module docstring)."""
    assert res.offer is not None and res.nodes is not None  # noqa: S101
    ib = res.fabric == "infiniband"
    return kubeparts.job_profile(
        spec,
        res,
        claim,
        image=DEFAULT_IMAGE,
        env={k: v for k, v in env.items() if k not in POD_ENV_DROPPED},
        fabric_resource=RDMA_RESOURCE if ib else None,
        fabric_devices_per_node=res.offer.fabric_interfaces if ib else 0,
        fabric_requests={RDMA_RESOURCE: "1"} if ib else None,
        fabric_quota={RDMA_RESOURCE: str(res.nodes)} if ib else None,
        tolerations=gpu_tolerations(spec.capacity.type == "spot"),
        security_context={"capabilities": {"add": ["IPC_LOCK"]}} if ib else None,
    )


_PURPOSES = {
    "network-operator": "NVIDIA Network Operator: DOCA/OFED driver and the RDMA shared device plugin "
    f"({RDMA_RESOURCE}: every InfiniBand HCA of a node)",
    "gpu-operator": "NVIDIA GPU Operator: driver with GPUDirect RDMA (nvidia-peermem), device plugin (nvidia.com/gpu)",
    "azurelustre-csi-driver": "mounts the Azure Managed Lustre file system as a static volume",
}


def _addons(fs: bool) -> list[AddonPlan]:
    out = [
        AddonPlan(
            name=name,
            kind="helm",
            source=h.chart if h.repo is None else f"{h.repo} {h.chart}",
            version=h.version,
            namespace=h.namespace,
            purpose=_PURPOSES[name],
        )
        for name, h in HELM.items()
        if fs or name != "azurelustre-csi-driver"
    ]
    return out + training_addons()


def aks(k8s: KubernetesPlan) -> AksPlan:
    """The AKS decisions of ``k8s`` (an Azure plan's ``kubernetes``)."""
    assert isinstance(k8s.extra, AksPlan), type(k8s.extra)  # noqa: S101
    return k8s.extra


def kubernetes_plan(spec: ClusterSpec, res: Resolution, extra: AzurePlan, env: dict[str, str]) -> KubernetesPlan:
    """The AKS cluster for ``spec``; ``extra`` is the VM path's ``plan.extra`` (network, island, Lustre) and
    ``env`` its NCCL environment, which pods share (module docstring)."""
    assert res.offer is not None  # noqa: S101
    fs = extra.filesystem is not None and extra.filesystem.kind == "amlfs"
    claim = "shared" if fs else None
    cidrs = tuple(c for c in spec.access.allowed_cidrs if ":" not in c)
    version = spec.scheduler.version or DEFAULT_VERSION
    control = kubeparts.control_plane(
        spec,
        "aks",
        version=version,
        endpoint_access="public API server only from access.allowed_cidrs; Microsoft Entra ID + Azure RBAC, "
        "no local accounts",
        authorized_networks=cidrs,
    )
    island = extra.islands[0]
    gpu = kubeparts.gpu_pool(
        spec,
        res,
        name=pool_name("gpu"),
        fabric_devices_per_node=res.offer.fabric_interfaces if res.fabric == "infiniband" else 0,
        placement=f"one proximity placement group ({island.ppg or spec.name + '-ppg'}): one InfiniBand island",
    )
    system = system_pool("azure", spec.region, spec.scheduler.system_nodes, spec.scheduler.system_instance_type)
    decisions = AksPlan(
        cluster=spec.name,
        dns_prefix=dns_prefix(spec.name),
        node_resource_group=f"{extra.resource_group}-nodes"[:80],
        version=version,
        tier="Standard",
        system_pool=pool_name("system"),
        gpu_pool=gpu.name,
        os_sku="Ubuntu2204",
        max_pods=MAX_PODS,
        pod_cidr=POD_CIDR,
        service_cidr=SERVICE_CIDR,
        dns_service_ip=DNS_SERVICE_IP,
        ppg=island.ppg or f"{spec.name}-island0-ppg",
        gpu_driver="None",
        gpu_labels=dict(GPU_LABELS),
        helm={k: h for k, h in HELM.items() if fs or k != "azurelustre-csi-driver"},
        rdma_resource=RDMA_RESOURCE,
        delete_at_expiry=spec.cloud_options().delete_at_expiry
        and (spec.lifetime.ttl is not None or spec.lifetime.max_cost_usd is not None),
        node_image=f"AKS Ubuntu 22.04 node image for Kubernetes {version} (GPU driver from the GPU Operator)",
    )
    return KubernetesPlan(
        control_plane=control,
        system_pool=system.model_copy(update={"name": decisions.system_pool}),
        gpu_pool=gpu,
        addons=tuple(_addons(fs)),
        job=job_profile(spec, res, claim, env),
        extra=decisions,
    )
