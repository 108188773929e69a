"""GKE lifetime: a Cloud Scheduler job deletes the cluster at the expiry (Pulumi; decisions are pure helpers).

Why the whole cluster, by a cloud-side job:

* GKE node pools take no absolute termination time. ``nodeConfig.maxRunDuration`` ("The maximum
  duration for the nodes to exist": GKE API reference, NodeConfig) is counted per node from its
  creation, and a pool with a fixed node count re-creates each deleted node with a fresh duration,
  so on a standard pool it recycles the nodes at the expiry instead of ending them (and repairs and
  upgrades restart the clock). It stays only where GKE itself ends the nodes: flex-start pools
  (``kubeplan.kubernetes_plan`` sets the run duration there).
* Nothing on the user's machine may be needed at the expiry (the laptop is closed, ``provision reap``
  is not running), so the deletion is a Cloud Scheduler HTTP job calling the GKE API
  ``projects.locations.clusters.delete`` (``DELETE https://container.googleapis.com/v1/{name}``,
  GKE REST reference) with an OAuth token of a service account whose custom role holds only
  ``container.clusters.delete`` (:data:`PERMISSIONS`). A custom role's id stays reserved for a while
  after ``down`` deletes it (soft delete); the provider undeletes it on the next ``up`` ("creating a
  role may involve undeleting and then updating a role with the same name": terraform-provider-google
  ``google_project_iam_custom_role`` docs, Warning). Deleting the cluster ends the control
  plane and every pool in one operation; deleting the pools one by one would collide (GKE runs one
  operation per cluster at a time) and leave the control plane billing. The shared filesystem, the
  networks and the service accounts stay until ``down`` or ``reap``, as on the VM path; ``down`` after
  the expiry finds the cluster gone (the provider treats a 404 on delete as deleted, and the
  Kubernetes provider has ``delete_unreachable``).
* Cloud Scheduler takes unix-cron schedules only (no one-off time: Cloud Scheduler "Cron job format
  and time zone"), so the job fires at the expiry's minute, hour, day and month in ``Etc/UTC``; a
  year later it would fire again against a cluster that no longer exists (404) unless ``down`` has
  removed it. Attempts end after :data:`ATTEMPT_DEADLINE` (HTTP targets take 15 s to 30 min:
  pulumi-gcp 10.2 cloudscheduler.Job attempt_deadline) and are retried with backoff
  (:data:`RETRY`), so a transient error (an upgrade operation in progress) does not skip the
  deletion.
* Deploying needs ``cloudscheduler.googleapis.com`` enabled (the preflight checks it) and
  ``iam.serviceAccounts.actAs`` on the new service account.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

#: The one permission the job uses: ``projects.locations.clusters.delete`` needs ``container.clusters.delete``
#: (IAM "Kubernetes Engine permissions"). A custom role holds it alone: the predefined roles that have it
#: (``roles/container.clusterAdmin``, ``roles/container.admin``) also create and change clusters.
PERMISSIONS = ("container.clusters.delete",)
SCOPE = "https://www.googleapis.com/auth/cloud-platform"
API = "https://container.googleapis.com/v1"
TIME_ZONE = "Etc/UTC"
#: GKE answers a delete at once with an operation; 60 s is inside the 15 s - 30 min HTTP range.
ATTEMPT_DEADLINE = "60s"
#: Up to 5 retries, 60 s then doubling to 10 min (Cloud Scheduler RetryConfig: retryCount 0-5).
RETRY: dict[str, Any] = {
    "retry_count": 5,
    "min_backoff_duration": "60s",
    "max_backoff_duration": "600s",
    "max_doublings": 3,
}
SERVICE = "cloudscheduler.googleapis.com"


def expiry_cron(expires_at: datetime) -> str:
    """The unix-cron schedule firing at ``expires_at``'s minute (UTC): ``M H D Mo *``."""
    t = expires_at.astimezone(timezone.utc)
    return f"{t.minute} {t.hour} {t.day} {t.month} *"


def delete_uri(cluster_id: str) -> str:
    """The GKE API URL that deletes cluster ``projects/P/locations/L/clusters/C``."""
    return f"{API}/{cluster_id}"


def account_id(name: str) -> str:
    """The job's service account id (6-30 characters, ``[a-z]([-a-z0-9]*[a-z0-9])``)."""
    return f"{name[:23].rstrip('-')}-expiry"


def role_id(name: str) -> str:
    """The custom role's id: ``[A-Za-z0-9_.]{3,64}`` (no hyphens: IAM CreateRoleRequest.roleId)."""
    return f"provision_{name.replace('-', '_')}"[:57] + "_expiry"


def build(plan: Any, cluster: Any, project: Any, parent: Any) -> Any:
    """The service account, its role and the Cloud Scheduler job that deletes ``cluster`` at the expiry."""
    import pulumi
    from pulumi_gcp import cloudscheduler, projects, serviceaccount

    assert plan.expires_at is not None  # noqa: S101
    child = pulumi.ResourceOptions(parent=parent)
    sa = serviceaccount.Account(
        f"{plan.name}-expiry",
        account_id=account_id(plan.name),
        display_name=f"provision {plan.name} expiry",
        description="Deletes the GKE cluster at its expiry (Cloud Scheduler job)",
        project=plan.extra.project,
        opts=child,
    )
    role = projects.IAMCustomRole(
        f"{plan.name}-expiry-role",
        role_id=role_id(plan.name),
        title=f"provision {plan.name} expiry"[:100],
        description="Delete the GKE cluster at its expiry (Cloud Scheduler job)",
        permissions=list(PERMISSIONS),
        project=project,
        opts=child,
    )
    grant = projects.IAMMember(
        f"{plan.name}-expiry-delete", project=project, role=role.name, member=sa.member, opts=child
    )
    return cloudscheduler.Job(
        f"{plan.name}-expiry-job",
        name=f"{plan.name}-expiry",
        description=f"provision: delete GKE cluster {plan.name} at its expiry {plan.expires_at:%Y-%m-%dT%H:%MZ}",
        region=plan.region,
        schedule=expiry_cron(plan.expires_at),
        time_zone=TIME_ZONE,
        attempt_deadline=ATTEMPT_DEADLINE,
        retry_config=cloudscheduler.JobRetryConfigArgs(**RETRY),
        http_target=cloudscheduler.JobHttpTargetArgs(
            uri=cluster.id.apply(delete_uri),
            http_method="DELETE",
            oauth_token=cloudscheduler.JobHttpTargetOauthTokenArgs(service_account_email=sa.email, scope=SCOPE),
        ),
        project=plan.extra.project,
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[grant, cluster]),
    )
