"""What the strict GCP cloud checks beyond the discovery documents, and what it waives (with the reason).

:func:`provision.clouds.gcp.strict.account` counts a leaf *checked* when the discovery document resolves it
(its type, enum, pattern, length, duration format and described limits apply) or a rule below names it,
*waived* when a reason below covers it, else *unchecked*. ``provision preview TARGET --strict-report``
prints the result. :func:`provider_rules` holds the rules of inputs that exist only in the provider
(pulumi-gcp / terraform-provider-google) or that Google documents outside the discovery documents.
"""

from __future__ import annotations

from typing import Any

from provision.clouds.gcp.strict import FILESTORE_SOURCE, LABEL_SOURCE, LUSTRE_SOURCE, PSA_SOURCE, model_paths
from provision.clouds.gcp.strict_datalink import CHECKED as DATALINK_CHECKED
from provision.clouds.gcp.strict_provider import (
    ACCOUNT_ID_SOURCE,
    CRON_SOURCE,
    IAM_SOURCE,
    JOB_SOURCE,
    KUBE_LABEL_SOURCE,
    METADATA_SOURCE,
    PROVIDER_ENUMS,
    ROLE_SOURCE,
    SA_SOURCE,
)
from provision.clouds.strict import Coverage, Leaf, Resource
from provision.clouds.strict import account as account_leaves

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
        "bootDisk.initializeParams.labels": LABEL_SOURCE,
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
    "gcp:projects/iAMCustomRole:IAMCustomRole": Coverage(
        checked={"roleId": ROLE_SOURCE, "title": ROLE_SOURCE, "permissions": ROLE_SOURCE}
    ),
    "gcp:cloudscheduler/job:Job": Coverage(
        checked={
            "name": JOB_SOURCE,
            "schedule": CRON_SOURCE,
            "timeZone": JOB_SOURCE,
            "attemptDeadline": JOB_SOURCE,
            "retryConfig.retryCount": JOB_SOURCE,
            "httpTarget.uri": JOB_SOURCE,
        },
        waived={"httpTarget.oauthToken.serviceAccountEmail": _REF},
    ),
    "gcp:compute/projectMetadataItem:ProjectMetadataItem": Coverage(
        checked={"key": METADATA_SOURCE, "value": METADATA_SOURCE}
    ),
    **{token: Coverage(checked=dict(paths)) for token, paths in DATALINK_CHECKED.items()},
}


def account(res: Resource, ctx: Any) -> list[Leaf]:
    """How every input leaf of one registration is accounted for."""
    return account_leaves(res, model_paths(res), COVERAGE.get(res.type), COMMON)
