"""The GPU fabric inside a GKE cluster (Pulumi only): pod networks and Google's fabric DaemonSets.

* One ``GKENetworkParamSet`` (the VPC and subnet of a GPU NIC; ``deviceMode`` NetDevice for
  GPUDirect-TCPX/O, RDMA for A3 Ultra) and one ``Network`` (``type: Device``) per GPU NIC, named as
  the pods' ``networking.gke.io/interfaces`` annotation names them (GKE "Maximize GPU network
  bandwidth"; Cluster Toolkit gke-cluster templates ``gke-network-paramset.yaml.tftpl``,
  ``network-object.yaml.tftpl``).
* The NCCL plugin installer for the fabric: a DaemonSet on the GPU pool whose init container copies
  Google's plugin (and for TCPXO the NCCL core and tuner files) into ``/home/kubernetes/bin/nvidia/lib64``,
  which pods mount at ``/usr/local/nvidia/lib64``. For TCPXO a first init step loads the
  ``import-helper`` module and exposes the NICs' aperture BARs under ``/dev/aperture_devices``.
  Behaviour as in container-engine-accelerators ``gpudirect-tcpxo/nccl-tcpxo-installer.yaml``,
  ``gpudirect-tcpx/nccl-tcpx-installer.yaml`` and ``gpudirect-rdma/nccl-rdma-installer.yaml``.
* The NRI device injector (TCPX/O): hands ``/dev/nvidia*`` to the RxDM sidecar named in the pod's
  ``devices.gke.io/container.<name>`` annotation (``nri_device_injector/nri-device-injector.yaml``).
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from provision.clouds.gcp.kubeplan import gke
from provision.clouds.gcp.network import Networks
from provision.clouds.gcp.plan import GcpPlan
from provision.clouds.k8s.objects import labels
from provision.planning.kubernetes import POOL_LABEL
from provision.planning.plan import ClusterPlan

NETWORK_API = "networking.gke.io/v1"
#: The aperture devices of A3 Mega's GPU NICs (PCI vendor:device 1ae0:0084), bound under /dev.
_APERTURE_SETUP = """set -eu
modprobe import-helper
mkdir -p /dev/aperture_devices
for dev in $(lspci -D -n -d 1ae0:0084 | cut -d' ' -f1); do
  target=/dev/aperture_devices/$dev
  mkdir -p "$target"
  mountpoint -q "$target" || mount --bind "$(readlink -f /sys/bus/pci/devices/$dev)" "$target"
done
chmod -R a+r /dev/aperture_devices
chmod a+rw /dev/aperture_devices/*/resource* 2>/dev/null || true
"""
_INSTALL = {
    # The installer images' own entry point installs into /var/lib/<fabric>; copy what NCCL loads to the
    # directory GKE mounts into GPU containers.
    "tcpxo": "/scripts/container_entry.sh install --install-nccl && mkdir -p /usr/local/nvidia/lib64 && "
    "cp -r /var/lib/tcpxo/lib64/. /usr/local/nvidia/lib64",
    "tcpx": "/scripts/container_entry.sh install --install-nccl && mkdir -p /usr/local/nvidia/lib64 && "
    "cp -r /var/lib/tcpx/lib64/. /usr/local/nvidia/lib64",
    "rdma": "/scripts/container_entry.sh install && "
    "cp -r /var/lib/gib/lib64/. /usr/local/home/kubernetes/bin/nvidia/lib64 && "
    "cp -r /var/lib/gib/. /usr/local/home/kubernetes/bin/gib",
}


def _opts(parent: pulumi.Resource, prov: k8s.Provider, deps: list[Any] | None = None) -> pulumi.ResourceOptions:
    return pulumi.ResourceOptions(parent=parent, provider=prov, depends_on=deps or [])


def _host_volume(name: str, path: str) -> k8s.core.v1.VolumeArgs:
    return k8s.core.v1.VolumeArgs(name=name, host_path=k8s.core.v1.HostPathVolumeSourceArgs(path=path))


def _gpu_pool_daemonset(
    plan: ClusterPlan[GcpPlan], name: str, parent: pulumi.Resource, prov: k8s.Provider, spec: k8s.core.v1.PodSpecArgs
) -> k8s.apps.v1.DaemonSet:
    match = {"k8s-app": name}
    return k8s.apps.v1.DaemonSet(
        f"{plan.name}-{name}",
        metadata=k8s.meta.v1.ObjectMetaArgs(name=name, namespace="kube-system", labels=labels(plan, **match)),
        spec=k8s.apps.v1.DaemonSetSpecArgs(
            selector=k8s.meta.v1.LabelSelectorArgs(match_labels=match),
            update_strategy=k8s.apps.v1.DaemonSetUpdateStrategyArgs(type="RollingUpdate"),
            template=k8s.core.v1.PodTemplateSpecArgs(metadata=k8s.meta.v1.ObjectMetaArgs(labels=match), spec=spec),
        ),
        opts=_opts(parent, prov),
    )


def _pool_spec(**kw: Any) -> k8s.core.v1.PodSpecArgs:
    return k8s.core.v1.PodSpecArgs(
        priority_class_name="system-node-critical",
        node_selector={POOL_LABEL: "gpu"},
        tolerations=[k8s.core.v1.TolerationArgs(operator="Exists")],
        host_network=True,
        host_pid=True,
        **kw,
    )


def _installer(plan: ClusterPlan[GcpPlan], parent: pulumi.Resource, prov: k8s.Provider) -> k8s.apps.v1.DaemonSet:
    assert plan.kubernetes is not None  # noqa: S101
    images, fabric = gke(plan.kubernetes).images, plan.fabric
    privileged = k8s.core.v1.SecurityContextArgs(privileged=True)
    init: list[k8s.core.v1.ContainerArgs] = []
    volumes = [_host_volume("var-lib", "/var/lib"), _host_volume("host-bin", "/home/kubernetes/bin")]
    mounts = [k8s.core.v1.VolumeMountArgs(name="var-lib", mount_path="/var/lib")]
    if fabric == "tcpxo":
        init.append(
            k8s.core.v1.ContainerArgs(
                name="aperture-devices",
                image=images["setup"],
                security_context=privileged,
                # Runs in the host's namespaces (PID 1): the module and the bind mounts belong to the node.
                command=["nsenter", "-at", "1", "--", "sh", "-c", _APERTURE_SETUP],
            )
        )
    target = "/usr/local/home/kubernetes/bin" if fabric == "rdma" else "/usr/local"
    mounts.append(k8s.core.v1.VolumeMountArgs(name="host-bin", mount_path=target))
    init.append(
        k8s.core.v1.ContainerArgs(
            name=f"nccl-{fabric}-installer",
            image=images[f"{fabric}-installer"],
            security_context=privileged,
            command=["/bin/sh", "-c", _INSTALL[fabric]],
            volume_mounts=mounts,
            resources=k8s.core.v1.ResourceRequirementsArgs(requests={"cpu": "150m"}),
        )
    )
    spec = _pool_spec(
        init_containers=init,
        containers=[k8s.core.v1.ContainerArgs(name="pause", image=images["pause"])],
        volumes=volumes,
    )
    return _gpu_pool_daemonset(plan, f"nccl-{fabric}-installer", parent, prov, spec)


def _device_injector(plan: ClusterPlan[GcpPlan], parent: pulumi.Resource, prov: k8s.Provider) -> k8s.apps.v1.DaemonSet:
    assert plan.kubernetes is not None  # noqa: S101
    spec = _pool_spec(
        containers=[
            k8s.core.v1.ContainerArgs(
                name="device-injector",
                image=gke(plan.kubernetes).images["device-injector"],
                security_context=k8s.core.v1.SecurityContextArgs(privileged=True),
                volume_mounts=[
                    k8s.core.v1.VolumeMountArgs(name="dev", mount_path="/dev"),
                    k8s.core.v1.VolumeMountArgs(name="nri", mount_path="/var/run/nri"),
                ],
                resources=k8s.core.v1.ResourceRequirementsArgs(requests={"cpu": "150m"}),
            )
        ],
        volumes=[_host_volume("dev", "/dev"), _host_volume("nri", "/var/run/nri")],
    )
    return _gpu_pool_daemonset(plan, "device-injector", parent, prov, spec)


def build(
    plan: ClusterPlan[GcpPlan], nets: Networks, prov: k8s.Provider, parent: pulumi.Resource
) -> list[pulumi.Resource]:
    """Pod networks and fabric DaemonSets (module docstring); returns what training objects wait for."""
    assert plan.kubernetes is not None  # noqa: S101
    networks = gke(plan.kubernetes).networks
    if not networks:
        return []
    made: list[pulumi.Resource] = []
    for n in networks:
        params = k8s.apiextensions.CustomResource(
            f"{plan.name}-{n.name}-params",
            api_version=NETWORK_API,
            kind="GKENetworkParamSet",
            metadata={"name": n.name, "labels": labels(plan)},
            spec={
                "vpc": nets.vpcs[n.vpc].name,
                "vpcSubnet": nets.subnets[n.subnet].name,
                "deviceMode": n.mode,
            },
            opts=_opts(parent, prov),
        )
        made.append(
            k8s.apiextensions.CustomResource(
                f"{plan.name}-{n.name}",
                api_version=NETWORK_API,
                kind="Network",
                metadata={"name": n.name, "labels": labels(plan)},
                spec={
                    "type": "Device",
                    "parametersRef": {"group": "networking.gke.io", "kind": "GKENetworkParamSet", "name": n.name},
                },
                opts=_opts(parent, prov, [params]),
            )
        )
    made.append(_installer(plan, parent, prov))
    if plan.fabric in ("tcpx", "tcpxo"):
        made.append(_device_injector(plan, parent, prov))
    return made
