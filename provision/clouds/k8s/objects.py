"""Kubernetes objects every ``scheduler: kubernetes`` cluster gets (Pulumi; imports no cloud SDK).

The cloud's ``kubernetes.py`` creates the managed cluster and its node pools, then calls
:func:`build_training_stack` with a provider for that cluster. Created here, in order:

1. the Kubeflow Trainer and Kueue Helm releases (:mod:`provision.clouds.k8s.addons`);
2. the jobs' namespace and service account (cloud identity through annotations);
3. the shared filesystem as a static PersistentVolume + claim (the cloud supplies the CSI source);
4. Kueue's ResourceFlavor (the GPU pool), ClusterQueue (the pool's whole capacity) and LocalQueue;
5. the ClusterTrainingRuntime with the fabric wired in (:func:`provision.clouds.k8s.jobs.training_runtime`).

Kueue API ``kueue.x-k8s.io/v1beta2`` (served since Kueue 0.15, the storage version since 0.16, where
v1beta1 became deprecated: kubernetes-sigs/kueue PR #8020 "Use v1beta2 as storage for 0.16"). The
fields used here are the same in both versions: ResourceFlavor ``spec.nodeLabels``,
ClusterQueue ``spec.namespaceSelector`` + ``spec.resourceGroups[].{coveredResources, flavors[].
{name, resources[].{name, nominalQuota}}}``, LocalQueue ``spec.clusterQueue``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pulumi
import pulumi_kubernetes as k8s

from provision.clouds.k8s import addons, jobs
from provision.planning.kubernetes import POOL_LABEL


def kubeconfig_text(name: str, server: str, exec_lines: list[str], ca_data: str | None = None) -> str:
    """A one-cluster kubeconfig whose user authenticates through an exec plugin (no credential is stored).

    ``exec_lines`` are the plugin's lines under ``exec:`` after its ``apiVersion`` (command, args, ...),
    indented six spaces; ``ca_data`` is the cluster's CA (omit it for an endpoint with a public CA).
    """
    cluster = [f"    server: {server}", *([f"    certificate-authority-data: {ca_data}"] if ca_data else [])]
    return "\n".join(
        [
            "apiVersion: v1",
            "kind: Config",
            f"current-context: {name}",
            "clusters:",
            f"- name: {name}",
            "  cluster:",
            *cluster,
            "contexts:",
            f"- name: {name}",
            "  context:",
            f"    cluster: {name}",
            f"    user: {name}",
            "users:",
            f"- name: {name}",
            "  user:",
            "    exec:",
            "      apiVersion: client.authentication.k8s.io/v1beta1",
            *exec_lines,
            "",
        ]
    )


if TYPE_CHECKING:
    from provision.planning.plan import ClusterPlan

KUEUE_API = "kueue.x-k8s.io/v1beta2"
#: Labels every object carries (Kubernetes label values allow what GCP labels allow, and more).
MANAGED_BY = {"app.kubernetes.io/managed-by": "provision"}


@dataclass
class TrainingStack:
    """Handles of what :func:`build_training_stack` created."""

    releases: list[k8s.helm.v3.Release] = field(default_factory=list)
    namespace: k8s.core.v1.Namespace | None = None
    claim: k8s.core.v1.PersistentVolumeClaim | None = None
    runtime: k8s.apiextensions.CustomResource | None = None


def provider(
    name: str, kubeconfig: pulumi.Input[str], cluster_id: pulumi.Input[str], parent: pulumi.Resource, deps: list[Any]
) -> k8s.Provider:
    """A provider for the new cluster; objects wait for ``deps`` (the node pools) before they are sent.

    ``cluster_identifier`` keeps a refreshed kubeconfig (new endpoint address, CA rotation) from
    replacing every object; ``delete_unreachable`` lets ``down`` finish when the cluster is already
    gone (e.g. reaped), instead of failing on objects nobody can reach (pulumi-kubernetes Provider docs).
    """
    return k8s.Provider(
        f"{name}-k8s",
        kubeconfig=kubeconfig,
        cluster_identifier=cluster_id,
        delete_unreachable=True,
        enable_server_side_apply=True,
        opts=pulumi.ResourceOptions(parent=parent, depends_on=deps),
    )


def labels(plan: ClusterPlan, **extra: str) -> dict[str, str]:
    return {**MANAGED_BY, "provision-cluster": plan.name, **extra}


def _opts(parent: pulumi.Resource, prov: k8s.Provider, deps: list[Any] | None = None) -> pulumi.ResourceOptions:
    return pulumi.ResourceOptions(parent=parent, provider=prov, depends_on=deps or [])


def _release(
    plan: ClusterPlan,
    chart: addons.Chart,
    values: dict[str, Any],
    parent: pulumi.Resource,
    prov: k8s.Provider,
    deps: list[Any],
) -> k8s.helm.v3.Release:
    return k8s.helm.v3.Release(
        f"{plan.name}-{chart.release}",
        name=chart.release,
        chart=chart.chart,
        version=chart.version,
        repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=chart.repo) if chart.repo else None,
        namespace=chart.namespace,
        create_namespace=True,
        values=values,
        # Wait until the controllers (and their webhooks) are ready before objects that need them.
        skip_await=False,
        timeout=900,
        opts=_opts(parent, prov, deps),
    )


def build_training_stack(
    plan: ClusterPlan,
    prov: k8s.Provider,
    parent: pulumi.Resource,
    *,
    shared_csi: Any = None,
    shared_mount_options: list[str] | None = None,
    service_account_annotations: pulumi.Input[dict[str, str]] | None = None,
    deps: list[Any] | None = None,
) -> TrainingStack:
    """Trainer, Kueue, the namespace, the shared volume, the queues and the runtime (module docstring).

    Args:
        shared_csi: the ``csi`` block of the shared filesystem's PersistentVolume (driver, volumeHandle,
            volumeAttributes), when the cluster has one.
        shared_mount_options: the PersistentVolume's ``mountOptions`` (NFS options of the ACK NAS volume).
        service_account_annotations: the cloud identity of the jobs (GKE Workload Identity).
        deps: resources the first objects wait for (device plugins, CSI drivers).
    """
    k8s_plan = plan.kubernetes
    assert k8s_plan is not None  # noqa: S101
    job = k8s_plan.job
    out = TrainingStack()
    trainer = _release(plan, addons.TRAINER, addons.trainer_values(), parent, prov, list(deps or []))
    # Kueue after JobSet/Trainer: its integrations look for their CRDs when it starts.
    kueue = _release(plan, addons.KUEUE, addons.kueue_values(), parent, prov, [trainer])
    out.releases = [trainer, kueue]
    ns = k8s.core.v1.Namespace(
        f"{plan.name}-ns",
        metadata=k8s.meta.v1.ObjectMetaArgs(name=job.namespace, labels=labels(plan)),
        opts=_opts(parent, prov),
    )
    out.namespace = ns
    k8s.core.v1.ServiceAccount(
        f"{plan.name}-jobs-sa",
        metadata=k8s.meta.v1.ObjectMetaArgs(
            name=job.service_account,
            namespace=job.namespace,
            labels=labels(plan),
            annotations=service_account_annotations,
        ),
        opts=_opts(parent, prov, [ns]),
    )
    if shared_csi is not None and plan.storage is not None and job.shared_claim:
        size = f"{plan.storage.size_gib}Gi"
        pv = k8s.core.v1.PersistentVolume(
            f"{plan.name}-shared-pv",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=f"{plan.name}-shared", labels=labels(plan)),
            spec=k8s.core.v1.PersistentVolumeSpecArgs(
                capacity={"storage": size},
                access_modes=["ReadWriteMany"],
                volume_mode="Filesystem",
                # The filesystem belongs to the stack, not to Kubernetes: deleting the claim never deletes data.
                persistent_volume_reclaim_policy="Retain",
                storage_class_name="",
                csi=shared_csi,
                mount_options=shared_mount_options,
            ),
            opts=_opts(parent, prov),
        )
        out.claim = k8s.core.v1.PersistentVolumeClaim(
            f"{plan.name}-shared-pvc",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=job.shared_claim, namespace=job.namespace, labels=labels(plan)),
            spec=k8s.core.v1.PersistentVolumeClaimSpecArgs(
                access_modes=["ReadWriteMany"],
                storage_class_name="",
                volume_name=pv.metadata.name,
                resources=k8s.core.v1.VolumeResourceRequirementsArgs(requests={"storage": size}),
            ),
            opts=_opts(parent, prov, [ns, pv]),
        )
    _queues(plan, prov, parent, [kueue, ns])
    runtime = jobs.training_runtime(job, plan.name)
    out.runtime = k8s.apiextensions.CustomResource(
        f"{plan.name}-runtime",
        api_version=runtime["apiVersion"],
        kind=runtime["kind"],
        metadata=runtime["metadata"],
        spec=runtime["spec"],
        opts=_opts(parent, prov, [trainer]),
    )
    return out


def _queues(plan: ClusterPlan, prov: k8s.Provider, parent: pulumi.Resource, deps: list[Any]) -> None:
    assert plan.kubernetes is not None  # noqa: S101
    job = plan.kubernetes.job
    flavor = k8s.apiextensions.CustomResource(
        f"{plan.name}-flavor",
        api_version=KUEUE_API,
        kind="ResourceFlavor",
        metadata={"name": "gpu-pool", "labels": labels(plan)},
        spec={"nodeLabels": {POOL_LABEL: "gpu"}},
        opts=_opts(parent, prov, deps),
    )
    quota = job.queue_quota
    checks: dict[str, Any] = {}
    if job.provisioning_class is not None:
        # Kueue "Provisioning Admission Check Controller": a job is admitted once a ProvisioningRequest of this
        # class has all of its nodes (kubernetes-sigs/kueue site/content/en/docs/admission-check-controllers/
        # provisioning.md: AdmissionCheck controllerName kueue.x-k8s.io/provisioning-request, parameters a
        # ProvisioningRequestConfig with provisioningClassName and managedResources).
        config = k8s.apiextensions.CustomResource(
            f"{plan.name}-provisioning-config",
            api_version=KUEUE_API,
            kind="ProvisioningRequestConfig",
            metadata={"name": "gpu-pool", "labels": labels(plan)},
            spec={
                "provisioningClassName": job.provisioning_class,
                "managedResources": [k for k in quota if k.endswith("/gpu")],
                **({"parameters": dict(job.provisioning_parameters)} if job.provisioning_parameters else {}),
            },
            opts=_opts(parent, prov, deps),
        )
        k8s.apiextensions.CustomResource(
            f"{plan.name}-admission-check",
            api_version=KUEUE_API,
            kind="AdmissionCheck",
            metadata={"name": "gpu-pool", "labels": labels(plan)},
            spec={
                "controllerName": "kueue.x-k8s.io/provisioning-request",
                "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig", "name": "gpu-pool"},
            },
            opts=_opts(parent, prov, [*deps, config]),
        )
        checks = {"admissionChecksStrategy": {"admissionChecks": [{"name": "gpu-pool"}]}}
    cluster_queue = k8s.apiextensions.CustomResource(
        f"{plan.name}-cluster-queue",
        api_version=KUEUE_API,
        kind="ClusterQueue",
        metadata={"name": plan.name, "labels": labels(plan)},
        spec={
            "namespaceSelector": {},
            # A job is admitted only when all of its nodes fit at once: Kueue admits whole workloads.
            "queueingStrategy": "BestEffortFIFO",
            "resourceGroups": [
                {
                    "coveredResources": list(quota),
                    "flavors": [
                        {"name": "gpu-pool", "resources": [{"name": k, "nominalQuota": v} for k, v in quota.items()]}
                    ],
                }
            ],
            **checks,
        },
        opts=_opts(parent, prov, [*deps, flavor]),
    )
    k8s.apiextensions.CustomResource(
        f"{plan.name}-local-queue",
        api_version=KUEUE_API,
        kind="LocalQueue",
        metadata={"name": job.queue, "namespace": job.namespace, "labels": labels(plan)},
        spec={"clusterQueue": plan.name},
        opts=_opts(parent, prov, [*deps, cluster_queue]),
    )


def kubernetes_outputs(plan: ClusterPlan, cluster_name: Any, endpoint: Any, kubeconfig: Any) -> dict[str, Any]:
    """The ``kubernetes`` stack output: how to reach the cluster and where jobs go."""
    assert plan.kubernetes is not None  # noqa: S101
    job = plan.kubernetes.job
    return {
        "service": plan.kubernetes.control_plane.service,
        "cluster_name": cluster_name,
        "endpoint": endpoint,
        "kubeconfig": kubeconfig,
        "namespace": job.namespace,
        "queue": job.queue,
        "runtime": job.runtime,
        "service_account": job.service_account,
        "shared_claim": job.shared_claim,
    }
