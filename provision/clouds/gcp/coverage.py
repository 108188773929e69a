"""What the strict GCP cloud checks beyond the discovery documents, and what it waives (with the reason).

:func:`provision.clouds.gcp.strict.account` counts a leaf *checked* when the discovery document resolves it
(its type, enum, pattern, length, duration format and described limits apply) or a rule below names it,
*waived* when a reason below covers it, else *unchecked*. ``provision preview TARGET --strict-report``
prints the result. :func:`provider_rules` holds the rules of inputs that exist only in the provider
(pulumi-gcp / terraform-provider-google) or that Google documents outside the discovery documents.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from provision.clouds.gcp.strict import FILESTORE_SOURCE, LABEL_SOURCE, LUSTRE_SOURCE, PSA_SOURCE
from provision.clouds.strict import Coverage, Resource, Violation, check_enum, values_at

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
    if res.type == "gcp:serviceaccount/account:Account":
        for field, limit in SA_LIMITS.items():
            value = res.inputs.get(field)
            if isinstance(value, str) and len(value) > limit:
                out.append(res.violation(field, value, f"at most {limit} characters", SA_SOURCE))
    return out


_PROJECT = (
    "the provider's project (gcp:project config), not a value the program writes: the preflight checks the "
    "project exists and the APIs are enabled"
)
_PLACE = "the plan's region/zone, checked at plan time against the catalog's regions and zones (provision/catalog)"
_REF = "the name or id of a resource this program created (an output of the mocked cloud), not a value it writes"
_NO_DOC = (
    "the Managed Lustre API ships no discovery document (google-api-python-client); free text up to the API's "
    "limit is not modelled"
)

#: Every GCP type.
COMMON = Coverage(
    checked={
        "labels": LABEL_SOURCE,
        "disks[].labels": LABEL_SOURCE,
        "resourceLabels": LABEL_SOURCE,
        "nodeConfig.resourceLabels": LABEL_SOURCE,
        "metadata": METADATA_SOURCE,
        "nodeConfig.metadata": METADATA_SOURCE,
        "nodeConfig.labels": KUBE_LABEL_SOURCE,
    },
    waived={"project": _PROJECT, "region": _PLACE, "zone": _PLACE, "location": _PLACE},
)

COVERAGE: dict[str, Coverage] = {
    "gcp:lustre/instance:Instance": Coverage(
        checked={
            "capacityGib": LUSTRE_SOURCE,
            "perUnitStorageThroughput": LUSTRE_SOURCE,
            "filesystem": LUSTRE_SOURCE,
            "instanceId": "pulumi-gcp 10.2 lustre.Instance instance_id docstring",
        },
        waived={"network": _REF, "description": _NO_DOC},
    ),
    "gcp:filestore/instance:Instance": Coverage(checked={"fileShares.capacityGb": FILESTORE_SOURCE}),
    "gcp:parallelstore/instance:Instance": Coverage(
        checked={"instanceId": "pulumi-gcp 10.2 parallelstore.Instance instance_id docstring"}
    ),
    "gcp:compute/resizeRequest:ResizeRequest": Coverage(waived={"instanceGroupManager": _REF}),
    "gcp:container/cluster:Cluster": Coverage(
        checked={"networkingMode": PROVIDER_ENUMS[("gcp:container/cluster:Cluster", "networkingMode")][1]}
    ),
    "gcp:container/nodePool:NodePool": Coverage(waived={"cluster": _REF}),
    "gcp:compute/instanceGroupManager:InstanceGroupManager": Coverage(
        checked={
            "waitForInstancesStatus": PROVIDER_ENUMS[
                ("gcp:compute/instanceGroupManager:InstanceGroupManager", "waitForInstancesStatus")
            ][1]
        }
    ),
    "gcp:compute/routerNat:RouterNat": Coverage(waived={"router": _REF}),
    "gcp:projects/iAMMember:IAMMember": Coverage(checked={"role": IAM_SOURCE, "member": IAM_SOURCE}),
    "gcp:serviceaccount/iAMMember:IAMMember": Coverage(
        checked={"role": IAM_SOURCE, "member": IAM_SOURCE}, waived={"serviceAccountId": _REF}
    ),
    "gcp:serviceaccount/account:Account": Coverage(
        checked={"accountId": ACCOUNT_ID_SOURCE, "displayName": SA_SOURCE, "description": SA_SOURCE}
    ),
    "gcp:servicenetworking/connection:Connection": Coverage(checked={"deletionPolicy": PSA_SOURCE}),
}
