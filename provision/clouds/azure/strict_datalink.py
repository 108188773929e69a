"""The strict Azure cloud's rule for the Blob link of Managed Lustre (HSM): the grant before the file system.

"You must add these roles before you create your Azure Managed Lustre file system. If the file system can't
access your blob container, file system creation fails" (:data:`SOURCE`): an ``AmlFilesystem`` with HSM settings
must depend on role assignments of Storage Account Contributor and Storage Blob Data Contributor whose scope is
the data container's storage account. provision grants them on that account only: an assignment at the account's
resource group or subscription (which Azure would also honour) is refused here, because it reaches every other
account there.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from provision.clouds.strict import Resource, Violation

if TYPE_CHECKING:
    from provision.clouds.mocking import MockContext

AMLFS = "azure-native:storagecache:AmlFilesystem"
ROLE_ASSIGNMENT = "azure-native:authorization:RoleAssignment"
SOURCE = (
    "https://learn.microsoft.com/azure/azure-managed-lustre/amlfs-prerequisites#access-roles-for-blob-integration "
    "(roles for the 'HPC Cache Resource Provider' service principal on the storage account)"
)
#: Built-in role ids (https://learn.microsoft.com/azure/role-based-access-control/built-in-roles).
ROLES = {
    "17d1049b-9a84-46fb-8f53-869881c3d3ab": "Storage Account Contributor",
    "ba92f5b4-2d11-453d-a403-e96b0029c9fe": "Storage Blob Data Contributor",
}
_ACCOUNT = re.compile(
    r"^(/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.Storage/storageAccounts/[^/]+)/"
)


def _role(assignment_inputs: Mapping[str, object]) -> str | None:
    rid = assignment_inputs.get("roleDefinitionId")
    return rid.rsplit("/", 1)[-1].lower() if isinstance(rid, str) else None


def hsm_grant_rules(res: Resource, ctx: MockContext) -> list[Violation]:
    """An HSM-linked ``AmlFilesystem`` needs both roles on its account, created before it (module docs)."""
    out: list[Violation] = []
    if res.type == ROLE_ASSIGNMENT and _role(res.inputs) in ROLES:
        scope = res.inputs.get("scope")
        if isinstance(scope, str) and "/providers/microsoft.storage/storageaccounts/" not in scope.lower():
            out.append(
                res.violation(
                    "scope",
                    scope,
                    f"{ROLES[_role(res.inputs) or '']} for the blob link is granted on the storage account itself, "
                    "not on its resource group or subscription",
                    SOURCE,
                )
            )
    if res.type != AMLFS:
        return out
    hsm = res.inputs.get("hsm")
    settings = hsm.get("settings") if isinstance(hsm, Mapping) else None
    container = settings.get("container") if isinstance(settings, Mapping) else None
    match = _ACCOUNT.match(container) if isinstance(container, str) else None
    if match is None:
        return out
    account = match.group(1).lower()
    before = {r.urn for r in ctx.find(ROLE_ASSIGNMENT)} & set(res.dependencies)
    held = {
        _role(r.inputs)
        for r in ctx.find(ROLE_ASSIGNMENT)
        if r.urn in before and str(r.inputs.get("scope", "")).lower().rstrip("/") == account
    }
    missing = [name for rid, name in ROLES.items() if rid not in held]
    if missing:
        out.append(
            res.violation(
                "hsm.settings.container",
                container,
                f"the file system must depend on {' and '.join(missing)} for the 'HPC Cache Resource Provider' "
                f"on storage account {match.group(1)}: creation fails when it cannot reach the container",
                SOURCE,
            )
        )
    return out
