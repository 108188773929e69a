"""Every shipped stack's shared filesystem root is never world-writable, and root access is bounded (issue 12.6).

Covers every kind the stacks ship: FSx for Lustre, AMLFS, Azure NetApp Files, Managed Lustre, Filestore,
Parallelstore, CPFS and NAS. The node scripts are read as rendered (cloud-config files and GCP's
startup script); a chmod that grants "other" write on the mount, or a 777 anywhere in the mount step, fails.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from conftest import ROOT, preview, shipped_preview, stack_spec
from test_cloudfix_shared import node_files

from provision.clouds.azure.plan import NetApp

VM_STACKS = sorted(
    p.name[len("Pulumi.") : -len(".yaml")]
    for p in (ROOT / "stacks").glob("Pulumi.*.yaml")
    if not p.name.endswith(("-eks.yaml", "-gke.yaml", "-aks.yaml", "-ack.yaml"))
)
VOLUME = "azure-native:netapp:CapacityPoolVolume"
#: chmod MODE PATH: symbolic modes with o+w / a+w, or octal modes whose last digit has the write bit.
_CHMOD = re.compile(r"chmod\s+(?:-\w+\s+)*([0-7]{3,4}|[ugoa]*[+=][rwxXst]*)\s+(\S+)")


def _grants_world_write(mode: str) -> bool:
    if mode.isdigit():
        return int(mode[-1]) & 2 != 0
    who, _, perms = re.split(r"([+=])", mode, maxsplit=1)
    return (not who or "o" in who or "a" in who) and "w" in perms


def _chmods(result: Any, mount: str) -> tuple[str, list[tuple[str, str]]]:
    """(node script text, chmods of the shared mount): ``$mnt`` in the shared-mount step, the path elsewhere."""
    texts, found = [], []
    for path, content in node_files(result).items():
        texts.append(content)
        names = ("$mnt", '"$mnt"') if path.endswith("-shared-mount.sh") else ()
        found += [(m, p) for m, p in _CHMOD.findall(content) if p.strip("'\"") == mount or p in names]
    for r in result.resources:  # GCP renders its storage step into the startup script
        meta = r.inputs.get("metadata")
        if isinstance(meta, dict) and isinstance(meta.get("startup-script"), str):
            texts.append(meta["startup-script"])
            found += [(m, p) for m, p in _CHMOD.findall(meta["startup-script"]) if p.strip("'\"") == mount]
    return "\n".join(texts), found


@pytest.mark.parametrize("stack", VM_STACKS)
def test_no_node_script_makes_the_shared_root_world_writable(stack: str) -> None:
    spec = stack_spec(stack)
    result = preview(spec)
    assert result.plan.storage is not None, f"{stack} ships a shared filesystem"
    text, chmods = _chmods(result, result.plan.storage.mount)
    assert chmods, "the node scripts set the shared root's mode"  # CPFS too: mounted at boot since the lookup step
    assert [(mode, path) for mode, path in chmods if _grants_world_write(mode)] == []
    assert "1777 /shared" not in text and "777 /shared" not in text


def test_world_write_detector_catches_what_it_must() -> None:
    assert _grants_world_write("1777") and _grants_world_write("0777") and _grants_world_write("o+w")
    assert _grants_world_write("a+rwx") and _grants_world_write("+w")
    assert not _grants_world_write("0755") and not _grants_world_write("u+w") and not _grants_world_write("g+w")


def test_netapp_root_access_is_the_node_subnet_only_and_only_root_gives_files_away() -> None:
    result = shipped_preview("azure-ndh100-ci")
    volume = result.one(VOLUME).inputs
    assert int(volume["unixPermissions"], 8) & 0o002 == 0
    (rule,) = volume["exportPolicy"]["rules"]
    assert rule["chownMode"] == "Restricted"
    fs = result.plan.extra.filesystem
    subnet = next(
        r.inputs["addressPrefix"] for r in result.resources if r.type.endswith(":Subnet") and r.name.endswith("-nodes")
    )
    assert isinstance(fs, NetApp) and rule["allowedClients"] == subnet == fs.allowed_clients
    assert rule["hasRootAccess"] is True  # on purpose: see clouds/azure/storage.py (no owner / anon uid in ANF)
