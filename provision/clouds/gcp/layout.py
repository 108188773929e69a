"""GCP decisions (pure: no Pulumi, no SDK). :func:`decide` fills ``plan.extra``, a :class:`GcpPlan`.

Every value :mod:`provision.clouds.gcp.components` needs is decided here, so the component only
translates these models into resources. Sources for each rule are cited where the rule lives.

Networks per machine type (Google's published A3 topologies):

* ``a3-highgpu-8g`` (GPUDirect-TCPX): 1 host gVNIC + 4 GPU gVNICs, each GPU NIC in its own VPC with
  one subnet; every VPC at MTU 8244 (Cluster Toolkit ``a3high-slurm-blueprint.yaml`` sysnet ``mtu:
  8244``; Google's GPUDirect guides create the GPU VPCs with ``--mtu=8244``).
* ``a3-megagpu-8g`` (GPUDirect-TCPXO): 1 + 8, same rules (``a3mega-slurm-blueprint.yaml``,
  ``multivpc network_count: 8``).
* ``a3-ultragpu-8g`` and ``a4-highgpu-8g`` (GPUDirect RDMA): 2 gVNICs on two ordinary VPCs + 8 MRDMA NICs on
  ONE RoCE VPC created with network profile ``<zone>-vpc-roce`` and 8 subnets, MTU 8896 everywhere (Cluster
  Toolkit ``a3ultra-vm.yaml``, ``a4high-vm.yaml`` and ``modules/network/gpu-rdma-vpc``; Google's "Networking and
  GPU machines" gives A4 and A3 Ultra the same 8 CX-7 + 2 gVNIC arrangement). RoCE VPCs take no VPC firewall
  rules (only RDMA_ROCE_POLICY regional policies) and allow all ingress implicitly (Google Cloud
  "Cloud NGFW for RoCE VPC networks", "RDMA network profiles").
* A2 and other fabric-less types: one gVNIC on the host VPC (MTU 8896).
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
from typing import Literal

from provision.catalog import InstanceOffer
from provision.clouds.gcp.plan import (
    IAP_RANGE,
    Allocation,
    BootDisk,
    CompactPlacement,
    Filestore,
    GcpPlan,
    ManagedLustre,
    Nic,
    NoPlacement,
    NoReservation,
    Parallelstore,
    Placement,
    Scheduling,
    ServiceAccount,
    SharedStorage,
    Shielded,
    SpecificReservation,
    Subnet,
    Vpc,
    WorkloadPolicy,
)
from provision.planning.resolve import Resolution
from provision.spec import ClusterSpec

#: MTUs. TCPX/TCPXO VPCs: 8244 (see module docstring). RoCE and other VPCs: 8896, the largest GCP MTU
#: and the RDMA network profiles' default ("RDMA network profiles": "8896-byte MTU").
MTU_TCPX = 8244
MTU_JUMBO = 8896
__all__ = ["IAP_RANGE", "decide"]
#: Managed Lustre servers reach clients on these TCP ports; Google's Managed Lustre VPC set-up opens
#: them from the private-services range (Cluster Toolkit managed-lustre module sets lnet accept_port 6988).
LUSTRE_PORTS = ("988", "6988")
#: GCP reserves the network, gateway and last two addresses of every subnet ("Reserved IP addresses in
#: IPv4 subnets").
SUBNET_RESERVED = 4
#: Node service-account scopes: logs, metrics and read-only Cloud Storage / Artifact Registry pulls.
#: Never cloud-platform (CKV_GCP_31 forbids full API access on instances).
NODE_SCOPES = (
    "https://www.googleapis.com/auth/logging.write",
    "https://www.googleapis.com/auth/monitoring.write",
    "https://www.googleapis.com/auth/devstorage.read_only",
)
NODE_ROLES = ("roles/logging.logWriter", "roles/monitoring.metricWriter")
#: Flex-start (Dynamic Workload Scheduler) run durations: 10 minutes to 7 days (ResizeRequest
#: ``requested_run_duration`` docstring in pulumi-gcp 10.2; "About resize requests in a MIG").
FLEX_MIN_SECONDS = 600
FLEX_MAX_SECONDS = 7 * 24 * 3600
RESERVATION_KEY = "compute.googleapis.com/reservation-name"
#: Machine types that accept a MIG workload policy ("About workload policies in MIGs": A4X Max, A4X, A4, A3 Ultra,
#: A3 Mega, A3 High with 8 GPUs, H4D). Other types use a compact placement policy on the instance template.
WORKLOAD_POLICY_TYPES = ("a3-highgpu-8g", "a3-megagpu-8g", "a3-ultragpu-8g", "a4-highgpu-8g")
#: Boot disk types the machine series accept: A3 Ultra and A4 take Hyperdisk only; A3 High/Mega and A2 take
#: pd-ssd (Cluster Toolkit blueprints use ``pd-ssd`` for a3high/a3mega, ``hyperdisk-balanced`` for a3ultra and
#: a4high).
BOOT_DISK_TYPES = {"a3-ultragpu-8g": "hyperdisk-balanced", "a4-highgpu-8g": "hyperdisk-balanced"}
DEFAULT_BOOT_DISK_TYPE = "pd-ssd"
#: Types whose reservations are dense AI Hypercomputer reservations consumed with RESERVATION_BOUND
#: (Cluster Toolkit ``a3ultra-vm.yaml``: ``a3u_provisioning_model: RESERVATION_BOUND``; ``a4high-vm.yaml``:
#: ``a4h_provisioning_model: RESERVATION_BOUND``).
RESERVATION_BOUND_TYPES = ("a3-ultragpu-8g", "a4-highgpu-8g")


def network_layout(
    spec: ClusterSpec, offer: InstanceOffer, fabric: str, zone: str | None
) -> tuple[list[Vpc], list[Nic]]:
    """VPCs, subnets and the NIC order for ``offer`` (see the module docstring)."""
    opts = spec.cloud_options()
    gpu_cidrs = gpu_subnet_cidrs(opts.gpu_subnet_cidr_base, opts.gpu_subnet_prefix, offer.fabric_interfaces)
    host_mtu = MTU_TCPX if fabric in ("tcpx", "tcpxo") else MTU_JUMBO
    networks = [_net("net-0", "host", host_mtu, [("subnet-0", opts.host_subnet_cidr)], ssh=True, nat=True)]
    nics = [Nic(network="net-0", subnet="subnet-0", nic_type="GVNIC")]
    if offer.host_nics >= 2:
        networks.append(_net("net-1", "host", host_mtu, [("subnet-1", opts.secondary_host_subnet_cidr)]))
        nics.append(Nic(network="net-1", subnet="subnet-1", nic_type="GVNIC"))
    if fabric in ("tcpx", "tcpxo"):
        for i, cidr in enumerate(gpu_cidrs):
            networks.append(_net(f"gpunet-{i}", "gpu", MTU_TCPX, [(f"gpusubnet-{i}", cidr)]))
            nics.append(Nic(network=f"gpunet-{i}", subnet=f"gpusubnet-{i}", nic_type="GVNIC"))
    elif fabric == "rdma":
        subnets = [(f"rdma-subnet-{i}", cidr) for i, cidr in enumerate(gpu_cidrs)]
        networks.append(_net("rdma-net", "rdma", MTU_JUMBO, subnets, firewall=False, profile=f"{zone}-vpc-roce"))
        nics += [Nic(network="rdma-net", subnet=key, nic_type="MRDMA") for key, _ in subnets]
    return networks, nics


def _net(
    key: str,
    role: Literal["host", "gpu", "rdma"],
    mtu: int,
    subnets: list[tuple[str, str]],
    *,
    ssh: bool = False,
    nat: bool = False,
    firewall: bool = True,
    profile: str | None = None,
) -> Vpc:
    return Vpc(
        key=key,
        role=role,
        mtu=mtu,
        profile=profile,
        subnets=tuple(Subnet(key=k, cidr=c) for k, c in subnets),
        internal_firewall=firewall,
        ssh=ssh,
        nat=nat,
    )


def gpu_subnet_cidrs(base: str, prefix: int, count: int) -> list[str]:
    """The first ``count`` subnets of size ``/prefix`` in ``base`` (empty when ``base`` cannot hold them)."""
    try:
        net = ipaddress.ip_network(base, strict=True)
    except ValueError:
        return []
    if prefix < net.prefixlen or 2 ** (prefix - net.prefixlen) < count:
        return []
    subnets = net.subnets(new_prefix=prefix)
    return [str(next(subnets)) for _ in range(count)]


def placement(spec: ClusterSpec, offer: InstanceOffer) -> Placement:
    """How nodes are packed close together.

    * Flex-start: none; a resize request already creates densely co-located VMs ("Compact placement
      policy and workload policy overview", AI Hypercomputer docs).
    * A3 8-GPU types: a MIG workload policy (HIGH_THROUGHPUT); a template that carries a placement
      policy cannot be used by a MIG with a workload policy, so the template carries none.
    * Plain (STANDARD) reservations: none; the reservation decides where its VMs run.
    * Other types (A2): a compact placement policy (COLLOCATED, no ``vm_count``: Google does not
      recommend it, and a MIG cannot honour "exactly vm_count VMs at once") on the template.
    """
    cap = spec.capacity.type
    if cap == "flex-start":
        return NoPlacement(reason="resize requests create densely co-located VMs")
    if cap == "reservation" and not reservation_bound(spec, offer):
        # A plain (non-dense) reservation takes no external placement policy (Cluster Toolkit's Slurm
        # resume.py: "vanilla reservations don't support external policies"); its VMs sit where the
        # reservation's capacity is.
        return NoPlacement(reason="a reservation brings its own placement")
    if offer.instance_type in WORKLOAD_POLICY_TYPES:
        return WorkloadPolicy(max_topology_distance=spec.cloud_options().max_topology_distance)
    return CompactPlacement()


def reservation_bound(spec: ClusterSpec, offer: InstanceOffer) -> bool:
    if spec.capacity.type != "reservation":
        return False
    explicit = spec.cloud_options().reservation_bound
    return offer.instance_type in RESERVATION_BOUND_TYPES if explicit is None else explicit


def allocation(spec: ClusterSpec, offer: InstanceOffer, nodes: int) -> Allocation:
    """Gang allocation with one MIG (resource count does not grow with nodes).

    * flex-start: MIG at target size 0 + one ``ResizeRequest(resize_by=nodes)``: Dynamic Workload
      Scheduler creates all VMs at once or none ("About resize requests in a MIG").
    * reservation-bound: MIG at target size ``nodes`` in BULK mode: the MIG creates no VM until it can
      create all of them ("About bulk mode"; bulk mode takes reservation-bound or flex-start only).
    * on-demand, spot, plain reservations: MIG at target size ``nodes`` in the default mode. GCP offers
      no all-or-nothing creation for these models; ``wait_for_instances`` makes ``pulumi up`` fail when
      the group does not become stable.
    """
    if spec.capacity.type == "flex-start":
        return Allocation(mode="resize-request", target_size=0, resize_by=nodes, bulk=False, wait=False)
    bulk = reservation_bound(spec, offer)
    return Allocation(mode="target-size", target_size=nodes, resize_by=0, bulk=bulk, wait=True)


def scheduling(spec: ClusterSpec, offer: InstanceOffer) -> Scheduling:
    """Provisioning model, maintenance behaviour, lifetime mode and reservation affinity.

    Lifetime: on MIG templates we use an absolute ``termination_time`` (the plan's expiry) with
    ``instance_termination_action=DELETE``. Google supports both a run duration and a termination time
    in MIG templates ("Limit the run time of VMs in a MIG"); a run duration counts from each VM's own
    start, so a VM that a bulk MIG creates an hour late would outlive the cluster's expiry, while a
    termination time ends every node at the same instant. Flex-start VMs need a run duration
    (``max_run_duration`` in a FLEX_START template and ``requested_run_duration`` on the resize request,
    as in pulumi-gcp 10.2's RegionResizeRequest example).
    """
    cap = spec.capacity.type
    # The plan has an expiry exactly when the spec has a ttl or a cost cap (provision.planning.cost.estimate).
    lifetime = spec.lifetime.ttl is not None or spec.lifetime.max_cost_usd is not None
    # A time limit needs a termination action; DELETE so an expired node stops billing entirely.
    # GPU VMs cannot live-migrate: on_host_maintenance TERMINATE (the model's only value).
    delete: Literal["DELETE"] | None = "DELETE" if lifetime else None
    if cap == "spot":
        # SPOT needs preemptible=true and automatic_restart=false (InstanceTemplateSchedulingArgs docstring).
        return Scheduling(
            automatic_restart=False,
            preemptible=True,
            instance_termination_action="DELETE",
            lifetime="termination-time" if lifetime else "none",
            max_run_duration_s=None,
            reservation_affinity=None,
            provisioning_model="SPOT",
        )
    if cap == "flex-start":
        ttl = spec.lifetime.ttl
        return Scheduling(
            automatic_restart=False,
            preemptible=False,
            instance_termination_action="DELETE",
            lifetime="run-duration",
            max_run_duration_s=int(ttl.total_seconds()) if ttl else None,
            reservation_affinity=NoReservation(),
            provisioning_model="FLEX_START",
        )
    if cap == "reservation":
        bound = reservation_bound(spec, offer)
        assert spec.capacity.reservation is not None  # noqa: S101 - the spec requires it for reservations
        return Scheduling(
            automatic_restart=True,
            preemptible=False,
            # Reservation-bound templates need instance_termination_action DELETE ("Create a MIG that uses
            # the bulk mode"), lifetime or not.
            instance_termination_action="DELETE" if bound else delete,
            lifetime="termination-time" if lifetime else "none",
            max_run_duration_s=None,
            reservation_affinity=SpecificReservation(key=RESERVATION_KEY, values=(spec.capacity.reservation,)),
            provisioning_model="RESERVATION_BOUND" if bound else "STANDARD",
        )
    return Scheduling(
        automatic_restart=True,
        preemptible=False,
        instance_termination_action=delete,
        lifetime="termination-time" if lifetime else "none",
        max_run_duration_s=None,
        reservation_affinity=None,
        provisioning_model="STANDARD",
    )


def lustre_filesystem_name(name: str) -> str:
    """Managed Lustre ``filesystem``: at most 8 letters and digits (lustre.Instance docstring)."""
    return re.sub(r"[^a-z0-9]", "", name.lower())[:8]


def storage(spec: ClusterSpec, res: Resolution) -> SharedStorage | None:
    shared = spec.storage.shared
    if shared is None or res.storage is None or res.storage_size_gib is None:
        return None
    kind = res.storage.kind
    if kind == "managed-lustre":
        return ManagedLustre(
            retain=shared.retain,
            mount=shared.mount,
            instance_id=f"{spec.name}-lustre",
            filesystem=lustre_filesystem_name(spec.name),
            capacity_gib=str(res.storage_size_gib),
            throughput=str(res.storage_throughput),
            psa=True,
            firewall=True,
            firewall_ports=LUSTRE_PORTS,
            location=res.zone,
            # GKE's Lustre CSI driver reaches instances created with GKE support (LNet on port 6988).
            gke_support=spec.scheduler.kind == "kubernetes",
        )
    if kind == "parallelstore":
        return Parallelstore(
            retain=shared.retain,
            mount=shared.mount,
            instance_id=f"{spec.name}-daos",
            capacity_gib=str(res.storage_size_gib),
            deployment_type=res.storage.tier,
            psa=True,
            # Every TCP port from the private-services range: Google's "Configure a VPC network" for
            # Parallelstore creates that rule (``--allow=tcp --source-ranges=<the PSA range>``).
            firewall=True,
            firewall_ports=(),  # empty: all TCP ports
            location=res.zone,
        )
    # filestore: DIRECT_PEERING needs no private services access range of ours
    regional = res.storage.tier in ("REGIONAL", "ENTERPRISE")
    return Filestore(
        retain=shared.retain,
        mount=shared.mount,
        tier=res.storage.tier,
        capacity_gib=res.storage_size_gib,
        share="shared",
        location=spec.region if regional else res.zone,
        psa=False,
        firewall=False,
        firewall_ports=(),
    )


#: IAM service-account ids: 6-30 characters, ``^[a-z](?:[-a-z0-9]{4,28}[a-z0-9])$`` (serviceaccount.Account
#: ``account_id`` docstring in pulumi-gcp 10.2).
SERVICE_ACCOUNT_ID_MAX = 30
#: Compute Engine resource names: RFC 1035, 1-63 characters (compute v1 discovery document, e.g. Firewall.name).
COMPUTE_NAME_MAX = 63
#: Pulumi autonaming appends "-" and 7 random hex characters to the logical name.
AUTONAME_SUFFIX = 8


def _digest(text: str, length: int) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def service_account_id(name: str) -> str:
    """The node service account's id, unique per cluster name (issue 12.5).

    Names whose ``<name>-nodes`` fits IAM's 30 characters keep exactly that id (a changed id replaces the
    account). Longer names are cut, and a hash of the whole name keeps two clusters that share a long
    prefix apart: ``<first 17 chars>-<6 hex>-nodes``.
    """
    plain = f"{name}-nodes"
    if len(plain) <= SERVICE_ACCOUNT_ID_MAX:
        return plain
    return f"{name[:17].rstrip('-')}-{_digest(name, 6)}-nodes"


def physical_name(logical: str) -> str | None:
    """An explicit GCE name for ``logical`` when Pulumi's autonamed one would exceed 63 characters, else ``None``.

    ``None`` keeps autonaming, so every resource of a cluster whose names fit (all shipped stacks) keeps its
    physical name. A longer name becomes ``<prefix>-<7 hex of the logical name>``: deterministic, unique per
    logical name, RFC 1035.
    """
    if len(logical) + AUTONAME_SUFFIX <= COMPUTE_NAME_MAX:
        return None
    head = logical[: COMPUTE_NAME_MAX - AUTONAME_SUFFIX].rstrip("-")
    return f"{head}-{_digest(logical, 7)}"


def decide(spec: ClusterSpec, res: Resolution) -> GcpPlan:
    """Everything the component needs."""
    assert res.offer is not None and res.fabric is not None and res.nodes is not None  # noqa: S101
    offer, opts = res.offer, spec.cloud_options()
    ssh_ranges = (*spec.access.allowed_cidrs, *([IAP_RANGE] if opts.allow_iap_ssh else []))
    shared = storage(spec, res)
    networks, nics = network_layout(spec, offer, res.fabric, res.zone)
    # A retained filesystem stays peered to the host VPC, so the host VPC is retained with it.
    keep = bool(shared and shared.retain)
    networks = [n.model_copy(update={"retain": keep and n.key == "net-0"}) for n in networks]
    # An attached volume's filesystem is reached only from inside the volume's VPC (its services' peering is not
    # transitive: cloud.google.com/vpc/docs/vpc-peering), so the host network (nic0) is a subnet of that VPC.
    volume = spec.storage.shared.volume if spec.storage.shared is not None else None
    if volume is not None and spec.scheduler.kind != "kubernetes":
        # Its MTU is the volume VPC's (clouds/gcp/volume.py creates it at MTU_JUMBO; nic0 takes its VPC's MTU).
        networks = [
            n.model_copy(update={"volume": volume, "mtu": MTU_JUMBO}) if n.key == "net-0" else n for n in networks
        ]
    return GcpPlan(
        project=opts.project,
        zone=res.zone,
        networks=tuple(networks),
        nics=tuple(nics),
        ssh_source_ranges=ssh_ranges,
        placement=placement(spec, offer),
        allocation=allocation(spec, offer, res.nodes),
        scheduling=scheduling(spec, offer),
        boot_disk=BootDisk(
            type=BOOT_DISK_TYPES.get(offer.instance_type, DEFAULT_BOOT_DISK_TYPE), size_gib=opts.boot_disk_gib
        ),
        shielded=Shielded(secure_boot=opts.secure_boot, vtpm=True, integrity_monitoring=True),
        service_account=ServiceAccount(account_id=service_account_id(spec.name), roles=NODE_ROLES, scopes=NODE_SCOPES),
        psa_prefix_length=opts.psa_prefix_length,
        os_login=opts.os_login,
        storage=shared,
    )
