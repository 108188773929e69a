"""GCP adapter: the pure plan for A3 (TCPX, TCPXO, RDMA) and A2 clusters.

Imports no Pulumi and no cloud SDK. The decisions live in :mod:`provision.clouds.gcp.layout`
(``plan.extra``, a :class:`~provision.clouds.gcp.plan.GcpPlan`);
:mod:`provision.clouds.gcp.components` turns them into resources:

* one VPC per NIC network as Google publishes for each machine type, firewalls, Cloud NAT;
* one regional instance template + one zonal MIG (gang allocation: resize request for flex-start,
  bulk mode for reservation-bound capacity), so the resource count never grows with the node count;
* a workload policy (A3) or a compact placement policy (A2);
* a dedicated node service account with logging/monitoring roles only;
* Managed Lustre, Filestore or Parallelstore with private services access where needed.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from typing import Any, ClassVar

from provision.catalog import InstanceOffer
from provision.clouds.base import Adapter, Limit
from provision.clouds.gcp import kubeplan, layout
from provision.clouds.gcp.plan import GcpPlan
from provision.clouds.gcp.slurm import DEFAULT_INSTANCE_TYPE as SLURM_DEFAULT_TYPE
from provision.planning.images import default_image
from provision.planning.kubernetes import KubernetesPlan
from provision.planning.plan import ImagePlan
from provision.planning.resolve import Resolution, shared_kind
from provision.spec import LABEL_KEY_PATTERN, LABEL_VALUE_PATTERN, ClusterSpec
from provision.spec.errors import Problem, ProblemCollector, SpecError
from provision.spec.options.gcp import GcpOptions

#: Interface names of A3 VMs on Google's Ubuntu images (consistent "predictable" names). Sources:
#: Cluster Toolkit a3-highgpu-8g/nccl-tests/run-nccl-tests.sh (TCPX) and
#: a3-megagpu-8g/nccl-tests/run-nccl-tests.sh (TCPXO); gpudirect-gib diagnostic image for A3 Ultra.
A3_CTRL_DEV = "enp0s12"
TCPX_IFNAMES = "enp6s0,enp12s0,enp134s0,enp140s0"
TCPXO_IFNAMES = "enp6s0,enp7s0,enp13s0,enp14s0,enp134s0,enp135s0,enp141s0,enp142s0"
#: A4 shares A3 Ultra's NIC arrangement; Cluster Toolkit's a4high-vm.yaml names its first gVNIC enp0s19 too (Open MPI
#: btl_tcp_if_include). The second name is A3 Ultra's and unverified on A4: NCCL uses whichever listed interface exists.
A3U_HOST_IFNAMES = "enp0s19,enp192s20"


def tcpx_env() -> dict[str, str]:
    """GPUDirect-TCPX (a3-highgpu-8g).

    Values: GoogleCloudPlatform/container-engine-accelerators gpudirect-tcpx/README.md (release of
    Jun 22, 2026, "NCCL configs") with the VM interface names and ``NCCL_NET``/UDS path of Cluster
    Toolkit's a3-highgpu-8g/nccl-tests/run-nccl-tests.sh. The plugin lives in /var/lib/tcpx/lib64,
    which images/gcp/steps/tcpx.sh adds to the loader path.
    """
    return {
        "NCCL_NET": "GPUDirectTCPX_v7",
        "NCCL_SOCKET_IFNAME": A3_CTRL_DEV,
        "NCCL_GPUDIRECTTCPX_CTRL_DEV": A3_CTRL_DEV,
        "NCCL_GPUDIRECTTCPX_SOCKET_IFNAME": TCPX_IFNAMES,
        "NCCL_GPUDIRECTTCPX_UNIX_CLIENT_PREFIX": "/run/tcpx",
        "NCCL_GPUDIRECTTCPX_PROGRAM_FLOW_STEERING_WAIT_MICROS": "500000",
        "NCCL_GPUDIRECTTCPX_TX_BINDINGS": "enp6s0:8-21,112-125;enp12s0:8-21,112-125;"
        "enp134s0:60-73,164-177;enp140s0:60-73,164-177",
        "NCCL_GPUDIRECTTCPX_RX_BINDINGS": "enp6s0:22-35,126-139;enp12s0:22-35,126-139;"
        "enp134s0:74-87,178-191;enp140s0:74-87,178-191",
        "NCCL_CROSS_NIC": "0",
        "NCCL_ALGO": "Ring,Tree",
        "NCCL_PROTO": "Simple",
        "NCCL_NET_GDR_LEVEL": "PIX",
        "NCCL_P2P_PXN_LEVEL": "0",
        "NCCL_NSOCKS_PERTHREAD": "4",
        "NCCL_SOCKET_NTHREADS": "1",
        "NCCL_DYNAMIC_CHUNK_SIZE": "524288",
        "NCCL_P2P_NET_CHUNKSIZE": "524288",
        "NCCL_P2P_PCI_CHUNKSIZE": "524288",
        "NCCL_P2P_NVL_CHUNKSIZE": "1048576",
        "NCCL_BUFFSIZE": "4194304",
    }


def tcpxo_env() -> dict[str, str]:
    """GPUDirect-TCPXO (a3-megagpu-8g), the FasTrak plugin.

    Values: container-engine-accelerators gpudirect-tcpxo/README.md (release of Nov 19, 2025, "NCCL
    configs"; the plugin's nccl-env-profile.sh sets the same) with the VM interface names and aperture
    device directory of Cluster Toolkit's a3-megagpu-8g/nccl-tests/run-nccl-tests.sh. The plugin, the
    tuner and its config files are installed in /var/lib/tcpxo/lib64 by images/gcp/steps/tcpxo.sh.
    """
    lib = "/var/lib/tcpxo/lib64"
    return {
        "NCCL_FASTRAK_CTRL_DEV": A3_CTRL_DEV,
        "NCCL_FASTRAK_IFNAME": TCPXO_IFNAMES,
        "NCCL_SOCKET_IFNAME": A3_CTRL_DEV,
        "NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY": "/dev/aperture_devices",
        "NCCL_FASTRAK_USE_LLCM": "1",
        "NCCL_FASTRAK_USE_SNAP": "1",
        "NCCL_FASTRAK_NUM_FLOWS": "2",
        "NCCL_FASTRAK_PLUGIN_ACCEPT_TIMEOUT_MS": "600000",
        "NCCL_FASTRAK_ENABLE_CONTROL_CHANNEL": "0",
        "NCCL_FASTRAK_ENABLE_HOTPATH_LOGGING": "0",
        "NCCL_CROSS_NIC": "0",
        "NCCL_PROTO": "Simple,LL128",
        "NCCL_MIN_NCHANNELS": "4",
        "NCCL_TUNER_PLUGIN": "libnccl-tuner.so",
        "NCCL_TUNER_CONFIG_PATH": f"{lib}/a3plus_tuner_config.textproto",
        "NCCL_SHIMNET_GUEST_CONFIG_CHECKER_CONFIG_FILE": f"{lib}/a3plus_guest_config.textproto",
        "NCCL_NVLSTREE_MAX_CHUNKSIZE": "131072",
        "NCCL_P2P_NET_CHUNKSIZE": "524288",
        "NCCL_P2P_PCI_CHUNKSIZE": "524288",
        "NCCL_P2P_NVL_CHUNKSIZE": "1048576",
        "NCCL_BUFFSIZE": "8388608",
        "NCCL_NET_GDR_LEVEL": "PIX",
    }


#: The gIB plugin's tuner configuration per machine type, which set_nccl_env.sh sets for login shells only
#: (Google's gpudirect-gib diagnostic image and Hypercomputer recipes: ``tuner_config_a4.txtpb`` on B200,
#: ``tuner_config_a3u.txtpb`` on H200).
GIB_TUNER_CONFIGS = {
    "a3-ultragpu-8g": "/usr/local/gib/configs/tuner_config_a3u.txtpb",
    "a4-highgpu-8g": "/usr/local/gib/configs/tuner_config_a4.txtpb",
}
#: Where the gIB plugin's libraries live; images/gcp/steps/rdma.sh puts it on the loader path (ld.so.conf.d)
#: of every process, and containers need it mounted and on their own LD_LIBRARY_PATH.
GIB_LIB_DIR = "/usr/local/gib/lib64"


def rdma_env(machine_type: str = "") -> dict[str, str]:
    """GPUDirect RDMA with Google's gIB NCCL plugin (a3-ultragpu-8g, a4-highgpu-8g).

    Values: the gIB plugin's /usr/local/gib/scripts/set_nccl_env.sh as reproduced in Google's
    gpudirect-gib diagnostic image (NCCL_NET=gIB, adaptive routing, QPs per connection, traffic
    classes, and the tuner config of the machine type), so that every process gets them, not only login
    shells (images/gcp/nccl-gib-profile.sh).
    """
    tuner = GIB_TUNER_CONFIGS.get(machine_type)
    return {
        **({"NCCL_TUNER_CONFIG_PATH": tuner} if tuner else {}),
        "NCCL_NET": "gIB",
        "NCCL_SOCKET_IFNAME": A3U_HOST_IFNAMES,
        "NCCL_CROSS_NIC": "0",
        "NCCL_NET_GDR_LEVEL": "PIX",
        "NCCL_P2P_NET_CHUNKSIZE": "131072",
        "NCCL_NVLS_CHUNKSIZE": "524288",
        "NCCL_IB_ADAPTIVE_ROUTING": "1",
        "NCCL_IB_QPS_PER_CONNECTION": "4",
        "NCCL_IB_TC": "52",
        "NCCL_IB_FIFO_TC": "84",
    }


def check_labels(labels: dict[str, str]) -> list[Problem]:
    """GCP label rules (keys ``^[a-z][a-z0-9_-]{0,62}$``, values up to 63 of ``[a-z0-9_-]``, at most 64)."""
    out = [
        Problem(f"tags.{k}", v, "is not a valid GCP label", "use lowercase letters, digits, '_' or '-' (<= 63)")
        for k, v in labels.items()
        if not re.fullmatch(LABEL_KEY_PATTERN, k) or not re.fullmatch(LABEL_VALUE_PATTERN, v)
    ]
    if len(labels) > 64:
        out.append(Problem("tags", len(labels), "exceeds GCP's 64 labels per resource", "drop some tags"))
    return out


def assert_labels(labels: dict[str, str]) -> None:
    """Raise ``SpecError`` unless every label is GCP-safe (called before the first resource)."""
    found = check_labels(labels)
    if found:
        raise SpecError("the cluster's labels break GCP's label rules", found)


def _cidr(path: str, value: str, found: ProblemCollector) -> ipaddress.IPv4Network | None:
    try:
        net = ipaddress.ip_network(value, strict=True)
    except ValueError as e:
        found.add(path, value, f"is not an IPv4 network in CIDR form ({e})", "write it like '10.0.0.0/20'")
        return None
    if not isinstance(net, ipaddress.IPv4Network):
        found.add(path, value, "is IPv6; the cluster's subnets are IPv4-only", "use an IPv4 range like 10.0.0.0/20")
        return None
    if not net.is_private:
        found.add(path, value, "is not a private range", "use an RFC 1918 range such as 10.0.0.0/20")
    return net


class GcpAdapter(Adapter[GcpPlan]):
    cloud: ClassVar[str] = "gcp"
    extra: ClassVar[str] = "gcp"
    sdk_modules: ClassVar[tuple[str, ...]] = ("pulumi_gcp",)
    lifetime_mechanism = (
        "scheduling.termination_time with instance_termination_action DELETE (max_run_duration for flex-start)"
    )
    kubernetes_lifetime_mechanism = (
        "a Cloud Scheduler job deletes the GKE cluster (control plane and every node pool) at the expiry "
        "through the GKE API (clouds/gcp/kubeexpiry.py); flex-start GPU nodes also end after their "
        "max_run_duration. The filesystem and networks stay until `down` or `reap`"
    )
    sweeper: ClassVar[str | None] = None
    slurm_controller: ClassVar[str | None] = SLURM_DEFAULT_TYPE
    listed_errors_of: ClassVar[str | None] = "gcp:compute/instanceGroupManager:InstanceGroupManager"
    preflight_asks: ClassVar[tuple[str, str] | None] = (
        "GCP project",
        "enabled APIs, the machine type in the zone and the regional GPU quota",
    )
    limits: ClassVar[Mapping[Limit, str]] = {
        Limit.PUBLIC_HEAD_NODE: "nodes are managed instance group members (one template): none gets an external IP; "
        "reach them through IAP (gcp.allow_iap_ssh) or a VPN",
        Limit.CAPACITY_BLOCK: "GCP sells no capacity blocks; use reservation (calendar-mode future reservations) "
        "or flex-start",
        Limit.SPOT_MAX_PRICE: "GCP Spot VMs have no bid price",
        Limit.ALL_OR_NOTHING: "GCP creates MIG VMs all at once only with flex-start (resize "
        "request) or reservation-bound capacity (bulk mode)",
        # Google Cloud "Arm VMs on Compute" (A4X: public Arm OS images only) and "About workload policies in MIGs"
        # (A4X sub-blocks need a workload policy with an accelerator topology).
        Limit.ARM64: "an arm64 accelerator image pin in images/gcp.yaml and arm64 builds of the RDMA steps (gIB NCCL "
        "plugin), and A4X's NVLink-domain placement (a workload policy with an accelerator topology over a "
        "reserved sub-block of 18 VMs)",
    }

    # ------------------------------------------------------------------ checks
    def sized_options(self, nodes: int) -> tuple[dict[str, Any], tuple[str, ...]]:
        defaults = GcpOptions()
        # The smallest subnet holding every node's address plus the ones GCP reserves in each subnet.
        prefix = 32 - (nodes + layout.SUBNET_RESERVED - 1).bit_length()
        host = ipaddress.ip_network(defaults.host_subnet_cidr)
        out: dict[str, Any] = {}
        why: list[str] = []
        if prefix < host.prefixlen:
            out["host_subnet_cidr"] = f"{host.network_address}/{prefix}"
            # The second host subnet (a3-ultragpu-8g) moves out of the wider first one; both stay below the GPU
            # subnets' 10.128.0.0/9.
            out["secondary_host_subnet_cidr"] = f"10.64.0.0/{prefix}"
            why.append(
                f"gcp.host_subnet_cidr {out['host_subnet_cidr']} (and the second host subnet "
                f"{out['secondary_host_subnet_cidr']}) - {nodes:,} nodes do not fit the default "
                f"{defaults.host_subnet_cidr} ({host.num_addresses - layout.SUBNET_RESERVED:,} usable addresses)"
            )
        if prefix < defaults.gpu_subnet_prefix:
            out["gpu_subnet_prefix"] = prefix
            usable = 2 ** (32 - defaults.gpu_subnet_prefix) - layout.SUBNET_RESERVED
            why.append(
                f"gcp.gpu_subnet_prefix {prefix} - each GPU NIC subnet needs an address per node; the default "
                f"/{defaults.gpu_subnet_prefix} holds {usable:,}"
            )
        return out, tuple(why)

    def check(self, spec: ClusterSpec, res: Resolution, found: ProblemCollector) -> None:
        if spec.access.public_head_node:
            found.add(
                "access.public_head_node",
                True,
                "is not supported on GCP: " + self.limits[Limit.PUBLIC_HEAD_NODE],
                "set it to false and use gcp.allow_iap_ssh: true (IAP) or a VPN",
            )
        if spec.capacity.max_price_per_hour_usd is not None:
            found.add(
                "capacity.max_price_per_hour_usd",
                spec.capacity.max_price_per_hour_usd,
                "has no meaning on GCP (Spot VMs have no bid price)",
                "remove it; cap spending with lifetime.max_cost_usd",
            )
        for i, c in enumerate(spec.access.allowed_cidrs):
            if ipaddress.ip_network(c, strict=False).version == 6:
                found.add(
                    f"access.allowed_cidrs[{i}]",
                    c,
                    "is IPv6, but the cluster's host VPC is IPv4-only",
                    "list the IPv4 networks you connect from",
                )
        if not spec.cloud_options().os_login and not spec.access.ssh_public_keys:
            found.add(
                "access.ssh_public_keys",
                "()",
                "is empty but gcp.os_login is false, so nobody could log in to the nodes",
                "add your OpenSSH public key, or drop gcp.os_login: false to log in through OS Login",
            )
        self._check_lifetime(spec, found)
        self._check_options(spec, res, found)
        self._check_networks(spec, res, found)
        self._check_storage(spec, res, found)
        for p in check_labels(dict(spec.tags)):
            found.add(p.path, p.value, p.rule, p.fix)

    @staticmethod
    def _check_lifetime(spec: ClusterSpec, found: ProblemCollector) -> None:
        if spec.capacity.type != "flex-start":
            return
        ttl = spec.lifetime.ttl
        if ttl is None:
            found.add(
                "lifetime.ttl",
                None,
                "is required for flex-start: Dynamic Workload Scheduler needs the run duration up front "
                "(10 minutes to 7 days)",
                "set lifetime.ttl, e.g. 24h (at most 7d)",
            )
        elif ttl.total_seconds() > layout.FLEX_MAX_SECONDS:
            found.add(
                "lifetime.ttl",
                str(ttl),
                "is longer than flex-start's 7-day maximum run duration",
                "use 7d or less, or capacity.type reservation for longer runs",
            )

    @staticmethod
    def _check_options(spec: ClusterSpec, res: Resolution, found: ProblemCollector) -> None:
        opts = spec.cloud_options()
        if opts.reservation_bound is not None and spec.capacity.type != "reservation":
            found.add(
                "gcp.reservation_bound",
                opts.reservation_bound,
                f"applies to capacity.type reservation, not {spec.capacity.type!r}",
                "remove it or set capacity.type: reservation",
            )
        offer = res.offer
        if offer is None or opts.max_topology_distance is None:
            return
        kind = layout.placement(spec, offer).kind
        if kind != "workload-policy":
            found.add(
                "gcp.max_topology_distance",
                opts.max_topology_distance,
                f"needs a MIG workload policy, which {offer.instance_type} with {spec.capacity.type} capacity "
                "does not use",
                "remove it (workload policies apply to A3 8-GPU types: on-demand, spot, reservation-bound)",
            )

    @staticmethod
    def _check_networks(spec: ClusterSpec, res: Resolution, found: ProblemCollector) -> None:
        opts = spec.cloud_options()
        offer, nodes = res.offer, res.nodes or 0
        host = _cidr("gcp.host_subnet_cidr", opts.host_subnet_cidr, found)
        ranges = [("gcp.host_subnet_cidr", host)]
        # Every range is checked even when this machine type does not use it: a malformed value is an
        # error wherever it is written, not only once an offer needs it.
        secondary = _cidr("gcp.secondary_host_subnet_cidr", opts.secondary_host_subnet_cidr, found)
        base = _cidr("gcp.gpu_subnet_cidr_base", opts.gpu_subnet_cidr_base, found)
        if offer is not None and offer.host_nics >= 2:
            ranges.append(("gcp.secondary_host_subnet_cidr", secondary))
        gpu_needed = offer is not None and res.fabric in ("tcpx", "tcpxo", "rdma")
        if gpu_needed:
            ranges.append(("gcp.gpu_subnet_cidr_base", base))
            count = offer.fabric_interfaces if offer else 0
            if base is not None and not layout.gpu_subnet_cidrs(str(base), opts.gpu_subnet_prefix, count):
                found.add(
                    "gcp.gpu_subnet_cidr_base",
                    opts.gpu_subnet_cidr_base,
                    f"cannot hold {count} subnets of /{opts.gpu_subnet_prefix} (one per GPU NIC)",
                    f"use a range of /{max(opts.gpu_subnet_prefix - (count - 1).bit_length(), 0)} or larger, "
                    "or raise gcp.gpu_subnet_prefix",
                )
            usable = 2 ** (32 - opts.gpu_subnet_prefix) - layout.SUBNET_RESERVED
            if nodes > usable:
                found.add(
                    "gcp.gpu_subnet_prefix",
                    opts.gpu_subnet_prefix,
                    f"gives {usable} addresses per GPU subnet, fewer than {nodes} nodes",
                    "use a smaller prefix length (a larger subnet)",
                )
        valid = [(p, n) for p, n in ranges if n is not None]
        for i, (path_a, a) in enumerate(valid):
            for path_b, b in valid[i + 1 :]:
                if a.overlaps(b):
                    found.add(path_b, str(b), f"overlaps {path_a} ({a})", "pick ranges that do not overlap")
        for path, net in valid:
            if path != "gcp.gpu_subnet_cidr_base" and nodes > net.num_addresses - layout.SUBNET_RESERVED:
                found.add(
                    path,
                    str(net),
                    f"has {net.num_addresses - layout.SUBNET_RESERVED} usable addresses, fewer than {nodes} nodes",
                    "use a larger range",
                )

    def _check_storage(self, spec: ClusterSpec, res: Resolution, found: ProblemCollector) -> None:
        shared = spec.storage.shared
        if shared is None or shared.kind == "none" or res.offer is None or res.fabric is None:
            return
        kind = shared_kind(spec, res)
        if kind == "managed-lustre" and not layout.lustre_filesystem_name(spec.name):
            found.add("name", spec.name, "yields no Managed Lustre filesystem name", "use letters or digits")
        if kind == "parallelstore" and not spec.image.id:
            os_name = self.image(spec, res.offer, res.fabric).versions.get("os", "")
            if os_name != "ubuntu-22.04":
                found.add(
                    "storage.shared.kind",
                    shared.kind,
                    f"needs a Ubuntu 22.04 node image (Google publishes the Parallelstore DAOS client for "
                    f"22.04), but {res.offer.instance_type}'s image is {os_name or 'unknown'}",
                    "use managed-lustre or filestore, or pin a 22.04 image with image.id",
                )

    # ------------------------------------------------------------------ plan parts
    def warnings(self, spec: ClusterSpec, res: Resolution) -> list[str]:
        out: list[str] = []
        cap = spec.capacity.type
        if res.fabric == "tcpx" and not spec.image.id and spec.scheduler.kind == "none":
            out.append(
                "a3-highgpu-8g: the default image has no GPUDirect-TCPX kernel (linux-gcp-tcpx); nodes fall back "
                "to NCCL sockets on the gVNICs until you pin a TCPX image with image.id (Cluster Toolkit's "
                "a3high blueprint builds one)."
            )
        if cap in ("on-demand", "spot") or (cap == "reservation" and not self._bound(spec, res)):
            out.append(
                f"{cap} nodes are created one by one by the instance group (GCP creates a group all at once only "
                "for flex-start or reservation-bound capacity): a partial cluster is possible; `pulumi up` waits "
                "for every node and fails if the group does not become stable."
            )
        if cap == "spot":
            out.append("spot nodes can be preempted at any time and are then deleted.")
        if cap == "flex-start":
            out.append(
                "flex-start: Dynamic Workload Scheduler creates all nodes at once when capacity frees up, which "
                "can take hours; the hostfile fills in after the next `pulumi up` (or refresh) once they run. "
                "Each node lives for lifetime.ttl from its creation."
            )
        if spec.lifetime.ttl is None and spec.lifetime.max_cost_usd is None:
            out.append("no lifetime set: nodes run until the stack is destroyed.")
        shared = spec.storage.shared
        if spec.cloud_options().os_login:
            out.append(
                "GCP nodes use OS Login: IAM decides who logs in (roles/compute.osLogin) and who gets sudo "
                "(roles/compute.osAdminLogin); access.ssh_public_keys are not installed. Add your key to your OS Login "
                "profile (gcloud compute os-login ssh-keys add --key-file KEY.pub) or use gcloud compute ssh "
                "--tunnel-through-iap; set gcp.os_login: false to put the keys in the instance metadata instead."
            )
            if shared is not None and res.storage is not None:
                out.append(
                    f"{shared.mount} is root-owned (0755) under OS Login, not world-writable: an OS Login admin "
                    f"creates each user's directory (sudo install -d -o $USER {shared.mount}/$USER)."
                )
        if shared is not None and shared.retain and res.storage is not None:
            out.append(
                "storage.shared.retain keeps the filesystem on destroy, and with it the host VPC and the private "
                "services range it is attached to; delete them by hand when done."
            )
        return out

    def image(self, spec: ClusterSpec, offer: InstanceOffer, fabric: str) -> ImagePlan:
        """The pinned image. With ``image.id`` pinned, the fabric pieces the node setup installs (plugin,
        daemon, NCCL versions) still come from the default entry for the fabric, under the spec's own
        ``image.versions``; the driver and OS of a custom image are unknown and left out."""
        chosen = default_image(spec, offer, fabric)
        if chosen.source != "spec":
            return chosen
        unpinned = spec.model_copy(update={"image": spec.image.model_copy(update={"id": None, "family": None})})
        try:
            base = default_image(unpinned, offer, fabric).versions
        except SpecError:
            return chosen
        fabric_parts = {k: v for k, v in base.items() if k not in ("os", "driver")}
        return chosen.model_copy(update={"versions": {**fabric_parts, **chosen.versions}})

    def _bound(self, spec: ClusterSpec, res: Resolution) -> bool:
        return res.offer is not None and layout.reservation_bound(spec, res.offer)

    def nccl_env(self, offer: InstanceOffer, fabric: str) -> dict[str, str]:
        if fabric == "tcpx":
            return tcpx_env()
        if fabric == "tcpxo":
            return tcpxo_env()
        if fabric == "rdma":
            return rdma_env(offer.instance_type)
        # No GPU fabric (A2): NCCL's socket transport over the one gVNIC.
        return {"NCCL_SOCKET_IFNAME": "^lo,docker", "NCCL_CROSS_NIC": "0"}

    def extra_plan(self, spec: ClusterSpec, res: Resolution) -> GcpPlan:
        from provision.clouds.gcp.slurm import slurm_controller_plan  # scheduler: slurm

        return layout.decide(spec, res).model_copy(update={"slurm": slurm_controller_plan(spec)})

    # ------------------------------------------------------------------ scheduler: kubernetes (GKE)
    def check_kubernetes(self, spec: ClusterSpec, res: Resolution, found: ProblemCollector) -> None:
        kubeplan.check(spec, res, found)

    def kubernetes_plan(self, spec: ClusterSpec, res: Resolution) -> KubernetesPlan:
        assert res.offer is not None and res.fabric is not None  # noqa: S101
        return kubeplan.kubernetes_plan(spec, res, self.nccl_env(res.offer, res.fabric))

    def kubernetes_warnings(self, spec: ClusterSpec, res: Resolution, k8s: KubernetesPlan) -> list[str]:
        out = super().kubernetes_warnings(spec, res, k8s)
        if spec.lifetime.ttl is not None or spec.lifetime.max_cost_usd is not None:
            out.append(
                "lifetime on GKE: at expires_at a Cloud Scheduler job deletes the whole GKE cluster (control "
                "plane, system and GPU pools, running jobs with them); the filesystem and networks keep billing "
                "until `provision down` or `provision reap`. Deploying needs cloudscheduler.googleapis.com enabled."
            )
        out.append(
            "GKE upgrades nodes in maintenance windows (release channel REGULAR, one GPU node at a time); "
            "add a maintenance exclusion for long training runs."
        )
        return out
