"""What the strict AWS cloud checks beyond botocore's model, and what it waives (with the reason).

:func:`provision.clouds.aws.strict.account` counts a leaf *checked* when botocore's model resolves it (its
enum, length, pattern and range rules apply) or a rule below names it, *waived* when a reason below covers
it, else *unchecked*. ``provision preview TARGET --strict-report`` prints the result; the suite fails on an
unchecked leaf of a shipped stack.
"""

from __future__ import annotations

from typing import Any

from provision.clouds.aws.strict import model_paths
from provision.clouds.strict import Coverage, Leaf, Resource
from provision.clouds.strict import account as account_leaves

_TAGS = "botocore ec2 Tag.Key/Tag.Value documentation (tag_rules in provision/clouds/aws/strict.py)"

#: Every AWS type.
COMMON = Coverage(
    checked={"tags": _TAGS, "tagSpecifications[].tags": _TAGS, "volumeTags": _TAGS},
    waived={
        "region": "the provider's region, not an API input: the plan checks it against the catalog's regions",
    },
)

COVERAGE: dict[str, Coverage] = {
    # clouds/aws/volumelink.py: the provider accepts the peering it requested (no API member of the request).
    "aws:ec2/vpcPeeringConnection:VpcPeeringConnection": Coverage(
        checked={"autoAccept": "peering_rules in provision/clouds/aws/strict.py (same account and region only)"}
    ),
}


def account(res: Resource, ctx: Any) -> list[Leaf]:
    """How every input leaf of one registration is accounted for ."""
    return account_leaves(res, model_paths(res), COVERAGE.get(res.type), COMMON)
