"""The parts of a managed-Kubernetes plan that every cloud builds the same way (pure: no Pulumi, no SDK).

Each ``clouds/<cloud>/kubeplan.py`` (GKE, EKS, AKS, ACK) passes what differs on its cloud (the service, who
reaches the API server, the pool's placement, the fabric's extended resources, the training image, the pods'
NCCL environment) and gets the same control plane, GPU pool, training-job profile, ``kube-system`` add-ons and
refusal of an instance type it is not wired for. The models live in :mod:`provision.planning.kubernetes`, which
:mod:`provision.planning.plan` imports; these builders need :mod:`provision.planning.cost`, which imports the
plan, so they stand apart.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from provision.catalog import InstanceOffer
from provision.planning.cost import compute_hourly_usd
from provision.planning.kubernetes import (
    CONTROL_PLANE_HOURLY_USD,
    POOL_LABEL,
    AddonPlan,
    ControlPlanePlan,
    JobProfile,
    NodePoolPlan,
    pod_storage,
)
from provision.planning.resolve import Resolution
from provision.spec import ClusterSpec
from provision.spec.errors import ProblemCollector

#: The toleration of the GPU pool's ``nvidia.com/gpu`` NoSchedule taint (each cloud's ``kubernetes.py`` puts
#: the taint on the pool), which every training pod carries.
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
#: The names of the ClusterTrainingRuntime and service account every training job uses (``clouds/k8s/jobs.py`` and
#: ``clouds/k8s/objects.py`` create them under the names the job profile carries).
RUNTIME = "provision-torch"
SERVICE_ACCOUNT = "trainer"


def _resolved(res: Resolution) -> tuple[InstanceOffer, int, str]:
    assert res.offer is not None and res.nodes is not None and res.fabric is not None  # noqa: S101
    return res.offer, res.nodes, res.fabric


def check_instance_type(res: Resolution, found: ProblemCollector, types: Sequence[str], where: str) -> None:
    """Refuse an instance type the cloud's Kubernetes path is not wired for (``types``; ``where``: the service)."""
    if res.offer is not None and res.offer.instance_type not in types:
        found.add(
            "scheduler.kind",
            "kubernetes",
            f"is wired for {', '.join(types)} on {where}, not {res.offer.instance_type}",
            "pick one of those instance types, or scheduler.kind: none",
        )


def control_plane(
    spec: ClusterSpec,
    service: Literal["gke", "eks", "aks", "ack"],
    *,
    version: str,
    endpoint_access: str,
    authorized_networks: tuple[str, ...],
) -> ControlPlanePlan:
    """The managed control plane of ``spec``'s cluster, in its region, at ``service``'s price."""
    return ControlPlanePlan(
        service=service,
        name=spec.name,
        version=version,
        location=spec.region,
        endpoint_access=endpoint_access,
        authorized_networks=authorized_networks,
        hourly_usd=CONTROL_PLANE_HOURLY_USD[service],
    )


def gpu_pool(
    spec: ClusterSpec,
    res: Resolution,
    *,
    fabric_devices_per_node: int,
    placement: str,
    name: str = "gpu",
    min_nodes: int | None = None,
) -> NodePoolPlan:
    """The GPU pool: the VM path's instance type, node count, fabric and capacity, priced like the VM path's
    nodes; ``min_nodes`` defaults to every node (a pool that does not grow)."""
    offer, nodes, fabric = _resolved(res)
    return NodePoolPlan(
        role="gpu",
        name=name,
        instance_type=offer.instance_type,
        nodes=nodes,
        min_nodes=nodes if min_nodes is None else min_nodes,
        max_nodes=nodes,
        gpus_per_node=offer.gpus_per_node,
        fabric=fabric,
        fabric_devices_per_node=fabric_devices_per_node,
        capacity=spec.capacity.type,
        placement=placement,
        hourly_usd=compute_hourly_usd(spec, offer, nodes),
    )


def job_profile(
    spec: ClusterSpec,
    res: Resolution,
    claim: str | None,
    *,
    image: str,
    env: Mapping[str, str],
    fabric_resource: str | None = None,
    fabric_devices_per_node: int = 0,
    fabric_requests: Mapping[str, str] | None = None,
    fabric_quota: Mapping[str, str] | None = None,
    tolerations: Sequence[Mapping[str, Any]] = (GPU_TOLERATION,),
    storage: tuple[Sequence[dict[str, Any]], Sequence[dict[str, Any]]] | None = None,
    annotations: Mapping[str, str] | None = None,
    sidecars: Sequence[dict[str, Any]] = (),
    security_context: Mapping[str, Any] | None = None,
) -> JobProfile:
    """What every pod of a training job needs on the GPU pool: all of a node's GPUs plus ``fabric_requests``
    (requests = limits), the pool's label and taint, the shared filesystem's ``claim``, and a Kueue quota of the
    whole pool (its CPUs, memory and GPUs plus ``fabric_quota``).

    ``storage`` is the pods' (volumes, mounts); by default :func:`~provision.planning.kubernetes.pod_storage`'s
    ``/dev/shm`` and the claim at the spec's shared mount."""
    offer, nodes, fabric = _resolved(res)
    gpus = offer.gpus_per_node
    shared = spec.storage.shared
    volumes, mounts = storage or pod_storage(shared.mount if shared is not None else None, claim)
    quota = {
        "cpu": str(offer.vcpus * nodes),
        "memory": f"{int(offer.memory_gib) * nodes}Gi",
        "nvidia.com/gpu": str(gpus * nodes),
    }
    return JobProfile(
        namespace=spec.scheduler.namespace,
        queue=spec.scheduler.queue,
        runtime=RUNTIME,
        service_account=SERVICE_ACCOUNT,
        image=image,
        nodes=nodes,
        gpus_per_node=gpus,
        fabric=fabric,
        fabric_resource=fabric_resource,
        fabric_devices_per_node=fabric_devices_per_node,
        resources={"nvidia.com/gpu": str(gpus), **(fabric_requests or {})},
        env=dict(env),
        annotations=dict(annotations or {}),
        node_selector={POOL_LABEL: "gpu"},
        tolerations=tuple(dict(t) for t in tolerations),
        sidecars=tuple(sidecars),
        volumes=tuple(volumes),
        mounts=tuple(mounts),
        security_context=dict(security_context or {}),
        shared_claim=claim,
        shared_mount=shared.mount if claim and shared is not None else None,
        queue_quota={**quota, **(fabric_quota or {})},
    )


def system_addon(
    name: str,
    source: str,
    purpose: str,
    *,
    kind: Literal["managed", "helm", "manifest"] = "managed",
    version: str | None = None,
) -> AddonPlan:
    """An add-on that runs in ``kube-system``: by default one the service manages, at its default version."""
    return AddonPlan(name=name, kind=kind, source=source, version=version, namespace="kube-system", purpose=purpose)
