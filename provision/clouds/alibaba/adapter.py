"""Alibaba Cloud adapter: the pure plan for GN8 / GN7 clusters with eRDMA, CPFS and NAS.

Imports no Pulumi and no cloud SDK. :mod:`provision.clouds.alibaba.components` turns the plan into
resources and reads every decision from ``plan.extra`` (built by :func:`decide`).

Why one ``ecs.Instance`` per node (the allocation choice), checked against pulumi-alicloud 4.0.0:

* eRDMA needs each ERI's ``network_interface_traffic_mode="HighPerformance"`` (and, on two-card types,
  its ``network_card_index``). ``ecs.EcsLaunchTemplate`` / ``ecs.LaunchTemplate`` network interfaces and
  ``ecs.EcsInstanceSet`` network interfaces have no traffic-mode field, so neither an instance set nor an
  ``ecs.AutoProvisioningGroup`` (which launches from a template) can create ERIs.
* ``ess.ScalingConfiguration.network_interfaces[]`` has ``network_interface_traffic_mode`` but no network
  card index, and ``ess.ScalingGroup`` / ``ScalingConfiguration`` have no deployment set, no
  ``auto_release_time`` and no jumbo-frame switch; scaling activities also create nodes asynchronously.
  ESS therefore cannot give eRDMA on every card + low-latency placement + a cloud-side lifetime.
* ``ecs.Instance`` takes all of them: the primary ENI's ``network_interface_traffic_mode`` and
  ``network_card_index``, one secondary ENI inline through ``network_interfaces`` (a single object in
  the SDK), ``deployment_set_id``, ``auto_release_time`` and ``enable_jumbo_frame``.

Resource count: exactly one ``ecs.Instance`` per node and no per-NIC resources (the secondary ERI is
created inline, never as ``ecs.EcsNetworkInterface`` + attachment); plus one ``ecs.EcsDeploymentSet`` per
20 nodes, because a LowLatency deployment set holds at most 20 instances in one zone (ECS docs,
"Deployment sets", doc-detail/91258). Everything else is a fixed set of cluster resources.
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections.abc import Mapping
from typing import ClassVar

from provision.catalog import InstanceOffer
from provision.clouds.alibaba import ramrole
from provision.clouds.alibaba.plan import (
    AlibabaPlan,
    Cpfs,
    Nas,
    key_pair_public_key,
)
from provision.clouds.alibaba.slurm import DEFAULT_INSTANCE_TYPE as SLURM_DEFAULT_TYPE
from provision.clouds.alibaba.slurm import slurm_controller_plan
from provision.clouds.base import Adapter, Limit
from provision.planning.images import LOOKUP_PREFIX, default_image
from provision.planning.kubernetes import KubernetesPlan
from provision.planning.plan import ClusterPlan
from provision.planning.resolve import Resolution, shared_kind
from provision.spec import ClusterSpec
from provision.spec.errors import ProblemCollector, SpecError

#: A LowLatency deployment set holds at most 20 instances, all in one zone (ECS "Deployment sets" limits,
#: https://www.alibabacloud.com/help/zh/doc-detail/91258.htm). Spot instances cannot join a deployment set.
DEPLOYMENT_SET_MAX = 20
#: ``auto_release_time`` must be at least 30 minutes after the API call and under 3 years ahead
#: (pulumi_alicloud.ecs.Instance docstring; ECS ModifyInstanceAutoReleaseTime). 15 minutes are kept for
#: the time between planning and RunInstances.
AUTO_RELEASE_MIN_MINUTES = 30
PROVISIONING_MARGIN_MINUTES = 15
#: ECS resources take at most 20 tags; keys and values must not start with these (ECS TagResources docs).
MAX_TAGS = 20
RESERVED_TAG_PREFIXES = ("aliyun", "acs:")
PROVISION_TAGS = 5  # provision-cluster, -owner, -expires-at, -stack, and -rank on nodes
#: ecs.Instance creates the primary ENI and ONE secondary ENI (``network_interfaces`` is a single object).
MAX_INLINE_ERIS = 2
#: MTU with jumbo frames enabled on an ECS instance (ECS "Jumbo frames" docs); the VPC default is 1500.
JUMBO_MTU = 8500
#: MTU of eRDMA nodes without jumbo frames. Alibaba, "Enable eRDMA on a GPU-accelerated instance"
#: (help/en/ecs/user-guide/on-the-gpu-instance-configuration-erdma): with NCCL's LL128 protocol the MTU must be
#: 8500 with jumbo frames and 1400 without; a wrong MTU causes data consistency problems.
ERDMA_MTU = 1400
DEFAULT_MTU = 1500
#: Families Alibaba documents with jumbo frames among the GPU types here: the ECS instance-family page says of
#: gn8v "These instances support jumbo frames". The "Jumbo frames" page lists only CPU families (g8i, c8i, r8i,
#: c8ine, g8ine, 9th generation on), and RunInstances NetworkOptions.EnableJumboFrame says "supported only by
#: specific eighth-generation and later instance types" (per type: DescribeInstanceTypes JumboFrameSupport).
JUMBO_FRAME_FAMILIES = frozenset({"gn8v"})
#: Jumbo frames need an 8th-generation or later type (RunInstances NetworkOptions.EnableJumboFrame).
JUMBO_FRAME_MIN_GENERATION = 8
#: Bandwidth of node 0's EIP with access.public_head_node (SSH only).
HEAD_EIP_MBPS = 10
#: The nodes' vSwitch is the first /18 of the VPC (or the VPC itself when smaller): room for 16k ENIs.
VSWITCH_PREFIX = 18
#: Addresses kept free in the vSwitch beyond the nodes' ENIs: NAT gateway, NAS mount targets and the
#: CPFS protocol-service export, which takes up to 32 IPs (CreateProtocolMountTarget docs).
VSWITCH_RESERVED = 64
#: Number of network cards where the catalog does not record it yet (``InstanceOffer.network_cards`` is
#: null). ebmgn8v: "170 Gbit/s (85 x 2)" and two eRDMA NICs (PAI "eRDMA: Use high-performance networks",
#: https://www.alibabacloud.com/help/en/pai/user-guide/erdma-distributed-training-with-high-performance-networks).
NETWORK_CARDS_FALLBACK = {"ecs.ebmgn8v.48xlarge": 2}


#: NFS options Alibaba documents for Linux clients (NAS "Mount an NFS file system", NFSv3; CPFS protocol
#: service exports are NFSv3 as well).
NFS_OPTIONS = "vers=3,nolock,proto=tcp,rsize=1048576,wsize=1048576,hard,timeo=600,retrans=2,noresvport"

_LINGJUN_REASON = (
    "pulumi-alicloud 4.0 has no resource that creates CPFS for Lingjun (bmcpfs) file systems "
    "(nas.FileSystem takes standard, extreme, cpfs and cpfsse only), and Lingjun file systems pair with "
    "Lingjun (eflo) compute rather than ECS instances in a VPC"
)


def image_lookup(plan: ClusterPlan[AlibabaPlan]) -> str | None:
    """The ``name_regex`` to resolve once when the image is not pinned by id, else ``None``."""
    ref = plan.image.ref
    return ref[len(LOOKUP_PREFIX) :] if ref.startswith(LOOKUP_PREFIX) else None


def _shared_kind(spec: ClusterSpec, res: Resolution) -> str | None:
    return shared_kind(spec, res)


def _vswitch_cidr(vpc_cidr: str) -> ipaddress.IPv4Network:
    vpc = ipaddress.IPv4Network(vpc_cidr)
    return next(vpc.subnets(new_prefix=VSWITCH_PREFIX)) if vpc.prefixlen < VSWITCH_PREFIX else vpc


def generation(offer: InstanceOffer) -> int | None:
    """The ECS generation of a GPU family (``gn8v`` -> 8, ``gn7ex`` -> 7), or ``None`` when it has no digit."""
    match = re.search(r"gn(\d+)", offer.family or offer.instance_type)
    return int(match.group(1)) if match else None


def jumbo_frames(offer: InstanceOffer, wanted: bool | None) -> bool:
    """Whether the nodes get jumbo frames: the spec's choice, else on only where Alibaba documents them."""
    return (offer.family in JUMBO_FRAME_FAMILIES) if wanted is None else wanted


def _eri_cards(offer: InstanceOffer, fabric: str) -> list[int | None]:
    """One entry per ERI the nodes get: its network card index, or ``None`` to let ECS place it."""
    if fabric != "erdma":
        return []
    count = min(offer.fabric_interfaces, MAX_INLINE_ERIS)
    cards = offer.network_cards or NETWORK_CARDS_FALLBACK.get(offer.instance_type)
    if cards is not None and cards >= count > 1:
        return list(range(count))
    return [None] * count


def _storage_extra(spec: ClusterSpec, res: Resolution, kms_key_id: str | None) -> Cpfs | Nas | None:
    kind = _shared_kind(spec, res)
    if kind is None or res.storage is None:
        return None
    tier = res.storage.tier
    if kind == "cpfs":
        return Cpfs(
            storage_type=tier,
            capacity=res.storage_size_gib,
            # An export of the file system's root "/" is mounted as <domain>:/share: the console's mount address
            # for an exported "/" (ACK "Mount a statically provisioned CPFS volume":
            # cpfs-****.<region>.cpfs.aliyuncs.com:/share).
            export_path="/share",
            # The nodes look the export's domain up at boot with this RAM role (clouds/alibaba/ramrole.py).
            lookup_role=ramrole.role_name(spec.name, spec.region),
            lookup_policy=ramrole.policy_name(spec.name, spec.region),
            nas_endpoint=ramrole.nas_endpoint(spec.region),
        )
    extreme = kind == "nas-extreme"
    return Nas(
        file_system_type="extreme" if extreme else "standard",
        storage_type=tier,
        # General-purpose NAS is pay-per-use and grows by itself: it takes no capacity.
        capacity=res.storage_size_gib if extreme else None,
        # 1 = NAS-managed key (standard and extreme); 2 = the user's KMS key (extreme only).
        encrypt_type=2 if extreme and kms_key_id else 1,
        kms_key_id=kms_key_id if extreme else None,
        export_path="/share" if extreme else "/",
        # The nodes look the mount target's domain up at boot with this RAM role (clouds/alibaba/ramrole.py).
        lookup_role=ramrole.role_name(spec.name, spec.region),
        lookup_policy=ramrole.policy_name(spec.name, spec.region),
        nas_endpoint=ramrole.nas_endpoint(spec.region),
    )


def decide(spec: ClusterSpec, res: Resolution) -> AlibabaPlan:
    """Every Alibaba-specific decision (``plan.extra``)."""
    assert res.offer is not None and res.nodes is not None and res.fabric is not None  # noqa: S101
    opts = spec.cloud_options()
    nodes, spot = res.nodes, spec.capacity.type == "spot"
    eris = _eri_cards(res.offer, res.fabric)
    placement: list[int] = []
    if opts.placement == "low-latency" and not spot and nodes > 1:
        sets = math.ceil(nodes / DEPLOYMENT_SET_MAX)
        base, extra = divmod(nodes, sets)
        placement = [base + (1 if i < extra else 0) for i in range(sets)]
    jumbo = bool(eris) and jumbo_frames(res.offer, opts.jumbo_frames)
    prepaid = opts.subscription_months is not None
    storage = _storage_extra(spec, res, opts.kms_key_id)
    spot_limit = spec.capacity.max_price_per_hour_usd if spot else None
    return AlibabaPlan(
        vpc_cidr=opts.vpc_cidr,
        vswitch_cidr=str(_vswitch_cidr(opts.vpc_cidr)),
        charge_type="PrePaid" if prepaid else "PostPaid",
        period_months=opts.subscription_months,
        spot_strategy=("SpotWithPriceLimit" if spot_limit else "SpotAsPriceGo") if spot else "NoSpot",
        spot_price_limit=spot_limit,
        private_pool_id=spec.capacity.reservation if spec.capacity.type == "reservation" else None,
        auto_release=not prepaid,
        placement_groups=tuple(placement),
        eri_cards=tuple(eris),
        jumbo_frames=jumbo,
        mtu=JUMBO_MTU if jumbo else (ERDMA_MTU if eris else DEFAULT_MTU),
        system_disk_gib=opts.system_disk_gib,
        data_disk_gib=opts.data_disk_gib,
        kms_key_id=opts.kms_key_id,
        resource_group_id=opts.resource_group_id,
        nat_bandwidth_mbps=opts.nat_bandwidth_mbps,
        metadata_tokens=opts.metadata_tokens,
        public_head=spec.access.public_head_node,
        key_pair_public_key=key_pair_public_key(spec.access.ssh_public_keys),
        # SSH only: a small pay-by-traffic EIP for node 0 when access.public_head_node.
        head_eip_bandwidth_mbps=HEAD_EIP_MBPS,
        storage=storage,
        # A retained CPFS lives in the cluster's vSwitch, so the VPC and vSwitch are retained with it.
        retain_network=bool(
            isinstance(storage, Cpfs) and spec.storage.shared is not None and spec.storage.shared.retain
        ),
        nfs_options=NFS_OPTIONS,
        slurm=slurm_controller_plan(spec),
    )


#: Regions outside mainland China, whose nodes reach github.com as anywhere else (Alibaba Cloud "Regions and zones").
OUTSIDE_MAINLAND = ("cn-hongkong",)


def nccl_tests_source_warning(spec: ClusterSpec, res: Resolution) -> list[str]:
    """The fix when nodes in a mainland-China region would fetch the nccl-tests source from github.com.

    Alibaba's own eRDMA benchmark runbook puts the nccl-tests source into its build context "to avoid ECS clones of
    GitHub timing out" (AliyunContainerService/alibabacloud-erdma-controller docs/erdma-benchmark/README.md), and its
    Compute Nest GPU solution lists GitHub direct links as unreachable from mainland China.
    """
    from provision.planning.bootstrap import nccl_tests_urls
    from provision.planning.images import default_image

    if not spec.region.startswith("cn-") or spec.region in OUTSIDE_MAINLAND or res.offer is None or not res.fabric:
        return []
    try:
        versions = default_image(spec, res.offer, res.fabric).versions
    except SpecError:
        return []  # the missing image is reported as a problem
    if versions.get("nccl_tests_path") or versions.get("nccl_tests_url"):
        return []
    version = versions.get("nccl_tests") or "?"
    archive = nccl_tests_urls(versions, version)[-1]
    pin = versions.get("nccl_tests_sha256")
    return [
        f"the nodes build nccl-tests from {archive}, which nodes in {spec.region} (mainland China) often cannot "
        "reach: the nccl-tests step then fails, and `provision nccl-test` and `up --accept` cannot run. To fix: "
        f"copy that file{f' (SHA-256 {pin})' if pin else ''} to an OSS bucket in {spec.region} and set "
        f"image.versions.nccl_tests_url to its URL on the internal endpoint (https://BUCKET.oss-{spec.region}-"
        "internal.aliyuncs.com/...); the nodes fetch it first"
        + (" and check it against the pinned SHA-256." if pin else ".")
    ]


def cpfs_client_warning(size_gib: int, tier: str | None) -> str:
    """Why the nodes use plain NFS to CPFS, not the client Alibaba recommends, and what that path can give.

    * The CPFS-NFS client (haproxy-based, "recommended") lists Ubuntu 16.04/18.04/20.04 only, and its install
      needs a public IPv4 address or an EIP on the node (CPFS docs "Mount a file system using a CPFS-NFS client
      (recommended)", updated 2026-02-04); provision's nodes run Ubuntu 22.04 without public addresses.
    * The CPFS-POSIX client needs a POSIX mount target, which creates three pay-as-you-go quorum ECS instances in
      the account, and each node joins the client cluster through the console (CPFS docs "Manage POSIX mount
      targets", "Mount and access": "Install the POSIX client package ... then add the compute node to the cluster").
    * Throughput: the file system gives min{0.1 x GiB, 30,000} MB/s (advance_100) or min{0.2 x GiB, 45,000} MB/s
      (advance_200) over POSIX (CPFS "Specifications", updated 2026-01-06); the NFS path cannot exceed that, and
      Alibaba states lower IOPS for it ("Mount and access": NFS protocol limits; for files of 100 KiB or more).
      The General protocol service is free and has no bandwidth to buy (CPFS "Protocol services": only the paid
      Cache type raises bandwidth); its own figure was not retrieved.
    """
    per_gib = 0.2 if tier and "200" in tier else 0.1
    cap = 45000 if per_gib == 0.2 else 30000
    fs = min(per_gib * size_gib, cap)
    return (
        f"CPFS is reached over plain NFSv3 through the free General protocol service, not the client Alibaba "
        f"recommends: the CPFS-NFS client supports Ubuntu up to 20.04 and needs a public IP to install, and the "
        f"CPFS-POSIX client needs a POSIX mount target (three extra quorum ECS instances) and console steps. The "
        f"file system gives at most {fs:,.0f} MB/s ({per_gib} MB/s per GiB, CPFS Specifications); the NFS path "
        f"cannot exceed that and its own limit is not published, so measure it before relying on it."
    )


class AlibabaAdapter(Adapter[AlibabaPlan]):
    """GN8 (ebmgn8v, gn8v) and GN7 (ebmgn7ex, gn7e) clusters; see the module docstring for the allocation."""

    cloud: ClassVar[str] = "alibaba"
    extra: ClassVar[str] = "alibaba"
    sdk_modules: ClassVar[tuple[str, ...]] = ("pulumi_alicloud",)
    lifetime_mechanism = "ECS auto_release_time on each instance"
    sweeper: ClassVar[str | None] = None
    slurm_controller: ClassVar[str | None] = SLURM_DEFAULT_TYPE
    #: A vSwitch belongs to one zone (VPC "Create and manage a vSwitch": "A vSwitch is a zonal resource").
    network_zonal: ClassVar[bool] = True
    preflight_asks: ClassVar[tuple[str, str] | None] = (
        "Alibaba account",
        "the type's stock in the zone, the file system in the zone and the vCPU quota",
    )
    limits: ClassVar[Mapping[Limit, str]] = {
        Limit.KUBERNETES: "ACK (clouds/alibaba/kubernetes.py) takes GN8 types, pay-as-you-go or spot node pools, "
        "NAS volumes and no lifetime (node pools take no release time); CPFS and pod identity (RRSA) are not wired",
        Limit.FILESYSTEM: _LINGJUN_REASON,
        Limit.FABRIC_ISLAND: f"a LowLatency deployment set holds at most {DEPLOYMENT_SET_MAX} nodes and no spot nodes",
        Limit.FABRIC_INTERFACES: f"ecs.Instance creates at most {MAX_INLINE_ERIS} ERIs (primary + one secondary) "
        "per node",
        Limit.LIFETIME: "auto_release_time applies to pay-as-you-go (and spot) nodes only, not to subscriptions",
    }

    # ------------------------------------------------------------------ checks
    def check(self, spec: ClusterSpec, res: Resolution, found: ProblemCollector) -> None:
        opts = spec.cloud_options()
        kind = _shared_kind(spec, res)
        if kind is not None and kind != "cpfs-lingjun":
            for field, value, rule, fix in ramrole.name_problems(spec.name, spec.region):
                found.add(field, value, rule, fix)
        if kind == "cpfs-lingjun":
            found.add(
                "storage.shared.kind",
                "cpfs-lingjun",
                f"cannot be created for ECS nodes: {_LINGJUN_REASON}",
                "use kind cpfs (CPFS general-purpose) or nas-extreme, or create the Lingjun file system "
                "yourself and drop storage.shared",
            )
        if res.offer is not None and res.zone is None and spec.zone is None:
            found.add(
                "zone",
                None,
                f"is required: the catalog lists no zones for {res.offer.instance_type} in {spec.region}, and the "
                "vSwitch, the deployment set and CPFS / Extreme NAS are zonal",
                f"give the zone where your account can buy it (aliyun ecs DescribeAvailableResource --RegionId "
                f"{spec.region} --DestinationResource InstanceType --InstanceType {res.offer.instance_type})",
            )
        lifetime = spec.lifetime.ttl is not None or spec.lifetime.max_cost_usd is not None
        if opts.subscription_months is not None:
            if lifetime:
                found.add(
                    "alibaba.subscription_months",
                    opts.subscription_months,
                    "cannot be combined with lifetime.ttl / max_cost_usd: auto_release_time applies to "
                    "pay-as-you-go instances only, so a subscription node cannot release itself",
                    "drop subscription_months (pay-as-you-go with auto release) or drop the lifetime",
                )
            if spec.capacity.type != "on-demand":
                found.add(
                    "alibaba.subscription_months",
                    opts.subscription_months,
                    f"cannot be combined with capacity.type {spec.capacity.type!r} (subscription is its own "
                    "consumption model)",
                    "drop subscription_months or set capacity.type: on-demand",
                )
        ttl = spec.lifetime.ttl
        minimum = AUTO_RELEASE_MIN_MINUTES + PROVISIONING_MARGIN_MINUTES
        if ttl is not None and opts.subscription_months is None and ttl.total_seconds() < minimum * 60:
            found.add(
                "lifetime.ttl",
                f"{ttl.total_seconds() / 60:g}m",
                f"is too short for auto_release_time, which must be at least {AUTO_RELEASE_MIN_MINUTES} minutes "
                f"after the node is created (plus {PROVISIONING_MARGIN_MINUTES} minutes for provisioning)",
                f"use ttl {minimum}m or more",
            )
        self._check_tags(spec, found)
        gen = generation(res.offer) if res.offer is not None else None
        if opts.jumbo_frames and gen is not None and gen < JUMBO_FRAME_MIN_GENERATION and res.offer is not None:
            found.add(
                "alibaba.jumbo_frames",
                True,
                f"cannot be enabled on {res.offer.instance_type}: ECS supports jumbo frames only on 8th-generation "
                "and later types (RunInstances NetworkOptions.EnableJumboFrame)",
                "drop alibaba.jumbo_frames (the nodes use MTU 1400 for eRDMA)",
            )
        elif opts.jumbo_frames and res.offer is not None and res.offer.family not in JUMBO_FRAME_FAMILIES:
            # "Specific" 8th-generation types only: a type Alibaba does not document is refused here as the strict
            # mocked cloud refuses it (clouds/alibaba/strict.py JUMBO_FAMILIES), so a plan never passes what an
            # account may reject at RunInstances.
            found.add(
                "alibaba.jumbo_frames",
                True,
                f"is not documented for {res.offer.instance_type}: RunInstances NetworkOptions.EnableJumboFrame "
                "is supported only by specific 8th-generation and later types, and Alibaba documents it for "
                f"{', '.join(sorted(JUMBO_FRAME_FAMILIES))} only",
                "drop alibaba.jumbo_frames (the nodes use MTU 1400 for eRDMA); the per-type answer is "
                "`aliyun ecs DescribeInstanceTypes --InstanceTypes.1 <type>` (JumboFrameSupport)",
            )
        if spec.access.public_head_node and not spec.access.allowed_cidrs:
            found.add(
                "access.public_head_node",
                True,
                "gives node 0 a public IP but access.allowed_cidrs is empty, so nobody may reach its SSH port",
                "list your networks in access.allowed_cidrs, or drop public_head_node",
            )
        if not spec.access.ssh_public_keys and spec.scheduler.kind != "kubernetes":  # ACK nodes take no login
            found.add(
                "access.ssh_public_keys",
                "()",
                "is empty: Alibaba nodes here have no password; you log in as access.ssh_user with these keys",
                "add your OpenSSH public key (e.g. the line in ~/.ssh/id_ed25519.pub or ~/.ssh/id_rsa.pub)",
            )
        if res.offer is not None and res.nodes is not None and res.fabric is not None:
            vswitch = _vswitch_cidr(opts.vpc_cidr)
            per_node = max(1, len(_eri_cards(res.offer, res.fabric)))
            need = res.nodes * per_node + VSWITCH_RESERVED
            usable = vswitch.num_addresses - 4  # Alibaba reserves the first and the last three addresses
            if need > usable:
                found.add(
                    "alibaba.vpc_cidr",
                    opts.vpc_cidr,
                    f"gives a vSwitch {vswitch} of {usable} usable addresses, but {res.nodes} nodes with "
                    f"{per_node} ENI(s) each plus {VSWITCH_RESERVED} for gateways and mount targets need {need}",
                    "use a larger VPC, e.g. 10.0.0.0/8",
                )

    @staticmethod
    def _check_tags(spec: ClusterSpec, found: ProblemCollector) -> None:
        if len(spec.tags) + PROVISION_TAGS > MAX_TAGS:
            found.add(
                "tags",
                f"{len(spec.tags)} tags",
                f"are too many: Alibaba resources take at most {MAX_TAGS} tags and this library sets {PROVISION_TAGS}",
                f"keep at most {MAX_TAGS - PROVISION_TAGS} tags",
            )
        for key, value in spec.tags.items():
            for what, text in (("key", key), ("value", value)):
                if text.startswith(RESERVED_TAG_PREFIXES):
                    found.add(
                        f"tags.{key}",
                        text,
                        f"is a tag {what} starting with 'aliyun' or 'acs:', which Alibaba reserves",
                        f"rename the {what}",
                    )
        if spec.owner and spec.owner.startswith(RESERVED_TAG_PREFIXES):
            found.add("owner", spec.owner, "starts with 'aliyun', which Alibaba reserves in tag values", "rename it")

    def warnings(self, spec: ClusterSpec, res: Resolution) -> list[str]:
        out: list[str] = []
        opts = spec.cloud_options()
        if res.offer is None or res.nodes is None or res.fabric is None:
            return out
        if spec.access.ssh_public_keys and key_pair_public_key(spec.access.ssh_public_keys) is None:
            out.append(
                "access.ssh_public_keys has no RSA or ECDSA key, the only types an ECS key pair takes (ImportKeyPair "
                f"rejects ed25519): the nodes get no key pair and no root login; log in as {spec.access.ssh_user}, "
                "whose authorized_keys the bootstrap writes."
            )
        vm = spec.scheduler.kind != "kubernetes"  # ACK nodes boot ACK's image and MTU: the VM notes do not apply
        if vm and res.fabric == "erdma" and not jumbo_frames(res.offer, opts.jumbo_frames):
            documented = ", ".join(sorted(JUMBO_FRAME_FAMILIES))
            out.append(
                f"{res.offer.instance_type}: no jumbo frames (Alibaba documents them for {documented} only), so eRDMA "
                f"runs at MTU {ERDMA_MTU}; if DescribeInstanceTypes reports JumboFrameSupport for it, set "
                f"alibaba.jumbo_frames: true for MTU {JUMBO_MTU}."
            )
        elif vm and res.fabric == "erdma" and opts.jumbo_frames and res.offer.family not in JUMBO_FRAME_FAMILIES:
            out.append(
                f"alibaba.jumbo_frames: Alibaba does not document jumbo frames for {res.offer.instance_type}; check "
                "DescribeInstanceTypes JumboFrameSupport, or RunInstances may refuse the nodes."
            )
        if res.fabric == "erdma" and res.offer.fabric_interfaces > MAX_INLINE_ERIS:
            out.append(
                f"{res.offer.instance_type} takes {res.offer.fabric_interfaces} ERIs but ecs.Instance creates "
                f"{MAX_INLINE_ERIS} (primary + one secondary); the nodes get {MAX_INLINE_ERIS}."
            )
        if opts.subscription_months is not None:
            out.append(
                "subscription nodes carry force_delete: `down` converts them to pay-as-you-go and releases them "
                "before the subscription ends (Alibaba's refund rules apply)."
            )
        if spec.capacity.type == "spot" and opts.placement == "low-latency":
            out.append(
                "spot nodes cannot join a deployment set (ECS deployment-set limits): the nodes are placed "
                "without LowLatency placement, so inter-node latency is higher."
            )
        elif opts.placement == "low-latency" and res.nodes > DEPLOYMENT_SET_MAX:
            sets = math.ceil(res.nodes / DEPLOYMENT_SET_MAX)
            out.append(
                f"{res.nodes} nodes exceed one LowLatency deployment set ({DEPLOYMENT_SET_MAX} instances): they "
                f"are spread over {sets} deployment sets; latency between sets is higher."
            )
        if spec.capacity.type == "spot" and spec.capacity.max_price_per_hour_usd is not None:
            out.append(
                "capacity.max_price_per_hour_usd becomes spot_price_limit in your account's currency "
                "(USD on alibabacloud.com, CNY on aliyun.com)."
            )
        out += nccl_tests_source_warning(spec, res)
        kind = _shared_kind(spec, res)
        if kind == "cpfs":
            out.append(
                "CPFS is mounted over NFS through its protocol service at every boot; the nodes do not wait for "
                "the file system (20-40 minutes to create): each node looks its export's domain up at boot (NAS "
                "DescribeFileSystems, DescribeProtocolMountTarget) with a RAM role limited to those reads, and "
                "waits for it; deploying needs RAM rights "
                "(ram:CreateRole, ram:CreatePolicy, ram:AttachPolicyToRole, ram:PassRole)."
            )
            out.append(cpfs_client_warning(res.storage_size_gib or 0, res.storage.tier if res.storage else None))
            if not spec.region.startswith("cn-"):
                out.append(f"CPFS general-purpose is sold on the China site (aliyun.com); check it in {spec.region}.")
            if spec.storage.shared is not None and spec.storage.shared.retain:
                out.append(
                    "storage.shared.retain keeps the CPFS file system, which lives in the cluster's vSwitch: "
                    "the VPC and vSwitch are retained with it."
                )
        if kind == "nas" and spec.storage.shared is not None and spec.storage.shared.size_gib is not None:
            out.append(
                "general-purpose NAS grows with use and takes no size: storage.shared.size_gib only sets the usage "
                "the cost estimate bills (Alibaba charges the capacity used each hour)."
            )
        try:
            image = default_image(spec, res.offer, res.fabric)
        except SpecError:
            image = None
        if vm and image is not None and image.ref.startswith(LOOKUP_PREFIX):
            out.append(
                f"no pinned image id for {spec.region}: the image is resolved once by name "
                f"({image.ref[len(LOOKUP_PREFIX) :]}) and kept (image changes are ignored); pin the image_pin "
                "output with image.id."
            )
        return out

    # ------------------------------------------------------------------ plan parts
    def nccl_env(self, offer: InstanceOffer, fabric: str) -> dict[str, str]:
        """NCCL over eRDMA (PAI eRDMA docs; ACK eRDMA docs), or over TCP on eth0 without a fabric.

        ``NCCL_IB_HCA=erdma`` matches every ERI (erdma_0, erdma_1) and ``eth0`` carries the bootstrap
        (PAI "eRDMA: Use high-performance networks for distributed training" presets). The RoCEv2 IPv4
        GID index differs between the ERIs of one node, so it is left to NCCL's automatic choice
        (``NCCL_IB_GID_INDEX=-1``, NCCL >= 2.21) restricted to IPv4 RoCEv2 GIDs.
        """
        if fabric != "erdma":
            return {"NCCL_SOCKET_IFNAME": "eth0", "NCCL_IB_DISABLE": "1"}
        return {
            "NCCL_SOCKET_IFNAME": "eth0",
            "NCCL_IB_DISABLE": "0",
            "NCCL_IB_HCA": "erdma",
            "NCCL_IB_GID_INDEX": "-1",
            "NCCL_IB_ADDR_FAMILY": "AF_INET",
            "NCCL_IB_ROCE_VERSION_NUM": "2",
            # PAI's eRDMA presets for ebmgn8v ("eRDMA: Use high-performance networks for distributed training":
            # NCCL_IB_QPS_PER_CONNECTION=8, NCCL_MIN_NCHANNELS=16, NCCL_NET_PLUGIN=none).
            "NCCL_IB_QPS_PER_CONNECTION": "8",
            "NCCL_MIN_NCHANNELS": "16",
            "NCCL_NET_PLUGIN": "none",
            # GPUDirect RDMA is off by default over eRDMA (the GPU-ERI PCIe distance is SYS); it must be allowed
            # explicitly (AliyunContainerService/alibabacloud-erdma-controller docs/erdma-benchmark/README.md).
            "NCCL_NET_GDR_LEVEL": "SYS",
        }

    def extra_plan(self, spec: ClusterSpec, res: Resolution) -> AlibabaPlan:
        return decide(spec, res)

    # ------------------------------------------------------------------ scheduler: kubernetes (ACK)
    def check_kubernetes(self, spec: ClusterSpec, res: Resolution, found: ProblemCollector) -> None:
        from provision.clouds.alibaba import kubeplan

        kubeplan.check(spec, res, found)

    def kubernetes_plan(self, spec: ClusterSpec, res: Resolution) -> KubernetesPlan:
        from provision.clouds.alibaba import kubeplan

        assert res.offer is not None and res.fabric is not None  # noqa: S101
        eris = len(_eri_cards(res.offer, res.fabric))
        disk = spec.cloud_options().system_disk_gib
        return kubeplan.kubernetes_plan(spec, res, eris, disk, self.nccl_env(res.offer, res.fabric))

    def kubernetes_warnings(self, spec: ClusterSpec, res: Resolution, k8s: KubernetesPlan) -> list[str]:
        from provision.clouds.alibaba.kubeplan import ack

        out = super().kubernetes_warnings(spec, res, k8s)
        out.append(
            "ACK's API endpoint is a public CLB that accepts any source address (access is by RAM identity through "
            "ack-ram-tool); access.allowed_cidrs is not applied to it."
        )
        if not ack(k8s).deployment_set:
            out.append(
                "the GPU node pool has no LowLatency deployment set (spot nodes cannot join one, and one set "
                f"holds at most {DEPLOYMENT_SET_MAX} nodes): inter-node latency is higher."
            )
        if res.fabric == "erdma":
            out.append(
                "eRDMA in pods needs the eRDMA user-space provider in the training image (rdma-core with erdma, "
                "or Alibaba's erdma package: ECS 'Enable eRDMA in a Docker container')."
            )
        return out
