"""GKE plan for ``scheduler: kubernetes`` (pure: no Pulumi, no SDK). Built by ``GcpAdapter.kubernetes_plan``.

The GPU pool uses the VM path's decisions (:mod:`provision.clouds.gcp.layout`): the same GPU
VPCs become the pool's additional node networks and, through GKE multi-networking, the pods'
``Network`` objects (``GKENetworkParamSet`` with ``deviceMode`` ``NetDevice`` for GPUDirect-TCPX/O,
``RDMA`` for A3 Ultra; Cluster Toolkit ``modules/scheduler/gke-cluster``). Sources:

* Pod side of each fabric: GoogleCloudPlatform/container-engine-accelerators at 992db81
  (2026-06): ``gpudirect-tcpxo/README.md`` (release Jan 9, 2026: installer
  ``nccl-plugin-gpudirecttcpx-dev:v1.0.15``, RxDM ``tcpgpudmarxd-dev:v1.0.21``, the NCCL configs with
  ``eth0`` control and ``eth1..eth8`` data NICs), ``gpudirect-tcpxo/nccl-test-latest.yaml`` (pod
  annotations ``devices.gke.io/container.tcpxo-daemon``, ``networking.gke.io/interfaces``; the daemon
  with NET_ADMIN/NET_BIND_SERVICE and ``/sys`` -> ``/hostsysfs``), ``gpudirect-tcpx/*`` (installer
  v3.1.9, RxDM v2.0.12, ``/run/tcpx``), ``gpudirect-rdma/*`` (gIB plugin v1.1.1, ``rdma-N`` networks on
  ``eth2..eth9``).
* Node pools: Cluster Toolkit ``modules/compute/gke-node-pool/main.tf``: GPU taint
  ``nvidia.com/gpu=present:NoSchedule``; COMPACT placement only in one zone and not with queued
  provisioning; flex-start needs auto-repair off, autoscaling instead of a static count, NO_RESERVATION
  and not spot; Workload Identity needs ``GKE_METADATA`` on every pool.
* Accelerator names: GKE "GPUs on GKE" (nvidia-h100-80gb, nvidia-h100-mega-80gb, nvidia-h200-141gb) and "Run GPUs
  in GKE Standard node pools" (nvidia-b200 for the A4 machine series, driver 570 or later; A4 uses A3 Ultra's
  GPUDirect RDMA set-up, gpudirect-rdma/*).
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Sequence
from typing import Any

from provision.clouds.gcp import layout
from provision.clouds.gcp.plan import GkePlan, NodeNetwork, PodNetwork
from provision.clouds.k8s.addons import training_addons
from provision.planning import kubeparts
from provision.planning.kubernetes import AddonPlan, JobProfile, KubernetesPlan, NodePoolPlan, system_pool
from provision.planning.resolve import Resolution, default_shared_kind
from provision.spec import ClusterSpec
from provision.spec.errors import ProblemCollector

#: GKE accelerator type per A3 machine type ("GPUs on GKE").
ACCELERATORS = {
    "a3-highgpu-8g": "nvidia-h100-80gb",
    "a3-megagpu-8g": "nvidia-h100-mega-80gb",
    "a3-ultragpu-8g": "nvidia-h200-141gb",
    "a4-highgpu-8g": "nvidia-b200",
}
#: Pod and Service ranges GKE adds to the host subnet as secondary ranges (VPC-native). Outside the
#: default host (10.0.0.0/20, 10.0.16.0/20) and GPU (10.128.0.0/9) ranges; checked against the spec's.
PODS_CIDR = "10.32.0.0/14"
SERVICES_CIDR = "10.36.0.0/20"
RELEASE_CHANNEL = "REGULAR"
#: Each GKE local SSD is 375 GiB; A3 High/Mega have 16, A3 Ultra 32 (machine-type tables).
LOCAL_SSD_GIB = 375
NVIDIA_LIBS = "/usr/local/nvidia/lib64"
HOST_NVIDIA_LIBS = "/home/kubernetes/bin/nvidia/lib64"
#: Images of containers that hold the host are pinned by digest (PRV-IMG-001). Digests as published:
#: tcpxo ones in NVIDIA/aicr docs/user/container-images.md (gke-nccl-tcpxo, kubeflow-trainer), ubuntu's
#: index in docker-library/repo-info repos/ubuntu/remote/noble-20260911.md. The tcpx and rdma installers
#: have no published digest yet: PRV-IMG-001 refuses them until one is added.
IMAGES = {
    "tcpxo-installer": "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/nccl-plugin-gpudirecttcpx-dev:v1.0.15"
    "@sha256:4c9f0de3f39455a2ea35e844e0fc92564ca5629f6b03250fde40e8160719dae4",
    "tcpxo-rxdm": "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/tcpgpudmarxd-dev:v1.0.21"
    "@sha256:8d9e10fd589a34ab8a0aa64f7e70ad075c8f1c69bea176350f8d211367697e3d",
    "tcpx-installer": "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpx/nccl-plugin-gpudirecttcpx-dev:v3.1.9",
    "tcpx-rxdm": "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpx/tcpgpudmarxd-dev:v2.0.12",
    "rdma-installer": "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib:v1.1.1",
    "device-injector": "gcr.io/gke-release/nri-device-injector@sha256:"
    "6e79483d52abdc28454bf186320b10a56b0f117a10e8d65d5c74dbb821a76970",
    "pause": "gke.gcr.io/pause:3.8@sha256:880e63f94b145e46f1b1082bb71b85e21f16b99b180b9996407d61240ceb9830",
    "setup": "ubuntu:noble-20260911@sha256:b648a2094b746b16f8e688364f6fa0504788b209f328c54bf9e677f238a142df",
}
#: Default training image: NVIDIA's PyTorch container; the fabric plugin comes from the host mount.
DEFAULT_IMAGE = "nvcr.io/nvidia/pytorch:25.01-py3"
GPU_DEVICES = tuple(f"/dev/nvidia{i}" for i in range(8)) + ("/dev/nvidiactl", "/dev/nvidia-uvm")


#: The ProvisioningRequest class of GKE's flex-start with queued provisioning (GKE "Run a large-scale workload
#: with flex-start with queued provisioning", ProvisioningRequestConfig provisioningClassName).
QUEUED_PROVISIONING_CLASS = "queued-provisioning.gke.io"


def network_names(fabric: str, count: int) -> list[str]:
    """The pod-network (``Network``) names, one per GPU NIC, in NIC order."""
    prefix = "rdma" if fabric == "rdma" else "gpu-nic"
    return [f"{prefix}-{i}" for i in range(count)]


def gke(k8s: KubernetesPlan) -> GkePlan:
    """The GKE decisions of ``k8s`` (a GCP plan's ``kubernetes``)."""
    assert isinstance(k8s.extra, GkePlan), type(k8s.extra)  # noqa: S101
    return k8s.extra


def pod_networks(spec: ClusterSpec, fabric: str, count: int) -> tuple[PodNetwork, ...]:
    """Each pod network: its name, the VM layout's VPC/subnet keys, the device mode and the pod interface."""
    out = []
    for i, name in enumerate(network_names(fabric, count)):
        if fabric == "rdma":
            # A3 Ultra: eth1 is the second host gVNIC; the RDMA NICs are eth2..eth9 (gpudirect-rdma/nccl-test.yaml).
            out.append(
                PodNetwork(name=name, vpc="rdma-net", subnet=f"rdma-subnet-{i}", mode="RDMA", ifname=f"eth{i + 2}")
            )
        else:
            out.append(
                PodNetwork(
                    name=name, vpc=f"gpunet-{i}", subnet=f"gpusubnet-{i}", mode="NetDevice", ifname=f"eth{i + 1}"
                )
            )
    return tuple(out)


def pod_env(fabric: str, networks: Sequence[PodNetwork], vm_env: dict[str, str]) -> dict[str, str]:
    """The NCCL environment inside pods: the VM path's values (``vm_env``) with the pods' interface names and paths."""
    env = dict(vm_env)
    data = ",".join(n.ifname for n in networks)
    if fabric == "tcpxo":
        env.update(
            NCCL_FASTRAK_CTRL_DEV="eth0",
            NCCL_FASTRAK_IFNAME=data,
            NCCL_SOCKET_IFNAME="eth0",
            NCCL_TUNER_CONFIG_PATH=f"{NVIDIA_LIBS}/a3plus_tuner_config.textproto",
            NCCL_SHIMNET_GUEST_CONFIG_CHECKER_CONFIG_FILE=f"{NVIDIA_LIBS}/a3plus_guest_config.textproto",
            NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY="/dev/aperture_devices",
        )
    elif fabric == "tcpx":
        bindings = [
            ("8-21,112-125", "22-35,126-139"),
            ("8-21,112-125", "22-35,126-139"),
            ("60-73,164-177", "74-87,178-191"),
            ("60-73,164-177", "74-87,178-191"),
        ]
        names = [n.ifname for n in networks]
        env.update(
            NCCL_SOCKET_IFNAME="eth0",
            NCCL_GPUDIRECTTCPX_CTRL_DEV="eth0",
            NCCL_GPUDIRECTTCPX_SOCKET_IFNAME=data,
            NCCL_GPUDIRECTTCPX_TX_BINDINGS=";".join(f"{n}:{b[0]}" for n, b in zip(names, bindings, strict=True)),
            NCCL_GPUDIRECTTCPX_RX_BINDINGS=";".join(f"{n}:{b[1]}" for n, b in zip(names, bindings, strict=True)),
            NCCL_GPUDIRECTTCPX_UNIX_CLIENT_PREFIX="/run/tcpx",
        )
    elif fabric == "rdma":
        env["NCCL_SOCKET_IFNAME"] = "eth0"
    else:
        env = {"NCCL_SOCKET_IFNAME": "eth0", "NCCL_CROSS_NIC": "0"}
    env["LD_LIBRARY_PATH"] = NVIDIA_LIBS
    return env


def _host(name: str, path: str, mount: str | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    return {"name": name, "hostPath": {"path": path}}, {"name": name, "mountPath": mount or path}


def job_profile(
    spec: ClusterSpec, res: Resolution, networks: Sequence[PodNetwork], claim: str | None, vm_env: dict[str, str]
) -> JobProfile:
    """What every training pod on this GKE cluster needs (module docstring for the sources)."""
    assert res.fabric is not None  # noqa: S101
    fabric = res.fabric
    libs_vol, libs_mount = _host("nvidia-libs", HOST_NVIDIA_LIBS, NVIDIA_LIBS)
    volumes: list[dict[str, Any]] = [libs_vol, {"name": "dshm", "emptyDir": {"medium": "Memory"}}]
    mounts: list[dict[str, Any]] = [libs_mount, {"name": "dshm", "mountPath": "/dev/shm"}]
    sidecars: list[dict[str, Any]] = []
    annotations: dict[str, str] = {}
    if networks:
        ifaces = [{"interfaceName": "eth0", "network": "default"}]
        ifaces += [{"interfaceName": n.ifname, "network": n.name} for n in networks]
        annotations["networking.gke.io/default-interface"] = "eth0"
        annotations["networking.gke.io/interfaces"] = json.dumps(ifaces)
    if fabric in ("tcpx", "tcpxo"):
        sys_vol, sys_mount = _host("sys", "/sys", "/hostsysfs")
        proc_vol, proc_mount = _host("proc-sys", "/proc/sys", "/hostprocsysfs")
        volumes += [sys_vol, proc_vol]
        daemon = "tcpxo-daemon" if fabric == "tcpxo" else "tcpx-daemon"
        devices = GPU_DEVICES + (("/dev/dmabuf_import_helper",) if fabric == "tcpxo" else ())
        # The NRI device injector hands these devices to the daemon container by name.
        annotations[f"devices.gke.io/container.{daemon}"] = "".join(f"- path: {d}\n" for d in devices)
        daemon_mounts = [libs_mount, sys_mount, proc_mount]
        if fabric == "tcpxo":
            aperture_vol, aperture_mount = _host("aperture-devices", "/dev/aperture_devices")
            volumes.append(aperture_vol)
            mounts.append(aperture_mount)
            command = ["/fts/entrypoint_rxdm_container.sh", "--num_hops=2"]
            caps = ["NET_ADMIN", "NET_BIND_SERVICE"]
        else:
            socket_vol, socket_mount = _host("tcpx-socket", "/run/tcpx")
            volumes.append(socket_vol)
            mounts.append(socket_mount)
            daemon_mounts.append(socket_mount)
            command = [
                "/tcpgpudmarxd/build/app/tcpgpudmarxd",
                "--gpu_nic_preset",
                "a3vm",
                "--gpu_shmem_type",
                "fd",
                "--uds_path",
                "/run/tcpx",
                "--setup_param",
                "--verbose 128 2 0 ",
            ]
            caps = ["NET_ADMIN"]
        # A native sidecar (init container that keeps running): the pod completes when training ends.
        sidecars.append(
            {
                "name": daemon,
                "image": IMAGES[f"{fabric}-rxdm"],
                "restartPolicy": "Always",
                "command": command,
                "securityContext": {"capabilities": {"add": caps}},
                "env": [{"name": "LD_LIBRARY_PATH", "value": NVIDIA_LIBS}],
                "volumeMounts": daemon_mounts,
                "resources": {"requests": {"cpu": "150m"}},
            }
        )
    elif fabric == "rdma":
        gib_vol, gib_mount = _host("gib", "/home/kubernetes/bin/gib", "/usr/local/gib")
        volumes.append(gib_vol)
        mounts.append(gib_mount)
    if claim and spec.storage.shared is not None:
        volumes.append({"name": "shared", "persistentVolumeClaim": {"claimName": claim}})
        mounts.append({"name": "shared", "mountPath": spec.storage.shared.mount})
    return kubeparts.job_profile(
        spec,
        res,
        claim,
        image=DEFAULT_IMAGE,
        env=pod_env(fabric, networks, vm_env),
        fabric_devices_per_node=len(networks),
        storage=(volumes, mounts),
        annotations=annotations,
        sidecars=sidecars,
    )


def check(spec: ClusterSpec, res: Resolution, found: ProblemCollector) -> None:
    """GKE's own rules, added beside every other problem."""
    offer = res.offer
    if offer is not None and offer.instance_type not in ACCELERATORS:
        found.add(
            "scheduler.kind",
            "kubernetes",
            f"is wired for the A3 and A4 machine types on GKE, not {offer.instance_type}",
            f"use one of {', '.join(ACCELERATORS)}, or scheduler.kind: none",
        )
    shared = spec.storage.shared
    if shared is not None and shared.kind == "parallelstore":
        found.add(
            "storage.shared.kind",
            "parallelstore",
            "is not mounted into pods by provision yet (Managed Lustre and Filestore are, through GKE's CSI drivers)",
            "use managed-lustre or filestore with scheduler.kind: kubernetes",
        )
    if spec.scheduler.version is not None:
        found.add(
            "scheduler.version",
            spec.scheduler.version,
            f"is not used on GKE: the cluster follows the {RELEASE_CHANNEL} release channel",
            "drop scheduler.version",
        )
    opts = spec.cloud_options()
    ours = [("GKE pods", ipaddress.ip_network(PODS_CIDR)), ("GKE services", ipaddress.ip_network(SERVICES_CIDR))]
    for path in ("host_subnet_cidr", "secondary_host_subnet_cidr", "gpu_subnet_cidr_base"):
        try:
            net = ipaddress.ip_network(getattr(opts, path), strict=True)
        except ValueError:
            continue  # reported by the VM checks
        for label, mine in ours:
            if net.overlaps(mine):
                found.add(
                    f"gcp.{path}", str(net), f"overlaps the {label} range {mine}", "pick a range outside 10.32.0.0/13"
                )


def _gpu_pool(spec: ClusterSpec, res: Resolution, networks: Sequence[PodNetwork]) -> NodePoolPlan:
    cap = spec.capacity.type
    compact = cap in ("on-demand", "spot")
    return kubeparts.gpu_pool(
        spec,
        res,
        # A flex-start pool grows from zero (module docstring).
        min_nodes=0 if cap == "flex-start" else None,
        fabric_devices_per_node=len(networks),
        placement="COMPACT placement policy in one zone" if compact else f"none ({cap} decides placement)",
    )


def _addons(fabric: str, storage_kind: str | None) -> list[AddonPlan]:
    addon = kubeparts.system_addon
    out = [
        addon("gpu-driver", "GKE GPU driver installation (LATEST)", "NVIDIA driver and device plugin on the GPU pool")
    ]
    if fabric in ("tcpx", "tcpxo", "rdma"):
        installer = IMAGES[f"{fabric}-installer"]
        out.append(
            addon(
                "multi-networking",
                "GKE multi-networking (Dataplane V2)",
                "Network + GKENetworkParamSet objects attach every GPU NIC to pods",
            )
        )
        out.append(
            addon(
                f"nccl-{fabric}-installer",
                installer,
                "Google's NCCL plugin for the fabric, installed on every GPU node",
                kind="manifest",
                version=installer.split("@")[0].rsplit(":", 1)[-1],
            )
        )
    if fabric in ("tcpx", "tcpxo"):
        injector, digest = IMAGES["device-injector"].split("@")
        out.append(
            addon(
                "nri-device-injector",
                injector,
                "hands GPU devices to the RxDM sidecar without a privileged pod",
                kind="manifest",
                version=digest[:19],
            )
        )
    if storage_kind == "managed-lustre":
        out.append(
            addon("lustre-csi", "GKE Managed Lustre CSI driver", "mounts the Managed Lustre instance as a volume")
        )
    elif storage_kind == "filestore":
        out.append(addon("filestore-csi", "GKE Filestore CSI driver", "mounts the Filestore share as a volume"))
    return out + training_addons()


def kubernetes_plan(spec: ClusterSpec, res: Resolution, vm_env: dict[str, str]) -> KubernetesPlan:
    """The GKE cluster for ``spec`` (call after :func:`check` found nothing); ``vm_env`` is the VM NCCL env."""
    assert res.offer is not None and res.nodes is not None and res.fabric is not None  # noqa: S101
    offer, fabric = res.offer, res.fabric
    count = offer.fabric_interfaces if fabric in ("tcpx", "tcpxo", "rdma") else 0
    networks = pod_networks(spec, fabric, count)
    shared = spec.storage.shared
    storage_kind = None
    if shared is not None and shared.kind != "none" and res.storage is not None:
        storage_kind = default_shared_kind("gcp") if shared.kind == "auto" else shared.kind
    claim = "shared" if storage_kind else None
    sched = spec.scheduler
    cidrs = tuple(spec.access.allowed_cidrs)
    control = kubeparts.control_plane(
        spec,
        "gke",
        version=f"release channel {RELEASE_CHANNEL}",
        endpoint_access="DNS endpoint (IAM-authorized); IP endpoint only from access.allowed_cidrs"
        if cidrs
        else "DNS endpoint (IAM-authorized); no IP endpoint access from outside the VPC",
        authorized_networks=cidrs,
    )
    cap = spec.capacity.type
    ttl = spec.lifetime.ttl
    # Multi-node flex-start uses queued provisioning: "GKE allocates all requested resources at the same time",
    # recommended when "workloads are required to run across multiple nodes simultaneously" (GKE "Run a
    # large-scale workload with flex-start with queued provisioning"; node pool --flex-start and
    # --enable-queued-provisioning). Kueue's ProvisioningRequest admission check asks for a job's nodes.
    queued = cap == "flex-start" and res.nodes > 1
    job = job_profile(spec, res, networks, claim, vm_env)
    if queued:
        job = job.model_copy(
            update={
                "provisioning_class": QUEUED_PROVISIONING_CLASS,
                # ProvisioningRequest parameter maxRunDurationSeconds (the same guide; default seven days).
                "provisioning_parameters": {"maxRunDurationSeconds": str(int(ttl.total_seconds()))} if ttl else {},
            }
        )
    disks = offer.local_nvme_disks or int((offer.local_nvme_gib or 0) // LOCAL_SSD_GIB)
    extra = GkePlan(
        zone=res.zone,
        release_channel=RELEASE_CHANNEL,
        node_image="COS_CONTAINERD",
        pods_cidr=PODS_CIDR,
        services_cidr=SERVICES_CIDR,
        accelerator=ACCELERATORS[offer.instance_type],
        local_ssd_count=disks,
        boot_disk_type=layout.BOOT_DISK_TYPES.get(offer.instance_type, layout.DEFAULT_BOOT_DISK_TYPE),
        networks=networks,
        # A3 Ultra's second gVNIC is a node network only: no pod uses it.
        node_only_networks=(NodeNetwork(vpc="net-1", subnet="subnet-1"),) if offer.host_nics >= 2 else (),
        compact=cap in ("on-demand", "spot"),
        spot=cap == "spot",
        flex_start=cap == "flex-start",
        max_run_duration_s=int(ttl.total_seconds()) if cap == "flex-start" and ttl else None,
        reservation=spec.capacity.reservation if cap == "reservation" else None,
        storage_kind=storage_kind,
        queued_provisioning=queued,
        images=dict(IMAGES),
        scopes=layout.NODE_SCOPES,
    )
    return KubernetesPlan(
        control_plane=control,
        system_pool=system_pool("gcp", spec.region, sched.system_nodes, sched.system_instance_type),
        gpu_pool=_gpu_pool(spec, res, networks),
        addons=tuple(_addons(fabric, storage_kind)),
        job=job,
        extra=extra,
    )
