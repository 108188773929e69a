"""Strict Azure RBAC: the input rules of custom role definitions and role assignments.

Microsoft.Authorization resources carry no tags and no location; what ARM checks is their names
(GUIDs), their scopes (where a definition lives, where it may be assigned) and the permission
strings. The REST specs (azure-rest-api-specs ``specification/authorization``: RoleDefinition at
2022-05-01-preview, RoleAssignment at 2022-04-01, the versions pulumi-azure-native 3.x sends) type
most of these as plain strings, so the rules come from the properties' descriptions there and from
Microsoft's RBAC documentation (MicrosoftDocs/azure-docs ``articles/role-based-access-control``),
cited per rule. The principal type enum comes from the REST spec types like every other enum
(``strict.enum_rules``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from provision.clouds.strict import Resource, Violation, go_duration_seconds

if TYPE_CHECKING:
    from provision.clouds.mocking import MockContext

ROLE_DEFINITION = "azure-native:authorization:RoleDefinition"
ROLE_ASSIGNMENT = "azure-native:authorization:RoleAssignment"

_DOCS = "MicrosoftDocs/azure-docs articles/role-based-access-control/"
CUSTOM_ROLES = _DOCS + "custom-roles.md"
CUSTOM_ROLES_REST = _DOCS + "custom-roles-rest.md"
ROLE_DEFINITIONS = _DOCS + "role-definitions.md"
SPEC = "azure-rest-api-specs specification/authorization"

GUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
#: Scopes a role can be defined or assigned at: a management group, a subscription, a resource
#: group or a resource below it (role-definitions.md "AssignableScopes"; resource group names:
#: 1-90 of letters, digits, _ ( ) - . per the naming rules).
_MANAGEMENT_GROUP = r"/providers/Microsoft\.Management/managementGroups/[^/]+"
_SUBSCRIPTION = rf"/subscriptions/{GUID}(?:/resourceGroups/[-\w.()]{{1,90}})?(?:/providers/[^/]+(?:/[^/]+)+)?"
SCOPE = re.compile(rf"(?:{_MANAGEMENT_GROUP}|{_SUBSCRIPTION})", re.IGNORECASE)
#: A role definition id as a role assignment takes it: ``{scope}/providers/Microsoft.Authorization/
#: roleDefinitions/{guid}``, the scope empty for tenant-wide built-in roles.
ROLE_DEFINITION_ID = re.compile(
    rf"(?:{_MANAGEMENT_GROUP}|{_SUBSCRIPTION})?/providers/Microsoft\.Authorization/roleDefinitions/{GUID}",
    re.IGNORECASE,
)
#: Permission strings: ``{Company}.{ProviderName}/{resourceType}/{action}``, ``*`` wildcards allowed
#: in any part, or ``*`` alone (role-definitions.md "Actions format"; resource-provider-operations.md).
PERMISSION = re.compile(r"\*|(?:\*|[A-Za-z][A-Za-z0-9]*(?:\.[A-Za-z0-9]+)+)(?:/[A-Za-z0-9_.*-]+)+")
PERMISSION_KEYS = ("actions", "notActions", "dataActions", "notDataActions")
ROLE_NAME_MAX = 512
DESCRIPTION_MAX = 2048
#: A role assignment that uses a custom role created in the same deployment must wait for the definition to reach
#: Azure Resource Manager: a ``time:index/sleep:Sleep`` of at least this long that depends on the definition.
ROLE_PROPAGATION_S = 600.0
ROLE_PROPAGATION_SOURCE = (
    f'{_DOCS}troubleshooting.md ("Role assignment changes are not being detected": Azure Resource Manager caches, '
    '"it can take up to 10 minutes for changes to take effect"); a new definition is "yet to complete replication" '
    "(RoleDefinitionDoesNotExist: Azure/terraform-azurerm-caf-enterprise-scale wiki, Troubleshooting; "
    "hashicorp/terraform-provider-azurerm#19916)"
)
SLEEP = "time:index/sleep:Sleep"


def _is(pattern: str | re.Pattern[str], value: Any) -> bool:
    return isinstance(value, str) and re.fullmatch(pattern, value) is not None


def _within(scope: str, parent: str) -> bool:
    """``scope`` is ``parent`` or below it (resource ids compare without case, by path segment)."""
    s, p = scope.lower().rstrip("/"), parent.lower().rstrip("/")
    return s == p or s.startswith(p + "/")


def _pattern_rule(res: Resource, key: str, pattern: str | re.Pattern[str], rule: str, source: str) -> list[Violation]:
    """A violation when input ``key`` is a string that does not match ``pattern`` (whole value)."""
    value = res.inputs.get(key)
    if not isinstance(value, str) or _is(pattern, value):
        return []
    return [res.violation(key, value, rule, source)]


def _scope_rule(res: Resource, path: str, value: Any, source: str) -> list[Violation]:
    if not isinstance(value, str) or _is(SCOPE, value):
        return []
    rule = (
        "a management group (/providers/Microsoft.Management/managementGroups/{id}), subscription "
        "(/subscriptions/{guid}), resource group or resource id"
    )
    return [res.violation(path, value, rule, source)]


def role_definition_rules(res: Resource) -> list[Violation]:
    inputs = res.inputs
    out: list[Violation] = []
    out += _pattern_rule(
        res,
        "roleDefinitionId",
        GUID,
        "a GUID (the custom role's unique id)",
        f'{CUSTOM_ROLES_REST}: "Replace {{roleDefinitionId}} with the GUID identifier of the custom role"',
    )
    name = inputs.get("roleName")
    if not isinstance(name, str) or not 1 <= len(name) <= ROLE_NAME_MAX:
        out.append(
            res.violation(
                "roleName",
                name,
                f"required; 1-{ROLE_NAME_MAX} characters",
                f"{CUSTOM_ROLES} (Name/roleName: required, maximum {ROLE_NAME_MAX} characters)",
            )
        )
    description = inputs.get("description")
    if isinstance(description, str) and len(description) > DESCRIPTION_MAX:
        out.append(
            res.violation(
                "description",
                description,
                f"at most {DESCRIPTION_MAX} characters",
                f"{CUSTOM_ROLES} (Description: maximum {DESCRIPTION_MAX} characters)",
            )
        )
    role_type = inputs.get("roleType")
    if role_type is not None and role_type != "CustomRole":
        out.append(
            res.violation(
                "roleType",
                role_type,
                "CustomRole (built-in roles are Microsoft's)",
                f"{CUSTOM_ROLES} (IsCustom/roleType: CustomRole for custom roles)",
            )
        )
    out += _assignable_scope_rules(res)
    out += _permission_rules(res)
    return out


def _assignable_scope_rules(res: Resource) -> list[Violation]:
    scopes = res.inputs.get("assignableScopes")
    src = f"{CUSTOM_ROLES} (AssignableScopes: required; custom role limits)"
    if not isinstance(scopes, list) or not scopes:
        return [res.violation("assignableScopes", scopes, "required: at least one scope", src)]
    out: list[Violation] = []
    for i, scope in enumerate(scopes):
        if scope == "/":
            out.append(
                res.violation(f"assignableScopes[{i}]", scope, "custom roles cannot use the root scope '/'", src)
            )
        else:
            out += _scope_rule(res, f"assignableScopes[{i}]", scope, src)
    groups = [s for s in scopes if isinstance(s, str) and re.fullmatch(_MANAGEMENT_GROUP, s, re.IGNORECASE)]
    if len(groups) > 1:
        out.append(res.violation("assignableScopes", scopes, "at most one management group", src))
    data = any((p or {}).get("dataActions") for p in res.inputs.get("permissions") or [] if isinstance(p, Mapping))
    if groups and data:
        out.append(
            res.violation(
                "assignableScopes", scopes, "a role with dataActions cannot be assignable at a management group", src
            )
        )
    scope, first = res.inputs.get("scope"), scopes[0]
    if isinstance(scope, str) and isinstance(first, str) and not _within(first, scope):
        out.append(
            res.violation(
                "scope",
                scope,
                f"the first assignable scope ({first}) or a scope above it: a custom role is created at its "
                "first assignable scope and kept at the subscription or management group above it",
                f'{CUSTOM_ROLES_REST}: "Within the URI, replace {{scope}} with the first assignableScopes of the '
                f'custom role"; {CUSTOM_ROLES} ("a role definition is a management group or subscription-level '
                'resource")',
            )
        )
    return out


def _permission_rules(res: Resource) -> list[Violation]:
    permissions = res.inputs.get("permissions")
    src = f"{ROLE_DEFINITIONS} (Actions format: {{Company}}.{{ProviderName}}/{{resourceType}}/{{action}})"
    if not isinstance(permissions, list) or not any(
        isinstance(p, Mapping) and (p.get("actions") or p.get("dataActions")) for p in permissions
    ):
        return [
            res.violation(
                "permissions",
                permissions,
                "at least one action or data action",
                f"{CUSTOM_ROLES} (Actions: required)",
            )
        ]
    out = []
    for i, perm in enumerate(permissions):
        if not isinstance(perm, Mapping):
            continue
        for key in PERMISSION_KEYS:
            for j, action in enumerate(perm.get(key) or []):
                if isinstance(action, str) and not _is(PERMISSION, action):
                    out.append(
                        res.violation(
                            f"permissions[{i}].{key}[{j}]",
                            action,
                            "{Company}.{ProviderName}/{resourceType}/{action} with optional * wildcards, e.g. "
                            "Microsoft.Compute/virtualMachines/read or */delete",
                            src,
                        )
                    )
    return out


def role_assignment_rules(res: Resource, ctx: MockContext) -> list[Violation]:
    inputs = res.inputs
    out: list[Violation] = []
    out += _pattern_rule(
        res,
        "roleAssignmentName",
        GUID,
        "a GUID",
        f'{SPEC} RoleAssignment.name: "The name of the role assignment. It can be any valid GUID."',
    )
    out += _pattern_rule(
        res,
        "principalId",
        GUID,
        "a GUID: the object id of the user, group or service principal (not its name or client id)",
        f'{_DOCS}role-assignments-template.md "Get object IDs": "The ID has the format: '
        '`11111111-1111-1111-1111-111111111111`"',
    )
    out += _pattern_rule(
        res,
        "roleDefinitionId",
        ROLE_DEFINITION_ID,
        "{scope}/providers/Microsoft.Authorization/roleDefinitions/{guid} (the definition's resource id, not its name)",
        f"{_DOCS}role-assignments-template.md (roleDefinitionId: /subscriptions/{{id}}/providers/"
        "Microsoft.Authorization/roleDefinitions/{guid})",
    )
    definition = inputs.get("roleDefinitionId")
    version = inputs.get("conditionVersion")
    if version is not None and version != "2.0":
        out.append(
            res.violation(
                "conditionVersion",
                version,
                "2.0",
                f"{SPEC} RoleAssignment.conditionVersion: \"Currently the only accepted value is '2.0'\"",
            )
        )
    if inputs.get("condition") and version is None:
        out.append(
            res.violation(
                "conditionVersion",
                None,
                "required with a condition: 2.0",
                f"{SPEC} RoleAssignment.conditionVersion: \"Currently the only accepted value is '2.0'\"",
            )
        )
    scope = inputs.get("scope")
    out += _scope_rule(res, "scope", scope, f"{ROLE_DEFINITIONS} (AssignableScopes)")
    assignable = _assignable_scopes_of(ctx, definition)
    if isinstance(scope, str) and assignable is not None and not any(_within(scope, a) for a in assignable):
        out.append(
            res.violation(
                "scope",
                scope,
                f"inside one of the role's assignable scopes ({', '.join(assignable)})",
                f'{ROLE_DEFINITIONS}: "The AssignableScopes property specifies the scopes ... where a role '
                'definition can be assigned"',
            )
        )
    out += _propagation_rules(res, ctx)
    return out


def _propagation_rules(res: Resource, ctx: MockContext) -> list[Violation]:
    """An assignment of a custom role this program creates waits :data:`ROLE_PROPAGATION_S` after it."""
    definition = res.inputs.get("roleDefinitionId")
    if not isinstance(definition, str) or not res.urn:
        return []
    created = [r for r in ctx.ledger if r.type == ROLE_DEFINITION and str(r.id).lower() == definition.lower()]
    if not created:
        return []
    ancestors = ctx.ancestors(res.urn, res.dependencies)
    waits = [
        r
        for r in ctx.ledger
        if r.type == SLEEP
        and r.urn in ancestors
        and (go_duration_seconds(str(r.inputs.get("createDuration") or "")) or 0.0) >= ROLE_PROPAGATION_S
        and created[0].urn in ctx.ancestors(r.urn)
    ]
    if waits:
        return []
    return [
        res.violation(
            "roleDefinitionId",
            definition,
            f"the custom role is created in this deployment: wait at least {ROLE_PROPAGATION_S:g}s for it to "
            "replicate (a time.Sleep that depends on the definition) before assigning it",
            ROLE_PROPAGATION_SOURCE,
        )
    ]


def _assignable_scopes_of(ctx: MockContext, definition: Any) -> list[str] | None:
    """The assignable scopes of the custom role ``definition`` names, when this program created it."""
    if not isinstance(definition, str):
        return None
    for r in ctx.ledger:
        if r.type == ROLE_DEFINITION and str(r.id).lower() == definition.lower():
            scopes = r.inputs.get("assignableScopes")
            return [str(s) for s in scopes] if isinstance(scopes, list) else None
    return None


def check(res: Resource, ctx: MockContext) -> list[Violation]:
    """The RBAC rules for one registration (nothing for other types)."""
    if res.type == ROLE_DEFINITION:
        return role_definition_rules(res)
    if res.type == ROLE_ASSIGNMENT:
        return role_assignment_rules(res, ctx)
    return []
