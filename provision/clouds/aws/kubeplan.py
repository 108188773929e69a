"""EKS plan for ``scheduler: kubernetes`` (pure: no Pulumi, no SDK). Built by ``AwsAdapter.kubernetes_plan``.

The GPU node group reuses the VM path's decisions (``plan.extra``): the same EFA interface layout
(1 ENA primary + one EFA-only interface per EFA device), the cluster placement group, the market
settings and the FSx file system. Sources:

* Launch templates of managed node groups (EKS user guide "Customize managed nodes with launch
  templates", launch template basics): no subnet on the network interfaces, no IAM instance profile,
  no shutdown behaviour; the instance type goes on the node group, except for Capacity Blocks where it
  goes in the launch template with ``market_type: capacity-block`` and the reservation, and the node
  group's ``capacity_type`` is ``CAPACITY_BLOCK`` (aws-ia/terraform-aws-eks-blueprints
  ``patterns/ml-capacity-block/eks.tf``). Security groups on the interfaces must include the cluster
  security group.
* ``AL2023_x86_64_NVIDIA`` carries the NVIDIA driver, container toolkit and the EFA driver (same
  pattern); the NVIDIA device plugin (chart 0.17.1, nvidia.github.io/k8s-device-plugin) and the EFA
  device plugin (chart v0.5.7, aws.github.io/eks-charts) come from Helm, selected by the node labels
  ``nvidia.com/gpu.present`` / ``vpc.amazonaws.com/efa.present`` (aws-ia blueprints
  ``patterns/targeted-odcr/helm.tf``). EFA-only interfaces need the VPC CNI 1.18.4 or later
  (terraform-aws-eks ``enable_efa_only``); the managed add-on's default for 1.35 is later.
* Control plane subnets in at least two Availability Zones (EKS user guide "VPC and subnet
  requirements"). EKS 1.35 is in standard support until 2027-03-27 (EKS Kubernetes version calendar);
  ``upgrade_policy.support_type STANDARD`` keeps the cluster off extended-support billing.
* EFA pods request ``vpc.amazonaws.com/efa`` devices and 2 MiB huge pages (EKS user guide "Run machine
  learning training on Amazon EKS with Elastic Fabric Adapter").
"""

from __future__ import annotations

import ipaddress
from typing import Literal

from provision.clouds.aws.plan import AwsPlan, EksPlan, HelmChart, NewNetwork
from provision.clouds.k8s.addons import training_addons
from provision.planning import kubeparts
from provision.planning.kubernetes import POOL_LABEL, AddonPlan, JobProfile, KubernetesPlan, system_pool
from provision.planning.resolve import Resolution
from provision.spec import ClusterSpec
from provision.spec.errors import ProblemCollector

DEFAULT_VERSION = "1.35"
#: Versions in EKS standard support when this was written (EKS Kubernetes version calendar).
STANDARD_SUPPORT = ("1.33", "1.34", "1.35")
EKS_TYPES = ("p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge", "p4d.24xlarge", "p4de.24xlarge")
CAPACITY_TYPES: dict[str, Literal["ON_DEMAND", "SPOT", "CAPACITY_BLOCK"]] = {
    "on-demand": "ON_DEMAND",
    "spot": "SPOT",
    "reservation": "ON_DEMAND",
    "capacity-block": "CAPACITY_BLOCK",
}
HELM = {
    "nvidia-device-plugin": ("https://nvidia.github.io/k8s-device-plugin", "nvidia-device-plugin", "0.17.1"),
    "aws-efa-k8s-device-plugin": ("https://aws.github.io/eks-charts", "aws-efa-k8s-device-plugin", "v0.5.7"),
}
#: AWS Deep Learning Container for PyTorch training on EC2: EFA, libfabric and aws-ofi-nccl inside
#: (aws/deep-learning-containers available_images.md, "EC2" PyTorch training images).
DEFAULT_IMAGE = "763104351884.dkr.ecr.{region}.amazonaws.com/pytorch-training:2.5.1-gpu-py311-cu124-ubuntu22.04-ec2"
HUGEPAGES_MIB = 5120
GPU_LABELS = {POOL_LABEL: "gpu", "nvidia.com/gpu.present": "true", "vpc.amazonaws.com/efa.present": "true"}


#: Zone IDs where EKS creates no cluster subnets (EKS User Guide, networking/network-reqs.adoc, "Subnet
#: requirements for clusters": "The subnets can't reside in the following Availability Zones": us-east-1
#: ``use1-az3``, us-west-1 ``usw1-az2``, ca-central-1 ``cac1-az3``; CreateCluster otherwise fails with
#: UnsupportedAvailabilityZoneException). Zone *names* map to IDs per account, so the names are chosen by ID:
#: the preflight refuses a node zone with such an ID, and the control-plane subnet is placed by ID at deploy
#: (:func:`pick_control_plane_zone` over ``ec2:DescribeAvailabilityZones``).
EKS_UNSUPPORTED_ZONE_IDS = ("use1-az3", "usw1-az2", "cac1-az3")


def second_zone(spec: ClusterSpec, res: Resolution) -> str:
    """The preferred Availability Zone (by name) for the second control-plane subnet: another zone than the
    nodes'. At deploy it is kept only when its ID in the account is one EKS accepts
    (:func:`pick_control_plane_zone`)."""
    zone = res.zone or f"{spec.region}a"
    offer = res.offer
    known = list(offer.regions[spec.region].zones) if offer is not None and spec.region in offer.regions else []
    for z in known:
        if z != zone:
            return z
    # Every commercial region has zones a and b (and c); the control plane subnet holds no nodes.
    return f"{spec.region}{'b' if zone.endswith('a') else 'a'}"


def pick_control_plane_zone(names: list[str], zone_ids: list[str], node_zone: str, preferred: str) -> str:
    """The zone ID of the control-plane subnet: ``preferred``'s when EKS accepts it, else the first other
    zone EKS accepts (``names``/``zone_ids`` are DescribeAvailabilityZones' parallel lists).

    Raises ``ValueError`` when the region has no zone besides the nodes' that EKS accepts."""
    ok = [(n, z) for n, z in zip(names, zone_ids, strict=True) if z not in EKS_UNSUPPORTED_ZONE_IDS and n != node_zone]
    for n, z in ok:
        if n == preferred:
            return z
    if not ok:
        raise ValueError(
            f"no Availability Zone besides {node_zone} in this account is one EKS accepts (zone IDs "
            f"{', '.join(zone_ids)}; EKS refuses {', '.join(EKS_UNSUPPORTED_ZONE_IDS)})"
        )
    return ok[0][1]


def control_plane_cidr(vpc_cidr: str) -> str:
    """The first /24 of the VPC's third quarter (the node subnet is the first quarter, NAT the second)."""
    quarters = list(ipaddress.IPv4Network(vpc_cidr).subnets(prefixlen_diff=2))
    return str(next(quarters[2].subnets(new_prefix=24)))


def check(spec: ClusterSpec, res: Resolution, found: ProblemCollector) -> None:
    """EKS's own rules, beside every other problem."""
    opts = spec.cloud_options()
    kubeparts.check_instance_type(res, found, EKS_TYPES, "EKS")
    # The offer check refuses it too; this one also stops the Kubernetes plan (it must add a problem itself).
    if spec.capacity.type not in CAPACITY_TYPES:
        found.add(
            "capacity.type",
            spec.capacity.type,
            "is not a capacity type of EKS managed node groups (ON_DEMAND, SPOT, CAPACITY_BLOCK)",
            f"use one of: {', '.join(CAPACITY_TYPES)}",
        )
    if opts.vpc_id or opts.subnet_id:
        found.add(
            "aws.vpc_id",
            opts.vpc_id or opts.subnet_id,
            "cannot be used with scheduler.kind kubernetes: EKS needs subnets in two Availability Zones, which "
            "provision creates in its own VPC",
            "drop aws.vpc_id and aws.subnet_id (set aws.vpc_cidr to choose the range)",
        )
    if not spec.access.allowed_cidrs:
        found.add(
            "access.allowed_cidrs",
            [],
            "is empty: the EKS API endpoint would be reachable only inside the VPC, so provision (Helm, the "
            "job queues) and kubectl could not reach it",
            "list the networks you run provision and kubectl from, e.g. [203.0.113.0/24]",
        )
    if spec.capacity.type == "spot" and spec.capacity.max_price_per_hour_usd is not None:
        found.add(
            "capacity.max_price_per_hour_usd",
            spec.capacity.max_price_per_hour_usd,
            "has no meaning on EKS: managed node groups take no Spot bid price",
            "drop it; cap spending with lifetime.max_cost_usd",
        )
    version = spec.scheduler.version
    if version is not None and version not in STANDARD_SUPPORT:
        found.add(
            "scheduler.version",
            version,
            f"is not a Kubernetes version in EKS standard support ({', '.join(STANDARD_SUPPORT)}); older ones "
            "bill extended support at $0.60 per cluster-hour",
            f"use {DEFAULT_VERSION} or drop scheduler.version",
        )


def job_profile(spec: ClusterSpec, res: Resolution, claim: str | None, efa: int, env: dict[str, str]) -> JobProfile:
    """What every training pod on this EKS cluster needs (module docstring)."""
    assert res.nodes is not None  # noqa: S101
    nodes = res.nodes
    requests: dict[str, str] = {}
    quota: dict[str, str] = {}
    if efa:
        # Huge pages need a memory request beside them (Kubernetes "Manage HugePages").
        requests = {"vpc.amazonaws.com/efa": str(efa), "hugepages-2Mi": f"{HUGEPAGES_MIB}Mi", "memory": "64Gi"}
        quota = {"vpc.amazonaws.com/efa": str(efa * nodes), "hugepages-2Mi": f"{HUGEPAGES_MIB * nodes}Mi"}
    return kubeparts.job_profile(
        spec,
        res,
        claim,
        image=DEFAULT_IMAGE.format(region=spec.region),
        env=env,
        fabric_resource="vpc.amazonaws.com/efa" if efa else None,
        fabric_devices_per_node=efa,
        fabric_requests=requests,
        fabric_quota=quota,
    )


def _addons(efa: bool, fsx: bool) -> list[AddonPlan]:
    managed = ["vpc-cni", "kube-proxy", "coredns", "eks-pod-identity-agent"] + (["aws-fsx-csi-driver"] if fsx else [])
    purposes = {
        "vpc-cni": "pod networking (EFA-only interfaces need 1.18.4+)",
        "kube-proxy": "service routing",
        "coredns": "cluster DNS",
        "eks-pod-identity-agent": "EKS Pod Identity for the jobs' service account",
        "aws-fsx-csi-driver": "mounts the FSx for Lustre file system as a static volume",
    }
    out = [kubeparts.system_addon(a, f"EKS add-on {a}", purposes[a]) for a in managed]
    for name, (repo, chart, version) in HELM.items():
        if name.startswith("aws-efa") and not efa:
            continue
        out.append(
            kubeparts.system_addon(
                name,
                f"{repo} {chart}",
                "exposes the node's "
                + ("GPUs (nvidia.com/gpu)" if "nvidia" in name else "EFA devices (vpc.amazonaws.com/efa)"),
                kind="helm",
                version=version,
            )
        )
    return out + training_addons()


def eks(k8s: KubernetesPlan) -> EksPlan:
    """The EKS decisions of ``k8s`` (an AWS plan's ``kubernetes``)."""
    assert isinstance(k8s.extra, EksPlan), type(k8s.extra)  # noqa: S101
    return k8s.extra


def kubernetes_plan(spec: ClusterSpec, res: Resolution, extra: AwsPlan, env: dict[str, str]) -> KubernetesPlan:
    """The EKS cluster for ``spec``; ``extra`` is the VM path's ``plan.extra`` (network, EFA layout, market)
    and ``env`` its NCCL/libfabric environment, which pods share (one ENA ``eth0``, EFA through libfabric)."""
    cap = spec.capacity.type
    efa = sum(1 for nic in extra.efa_interfaces if nic.type != "interface")
    fsx = extra.fsx is not None
    claim = "shared" if fsx else None
    cidrs = tuple(c for c in spec.access.allowed_cidrs if ":" not in c)
    version = spec.scheduler.version or DEFAULT_VERSION
    control = kubeparts.control_plane(
        spec,
        "eks",
        version=version,
        endpoint_access="private endpoint in the VPC; public endpoint only from access.allowed_cidrs",
        authorized_networks=cidrs,
    )
    gpu = kubeparts.gpu_pool(
        spec,
        res,
        fabric_devices_per_node=efa,
        placement="cluster placement group"
        if extra.placement_group.create or extra.placement_group.name
        else f"none ({cap} fixes placement)",
    )
    sched = spec.scheduler
    assert isinstance(extra.network, NewNetwork)  # noqa: S101 - check() refuses an existing VPC under EKS
    decisions = EksPlan(
        version=version,
        control_plane_zone=second_zone(spec, res),
        control_plane_cidr=control_plane_cidr(extra.network.vpc_cidr),
        public_access_cidrs=cidrs,
        capacity_type=CAPACITY_TYPES[cap],
        lt_instance_type=cap == "capacity-block",
        gpu_ami_type="AL2023_x86_64_NVIDIA",
        node_image=f"EKS AL2023_x86_64_NVIDIA for Kubernetes {version}",
        system_ami_type="AL2023_x86_64_STANDARD",
        root_device_name="/dev/xvda",
        gpu_labels=dict(GPU_LABELS),
        managed_addons=tuple(a.name for a in _addons(bool(efa), fsx) if a.kind == "managed"),
        helm={
            k: HelmChart(repo=repo, chart=chart, version=v)
            for k, (repo, chart, v) in HELM.items()
            if efa or not k.startswith("aws-efa")
        },
        lifetime_schedule=spec.lifetime.ttl is not None or spec.lifetime.max_cost_usd is not None,
    )
    return KubernetesPlan(
        control_plane=control,
        system_pool=system_pool("aws", spec.region, sched.system_nodes, sched.system_instance_type),
        gpu_pool=gpu,
        addons=tuple(_addons(bool(efa), fsx)),
        job=job_profile(spec, res, claim, efa, env),
        extra=decisions,
    )
