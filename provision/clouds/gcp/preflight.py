"""The GCP preflight: enabled APIs, the machine type in the zone, the regional GPU quota and the linked bucket (it
exists and the deployer may grant on it), asked before `up`.

A disabled API (SERVICE_DISABLED), a type the zone does not offer, or a GPU quota of 0 (a new project's A3/A4
quota) otherwise surfaces minutes into ``pulumi up``, after the VPCs and the filesystem were started. Reached
through :meth:`provision.clouds.base.Adapter.preflight`; takes an account object, so it runs offline against fakes.
"""

from __future__ import annotations

import os
from typing import Any, Protocol

from provision.planning.plan import ClusterPlan
from provision.spec.errors import Problem, UnsupportedError


class GcpAccount(Protocol):
    """What the GCP preflight asks a project (tests pass fakes; :class:`ApiAccount` asks Google's APIs)."""

    def enabled_services(self) -> set[str]:
        """Names of the project's enabled services, e.g. ``compute.googleapis.com``."""
        ...

    def machine_type(self, zone: str, name: str) -> dict[str, Any] | None:
        """compute v1 ``machineTypes.get``; ``None`` when the zone does not offer the type (HTTP 404)."""
        ...

    def region_quotas(self, region: str) -> dict[str, tuple[float, float]]:
        """compute v1 ``regions.get`` ``quotas[]``: metric -> (usage, limit)."""
        ...

    def bucket_permissions(self, bucket: str, permissions: list[str]) -> set[str] | None:
        """storage v1 ``buckets.testIamPermissions``: which of ``permissions`` the caller holds on ``bucket``;
        ``None`` when the bucket does not exist or is not visible (HTTP 404)."""
        ...


#: Regional GPU quota metric per machine type (Compute Engine "GPU quota": the metric names of
#: ``gcloud compute regions describe``; Spot and flex-start VMs count against the PREEMPTIBLE_ metric,
#: Compute Engine "Preemptible quota"). A reservation's VMs were counted when it was created.
GPU_QUOTA = {
    "a2-highgpu": "NVIDIA_A100_GPUS",
    "a2-megagpu": "NVIDIA_A100_GPUS",
    "a2-ultragpu": "NVIDIA_A100_80GB_GPUS",
    "a3-highgpu": "NVIDIA_H100_GPUS",
    "a3-edgegpu": "NVIDIA_H100_GPUS",
    "a3-megagpu": "NVIDIA_H100_MEGA_GPUS",
    "a3-ultragpu": "NVIDIA_H200_GPUS",
    "a4-highgpu": "NVIDIA_B200_GPUS",
}
PREEMPTIBLE_CAPACITY = ("spot", "flex-start")
#: The services each plan needs (a call to a disabled one fails with SERVICE_DISABLED / "API has not been used").
BASE_SERVICES = ("compute.googleapis.com", "iam.googleapis.com")
STORAGE_SERVICES = {
    "managed-lustre": "lustre.googleapis.com",
    "filestore": "file.googleapis.com",
    "parallelstore": "parallelstore.googleapis.com",
}
PSA_SERVICE = "servicenetworking.googleapis.com"
#: What granting the link's service agent a role on the bucket takes (storage.BucketIAMMember reads and writes the
#: bucket's IAM policy: https://cloud.google.com/storage/docs/access-control/iam-permissions, Bucket permissions).
BUCKET_GRANT_PERMISSIONS = ["storage.buckets.getIamPolicy", "storage.buckets.setIamPolicy"]


def quota_metric(plan: ClusterPlan) -> str | None:
    """The regional quota metric ``plan``'s GPUs count against (``None``: a reservation, or an unknown type)."""
    if plan.capacity.type == "reservation":
        return None
    metric = GPU_QUOTA.get(plan.instance_type.rsplit("-", 1)[0])
    if metric and plan.capacity.type in PREEMPTIBLE_CAPACITY:
        return f"PREEMPTIBLE_{metric}"
    return metric


def gcp_preflight(plan: ClusterPlan, account: GcpAccount | None = None) -> list[Problem]:
    """Problems that would stop ``plan`` in this GCP project, before anything is created or billed.

    Args:
        plan: a GCP plan (VM or GKE).
        account: the project to ask; default :class:`ApiAccount` for the plan's project.
    """
    from provision.clouds.gcp.plan import GcpPlan

    extra = plan.extra
    assert isinstance(extra, GcpPlan), type(extra)  # noqa: S101 - only GCP plans come here
    account = account or ApiAccount.for_project(extra.project)
    problems: list[Problem] = []
    needed = list(BASE_SERVICES)
    if extra.storage is not None:
        needed.append(STORAGE_SERVICES[extra.storage.kind])
        if extra.storage.psa:
            needed.append(PSA_SERVICE)
    if plan.kubernetes is not None and plan.expires_at is not None:
        needed.append("cloudscheduler.googleapis.com")  # the expiry job (clouds/gcp/kubeexpiry.py)
    enabled = account.enabled_services()
    for service in needed:
        if service not in enabled:
            problems.append(
                Problem(
                    "cloud",
                    service,
                    "is not enabled in the project, so creating its resources fails (SERVICE_DISABLED)",
                    f"enable it: gcloud services enable {service} --project {extra.project or '<project>'}",
                )
            )
    problems += _bucket_problems(plan, account)
    if "compute.googleapis.com" not in enabled:
        return problems  # the zone and quota questions need the compute API
    zone = extra.zone or plan.zone
    if zone and account.machine_type(zone, plan.instance_type) is None:
        problems.append(
            Problem(
                "zone",
                zone,
                f"does not offer {plan.instance_type} to this project (machineTypes.get: not found)",
                f"pick a zone that lists it: gcloud compute machine-types list --filter=name={plan.instance_type}",
            )
        )
    metric = quota_metric(plan)
    if metric:
        usage, limit = account.region_quotas(plan.region).get(metric, (0.0, 0.0))
        want = plan.nodes * plan.offer.gpus_per_node
        if usage + want > limit:
            problems.append(
                Problem(
                    "nodes",
                    plan.nodes,
                    f"needs {want} GPUs of quota {metric} in {plan.region}, but the project uses {usage:g} "
                    f"of its limit {limit:g}",
                    f"request {metric} of at least {usage + want:g} in {plan.region} (IAM & Admin > Quotas), "
                    "use fewer nodes, or use a reservation",
                )
            )
    return problems


def _bucket_problems(plan: ClusterPlan, account: GcpAccount) -> list[Problem]:
    """The linked bucket (``storage.shared.object_store``) must exist and take the agent's grant from the deployer."""
    shared = plan.spec.storage.shared
    link = shared.object_store if shared is not None else None
    if link is None or plan.extra.storage is None or shared is None or shared.volume:
        return []
    bucket = link.uri.removeprefix("gs://").split("/", 1)[0]
    held = account.bucket_permissions(bucket, BUCKET_GRANT_PERMISSIONS)
    field = "storage.shared.object_store.uri"
    if held is None:
        return [
            Problem(
                field,
                link.uri,
                f"names bucket {bucket}, which does not exist or which you cannot see",
                f"create it first (gcloud storage buckets create gs://{bucket}) or fix the name",
            )  # fmt: skip
        ]
    missing = [p for p in BUCKET_GRANT_PERMISSIONS if p not in held]
    if not missing:
        return []
    return [
        Problem(
            field,
            link.uri,
            f"cannot be linked by you: granting the filesystem's service agent a role on bucket {bucket} needs "
            f"{', '.join(missing)}, which you do not hold there",
            f"ask the bucket's owner for roles/storage.admin on gs://{bucket} (or a role with those permissions)",
        )
    ]


class ApiAccount:
    """:class:`GcpAccount` over google-api-python-client (the gcp extra) with Application Default Credentials."""

    def __init__(self, project: str, credentials: Any = None) -> None:
        from googleapiclient import discovery  # the gcp extra

        self.project = project
        self._compute = discovery.build("compute", "v1", credentials=credentials, cache_discovery=False)
        self._usage = discovery.build("serviceusage", "v1", credentials=credentials, cache_discovery=False)
        self._credentials = credentials

    @classmethod
    def for_project(cls, project: str | None) -> ApiAccount:
        project = project or os.environ.get("GOOGLE_CLOUD_PROJECT") or os.environ.get("CLOUDSDK_CORE_PROJECT")
        if not project:
            raise UnsupportedError(
                "the GCP preflight needs a project",
                [Problem("gcp.project", None, "is not set", "set gcp.project in the spec or GOOGLE_CLOUD_PROJECT")],
            )
        return cls(project)

    def enabled_services(self) -> set[str]:
        names: set[str] = set()
        request = self._usage.services().list(parent=f"projects/{self.project}", filter="state:ENABLED")
        while request is not None:
            page = request.execute()
            names |= {s["config"]["name"] for s in page.get("services", [])}
            request = self._usage.services().list_next(request, page)
        return names

    def machine_type(self, zone: str, name: str) -> dict[str, Any] | None:
        from googleapiclient.errors import HttpError

        try:
            return dict(self._compute.machineTypes().get(project=self.project, zone=zone, machineType=name).execute())
        except HttpError as e:
            if e.resp.status == 404:
                return None
            raise

    def region_quotas(self, region: str) -> dict[str, tuple[float, float]]:
        body = self._compute.regions().get(project=self.project, region=region).execute()
        return {q["metric"]: (float(q.get("usage", 0)), float(q.get("limit", 0))) for q in body.get("quotas", [])}

    def bucket_permissions(self, bucket: str, permissions: list[str]) -> set[str] | None:
        from googleapiclient import discovery
        from googleapiclient.errors import HttpError

        storage = discovery.build("storage", "v1", credentials=self._credentials, cache_discovery=False)
        try:
            body = storage.buckets().testIamPermissions(bucket=bucket, permissions=permissions).execute()
        except HttpError as e:
            if e.resp.status == 404:
                return None
            raise
        return set(body.get("permissions", []))


def preflight(plan: ClusterPlan, session: GcpAccount | None = None) -> list[Problem]:
    """The hook :meth:`~provision.clouds.base.Adapter.preflight` calls: ``session`` is the project's account."""
    return gcp_preflight(plan, session)
