"""Azure adapter, plan half: ND-series GPU nodes on InfiniBand inside single-placement-group scale sets.

Pure: imports no Pulumi and no Azure SDK. Every decision :mod:`.components` needs is in the plan:
islands (one Uniform VMSS + proximity placement group each), the address plan, the pinned image,
the consumption model and the shared filesystem layout (``plan.extra``).

Azure facts this file relies on (each checked at its source):

* InfiniBand spans one scale set with ``singlePlacementGroup: true``, capped at 100 VMs (300 after a
  support request): learn.microsoft.com/azure/virtual-machines/sizes-hpc "Cluster configuration options".
* No delete-at-time exists for VMs; the ScheduledAction API (computeschedule) is preview-only
  (2025-04-15-preview in azure-native 3.29) and can only deallocate, so the nodes delete their own
  resource group at the expiry through a role scoped to it (``expiry.py``), tags + reaper as backup.
* On-demand capacity reservations support neither ND-series, proximity placement groups nor scale
  sets with single placement group: learn.microsoft.com/azure/virtual-machines/capacity-reservation-overview.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

from provision.catalog import InstanceOffer, cloud_facts
from provision.clouds.azure import kubeplan, rules
from provision.clouds.azure.plan import (
    Amlfs,
    AmlfsHsm,
    AzurePlan,
    BastionHost,
    ImageReference,
    Island,
    Maintenance,
    NetApp,
)
from provision.clouds.azure.slurm import DEFAULT_INSTANCE_TYPE as SLURM_DEFAULT_TYPE
from provision.clouds.azure.slurm import slurm_controller_plan
from provision.clouds.base import Adapter, Limit
from provision.planning.kubernetes import KubernetesPlan
from provision.planning.resolve import Resolution, shared_kind
from provision.spec import ClusterSpec
from provision.spec.errors import REDACTED, ProblemCollector
from provision.spec.options.azure import AzureOptions

#: NCCL topology files the ubuntu-hpc image ships (azhpc-images topology/, copied to /opt/microsoft).
TOPOLOGY_FILES = {
    "Standard_ND96isr_H100_v5": "/opt/microsoft/ndv5-topo.xml",
    "Standard_ND96isr_H200_v5": "/opt/microsoft/ndv5-topo.xml",
    "Standard_ND96asr_v4": "/opt/microsoft/ndv4-topo.xml",
    "Standard_ND96amsr_A100_v4": "/opt/microsoft/ndv4-topo.xml",
}
#: Microsoft's NCCL tuning for Azure NDv5 (H100 / H200, NVSwitch inside, InfiniBand across):
#: Azure/ai-infrastructure-on-azure infrastructure_validations/slurm/NCCL/configs/hopper.conf. Its SHARP set
#: (NCCL_COLLNET_ENABLE and SHARP_*) is left out: it needs HPC-X's SHARP plugin on the library path.
NDV5_TUNING = {
    "NCCL_PXN_DISABLE": "1",
    "NCCL_MIN_NCHANNELS": "32",
    "NCCL_P2P_NET_CHUNKSIZE": str(2 * 1024 * 1024),
    "NCCL_IB_QPS_PER_CONNECTION": "4",
}
NDV5_SIZES = frozenset({"Standard_ND96isr_H100_v5", "Standard_ND96isr_H200_v5"})
#: The ubuntu-hpc images name the accelerated-networking Ethernet NIC eth0.
HOST_NIC = "eth0"


def resource_group_names(name: str) -> tuple[str, str]:
    """(cluster resource group, retained-data resource group)."""
    return f"{name}-rg", f"{name}-data-rg"


def rccl_env(gpus: int) -> dict[str, str]:
    """RCCL's settings on ND MI300X v5 (RCCL reads the NCCL_* names), each with its source.

    * ``NCCL_IB_HCA``: only the eight InfiniBand HCAs ``mlx5_ib0..7`` (one per GPU), never the accelerated-networking
      Ethernet device ``mlx5_an0``, which RCCL would otherwise also pick up (RCCL env docs, "NCCL_IB_HCA";
      rocm.docs.amd.com/projects/rccl/en/latest/api-reference/env-variables.html).
    * ``HSA_NO_SCRATCH_RECLAIM=1``: Microsoft runs RCCL on ND MI300X v5 with it (Azure/azurehpc-health-checks
      customTests/azure_rccl_allreduce.nhc @0e0a1ac, 2026-05-01: ``-x HSA_NO_SCRATCH_RECLAIM=1``), together with
      ``NCCL_IB_PCI_RELAXED_ORDERING=1`` and ``NCCL_SOCKET_IFNAME=eth0`` (set for every ND size above).

    Deliberately not set, with the reason:

    * ``HSA_FORCE_FINE_GRAIN_PCIE``: AMD's "RCCL usage tips" give it for peer-to-peer between *PCIe-connected* GPUs;
      MI300X GPUs talk over XGMI (Infinity Fabric), and neither Microsoft's image nor its health checks set it.
    * ``RCCL_MSCCL_ENABLE``: left to RCCL's default (AMD "RCCL usage tips": MSCCL/MSCCL++ integration is removed
      in RCCL 7.x; on the pinned RCCL 2.20.5 its default applies to single-node collectives).
    * ``NCCL_IB_GID_INDEX``: selects a RoCE GID; ND MI300X v5 uses native InfiniBand (LID-routed), where it does
      not apply (NCCL env docs, "NCCL_IB_GID_INDEX ... RoCE mode").
    * ``NCCL_NET_GDR_LEVEL``: no Microsoft or AMD source gives a value for MI300X; RCCL's topology detection
      decides GPUDirect RDMA.
    """
    return {
        "NCCL_IB_HCA": ",".join(f"mlx5_ib{i}:1" for i in range(gpus)),
        "HSA_NO_SCRATCH_RECLAIM": "1",
    }


def has_zones(region: str) -> bool:
    """Whether an Azure region has availability zones (the catalog's ``regions_without_zones`` fact)."""
    return region not in cloud_facts("azure").regions_without_zones


class AzureAdapter(Adapter[AzurePlan]):
    cloud = "azure"
    extra = "azure"
    sdk_modules = ("pulumi", "pulumi_azure_native", "pulumiverse_time")
    sweeper: ClassVar[str | None] = "subscription"
    slurm_controller: ClassVar[str | None] = SLURM_DEFAULT_TYPE
    preflight_asks: ClassVar[tuple[str, str] | None] = (
        "Azure subscription",
        "resource providers, quota and size restrictions",
    )
    limits: ClassVar[Mapping[Limit, str]] = {
        Limit.LIFETIME: "Azure cannot delete a VM at a set time (ScheduledAction is preview-only and only "
        "deallocates): "
        "the nodes delete their resource group at the expiry through a role scoped to it, which needs Owner or "
        "User Access Administrator rights to create (azure.delete_at_expiry).",
        Limit.FABRIC_ISLAND: "InfiniBand spans one single-placement-group scale set: 100 VMs, 300 after a "
        "support request.",
        Limit.PUBLIC_HEAD_NODE: "A Uniform scale set gives every instance the same NIC; one public node is not "
        "possible.",
        Limit.CAPACITY_RESERVATION: "On-demand capacity reservations exclude ND-series, proximity placement groups and "
        "single-placement-group scale sets.",
        # Azure/azhpc-images builds ND GB200 v6 images for aarch64 separately from the x86_64 ubuntu-hpc image.
        Limit.ARM64: "an arm64 ubuntu-hpc image pin in images/azure.yaml (azhpc-images builds the ND GB200 v6 image "
        "for "
        "aarch64) and the GB200 NVLink-domain (NVL72, 18 VMs) placement",
    }

    # ------------------------------------------------------------------ checks
    def sized_options(self, nodes: int) -> tuple[dict[str, Any], tuple[str, ...]]:
        island = AzureOptions().max_island_nodes
        if nodes <= island:
            return {}, ()
        return {"split_islands": True}, (
            f"azure.split_islands: true - {nodes:,} nodes are over {island}, the largest InfiniBand island (one "
            "scale set with singlePlacementGroup), so they are split into islands; InfiniBand does not cross "
            "islands: `provision launch` prints one NCCL job per island, or a TCP line for the whole cluster",
        )

    def check(self, spec: ClusterSpec, res: Resolution, found: ProblemCollector) -> None:
        opts: AzureOptions = spec.cloud_options()
        self._check_islands(spec, res, opts, found)
        self._check_access(spec, found)
        self._check_image(spec, found)
        self._check_capacity(spec, res, found)
        self._check_network(spec, res, opts, found)
        if spec.zone is not None and spec.zone not in ("1", "2", "3"):
            found.add("zone", spec.zone, "is not an Azure availability zone", "use 1, 2 or 3, or drop zone")
        elif spec.zone is not None and not has_zones(spec.region):
            found.add(
                "zone",
                spec.zone,
                f"region {spec.region} has no availability zones, so Azure refuses a zonal resource there "
                "(learn.microsoft.com/azure/reliability/regions-list)",
                "drop zone, or pick a region with zones (e.g. westus2, westus3, eastus)",
            )

    @staticmethod
    def _count_path(spec: ClusterSpec) -> tuple[str, int | None]:
        return ("nodes", spec.nodes) if spec.nodes is not None else ("gpus", spec.gpus)

    def _check_islands(self, spec: ClusterSpec, res: Resolution, opts: AzureOptions, found: ProblemCollector) -> None:
        if res.nodes is None or res.fabric is None:
            return
        path, value = self._count_path(spec)
        if res.fabric != "infiniband":
            if res.nodes > rules.VMSS_MAX_NODES:
                found.add(
                    path,
                    value,
                    f"needs {res.nodes} nodes, above the {rules.VMSS_MAX_NODES} VMs one Uniform scale set holds",
                    f"use at most {rules.VMSS_MAX_NODES} nodes",
                )
            return
        cap = opts.max_island_nodes
        if res.nodes > cap and not opts.split_islands:
            islands = rules.split_islands(res.nodes, cap)
            found.add(
                path,
                value,
                f"needs {res.nodes} nodes on one InfiniBand fabric, but an Azure IB fabric is one scale set with "
                f"singlePlacementGroup, capped at {cap} VMs (100 by default, 300 after a quota request)",
                f"set azure.split_islands: true to build {len(islands)} IB islands of {'/'.join(map(str, islands))} "
                "nodes (InfiniBand does not cross islands: one NCCL job per island, or NCCL_IB_DISABLE=1 for a job "
                "spanning them), or raise azure.max_island_nodes (up to 300) "
                f"after Azure support raises the placement-group limit, or use at most {cap} nodes",
            )

    @staticmethod
    def _check_access(spec: ClusterSpec, found: ProblemCollector) -> None:
        access = spec.access
        if not access.ssh_public_keys:
            found.add(
                "access.ssh_public_keys",
                REDACTED,
                "is empty, but Azure Linux nodes here accept SSH keys only (password login is disabled)",
                "add an ssh-ed25519 or ssh-rsa (2048 bits or more) public key",
            )
        for i, cidr in enumerate(access.allowed_cidrs):
            if ":" in cidr:
                # The VNet is IPv4-only, and one NSG rule cannot mix address families
                # (ResourceCannotContainAddressPrefixesFromDifferentAddressFamilies).
                found.add(
                    f"access.allowed_cidrs[{i}]",
                    cidr,
                    "is IPv6, but the cluster's VNet and NSG rules are IPv4-only",
                    "list the IPv4 networks you connect from",
                )
        for i, key in enumerate(access.ssh_public_keys):
            why = rules.ssh_key_problem(key)
            if why:
                found.add(
                    f"access.ssh_public_keys[{i}]",
                    key.split()[0] if key.split() else REDACTED,
                    why,
                    "generate a supported key: ssh-keygen -t ed25519 (or ssh-keygen -t rsa -b 4096)",
                )
        if access.ssh_user in rules.RESERVED_ADMIN_USERNAMES:
            found.add(
                "access.ssh_user",
                access.ssh_user,
                "is a user name Azure refuses as a VM's admin user",
                "use another name, e.g. azureuser or ubuntu",
            )
        if access.public_head_node:
            found.add(
                "access.public_head_node",
                True,
                "is not possible on Azure here: a Uniform scale set gives every node the same network "
                "configuration, so node 0 alone cannot get a public IP",
                "set it to false and reach the private nodes over a VPN, VNet peering or Azure Bastion "
                "(access.allowed_cidrs then lists those networks)",
            )

    @staticmethod
    def _check_image(spec: ClusterSpec, found: ProblemCollector) -> None:
        if spec.image.id:
            why = rules.image_problem(spec.image.id)
            if why:
                found.add(
                    "image.id",
                    spec.image.id,
                    why,
                    "pin an exact version, e.g. microsoft-dsvm:ubuntu-hpc:2204:22.04.2024102301",
                )

    @staticmethod
    def _check_capacity(spec: ClusterSpec, res: Resolution, found: ProblemCollector) -> None:
        cap = spec.capacity
        if cap.type != "reservation" or cap.reservation is None:
            return
        group = cap.reservation if cap.reservation.startswith("/") else "/" + cap.reservation
        why = rules.capacity_reservation_problem(group)
        if why:
            found.add("capacity.reservation", cap.reservation, why, "copy the group's id from the portal or az CLI")
        offer = res.offer
        if offer is not None and cap.type in offer.consumption:  # the shared check did not already refuse it
            found.add(
                "capacity.type",
                cap.type,
                f"cannot hold {offer.instance_type}: Azure on-demand capacity reservations support neither "
                "ND-series sizes, proximity placement groups nor single-placement-group scale sets "
                "(InfiniBand needs both)",
                "use on-demand (a Reserved Instance or savings plan gives the discount) or spot",
            )

    def _check_network(self, spec: ClusterSpec, res: Resolution, opts: AzureOptions, found: ProblemCollector) -> None:
        why = rules.vnet_problem(opts.vnet_cidr)
        if why:
            found.add("azure.vnet_cidr", opts.vnet_cidr, why, "use a private range such as 10.0.0.0/16")
            return
        if res.nodes is None:
            return
        if rules.address_plan(opts.vnet_cidr, self._subnet_prefixes(spec, res)) is None:
            found.add(
                "azure.vnet_cidr",
                opts.vnet_cidr,
                f"cannot hold the node subnet for {res.nodes} nodes and the filesystem subnet",
                "use a larger range, e.g. 10.0.0.0/16",
            )

    def lifetime_enforcement(self, spec: ClusterSpec) -> str | None:
        """Azure has no VM lifetime: the nodes delete their own scale sets (see ``expiry.py``), if allowed.

        AKS nodes run the AKS node image, not provision's timer: a CronJob deletes the cluster (``kubeexpiry.py``)."""
        opts: AzureOptions = spec.cloud_options()
        if not opts.delete_at_expiry:
            return None
        if spec.scheduler.kind == "kubernetes":
            return (
                "a CronJob on the system pool deletes the AKS cluster (every node pool) at the expiry, through "
                "Workload Identity and a custom role (only managedClusters read/delete) scoped to the cluster; "
                "the network and Managed Lustre stay until `down` or the reaper"
            )
        return (
            "a systemd timer on every node deletes its scale set at the expiry, through a custom role (only "
            "Microsoft.Compute/virtualMachineScaleSets/delete) scoped to the cluster's resource group, assigned to the "
            "nodes' identity; the reaper removes the rest"
        )

    # ------------------------------------------------------------------ plan pieces
    def warnings(self, spec: ClusterSpec, res: Resolution) -> list[str]:
        opts: AzureOptions = spec.cloud_options()
        out: list[str] = []
        if (spec.lifetime.ttl is not None or spec.lifetime.max_cost_usd is not None) and not opts.delete_at_expiry:
            out.append(
                "azure.delete_at_expiry is false: nothing in the cloud deletes the cluster at its expiry. The "
                "expiry is recorded in the provision-expires-at tag on the resource group and every resource; "
                "only `provision reap --azure-subscription ID` (run on a schedule) deletes it. Until then the "
                "cluster keeps billing."
            )
        islands = self.islands(spec, res)
        if len(islands) > 1:
            out.append(
                f"{res.nodes} nodes form {len(islands)} InfiniBand islands ({'/'.join(map(str, islands))} nodes): "
                "InfiniBand does not cross scale sets, and NCCL uses one network for a whole communicator (no "
                "per-peer fallback to Ethernet), so one NCCL job cannot span them over InfiniBand: run one job "
                "per island, or set NCCL_IB_DISABLE=1 for a job that spans islands (all of its traffic then goes "
                "over Ethernet). See plan islands and outputs fabric.islands."
            )
        if spec.capacity.type == "spot":
            out.append("Spot nodes are evicted and deleted when Azure needs the capacity; the island shrinks.")
        anf_gib = res.storage_size_gib or 0
        if res.storage is not None and res.storage.kind == "netapp" and anf_gib > 100 * 1024:
            # learn.microsoft.com/azure/azure-netapp-files/large-volumes-requirements-considerations, "Configure
            # large volumes": "You must first request an increase in regional capacity quota before using large
            # volumes"; regional-capacity-quota.md: a support request, typically answered within two business days.
            out.append(
                f"storage.shared is {anf_gib / 1024:g} TiB of Azure NetApp Files: over 100 TiB it is a "
                f"large volume, which needs a regional capacity quota increase in {spec.region} first (a support "
                "request, typically answered within two business days); without it the volume's creation fails."
            )
        storage = spec.storage.shared
        if storage is not None and storage.retain and res.storage is not None:
            _, data_rg = resource_group_names(spec.name)
            out.append(
                f"storage.shared.retain: the filesystem and the network it sits in live in resource group {data_rg}, "
                "which pulumi destroy and the reaper leave in place (tag provision-retain=true); it keeps billing "
                "until you delete that resource group"
                + (
                    ", with the NAT gateway, its public IP and the Bastion (about $0.29/h on its own)."
                    if opts.bastion
                    else ", with the NAT gateway and its public IP."
                )
            )
        if (
            res.storage is not None
            and res.storage.kind == "amlfs"
            and spec.zone is None
            and opts.filesystem_zone
            and has_zones(spec.region)
        ):
            # create-file-system-portal: "create the file system in the same region and availability zone as
            # your client machines" for optimal performance.
            out.append(
                f"The Lustre file system goes to availability zone {opts.filesystem_zone} (azure.filesystem_zone) "
                "but the nodes have no zone, so Azure may place them in another zone and every I/O crosses zones: "
                f"set zone: '{opts.filesystem_zone}' to keep them together."
            )
        if opts.encryption_at_host:
            # disks-enable-host-based-encryption-cli: "You must enable the feature for your subscription before
            # you use the EncryptionAtHost property for your VM/VMSS".
            out.append(
                "azure.encryption_at_host needs the EncryptionAtHost feature registered on the subscription (az "
                "feature register --namespace Microsoft.Compute --name EncryptionAtHost), or the scale set create "
                "fails; a real `up` checks it first (the Azure preflight)."
            )
        else:
            out.append(
                "azure.encryption_at_host is off: temp disks and disk caches are not encrypted on the host (v5 sizes "
                "such as ND H100 v5 encrypt temp disks at rest anyway); set it to true after registering the "
                "Microsoft.Compute/EncryptionAtHost feature on the subscription."
            )
        return out

    def islands(self, spec: ClusterSpec, res: Resolution) -> tuple[int, ...]:
        nodes = res.nodes or 0
        opts: AzureOptions = spec.cloud_options()
        if res.fabric != "infiniband" or nodes <= opts.max_island_nodes:
            return (nodes,)
        return rules.split_islands(nodes, opts.max_island_nodes)

    def nccl_env(self, offer: InstanceOffer, fabric: str) -> dict[str, str]:
        if fabric != "infiniband":
            return {"NCCL_IB_DISABLE": "1", "NCCL_SOCKET_IFNAME": HOST_NIC}
        env = {
            # Relaxed PCIe ordering and the host NIC for bootstrap, as the image's own /etc/nccl.conf
            # (azhpc-images customizations/ndv5.sh) and Microsoft's ND H100 v5 guidance set them.
            "NCCL_IB_PCI_RELAXED_ORDERING": "1",
            "NCCL_SOCKET_IFNAME": HOST_NIC,
        }
        if offer.gpu_vendor == "nvidia":
            env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
            # azhpc-images added it to the ndv4/ndv5 /etc/nccl.conf in commit bf3b320e (2025-02-05); the pinned
            # 2024-10 image predates it.
            env["NCCL_IGNORE_CPU_AFFINITY"] = "1"
            topo = TOPOLOGY_FILES.get(offer.instance_type)
            if topo:
                env["NCCL_TOPO_FILE"] = topo
            if offer.instance_type in NDV5_SIZES:
                env.update(NDV5_TUNING)
        else:
            env.update(rccl_env(offer.gpus_per_node))
        return env

    @staticmethod
    def _filesystem_capacity_tib(res: Resolution) -> float:
        return (res.storage_size_gib or 0) / 1024

    def _subnet_prefixes(self, spec: ClusterSpec, res: Resolution) -> dict[str, int]:
        prefixes = {"nodes": rules.nodes_subnet_prefix(res.nodes or 1)}
        kind = self._storage_kind(spec, res)
        if kind == "amlfs":
            prefixes["filesystem"] = rules.amlfs_subnet_prefix(max(1.0, self._filesystem_capacity_tib(res)))
        elif kind == "netapp":
            prefixes["filesystem"] = rules.NETAPP_SUBNET_PREFIX
        if spec.cloud_options().bastion:
            prefixes["bastion"] = rules.BASTION_SUBNET_PREFIX
        return prefixes

    @staticmethod
    def _storage_kind(spec: ClusterSpec, res: Resolution) -> str | None:
        return shared_kind(spec, res)

    def extra_plan(self, spec: ClusterSpec, res: Resolution) -> AzurePlan:
        opts: AzureOptions = spec.cloud_options()
        name = spec.name
        cluster_rg, data_rg = resource_group_names(name)
        shared = spec.storage.shared
        retain = bool(shared is not None and shared.retain and res.storage is not None)
        network_rg = data_rg if retain else cluster_rg
        layout = rules.address_plan(opts.vnet_cidr, self._subnet_prefixes(spec, res))
        assert layout is not None  # noqa: S101  # check() refused layouts that do not fit
        infiniband = res.fabric == "infiniband"
        has_lifetime = spec.lifetime.ttl is not None or spec.lifetime.max_cost_usd is not None
        sizes = self.islands(spec, res)
        islands, first = [], 0
        for i, (size, prefix) in enumerate(zip(sizes, rules.computer_name_prefixes(name, len(sizes)), strict=True)):
            islands.append(
                Island(
                    index=i,
                    vmss=f"{name}-island{i}",
                    # ONE proximity placement group for all islands (named after island 0, so a single-island cluster
                    # keeps its group): islands land in one datacenter, so jobs spanning them over Ethernet stay
                    # close, and the graph does not grow by a group per island.
                    ppg=f"{name}-island0-ppg" if infiniband else None,
                    computer_name_prefix=prefix,
                    first_rank=first,
                    nodes=size,
                )
            )
            first += size
        assert res.offer is not None  # noqa: S101  # plan() calls extra_plan only after every check passed
        image_ref = self.image(spec, res.offer, res.fabric or "none").ref
        cap = spec.capacity
        spot = cap.type == "spot"
        reservation = None
        if cap.type == "reservation" and cap.reservation:
            reservation = cap.reservation if cap.reservation.startswith("/") else "/" + cap.reservation
        image = rules.image_reference(image_ref)
        assert image is not None  # noqa: S101  # check() refused an image that is neither a URN nor an id
        return AzurePlan(
            resource_group=cluster_rg,
            network_resource_group=network_rg,
            retain_network=retain,
            vnet=f"{name}-vnet",
            vnet_cidr=opts.vnet_cidr,
            subnets=layout.subnets,
            islands=tuple(islands),
            single_placement_group=infiniband,
            image=ImageReference(**image),
            priority="Spot" if spot else "Regular",
            eviction_policy="Delete" if spot else None,
            max_price=(cap.max_price_per_hour_usd or -1) if spot else None,
            capacity_reservation_group=reservation,
            os_disk_gib=opts.os_disk_gib,
            encryption_at_host=opts.encryption_at_host,
            nic=f"{name}-nic",
            filesystem=self._filesystem_plan(spec, res, opts, layout.subnets),
            lifetime="node-timer" if has_lifetime and opts.delete_at_expiry else "tags+reaper",
            bastion=BastionHost(name=f"{name}-bastion", subnet=layout.subnets["bastion"]) if opts.bastion else None,
            slurm=slurm_controller_plan(spec),
        )

    def _filesystem_plan(
        self, spec: ClusterSpec, res: Resolution, opts: AzureOptions, subnets: dict[str, str]
    ) -> Amlfs | NetApp | None:
        if res.storage is None:
            return None
        name = spec.name
        size_gib = res.storage_size_gib or 0
        if res.storage.kind == "amlfs":
            tib = self._filesystem_capacity_tib(res)
            return Amlfs(
                name=f"{name}-lustre",
                sku=res.storage.tier,
                capacity_tib=int(tib) if tib == int(tib) else tib,
                # No default zone in a region without zones (catalog fact regions_without_zones).
                zone=spec.zone or (opts.filesystem_zone if has_zones(spec.region) else None),
                maintenance=Maintenance(day_of_week=opts.maintenance_day, time_of_day_utc=opts.maintenance_time_utc),
                subnet_prefix_rule=f"/{rules.amlfs_subnet_prefix(tib)} for {tib:g} TiB "
                "(amlfs-prerequisites table, at least /24 per the SDK)",
                hsm=amlfs_hsm(spec),
            )
        tib_bytes = 1024**4
        size_bytes = math.ceil(size_gib / 1024) * tib_bytes
        return NetApp(
            account=f"{name}-anf",
            pool=f"{name}-pool",
            volume=f"{name}-volume",
            creation_token=f"{name}-shared",
            service_level=res.storage.tier,
            pool_bytes=size_bytes,
            volume_bytes=size_bytes,
            large_volume=size_bytes > 100 * tib_bytes,
            allowed_clients=subnets["nodes"],
        )

    # ------------------------------------------------------------------ scheduler: kubernetes (AKS)
    def check_kubernetes(self, spec: ClusterSpec, res: Resolution, found: ProblemCollector) -> None:
        kubeplan.check(spec, res, found)

    def kubernetes_plan(self, spec: ClusterSpec, res: Resolution) -> KubernetesPlan:
        assert res.offer is not None and res.fabric is not None  # noqa: S101
        return kubeplan.kubernetes_plan(spec, res, self.extra_plan(spec, res), self.nccl_env(res.offer, res.fabric))

    def kubernetes_warnings(self, spec: ClusterSpec, res: Resolution, k8s: KubernetesPlan) -> list[str]:
        out = super().kubernetes_warnings(spec, res, k8s)
        if res.fabric == "infiniband":
            out.append(
                "AKS InfiniBand: register the subscription feature Microsoft.ContainerService/AKSInfinibandSupport "
                "(az feature register --namespace Microsoft.ContainerService --name AKSInfinibandSupport) before "
                "`up`, so the GPU pool's nodes land on one InfiniBand network (Azure/aks-rdma-infiniband)."
            )
        if kubeplan.aks(k8s).delete_at_expiry:
            out.append(
                "lifetime on AKS: a CronJob deletes the AKS cluster at expires_at (the control plane and every node "
                "pool); the VNet, NAT gateway and Managed Lustre keep billing until `provision reap` or `down`."
            )
        return out


def amlfs_hsm(spec: ClusterSpec) -> AmlfsHsm | None:
    """The HSM settings of ``storage.shared.object_store`` (checked by spec/objectstore.py), or ``None``."""
    shared = spec.storage.shared
    link = shared.object_store if shared is not None else None
    if link is None or link.account_id is None or link.logging_container is None:
        return None
    container, _, prefix = link.uri.split(".blob.core.windows.net/", 1)[1].partition("/")
    base = f"{link.account_id}/blobServices/default/containers/"
    return AmlfsHsm(
        container=base + container,
        logging_container=base + link.logging_container,
        import_prefix="/" + prefix.strip("/") if prefix.strip("/") else "/",
        account_id=link.account_id,
        principal_id=link.hpc_cache_principal_id,
    )
