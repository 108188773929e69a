"""The strict GCP cloud's rules for the object-store link (clouds/gcp/datalink.py): the service agent and its
bucket grant.

* ``gcp:projects/serviceIdentity:ServiceIdentity``: ``service`` is a Google API service name.
* ``gcp:storage/bucketIAMMember:BucketIAMMember``: ``bucket`` is a bucket *name* as Cloud Storage names them (no
  ``gs://``, no path), ``member`` an IAM principal, ``role`` an IAM role; a grant to the Managed Lustre or
  Parallelstore agent holds the role its transfer-data page names, nothing wider.
* ``gcp:projects/iAMMember:IAMMember``: a storage role for those agents on the whole project is refused: their
  pages grant it on the bucket.
"""

from __future__ import annotations

import ipaddress
import re

from provision.clouds.gcp.strict_provider import IAM_MEMBER, IAM_ROLE, IAM_SOURCE
from provision.clouds.strict import Resource, Violation

BUCKET_IAM = "gcp:storage/bucketIAMMember:BucketIAMMember"
SERVICE_IDENTITY = "gcp:projects/serviceIdentity:ServiceIdentity"
PROJECT_IAM = "gcp:projects/iAMMember:IAMMember"

BUCKET_SOURCE = "https://cloud.google.com/storage/docs/buckets#naming (bucket name requirements)"
SERVICE_SOURCE = (
    "https://cloud.google.com/service-usage/docs/reference/rest/v1/services (a service name such as "
    "storage.googleapis.com); pulumi-gcp 10.2 projects.ServiceIdentity service docstring"
)
LUSTRE_SOURCE = "https://cloud.google.com/managed-lustre/docs/transfer-data (Permissions for the Managed Lustre agent)"
PARALLELSTORE_SOURCE = "https://cloud.google.com/parallelstore/docs/transfer-data (Required permissions)"
#: The agents' addresses ("service-PROJECT_NUMBER@gcp-sa-lustre.iam.gserviceaccount.com" on the pages above) and
#: the bucket roles each page names (Managed Lustre: read to import, objectUser to export; Parallelstore: admin).
AGENT_ROLES: dict[str, tuple[tuple[str, ...], str]] = {
    "lustre": (("roles/storage.objectViewer", "roles/storage.objectUser"), LUSTRE_SOURCE),
    "parallelstore": (("roles/storage.admin",), PARALLELSTORE_SOURCE),
}
AGENT = re.compile(r"^serviceAccount:service-[0-9]{6,20}@gcp-sa-(lustre|parallelstore)\.iam\.gserviceaccount\.com$")
SERVICE = re.compile(r"^[a-z][a-z0-9-]*(\.[a-z0-9-]+)*\.googleapis\.com$")
_COMPONENT = re.compile(r"^[a-z0-9]([a-z0-9_-]*[a-z0-9])?$")

#: Input path -> source, per type (coverage.py counts these leaves checked).
CHECKED: dict[str, dict[str, str]] = {
    BUCKET_IAM: {"bucket": BUCKET_SOURCE, "role": IAM_SOURCE, "member": IAM_SOURCE},
    SERVICE_IDENTITY: {"service": SERVICE_SOURCE},
}


def bucket_name_problem(name: str) -> str | None:
    """Why Cloud Storage refuses ``name`` as a bucket name, or ``None`` (:data:`BUCKET_SOURCE`)."""
    if "/" in name or name.startswith("gs:"):
        return "a bucket name, not a URI or path (drop gs:// and anything after the bucket)"
    limit = 222 if "." in name else 63
    if not 3 <= len(name) <= limit:
        return f"3-{limit} characters ({'222 with dots' if '.' in name else '63 without dots'})"
    parts = name.split(".")
    if any(not _COMPONENT.match(p) or len(p) > 63 for p in parts):
        return (
            "lowercase letters, digits, '-', '_' and '.'; starting and ending with a letter or digit; each "
            "dot-separated part at most 63 characters"
        )
    if name.startswith("goog") or "google" in name or "g00gle" in name:
        return "cannot begin with 'goog' or contain 'google' (or close misspellings)"
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return None
    return "cannot be an IP address in dotted-decimal notation"


def datalink_rules(res: Resource) -> list[Violation]:
    """What Cloud Storage and IAM refuse in the link's grant, and a storage grant wider than the bucket."""
    out: list[Violation] = []
    if res.type == SERVICE_IDENTITY:
        svc = res.inputs.get("service")
        if not (isinstance(svc, str) and SERVICE.match(svc)):
            out.append(res.violation("service", svc, "a service name such as lustre.googleapis.com", SERVICE_SOURCE))
    if res.type == BUCKET_IAM:
        bucket, role, member = (res.inputs.get(k) for k in ("bucket", "role", "member"))
        why = bucket_name_problem(bucket) if isinstance(bucket, str) else "required: the bucket's name"
        if why is not None:
            out.append(res.violation("bucket", bucket, why, BUCKET_SOURCE))
        if not (isinstance(role, str) and re.fullmatch(IAM_ROLE, role)):
            out.append(res.violation("role", role, f"must match {IAM_ROLE}", IAM_SOURCE))
        if not (isinstance(member, str) and re.fullmatch(IAM_MEMBER, member)):
            out.append(res.violation("member", member, "must be a principal such as serviceAccount:EMAIL", IAM_SOURCE))
        agent = AGENT.match(member) if isinstance(member, str) else None
        if agent is not None:
            roles, source = AGENT_ROLES[agent.group(1)]
            if role not in roles:
                out.append(
                    res.violation(
                        "role", role, f"the {agent.group(1)} agent's bucket role is {' or '.join(roles)}", source
                    )
                )
    if res.type == PROJECT_IAM:
        member, role = res.inputs.get("member"), res.inputs.get("role")
        agent = AGENT.match(member) if isinstance(member, str) else None
        if agent is not None and isinstance(role, str) and role.startswith("roles/storage."):
            out.append(
                res.violation(
                    "role",
                    role,
                    f"a storage role for the {agent.group(1)} agent belongs on the linked bucket "
                    "(gcp.storage.BucketIAMMember), not on the whole project",
                    AGENT_ROLES[agent.group(1)][1],
                )
            )
    return out
