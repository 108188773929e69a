"""Azure's cloud-side lifetime: a delete-only role scoped to the cluster's group and a timer on every node."""

from __future__ import annotations

import base64
import io
import json
import urllib.error
import urllib.request
from typing import Any

import pytest
from conftest import preview as run_at_fixed_clock
from test_azure_plan import azure_spec

from provision.clouds.azure.expiry import ROLE_ACTIONS, role_guid, role_name
from provision.ops.ephemeral import require_bounds
from provision.planning.bootstrap import parse
from provision.spec import load_spec
from provision.spec.errors import BudgetError
from provision.testing import PreviewResult

ROLE_DEF = "azure-native:authorization:RoleDefinition"
ROLE_ASSIGN = "azure-native:authorization:RoleAssignment"


def preview(**overrides: Any) -> PreviewResult:
    return run_at_fixed_clock(load_spec(azure_spec(**overrides)), stack="expiry-test")


def _one(result: PreviewResult, typ: str) -> Any:
    # The expiry role's resources (the nodes' Reader role on the filesystem is fslookup.py's, not the timer's).
    found = [r for r in result.resources if r.type == typ and not r.name.endswith("-fs-reader")]
    assert len(found) == 1, [r.name for r in found]
    return found[0]


def _files(result: PreviewResult) -> dict[str, str]:
    """The files the nodes' cloud-config writes, by path."""
    vmss = _one(result, "azure-native:compute:VirtualMachineScaleSet")
    doc = parse(base64.b64decode(vmss.inputs["virtualMachineProfile"]["osProfile"]["customData"]).decode())
    return {f["path"]: f["content"] for f in doc["write_files"]}


def _script(result: PreviewResult) -> str:
    """Every file the nodes get, as one text (units, scripts, steps)."""
    return "\n".join(_files(result).values())


@pytest.fixture(scope="module")
def bounded() -> PreviewResult:
    return preview(lifetime={"ttl": "6h"})


def test_a_lifetime_gives_the_identity_a_delete_only_role_scoped_to_the_cluster_group(bounded: PreviewResult) -> None:
    rg = _one(bounded, "azure-native:resources:ResourceGroup")
    identity = _one(bounded, "azure-native:managedidentity:UserAssignedIdentity")
    definition, assignment = _one(bounded, ROLE_DEF), _one(bounded, ROLE_ASSIGN)
    scope = assignment.inputs["scope"]
    assert scope.endswith(f"/resourceGroups/{rg.inputs['resourceGroupName']}")
    assert definition.inputs["assignableScopes"] == [scope]  # assignable nowhere else
    assert definition.inputs["scope"] == "/".join(scope.split("/")[:3])  # custom roles live at the subscription
    assert definition.inputs["permissions"] == [{"actions": list(ROLE_ACTIONS)}]
    assert ROLE_ACTIONS == ("Microsoft.Compute/virtualMachineScaleSets/delete",)  # not */delete: no data deletion
    assert assignment.inputs["principalId"] == identity.outputs["principalId"]
    assert assignment.inputs["principalType"] == "ServicePrincipal"
    rg_id = scope  # the group id
    assert assignment.inputs["roleDefinitionId"].endswith("/roleDefinitions/" + role_guid(rg_id, "definition"))
    assert definition.inputs["roleName"] == role_name("az-test", rg_id)
    assert assignment.inputs["roleAssignmentName"] == role_guid(rg_id, "assignment")


SUB_A = "/subscriptions/00000000-0000-4000-8000-00000000000a/resourceGroups/az-test-rg"
SUB_B = "/subscriptions/00000000-0000-4000-8000-00000000000b/resourceGroups/az-test-rg"


def test_role_ids_and_name_are_unique_per_subscription_in_a_tenant_and_stable() -> None:
    # Custom role names and ids are unique per Entra tenant: the same stack in two subscriptions must differ.
    for kind in ("definition", "assignment"):
        assert role_guid(SUB_A, kind) == role_guid(SUB_A.upper(), kind)  # ARM ids are case-insensitive
        assert role_guid(SUB_A, kind) != role_guid(SUB_B, kind)
    assert role_guid(SUB_A, "definition") != role_guid(SUB_A, "assignment")
    assert role_name("az-test", SUB_A) != role_name("az-test", SUB_B)
    assert role_name("az-test", SUB_A).startswith("provision-expiry-az-test-")


def test_every_node_gets_a_persistent_timer_at_the_expiry(bounded: PreviewResult) -> None:
    script = _script(bounded)
    stamp = bounded.plan.expires_at.strftime("%Y-%m-%d %H:%M:%S UTC")  # type: ignore[union-attr]
    assert f"OnCalendar={stamp}" in script and "Persistent=true" in script
    assert "systemctl enable --now provision-expiry.timer" in script  # the lifetime step arms it
    assert "userAssignedIdentities/az-test-identity" in _files(bounded)["/usr/local/lib/provision/expire.py"]
    assert bounded.plan.lifetime_enforced_by and "resource group" in bounded.plan.lifetime_enforced_by
    assert not any("keeps billing" in w for w in bounded.plan.warnings)


def test_the_expiry_script_is_valid_python(bounded: PreviewResult) -> None:
    compile(_files(bounded)["/usr/local/lib/provision/expire.py"], "expire.py", "exec")


class _Response(io.BytesIO):
    status = 202

    def __enter__(self) -> _Response:
        return self

    def __exit__(self, *a: Any) -> None:
        self.close()


def _run_expiry(bounded: PreviewResult, monkeypatch: pytest.MonkeyPatch, delete_status: int) -> tuple[int, list[Any]]:
    seen: list[Any] = []

    def urlopen(req: urllib.request.Request, timeout: float = 0) -> _Response:
        seen.append(req)
        url = req.full_url
        if "/metadata/instance/compute" in url:
            meta = {"subscriptionId": "sub-1", "resourceGroupName": "az-test-rg", "vmScaleSetName": "az-test-vmss"}
            return _Response(json.dumps(meta).encode())
        if "/metadata/identity/oauth2/token" in url:
            return _Response(json.dumps({"access_token": "tok-123"}).encode())
        if delete_status >= 400:
            raise urllib.error.HTTPError(url, delete_status, "x", {}, io.BytesIO(b"boom"))  # type: ignore[arg-type]
        return _Response(b"")

    monkeypatch.setattr(urllib.request, "urlopen", urlopen)
    code = 0
    try:
        source = _files(bounded)["/usr/local/lib/provision/expire.py"]
        exec(compile(source, "expire.py", "exec"), {"__name__": "__main__"})
    except SystemExit as e:
        code = int(e.code or 0)
    return code, seen


def test_the_timer_deletes_its_own_scale_set_with_the_identity_token(
    bounded: PreviewResult, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, seen = _run_expiry(bounded, monkeypatch, 202)
    assert code == 0
    meta, token, delete = seen
    assert all(r.headers.get("Metadata") == "true" for r in (meta, token))
    assert "msi_res_id=/subscriptions/sub-1/resourceGroups/az-test-rg/providers/" in token.full_url
    assert delete.get_method() == "DELETE"
    assert delete.full_url.startswith(
        "https://management.azure.com/subscriptions/sub-1/resourceGroups/az-test-rg/providers/Microsoft.Compute/"
        "virtualMachineScaleSets/az-test-vmss?forceDeletion=true&"
    )
    assert delete.headers["Authorization"] == "Bearer tok-123"


def test_a_scale_set_already_gone_is_success_and_other_errors_retry(
    bounded: PreviewResult, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _run_expiry(bounded, monkeypatch, 404)[0] == 0
    assert _run_expiry(bounded, monkeypatch, 500)[0] == 1  # systemd's Restart=on-failure tries again
    assert "Restart=on-failure" in _script(bounded)


def test_opting_out_leaves_no_role_no_timer_a_warning_and_no_ephemeral_cluster() -> None:
    result = preview(lifetime={"ttl": "6h"}, azure={"delete_at_expiry": False})
    assert not [r for r in result.resources if r.type in (ROLE_DEF, ROLE_ASSIGN) and not r.name.endswith("-fs-reader")]
    assert "provision-expiry.timer" not in _script(result)
    assert result.plan.lifetime_enforced_by is None
    assert any("delete_at_expiry is false" in w for w in result.plan.warnings)
    capped = preview(lifetime={"ttl": "2h", "max_cost_usd": 100000}, azure={"delete_at_expiry": False}).plan
    with pytest.raises(BudgetError) as err:
        require_bounds(capped)
    assert "azure.delete_at_expiry" in str(err.value)


def test_no_lifetime_no_role() -> None:
    result = preview()
    assert result.plan.expires_at is None
    assert not [r for r in result.resources if r.type in (ROLE_DEF, ROLE_ASSIGN) and not r.name.endswith("-fs-reader")]
    assert "provision-expiry.timer" not in _script(result)


def test_the_metadata_service_answers_root_only_on_nodes_with_the_identity(bounded: PreviewResult) -> None:
    unit = _files(bounded)["/etc/systemd/system/provision-imds-root.service"]
    assert "-d 169.254.169.254 -m owner ! --uid-owner 0 -j REJECT" in unit  # host processes but root
    assert "-I DOCKER-USER -d 169.254.169.254 -j REJECT" in unit  # containers
    timer = _files(bounded)["/etc/systemd/system/provision-expiry.timer"]
    assert "Wants=provision-imds-root.service" in timer  # started with the timer, at every boot
