"""GCP rules of provider-only inputs and of limits Google documents outside the discovery documents.

Called by :func:`provision.clouds.gcp.strict.check`; :mod:`provision.clouds.gcp.coverage` names the inputs
they check when the strict cloud accounts for every leaf.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from provision.clouds.strict import Resource, Violation, check_enum, values_at

_TF = "hashicorp/terraform-provider-google google/services/{} {} ValidateFunc"
#: Provider-only enums: (type, input) -> (values, source).
PROVIDER_ENUMS: dict[tuple[str, str], tuple[tuple[str, ...], str]] = {
    ("gcp:container/cluster:Cluster", "networkingMode"): (
        ("VPC_NATIVE", "ROUTES"),
        _TF.format("container/resource_container_cluster.go", "networking_mode"),
    ),
    ("gcp:compute/instanceGroupManager:InstanceGroupManager", "waitForInstancesStatus"): (
        ("STABLE", "UPDATED"),
        _TF.format("compute/resource_compute_instance_group_manager.go", "wait_for_instances_status"),
    ),
}

#: Instance metadata ("Set and remove custom metadata": keys up to 128 bytes of letters, digits, '-' and '_';
#: each value up to 256 KB).
METADATA_KEY = r"[A-Za-z0-9_-]{1,128}"
METADATA_VALUE_MAX = 256 * 1024
METADATA_SOURCE = "cloud.google.com/compute/docs/metadata/setting-custom-metadata (limitations)"
#: Kubernetes labels on GKE nodes ("Labels and Selectors": optional DNS prefix, name <= 63 characters).
KUBE_LABEL_KEY = r"(?:[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
KUBE_LABEL_VALUE = r"(?:[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?"
KUBE_LABEL_SOURCE = "kubernetes.io/docs/concepts/overview/working-with-objects/labels (syntax and character set)"
#: IAM policy bindings (IAM v1 REST reference, Policy "Binding": role names and principal identifiers).
IAM_ROLE = r"roles/[A-Za-z0-9_.]+|(?:projects|organizations)/[A-Za-z0-9_.-]+/roles/[A-Za-z0-9_.]+"
IAM_MEMBER = (
    r"(?:user|serviceAccount|group|domain|principal|principalSet|deleted:serviceAccount):\S+"
    r"|allUsers|allAuthenticatedUsers"
)
IAM_SOURCE = "cloud.google.com/iam/docs/reference/rest/v1/Policy#Binding (role, members)"
#: Service accounts (IAM v1 REST reference, projects.serviceAccounts.create / ServiceAccount).
SA_LIMITS = {"displayName": 100, "description": 256}
SA_SOURCE = (
    "cloud.google.com/iam/docs/reference/rest/v1/projects.serviceAccounts (displayName <= 100, description <= 256)"
)
ACCOUNT_ID_SOURCE = "pulumi-gcp 10.2 serviceaccount.Account account_id docstring (IAM CreateServiceAccount)"

PROJECT_METADATA_ITEM = "gcp:compute/projectMetadataItem:ProjectMetadataItem"
#: Cloud Scheduler jobs (the GKE expiry job): the Job schema's descriptions in the cloudscheduler v1 discovery
#: document (JOB_ID letters, digits, hyphens, underscores, at most 500; HTTP attemptDeadline 15 s to 30 min) and
#: pulumi-gcp 10.2 cloudscheduler.Job (retry_count "Values greater than 5 and negative values are not allowed";
#: time_zone "a time zone name from the tz database"); schedules are unix-cron ("Cron job format and time zone").
SCHEDULER_JOB = "gcp:cloudscheduler/job:Job"
JOB_ID = r"[A-Za-z0-9_-]{1,500}"
JOB_SOURCE = "cloudscheduler v1 discovery document, Job (name, attemptDeadline) and pulumi-gcp 10.2 cloudscheduler.Job"
CRON_SOURCE = "cloud.google.com/scheduler/docs/configuring/cron-job-schedules (unix-cron format)"
#: IAM custom roles: CreateRoleRequest.roleId ("alphanumeric characters, underscores and periods", 3-64) and
#: Role.title ("Typically this is limited to 100 UTF-8 bytes"), iam v1 discovery document.
CUSTOM_ROLE = "gcp:projects/iAMCustomRole:IAMCustomRole"
ROLE_ID = r"[A-Za-z0-9_.]{3,64}"
ROLE_SOURCE = "iam v1 discovery document, CreateRoleRequest.roleId and Role.title"
_CRON_FIELDS = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))
_DURATION_S = re.compile(r"^([0-9]+)(?:\.[0-9]{1,9})?s$")
_IAM_TYPES = ("gcp:projects/iAMMember:IAMMember", "gcp:serviceaccount/iAMMember:IAMMember")


def provider_rules(res: Resource) -> list[Violation]:
    """Rules of provider-only inputs and of limits Google documents outside the discovery documents."""
    out: list[Violation] = []
    for (type_token, field), (values, source) in PROVIDER_ENUMS.items():
        if res.type == type_token and field in res.inputs:
            out += check_enum(res, field, res.inputs[field], values, source)
    for path in ("metadata", "nodeConfig.metadata"):
        for meta in values_at(res.inputs, path):
            if not isinstance(meta, Mapping):
                continue
            for key, value in meta.items():
                if not re.fullmatch(METADATA_KEY, str(key)):
                    out.append(res.violation(f"{path}.{key}", key, f"keys must match {METADATA_KEY}", METADATA_SOURCE))
                if len(str(value).encode()) > METADATA_VALUE_MAX:
                    out.append(res.violation(f"{path}.{key}", "...", "values are at most 256 KB", METADATA_SOURCE))
    if res.type == PROJECT_METADATA_ITEM:  # one project metadata entry: the same key and value limits
        key, value = res.inputs.get("key"), res.inputs.get("value")
        if isinstance(key, str) and not re.fullmatch(METADATA_KEY, key):
            out.append(res.violation("key", key, f"keys must match {METADATA_KEY}", METADATA_SOURCE))
        if isinstance(value, str) and len(value.encode()) > METADATA_VALUE_MAX:
            out.append(res.violation("value", "...", "values are at most 256 KB", METADATA_SOURCE))
    for labels in values_at(res.inputs, "nodeConfig.labels"):
        for key, value in (labels or {}).items() if isinstance(labels, Mapping) else ():
            if not re.fullmatch(KUBE_LABEL_KEY, str(key)) or not re.fullmatch(KUBE_LABEL_VALUE, str(value)):
                out.append(
                    res.violation(f"nodeConfig.labels.{key}", value, "not a valid Kubernetes label", KUBE_LABEL_SOURCE)
                )
    if res.type in _IAM_TYPES:
        role, member = res.inputs.get("role"), res.inputs.get("member")
        if isinstance(role, str) and not re.fullmatch(IAM_ROLE, role):
            out.append(res.violation("role", role, f"must match {IAM_ROLE}", IAM_SOURCE))
        if isinstance(member, str) and not re.fullmatch(IAM_MEMBER, member):
            out.append(res.violation("member", member, "must be a principal such as serviceAccount:EMAIL", IAM_SOURCE))
    if res.type == SCHEDULER_JOB:
        out += job_rules(res)
    if res.type == CUSTOM_ROLE:
        rid, title = res.inputs.get("roleId"), res.inputs.get("title")
        if isinstance(rid, str) and not re.fullmatch(ROLE_ID, rid):
            out.append(res.violation("roleId", rid, f"must match {ROLE_ID}", ROLE_SOURCE))
        if isinstance(title, str) and len(title.encode()) > 100:
            out.append(res.violation("title", title, "at most 100 bytes", ROLE_SOURCE))
        if not res.inputs.get("permissions"):
            out.append(res.violation("permissions", [], "at least one permission", ROLE_SOURCE))
    if res.type == "gcp:serviceaccount/account:Account":
        for field, limit in SA_LIMITS.items():
            value = res.inputs.get(field)
            if isinstance(value, str) and len(value) > limit:
                out.append(res.violation(field, value, f"at most {limit} characters", SA_SOURCE))
    return out


def _cron_ok(schedule: str) -> bool:
    """A five-field unix-cron line of numbers, ranges, lists, steps and ``*`` within each field's range."""
    fields = schedule.split()
    if len(fields) != len(_CRON_FIELDS):
        return False
    for text, (lo, hi) in zip(fields, _CRON_FIELDS, strict=True):
        for part in text.split(","):
            base, _, step = part.partition("/")
            if step and not step.isdigit():
                return False
            if base == "*":
                continue
            ends = base.split("-")
            if len(ends) > 2 or not all(e.isdigit() and lo <= int(e) <= hi for e in ends):
                return False
    return True


def job_rules(res: Resource) -> list[Violation]:
    """What Cloud Scheduler refuses in a job (:data:`JOB_SOURCE`, :data:`CRON_SOURCE`)."""
    from zoneinfo import available_timezones

    out: list[Violation] = []
    name = res.inputs.get("name")
    if isinstance(name, str) and not re.fullmatch(JOB_ID, name):
        out.append(res.violation("name", name, f"a job id must match {JOB_ID}", JOB_SOURCE))
    schedule = res.inputs.get("schedule")
    if not isinstance(schedule, str) or not _cron_ok(schedule):
        out.append(res.violation("schedule", schedule, "must be a five-field unix-cron schedule", CRON_SOURCE))
    zone = res.inputs.get("timeZone")
    if zone is not None and zone not in available_timezones() | {"UTC", "Etc/UTC"}:
        out.append(res.violation("timeZone", zone, "must be a tz database time zone name", JOB_SOURCE))
    deadline = res.inputs.get("attemptDeadline")
    m = _DURATION_S.match(deadline) if isinstance(deadline, str) else None
    if deadline is not None and res.inputs.get("httpTarget") and (m is None or not 15 <= int(m.group(1)) <= 1800):
        out.append(res.violation("attemptDeadline", deadline, "HTTP targets take 15s to 1800s", JOB_SOURCE))
    count = (res.inputs.get("retryConfig") or {}).get("retryCount")
    if count is not None and not (isinstance(count, (int, float)) and 0 <= count <= 5):
        out.append(res.violation("retryConfig.retryCount", count, "must be 0 to 5", JOB_SOURCE))
    target = res.inputs.get("httpTarget") or {}
    if target.get("body") and target.get("httpMethod") not in ("POST", "PUT", "PATCH"):
        out.append(res.violation("httpTarget.body", "...", "a body needs POST, PUT or PATCH", JOB_SOURCE))
    if not str(target.get("uri") or "https://").startswith(("http://", "https://")):
        out.append(res.violation("httpTarget.uri", target.get("uri"), "must be an http(s) URL", JOB_SOURCE))
    return out
