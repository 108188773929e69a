"""What the strict GCP cloud checks beyond the discovery documents, and what it waives (with the reason).

:func:`provision.clouds.gcp.strict.account` counts a leaf *checked* when the discovery document resolves it
(its enum, pattern, length and described limits apply) or a rule below names it, *waived* when a reason below
covers it, else *unchecked*. ``provision preview TARGET --strict-report`` prints the result.
"""

from __future__ import annotations

from provision.clouds.gcp.strict import FILESTORE_SOURCE, LABEL_SOURCE, LUSTRE_SOURCE
from provision.clouds.strict import Coverage

_PROJECT = (
    "the provider's project (gcp:project config), not a value the program writes: the preflight checks the "
    "project exists and the APIs are enabled"
)
_PLACE = "the plan's region/zone, checked at plan time against the catalog's regions and zones (provision/catalog)"

#: Every GCP type.
COMMON = Coverage(
    checked={"labels": LABEL_SOURCE, "disks[].labels": LABEL_SOURCE, "resourceLabels": LABEL_SOURCE},
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
    ),
    "gcp:filestore/instance:Instance": Coverage(checked={"fileShares.capacityGb": FILESTORE_SOURCE}),
}
