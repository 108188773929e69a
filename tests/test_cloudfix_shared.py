"""/shared is never world-writable (issue 12.6): the login user owns the share root (root under GCP OS Login)."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from conftest import preview, shipped_preview, stack_spec

SCRIPT_INPUTS = ("userData", "customData", "user-data")


def node_files(result: Any) -> dict[str, str]:
    """Every file the nodes' cloud-config writes (all node groups together), by path."""
    import gzip

    from provision.planning.bootstrap import parse

    out: dict[str, str] = {}
    for r in result.resources:
        found = [r.inputs.get(k) for k in SCRIPT_INPUTS] + [
            r.inputs.get("metadata", {}).get("user-data") if isinstance(r.inputs.get("metadata"), dict) else None,
            r.inputs.get("virtualMachineProfile", {}).get("osProfile", {}).get("customData")
            if isinstance(r.inputs.get("virtualMachineProfile"), dict)
            else None,
        ]
        for text in found:
            if not isinstance(text, str) or not text:
                continue
            if not text.startswith("#cloud-config"):
                raw = base64.b64decode(text)
                text = (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode()
            out.update({f["path"]: f["content"] for f in parse(text)["write_files"]})
    return out


@pytest.mark.parametrize(
    ("stack", "owner"),
    [
        ("aws-p5-16", "ubuntu"),
        ("gcp-a3-64", None),  # OS Login: no fixed login account, root keeps the share
        ("azure-ndh100-ci", "azureuser"),
        ("alibaba-gn8-ci", "ubuntu"),
    ],
)
def test_shared_root_belongs_to_one_owner_and_is_not_world_writable(stack: str, owner: str | None) -> None:
    files = node_files(shipped_preview(stack))
    assert files
    env = files["/etc/provision/bootstrap.env"]
    if owner is None:
        assert "SHARED_OWNER=" not in env
    else:
        assert f"SHARED_OWNER={owner}" in env
    mount_step = next((c for p, c in files.items() if p.endswith("-shared-mount.sh")), "")
    if owner is not None:  # GCP mounts its filesystems in its own storage step
        assert 'chown "$SHARED_OWNER": "$mnt"' in mount_step and 'chmod 0755 "$mnt"' in mount_step
    assert "1777" not in mount_step
    shared = shipped_preview(stack).plan.storage
    assert shared is not None
    for path, content in files.items():  # no other file opens the share to everyone
        for line in content.splitlines():
            if shared.mount in line and "chmod" in line:
                assert "777" not in line and "a+w" not in line, (path, line)


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
