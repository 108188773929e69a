"""Azure's cloud-side lifetime: a delete-only role scoped to the cluster's group and a timer on every node."""

from __future__ import annotations

import base64
import io
import json
import subprocess
import urllib.error
import urllib.request
from typing import Any

import pytest
from conftest import preview as run_at_fixed_clock
from test_azure_plan import azure_spec

from provision.clouds.azure.expiry import ROLE_ACTIONS, role_guid
from provision.ops.ephemeral import require_bounds
from provision.spec import load_spec
from provision.spec.errors import BudgetError
from provision.testing import PreviewResult

ROLE_DEF = "azure-native:authorization:RoleDefinition"
ROLE_ASSIGN = "azure-native:authorization:RoleAssignment"


def preview(**overrides: Any) -> PreviewResult:
    return run_at_fixed_clock(load_spec(azure_spec(**overrides)), stack="expiry-test")


def _one(result: PreviewResult, typ: str) -> Any:
    found = [r for r in result.resources if r.type == typ]
    assert len(found) == 1, [r.name for r in found]
    return found[0]


def _script(result: PreviewResult) -> str:
    vmss = _one(result, "azure-native:compute:VirtualMachineScaleSet")
    return base64.b64decode(vmss.inputs["virtualMachineProfile"]["osProfile"]["customData"]).decode()


def _expire_py(script: str) -> str:
    start = script.index("cat > /usr/local/lib/provision/expire.py <<'PYTHON'\n") + len(
        "cat > /usr/local/lib/provision/expire.py <<'PYTHON'\n"
    )
    return script[start : script.index("PYTHON\n", start)]


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
    assert ROLE_ACTIONS == ("*/delete",)
    assert assignment.inputs["principalId"] == identity.outputs["principalId"]
    assert assignment.inputs["principalType"] == "ServicePrincipal"
    assert assignment.inputs["roleDefinitionId"].endswith("/roleDefinitions/" + role_guid("az-test", "definition"))


def test_role_ids_are_stable_guids_per_cluster() -> None:
    assert role_guid("a", "definition") == role_guid("a", "definition")
    assert role_guid("a", "definition") != role_guid("b", "definition")
    assert role_guid("a", "definition") != role_guid("a", "assignment")


def test_every_node_gets_a_persistent_timer_at_the_expiry(bounded: PreviewResult) -> None:
    script = _script(bounded)
    stamp = bounded.plan.expires_at.strftime("%Y-%m-%d %H:%M:%S UTC")  # type: ignore[union-attr]
    assert f"OnCalendar={stamp}" in script and "Persistent=true" in script
    assert "systemctl enable --now provision-expiry.timer" in script
    assert "userAssignedIdentities/az-test-identity" in _expire_py(script)
    assert bounded.plan.lifetime_enforced_by and "resource group" in bounded.plan.lifetime_enforced_by
    assert not any("keeps billing" in w for w in bounded.plan.warnings)


def test_the_rendered_script_is_valid_bash_and_python(bounded: PreviewResult, tmp_path: Any) -> None:
    script = _script(bounded)
    assert subprocess.run(["bash", "-n"], input=script, text=True).returncode == 0
    compile(_expire_py(script), "expire.py", "exec")


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
            return _Response(json.dumps({"subscriptionId": "sub-1", "resourceGroupName": "az-test-rg"}).encode())
        if "/metadata/identity/oauth2/token" in url:
            return _Response(json.dumps({"access_token": "tok-123"}).encode())
        if delete_status >= 400:
            raise urllib.error.HTTPError(url, delete_status, "x", {}, io.BytesIO(b"boom"))  # type: ignore[arg-type]
        return _Response(b"")

    monkeypatch.setattr(urllib.request, "urlopen", urlopen)
    code = 0
    try:
        exec(compile(_expire_py(_script(bounded)), "expire.py", "exec"), {"__name__": "__main__"})
    except SystemExit as e:
        code = int(e.code or 0)
    return code, seen


def test_the_timer_deletes_its_own_group_with_the_identity_token(
    bounded: PreviewResult, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, seen = _run_expiry(bounded, monkeypatch, 202)
    assert code == 0
    meta, token, delete = seen
    assert all(r.headers.get("Metadata") == "true" for r in (meta, token))
    assert "msi_res_id=/subscriptions/sub-1/resourceGroups/az-test-rg/providers/" in token.full_url
    assert delete.get_method() == "DELETE"
    assert delete.full_url.startswith("https://management.azure.com/subscriptions/sub-1/resourcegroups/az-test-rg?")
    assert "forceDeletionTypes=Microsoft.Compute/virtualMachineScaleSets" in delete.full_url
    assert delete.headers["Authorization"] == "Bearer tok-123"


def test_a_group_already_gone_is_success_and_other_errors_retry(
    bounded: PreviewResult, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _run_expiry(bounded, monkeypatch, 404)[0] == 0
    assert _run_expiry(bounded, monkeypatch, 500)[0] == 1  # systemd's Restart=on-failure tries again
    assert "Restart=on-failure" in _script(bounded)


def test_opting_out_leaves_no_role_no_timer_a_warning_and_no_ephemeral_cluster() -> None:
    result = preview(lifetime={"ttl": "6h"}, azure={"delete_at_expiry": False})
    assert not [r for r in result.resources if r.type in (ROLE_DEF, ROLE_ASSIGN)]
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
    assert not [r for r in result.resources if r.type in (ROLE_DEF, ROLE_ASSIGN)]
    assert "provision-expiry.timer" not in _script(result)
