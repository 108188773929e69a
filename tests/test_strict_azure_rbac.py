"""Strict mocked Azure: custom role definitions and role assignments are refused as ARM refuses them."""

from __future__ import annotations

from typing import Any

import pytest
from pulumi_azure_native import authorization
from strict_helpers import one, run, violations_of

from provision.clouds.azure import strict_rbac
from provision.clouds.mocking import StrictViolationError

SUB = "/subscriptions/11111111-2222-4333-8444-555555555555"
RG = f"{SUB}/resourceGroups/llm-train"
OTHER_RG = f"{SUB}/resourceGroups/someone-else"
DEF_GUID = "6f1c3a52-0b7e-5d0a-9a51-2b0c8e1f4d11"
ASSIGN_GUID = "0d4a2c9e-8f61-5b3a-a0c7-7e9b1d2f3a44"
PRINCIPAL = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
MG = "/providers/Microsoft.Management/managementGroups/research"


def definition(**changes: Any) -> dict[str, Any]:
    """The inputs of a valid custom role, as the Azure components send them, with ``changes``."""
    inputs = {
        "scope": SUB,
        "roleDefinitionId": DEF_GUID,
        "roleName": "provision-expiry-llm-train",
        "description": "lets the nodes delete the cluster's resource group",
        "roleType": "CustomRole",
        "assignableScopes": [RG],
        "permissions": [{"actions": ["*/delete"]}],
    }
    return {**inputs, **changes}


def assignment(**changes: Any) -> dict[str, Any]:
    inputs = {
        "scope": RG,
        "roleAssignmentName": ASSIGN_GUID,
        "principalId": PRINCIPAL,
        "principalType": "ServicePrincipal",
        "roleDefinitionId": f"{SUB}/providers/Microsoft.Authorization/roleDefinitions/{DEF_GUID}",
    }
    return {**inputs, **changes}


@pytest.mark.parametrize(
    ("changes", "field", "says"),
    [
        ({"roleDefinitionId": "expiry-role"}, "roleDefinitionId", "GUID"),
        ({"roleName": "r" * 513}, "roleName", "1-512"),
        ({"roleType": "BuiltInRole"}, "roleType", "CustomRole"),
        ({"description": "d" * 2049}, "description", "2048"),
        ({"assignableScopes": []}, "assignableScopes", "at least one"),
        ({"assignableScopes": ["/"], "scope": "/"}, "assignableScopes[0]", "root scope"),
        ({"assignableScopes": ["resourceGroups/llm-train"]}, "assignableScopes[0]", "resource group"),
        ({"assignableScopes": [MG, MG + "2"], "scope": MG}, "assignableScopes", "one management group"),
        (
            {"assignableScopes": [MG], "scope": MG, "permissions": [{"actions": ["*/read"], "dataActions": ["*"]}]},
            "assignableScopes",
            "dataActions",
        ),
        ({"scope": "/subscriptions/99999999-2222-4333-8444-555555555555"}, "scope", "first assignable scope"),
        ({"scope": OTHER_RG}, "scope", "first assignable scope"),
        ({"permissions": [{"actions": ["delete"]}]}, "permissions[0].actions[0]", "{Company}.{ProviderName}"),
        (
            {"permissions": [{"actions": ["*/read"], "notActions": ["Microsoft.Compute virtualMachines/delete"]}]},
            "permissions[0].notActions[0]",
            "{Company}.{ProviderName}",
        ),
        ({"permissions": [{"notActions": ["*/write"]}]}, "permissions", "at least one action"),
    ],
)
def test_a_bad_custom_role_is_refused_with_its_rule_and_source(changes: dict, field: str, says: str) -> None:
    v = one(violations_of(strict_rbac.ROLE_DEFINITION, "x-expiry-role", definition(**changes)), field)
    assert says in v.rule
    assert "role-based-access-control" in v.source


@pytest.mark.parametrize(
    ("changes", "field", "says"),
    [
        ({"roleAssignmentName": "expiry-assignment"}, "roleAssignmentName", "GUID"),
        ({"principalType": "ManagedIdentity"}, "principalType", "ServicePrincipal"),
        ({"principalId": "llm-train-identity"}, "principalId", "object id"),
        ({"roleDefinitionId": DEF_GUID}, "roleDefinitionId", "roleDefinitions/{guid}"),
        (
            {"roleDefinitionId": f"{SUB}/providers/Microsoft.Authorization/roleDefinitions/expiry"},
            "roleDefinitionId",
            "{guid}",
        ),
        ({"conditionVersion": "1.0"}, "conditionVersion", "2.0"),
        ({"condition": "@Resource[x] StringEquals 'y'"}, "conditionVersion", "required"),
        ({"scope": "llm-train"}, "scope", "resource group"),
    ],
)
def test_a_bad_role_assignment_is_refused_with_its_rule(changes: dict, field: str, says: str) -> None:
    v = one(violations_of(strict_rbac.ROLE_ASSIGNMENT, "x-expiry-assignment", assignment(**changes)), field)
    assert says in v.rule


def _role_program(assign_at: str, wait: str | None = "10m", wait_on_role: bool = True) -> None:
    """A custom role assignable in RG, and an assignment of it at ``assign_at`` (as the components do), after a
    ``wait`` (a pulumi-time Sleep; ``None``: none) that depends on the role unless ``wait_on_role`` is false."""
    import pulumi
    import pulumiverse_time

    role = authorization.RoleDefinition(
        "t-role",
        scope=SUB,
        role_definition_id=DEF_GUID,
        role_name="provision-expiry-t",
        role_type="CustomRole",
        assignable_scopes=[RG],
        permissions=[authorization.PermissionArgs(actions=["*/delete"])],
    )
    deps: list[pulumi.Resource] = []
    if wait is not None:
        sleep_opts = pulumi.ResourceOptions(depends_on=[role] if wait_on_role else [])
        deps.append(pulumiverse_time.Sleep("t-wait", create_duration=wait, opts=sleep_opts))
    authorization.RoleAssignment(
        "t-assignment",
        role_assignment_name=ASSIGN_GUID,
        principal_id=PRINCIPAL,
        principal_type=authorization.PrincipalType.SERVICE_PRINCIPAL,
        role_definition_id=role.id,
        scope=assign_at,
        opts=pulumi.ResourceOptions(depends_on=deps),
    )


def test_a_role_assigned_outside_its_assignable_scopes_is_refused() -> None:
    with pytest.raises(StrictViolationError) as err:
        run(lambda: _role_program(OTHER_RG), region="eastus")
    v = one(err.value.violations, "scope")
    assert RG in v.rule and "assignable scopes" in v.rule


def test_a_role_assigned_inside_its_assignable_scopes_passes() -> None:
    mocks = run(lambda: _role_program(RG + "/providers/Microsoft.Compute/virtualMachineScaleSets/x"), region="eastus")
    assert {r.type for r in mocks.ledger} == {
        strict_rbac.ROLE_DEFINITION,
        strict_rbac.ROLE_ASSIGNMENT,
        strict_rbac.SLEEP,
    }


@pytest.mark.parametrize(
    ("wait", "wait_on_role"), [(None, True), ("2m", True), ("10m", False)], ids=["none", "short", "unrelated"]
)
def test_a_new_custom_role_is_assigned_only_after_it_replicates(wait: str | None, wait_on_role: bool) -> None:
    with pytest.raises(StrictViolationError) as err:
        run(lambda: _role_program(RG, wait, wait_on_role), region="eastus")
    v = one(err.value.violations, "roleDefinitionId")
    assert "600s" in v.rule and "troubleshooting.md" in v.source


def test_a_built_in_role_needs_no_wait() -> None:
    def program() -> None:
        reader = f"{SUB}/providers/Microsoft.Authorization/roleDefinitions/acdd72a7-3385-48ef-bd42-f606fba81ae7"
        authorization.RoleAssignment(
            "t-reader",
            role_assignment_name=ASSIGN_GUID,
            principal_id=PRINCIPAL,
            principal_type=authorization.PrincipalType.SERVICE_PRINCIPAL,
            role_definition_id=reader,
            scope=RG,
        )

    assert [r.type for r in run(program, region="eastus").ledger] == [strict_rbac.ROLE_ASSIGNMENT]
