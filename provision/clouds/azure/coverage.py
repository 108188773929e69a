"""What the strict Azure cloud checks beyond pulumi-azure-native's generated schema, and what it waives.

:func:`provision.clouds.azure.strict.account` counts a leaf *checked* when it maps onto a property of the
resource's pulumi-azure-native Args class (generated from azure-rest-api-specs: the property exists, enums
are checked) or a rule below names it (the naming rules of :data:`provision.clouds.azure.strict.NAMES`),
*waived* when a reason below covers it, else *unchecked*.
"""

from __future__ import annotations

from typing import Any

from provision.clouds.azure.strict import NAMES, model_paths
from provision.clouds.strict import Coverage, Leaf, Resource
from provision.clouds.strict import account as account_leaves

_REF = (
    "the name of a resource this program created (the resource group, the parent network), checked by that "
    "resource's own naming rule when it registered"
)

#: Every Azure type: a path parameter naming the resource group or the parent is a reference.
COMMON = Coverage(waived={"resourceGroupName": _REF, "virtualNetworkName": _REF})

#: Each type's own name input: checked by Microsoft's naming rule for it.
COVERAGE: dict[str, Coverage] = {
    type_token: Coverage(checked={key: rule.source}) for type_token, (key, rule) in NAMES.items()
}


def account(res: Resource, ctx: Any) -> list[Leaf]:
    """How every input leaf of one registration is accounted for."""
    return account_leaves(res, model_paths(res), COVERAGE.get(res.type), COMMON)
