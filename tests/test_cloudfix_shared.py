"""/shared is never world-writable (issue 12.6): the login user owns the share root (root under GCP OS Login)."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from conftest import preview, stack_spec

SCRIPT_INPUTS = ("userData", "customData", "user-data")


def node_scripts(result: Any) -> list[str]:
    """Every node script in the graph, decoded."""
    out = []
    for r in result.resources:
        found = [r.inputs.get(k) for k in SCRIPT_INPUTS] + [
            r.inputs.get("metadata", {}).get("user-data") if isinstance(r.inputs.get("metadata"), dict) else None,
            r.inputs.get("virtualMachineProfile", {}).get("osProfile", {}).get("customData")
            if isinstance(r.inputs.get("virtualMachineProfile"), dict)
            else None,
        ]
        for text in found:
            if isinstance(text, str) and text:
                out.append(text if text.startswith("#!") else base64.b64decode(text).decode())
    return out


@pytest.mark.parametrize(
    ("stack", "owner"),
    [
        ("aws-p5-16", "ubuntu"),
        ("gcp-a3-64", "root"),  # OS Login: no fixed login account
        ("azure-ndh100-ci", "azureuser"),
        ("alibaba-gn8-ci", "ubuntu"),
    ],
)
def test_shared_root_belongs_to_one_owner_and_is_not_world_writable(stack: str, owner: str, monkeypatch: Any) -> None:
    result = preview(stack_spec(stack))
    mount = result.plan.storage.mount
    scripts = node_scripts(result)
    assert scripts
    for script in scripts:
        # (AWS's script names the mount point through $fsx_mount.)
        mentions = (mount, "$fsx_mount")
        lines = [
            line
            for line in script.splitlines()
            if any(m in line for m in mentions) and ("chmod" in line or "chown" in line) and not line.startswith("#")
        ]
        assert lines, stack
        assert all("777" not in line for line in lines), lines
        assert any(f"chown {owner}:" in line or f"chown '{owner}':" in line for line in lines), lines


LONGEST = "a" * 17 + "-" + "b" * 22  # 40 characters: the longest name the spec allows
#: Physical-name limits of autonamed resources (logical name + "-" + 7 hex): IAM CreateRole RoleName 1-64
#: (botocore iam), GCE names 1-63 (compute v1), Azure names are explicit and checked by the Azure plan.
AUTONAME_LIMITS = {"aws:iam/role:Role": 64, "aws:iam/instanceProfile:InstanceProfile": 128}


@pytest.mark.parametrize(
    "stack",
    ["aws-p5-64", "aws-p5-16", "aws-p5-ci", "azure-ndh100-64", "azure-ndh100-256", "azure-ndh100-ci", "alibaba-gn8-64",
     "alibaba-gn8-ci"],
)  # fmt: skip
def test_every_shipped_stack_builds_with_the_longest_cluster_name(stack: str) -> None:
    from provision.spec import load_spec

    spec = stack_spec(stack)
    result = preview(load_spec({**spec.model_dump(mode="json", exclude_none=True), "name": LONGEST}))
    assert result.plan.name == LONGEST and result.resources
    for r in result.resources:
        limit = AUTONAME_LIMITS.get(r.type)
        if limit:
            assert len(r.inputs.get("name") or f"{r.name}-abcdef0") <= limit, r.name
