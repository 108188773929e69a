"""AWS adapter, plan half: p5 / p5e / p5en / p4d / p4de clusters with EFA and FSx for Lustre.

Pure: imports no Pulumi and no cloud SDK. Every decision ``components.py`` needs is in ``plan.extra``,
an :class:`~provision.clouds.aws.plan.AwsPlan` computed here from the spec, the catalog row and ``AwsOptions``:
the EFA interface layout, the VPC layout, the gang-allocation and market settings, the
FSx settings and the lifetime backstops.

Sources for the rules below (checked 2026-11):

* EFA layout: "Maximize network bandwidth on Amazon EC2 instances with multiple network cards"
  (docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html): card 0/device 0 is the
  ENA primary, card 0/device 1 an EFA-only interface, every further card device 0 EFA-only.
* EC2 Fleet: ``MinTargetCapacity`` "Maximum value of 1000. Supported only for fleets of type
  instant" (botocore ec2 2016-11-15 ``OnDemandOptionsRequest``); Capacity Blocks "only EC2 Fleet
  requests of type instant", ``DefaultTargetCapacityType`` capacity-block, launch template
  ``MarketType`` capacity-block + ``CapacityReservationId`` (EC2 user guide, "Tutorial: Configure
  your EC2 Fleet to launch instances into Capacity Blocks"); On-Demand Capacity Reservations in a
  fleet: "Target by group" + ``use-capacity-reservations-first`` (EC2 user guide, "Use Capacity
  Reservations to reserve On-Demand capacity in EC2 Fleet").
* FSx for Lustre EFA: PERSISTENT_2 with a metadata configuration, an EFA security group
  (all traffic to and from itself and the clients' group), set at creation only (FSx Lustre
  guide, "Working with EFA-enabled file systems"); size steps per throughput tier from the
  guide's storage-capacity table (125: 38400, 250: 19200, 500: 9600, 1000: 4800 GiB).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from typing import Any, ClassVar

from provision.catalog import InstanceOffer
from provision.clouds.aws import kubeplan
from provision.clouds.aws.plan import (
    AwsPlan,
    ExistingNetwork,
    Fsx,
    Instance,
    Lifetime,
    Market,
    NetworkInterface,
    NewNetwork,
    PlacementGroup,
    Ssh,
)
from provision.clouds.aws.slurm import DEFAULT_INSTANCE_TYPE as SLURM_DEFAULT_TYPE
from provision.clouds.aws.slurm import slurm_controller_plan
from provision.clouds.base import Adapter, Limit
from provision.planning.images import LOOKUP_PREFIX
from provision.planning.kubernetes import KubernetesPlan
from provision.planning.resolve import Resolution
from provision.spec import ClusterSpec
from provision.spec.errors import ProblemCollector
from provision.spec.options.aws import AwsOptions

#: EC2 Fleet ``MinTargetCapacity`` maximum (the all-or-nothing gang size limit).
FLEET_MAX_NODES = 1000
#: FSx for Lustre PERSISTENT_2 SSD with EFA: storage step (= minimum) per throughput tier, GiB.
FSX_EFA_STEP_GIB = {125: 38400, 250: 19200, 500: 9600, 1000: 4800}
#: The user that the EC2 key pair logs in as on the default (Ubuntu) image.
IMAGE_USER = "ubuntu"
#: Key types EC2 ImportKeyPair takes; other keys (e.g. FIDO sk-* keys) go to authorized_keys via user data.
KEY_PAIR_TYPES = ("ssh-ed25519", "ssh-rsa")
#: Route-table and security-group rule quotas leave room for this many SSH source networks.
MAX_ALLOWED_CIDRS = 40
#: The node timer fires this long after the ASG's scheduled scale-to-zero (the ASG path only).
ASG_TIMER_DELAY_MINUTES = 15
#: Raw user data may hold at most 16 KB (gzip-compressed here); the bootstrap itself takes about 13.6 KB compressed
#: (aws-p5-64, with the nccl-tests, host-keys and fsx-source steps) and SSH keys barely compress, which leaves about
#: 2.6 KB of keys (six RSA-2048 or twenty-five ed25519 keys). tests/test_node_bar.py checks that keys at this limit fit.
MAX_EXTRA_KEY_BYTES = 2600

_RESERVATION_ID = re.compile(r"^cr-[0-9a-f]{8,17}$")
_AMI_ID = re.compile(r"^ami-[0-9a-f]{8,17}$")

EFA_ENV = {
    # aws-samples/awsome-distributed-training micro-benchmarks/nccl-tests/slurm/nccl-tests-ami.sbatch (2026-02):
    # libfabric's EFA provider, host NICs for bootstrap. FI_EFA_USE_DEVICE_RDMA is left out, as there since
    # PR #851 (2025-09): libfabric uses RDMA by default where the device has it, and "1" makes fi_getinfo fail
    # on an EFA type without RDMA.
    "FI_PROVIDER": "efa",
    "NCCL_SOCKET_IFNAME": "^docker,lo,veth",
    "NCCL_BUFFSIZE": "8388608",
    "NCCL_P2P_NET_CHUNKSIZE": "524288",
}


def efa_interfaces(fabric: str, efa_devices: int, network_cards: int | None) -> tuple[NetworkInterface, ...]:
    """The launch template's interface list in launch order.

    One ENA primary (card 0, device 0), then one EFA-only interface per EFA device: card 0
    device 1, then device 0 of cards 1..N-1. EFA-only interfaces take no IP address, so a node
    uses one subnet address however many EFA devices it has.
    """
    out = [NetworkInterface(card=0, device=0, type="interface")]
    if fabric != "efa" or efa_devices <= 0:
        return tuple(out)
    cards = network_cards or efa_devices
    out.append(NetworkInterface(card=0, device=1, type="efa-only"))
    out.extend(NetworkInterface(card=c, device=0, type="efa-only") for c in range(1, min(efa_devices, cards)))
    return tuple(out)


def partition_of(region: str) -> str:
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


def vpc_layout(vpc_cidr: str) -> dict[str, str]:
    """Private node subnet = the first quarter of the VPC; public (NAT) subnet = a /24 after it."""
    net = ipaddress.IPv4Network(vpc_cidr)
    quarters = list(net.subnets(prefixlen_diff=2))
    public = next(quarters[1].subnets(new_prefix=24))
    return {"vpc_cidr": str(net), "private_cidr": str(quarters[0]), "public_cidr": str(public)}


def _next_multiple(size: int, step: int | None) -> int:
    step = step or 1
    return step * max(1, -(-size // step))


def fsx_efa_allowed(tier: str, size_gib: int, throughput: int | None) -> bool:
    step = FSX_EFA_STEP_GIB.get(throughput or 0)
    return tier == "PERSISTENT_2" and step is not None and size_gib % step == 0


class AwsAdapter(Adapter[AwsPlan]):
    cloud = "aws"
    extra = "aws"
    sdk_modules = ("pulumi_aws", "pulumiverse_time")
    lifetime_mechanism = (
        "a systemd timer on each node powers it off at the expiry; instance-initiated shutdown behaviour "
        "'terminate' deletes it"
    )
    kubernetes_lifetime_mechanism = (
        "a scheduled action on each EKS node group's Auto Scaling group sets min, max and desired capacity "
        "to 0 at the expiry (the EKS control plane, NAT and FSx stay until `down` or `reap`)"
    )
    sweeper: ClassVar[str | None] = "region"
    slurm_controller: ClassVar[str | None] = SLURM_DEFAULT_TYPE
    preflight_asks: ClassVar[tuple[str, str] | None] = ("AWS account", "zone offerings and the vCPU quota")
    listed_errors_of: ClassVar[str | None] = "aws:ec2/fleet:Fleet"
    #: "Each subnet must reside entirely within one Availability Zone" (Amazon VPC User Guide, "Subnets for your
    #: VPC"); a replacement subnet with the same CIDR is refused while the old one exists (InvalidSubnet.Conflict).
    network_zonal: ClassVar[bool] = True
    limits: ClassVar[Mapping[Limit, str]] = {
        Limit.GANG_SIZE: f"an EC2 Fleet gang (all or nothing) holds at most {FLEET_MAX_NODES} nodes; "
        "larger clusters use aws.allocation: asg",
        Limit.SPOT_GANG: "an ASG replaces interrupted Spot nodes one by one, so it never gives a gang; "
        "Spot runs on the instant fleet",
        Limit.LIFETIME: "EC2 has no instance TTL: nodes run a shutdown timer (shutdown = terminate); FSx and the "
        "VPC need the reaper",
    }

    # ------------------------------------------------------------------ checks
    def sized_options(self, nodes: int) -> tuple[dict[str, Any], tuple[str, ...]]:
        if nodes <= FLEET_MAX_NODES:
            return {}, ()
        return {"allocation": "asg"}, (
            f"aws.allocation: asg - {nodes:,} nodes are over {FLEET_MAX_NODES:,}, the largest all-or-nothing EC2 "
            "Fleet (MinTargetCapacity limit), so an Auto Scaling group launches them: not all or nothing, and "
            "`provision up` waits until every node is in",
        )

    def check(self, spec: ClusterSpec, res: Resolution, found: ProblemCollector) -> None:
        opts: AwsOptions = spec.cloud_options()
        cap = spec.capacity
        if cap.type in ("reservation", "capacity-block"):
            if cap.reservation and not _RESERVATION_ID.match(cap.reservation):
                found.add(
                    "capacity.reservation",
                    cap.reservation,
                    f"is not an EC2 Capacity Reservation id ({cap.type} needs the cr-... id)",
                    "use the id from `aws ec2 describe-capacity-reservations`, like cr-0123456789abcdef0",
                )
            if spec.zone is None:
                found.add(
                    "zone",
                    None,
                    f"is required with capacity {cap.type}: a reservation lives in one Availability Zone",
                    "set zone to the reservation's Availability Zone (e.g. us-east-1a)",
                )
        if cap.type == "spot" and opts.allocation == "asg":
            found.add(
                "aws.allocation",
                "asg",
                "cannot run Spot capacity: an ASG replaces interrupted Spot nodes one at a time and never "
                "launches them as one gang",
                "drop aws.allocation (the instant EC2 Fleet launches Spot all or nothing) or use on-demand",
            )
        if opts.subnet_id and not opts.vpc_id:
            found.add("aws.subnet_id", opts.subnet_id, "needs aws.vpc_id (the subnet's VPC)", "add aws.vpc_id")
        if opts.vpc_id and not opts.subnet_id:
            found.add(
                "aws.vpc_id",
                opts.vpc_id,
                "needs aws.subnet_id: provision does not carve subnets into an existing VPC",
                "add aws.subnet_id (a private subnet with egress in the cluster's zone), or drop aws.vpc_id",
            )
        if res.nodes and opts.allocation == "fleet" and res.nodes > FLEET_MAX_NODES:
            found.add(
                "nodes",
                res.nodes,
                f"is over {FLEET_MAX_NODES}, the largest all-or-nothing EC2 Fleet (MinTargetCapacity limit)",
                f"set aws.allocation: asg, or use at most {FLEET_MAX_NODES} nodes",
            )
        if spec.image.id and not _AMI_ID.match(spec.image.id):
            found.add("image.id", spec.image.id, "is not an AMI id", "use an id like ami-0123456789abcdef0")
        self._check_access(spec, opts, found)
        self._check_network_size(spec, opts, res, found)
        self._check_fsx(spec, opts, res, found)

    def _check_access(self, spec: ClusterSpec, opts: AwsOptions, found: ProblemCollector) -> None:
        acc = spec.access
        v6 = [c for c in acc.allowed_cidrs if ipaddress.ip_network(c).version == 6]
        if v6:
            found.add(
                "access.allowed_cidrs",
                v6[0],
                "is IPv6, but the cluster's VPC and nodes are IPv4-only",
                "list the IPv4 networks you connect from",
            )
        if len(acc.allowed_cidrs) > MAX_ALLOWED_CIDRS:
            found.add(
                "access.allowed_cidrs",
                len(acc.allowed_cidrs),
                f"lists more than {MAX_ALLOWED_CIDRS} networks (security-group rule and route quotas)",
                "merge them into fewer, larger networks",
            )
        if sum(len(k) + 1 for k in acc.ssh_public_keys) > MAX_EXTRA_KEY_BYTES:
            found.add(
                "access.ssh_public_keys",
                len(acc.ssh_public_keys),
                "do not fit in EC2 user data (16 KB with the bootstrap)",
                "list fewer keys, or distribute keys with your identity system",
            )
        if not acc.public_head_node:
            return
        if not acc.allowed_cidrs:
            found.add(
                "access.public_head_node",
                True,
                "gives node 0 a public IP that nobody may reach: access.allowed_cidrs is empty",
                "add the networks you connect from to access.allowed_cidrs, or drop public_head_node",
            )
        vpc = ipaddress.ip_network(opts.vpc_cidr)
        for c in acc.allowed_cidrs:
            net = ipaddress.ip_network(c)
            if net.version != 4:
                continue
            if net.prefixlen == 0:
                found.add(
                    "access.allowed_cidrs",
                    c,
                    "cannot be routed to the internet gateway with public_head_node: the nodes' default "
                    "route must stay on the NAT gateway",
                    "list the networks you connect from, or drop public_head_node and use SSM or a bastion",
                )
            elif net.overlaps(vpc) and not opts.vpc_id:
                found.add(
                    "access.allowed_cidrs",
                    c,
                    f"overlaps the cluster VPC {vpc} and cannot be routed to the internet gateway",
                    "list only outside networks, or move the VPC with aws.vpc_cidr",
                )

    def _check_network_size(
        self, spec: ClusterSpec, opts: AwsOptions, res: Resolution, found: ProblemCollector
    ) -> None:
        if opts.vpc_id or not res.nodes:
            return
        private = ipaddress.ip_network(vpc_layout(opts.vpc_cidr)["private_cidr"])
        # AWS reserves 5 addresses per subnet; keep room for the FSx interfaces and replacements.
        usable = private.num_addresses - 5 - 64
        if res.nodes > usable:
            found.add(
                "aws.vpc_cidr",
                opts.vpc_cidr,
                f"leaves {usable} node addresses in its private subnet {private}, fewer than {res.nodes} nodes",
                "use a larger VPC, e.g. 10.0.0.0/16",
            )

    def _check_fsx(self, spec: ClusterSpec, opts: AwsOptions, res: Resolution, found: ProblemCollector) -> None:
        if opts.fsx_efa is not True:
            return
        if res.storage is None or res.storage.kind != "fsx-lustre":
            found.add(
                "aws.fsx_efa",
                True,
                "needs an FSx for Lustre shared filesystem",
                "set storage.shared (kind fsx-lustre, tier PERSISTENT_2), or drop aws.fsx_efa",
            )
            return
        size, tier, tput = res.storage_size_gib or 0, res.storage.tier, res.storage_throughput
        if not fsx_efa_allowed(tier, size, tput):
            step = FSX_EFA_STEP_GIB.get(tput or 0)
            rule = (
                f"needs tier PERSISTENT_2 (the filesystem is {tier})"
                if tier != "PERSISTENT_2"
                else f"needs a size that is a multiple of {step} GiB at {tput} MB/s/TiB (size {size} GiB)"
            )
            fix = (
                "set storage.shared.tier: PERSISTENT_2, or drop aws.fsx_efa"
                if tier != "PERSISTENT_2"
                else f"set storage.shared.size_gib to {_next_multiple(size, step)}, or drop aws.fsx_efa"
                if step
                else "set storage.shared.throughput_mbps_per_tib to 125, 250, 500 or 1000, or drop aws.fsx_efa"
            )
            found.add("aws.fsx_efa", True, rule, fix)

    # ------------------------------------------------------------------ warnings
    def warnings(self, spec: ClusterSpec, res: Resolution) -> list[str]:
        opts: AwsOptions = spec.cloud_options()
        out: list[str] = []
        # Under Kubernetes, EKS runs the nodes: no node timer, no DLAMI lookup, no instant fleet.
        vm = spec.scheduler.kind != "kubernetes"  # slurm: the VM cluster plus its controller
        if vm and (spec.lifetime.ttl or spec.lifetime.max_cost_usd):
            stop = (
                "a scheduled scale-to-zero of the Auto Scaling group, with a node shutdown timer as backstop"
                if opts.allocation == "asg"
                else "a shutdown timer on every node (instance-initiated shutdown = terminate)"
            )
            out.append(
                f"lifetime on AWS: EC2 has no instance TTL; nodes stop through {stop}. The FSx file system, "
                "VPC, NAT gateway and Elastic IPs keep billing until `provision reap` or `provision down` "
                "removes them."
            )
        if vm and not spec.image.id:
            out.append(
                "the node image is resolved once from the DLAMI SSM parameter at deploy time; pin it by setting "
                "image.id to the stack output `image_pin` (later AMI releases never replace running nodes)."
            )
        if spec.capacity.type == "capacity-block":
            out.append(
                "Capacity Block fleets may launch fewer nodes than asked when the block is short (no all-or-nothing); "
                "AWS terminates the nodes 30 minutes before the block ends."
            )
        if spec.capacity.type in ("reservation", "capacity-block") and not opts.placement_group:
            out.append(
                f"{spec.capacity.type}: nodes launch without a placement group (the reservation fixes placement); "
                "set aws.placement_group to the cluster placement group your reservation was created in."
            )
        if opts.vpc_id:
            out.append(
                f"existing network {opts.vpc_id}/{opts.subnet_id}: provision creates no NAT gateway, S3 endpoint or "
                f"routes; the subnet must be in zone {res.zone} with egress to the internet (SSM, packages)."
            )
        if spec.access.public_head_node and opts.vpc_id:
            out.append(
                "public_head_node in an existing VPC: the Elastic IP is attached to node 0, but routing replies "
                "to access.allowed_cidrs through an internet gateway is up to your subnet's route table."
            )
        if vm and opts.allocation == "fleet":
            out.append(
                "an instant EC2 Fleet never replaces a failed node; changes to the launch template replace the "
                "whole fleet (all nodes) on the next update."
            )
        shared = spec.storage.shared
        if res.storage is not None and shared is not None:
            efa = self._fsx_efa(spec, res)
            if res.storage.tier == "PERSISTENT_2" and opts.fsx_efa is None and not efa and res.fabric == "efa":
                step = FSX_EFA_STEP_GIB.get(res.storage_throughput or 0)
                out.append(
                    f"the FSx file system runs without EFA: at {res.storage_throughput} MB/s/TiB EFA needs a "
                    f"size that is a multiple of {step} GiB; nodes mount it over TCP."
                )
            if shared.retain:
                out.append(
                    "storage.shared.retain keeps the FSx file system after destroy, and with it the VPC, subnet "
                    "and security group its network interfaces live in; delete them yourself when done."
                )
        return out

    # ------------------------------------------------------------------ plan details
    def nccl_env(self, offer: InstanceOffer, fabric: str) -> dict[str, str]:
        if fabric == "efa":
            return dict(EFA_ENV)
        return {"NCCL_SOCKET_IFNAME": "^docker,lo,veth"}

    def _fsx_efa(self, spec: ClusterSpec, res: Resolution) -> bool:
        opts: AwsOptions = spec.cloud_options()
        if res.storage is None or opts.fsx_efa is False:
            return False
        allowed = fsx_efa_allowed(res.storage.tier, res.storage_size_gib or 0, res.storage_throughput)
        return allowed and (opts.fsx_efa is True or res.fabric == "efa")

    def extra_plan(self, spec: ClusterSpec, res: Resolution) -> AwsPlan:
        assert res.offer is not None and res.nodes is not None and res.fabric is not None  # noqa: S101
        opts: AwsOptions = spec.cloud_options()
        cap = spec.capacity
        network: NewNetwork | ExistingNetwork
        if opts.vpc_id is not None and opts.subnet_id is not None:
            network = ExistingNetwork(vpc_id=opts.vpc_id, subnet_id=opts.subnet_id)
        else:
            head_routes = (
                tuple(c for c in spec.access.allowed_cidrs if ipaddress.ip_network(c).version == 4)
                if spec.access.public_head_node
                else ()
            )
            layout = vpc_layout(opts.vpc_cidr)
            network = NewNetwork(
                vpc_cidr=layout["vpc_cidr"],
                private_cidr=layout["private_cidr"],
                public_cidr=layout["public_cidr"],
                head_routes=head_routes,
            )
        reserved = cap.type in ("reservation", "capacity-block")
        pg_name = opts.placement_group
        market = Market(
            target_capacity_type="spot"
            if cap.type == "spot"
            else "capacity-block"
            if cap.type == "capacity-block"
            else "on-demand",
            market_type="capacity-block" if cap.type == "capacity-block" else None,
            reservation_id=cap.reservation if reserved else None,
            # A fleet can target On-Demand Capacity Reservations only through a resource group.
            reservation_group=cap.type == "reservation" and opts.allocation == "fleet",
            spot_max_price=(
                f"{cap.max_price_per_hour_usd:.4f}" if cap.type == "spot" and cap.max_price_per_hour_usd else None
            ),
            all_or_nothing=cap.type != "capacity-block",
        )
        fsx = None
        if res.storage is not None and spec.storage.shared is not None:
            tier = res.storage.tier
            fsx = Fsx(
                deployment_type=tier,
                storage_capacity=res.storage_size_gib or 0,
                per_unit_storage_throughput=res.storage_throughput if tier.startswith("PERSISTENT") else None,
                efa=self._fsx_efa(spec, res),
                metadata_mode="AUTOMATIC" if tier == "PERSISTENT_2" else None,
                lustre_version="2.15",
                retain=spec.storage.shared.retain,
            )
        ref = self.image(spec, res.offer, res.fabric).ref
        keys = spec.access.ssh_public_keys
        image_lookup = ref[len(LOOKUP_PREFIX) :] if ref.startswith(LOOKUP_PREFIX) else None
        return AwsPlan(
            allocation=opts.allocation,
            partition=partition_of(spec.region),
            network=network,
            efa_interfaces=efa_interfaces(res.fabric, res.offer.fabric_interfaces, res.offer.network_cards),
            placement_group=PlacementGroup(create=pg_name is None and not reserved, name=pg_name),
            market=market,
            image_lookup=image_lookup,
            fsx=fsx,
            instance=Instance(
                root_volume_gib=opts.root_volume_gib,
                root_device_name=opts.root_device_name,
                imds_hop_limit=opts.imds_hop_limit,
                permissions_boundary_arn=opts.permissions_boundary_arn,
            ),
            ssh=Ssh(
                key_pair=bool(keys) and keys[0].split(" ", 1)[0] in KEY_PAIR_TYPES,
                image_user=IMAGE_USER,
            ),
            public_head_node=spec.access.public_head_node,
            lifetime=Lifetime(
                asg_schedule=opts.allocation == "asg",
                timer_delay_minutes=ASG_TIMER_DELAY_MINUTES if opts.allocation == "asg" else 0,
            ),
            slurm=slurm_controller_plan(spec),
        )

    # ------------------------------------------------------------------ scheduler: kubernetes (EKS)
    def check_kubernetes(self, spec: ClusterSpec, res: Resolution, found: ProblemCollector) -> None:
        kubeplan.check(spec, res, found)

    def kubernetes_plan(self, spec: ClusterSpec, res: Resolution) -> KubernetesPlan:
        assert res.offer is not None and res.fabric is not None  # noqa: S101
        return kubeplan.kubernetes_plan(spec, res, self.extra_plan(spec, res), self.nccl_env(res.offer, res.fabric))

    def kubernetes_warnings(self, spec: ClusterSpec, res: Resolution, k8s: KubernetesPlan) -> list[str]:
        out = super().kubernetes_warnings(spec, res, k8s)
        if kubeplan.eks(k8s).lifetime_schedule:
            out.append(
                "lifetime on EKS: a scheduled action scales the GPU node group's Auto Scaling group to 0 at "
                "expires_at; the control plane, system nodes, NAT gateway and FSx keep billing until "
                "`provision reap` or `down`."
            )
        return out
