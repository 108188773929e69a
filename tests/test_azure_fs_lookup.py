"""GPUs first on Azure: nodes look the shared filesystem's address up at boot (provision/clouds/azure/fslookup.py).

The rendered ``fs-address`` step runs in a sandbox with a curl that answers like IMDS and Azure Resource Manager; the
``shared-mount`` step then mounts what it found.
"""

from __future__ import annotations

import json
from pathlib import Path

from nodekit import plan_of, run_step, sandbox, stubs

from provision.clouds.azure import fslookup
from provision.clouds.azure.userdata import mock_user_data

SUB = "11111111-2222-3333-4444-555555555555"
#: IMDS (subscription id, token) and ARM, by URL; the header file curl reads is copied to $HDR_LOG.
CURL = """#!/bin/bash
printf 'curl %s\\n' "$*" >>"$STUB_LOG"
url=
for a in "$@"; do
  case $a in
  @*) cat "${a#@}" >>"$HDR_LOG" ;;
  http*) url=$a ;;
  esac
done
case $url in
*instance/compute/subscriptionId*) echo "$SUB" ;;
*oauth2/token*) echo '{"access_token":"tok-s3cret","expires_in":"86399","token_type":"Bearer"}' ;;
https://management.azure.com/*) [ -z "${ARM_FAIL:-}" ] || exit 22; printf '%s\\n' "$ARM_BODY" ;;
*) exit 7 ;;
esac
"""


def _node(tmp: Path, stack: str) -> tuple[Path, Path]:
    root = sandbox(tmp, mock_user_data(plan_of(stack)))
    bin_dir = stubs(tmp)
    (bin_dir / "curl").write_text(CURL)
    return root, bin_dir


def _lookup(tmp: Path, root: Path, bin_dir: Path, body: object, **env: str) -> dict[str, object]:
    return run_step(
        tmp, root, "fs-address", bin_dir, SUB=SUB, HDR_LOG=str(tmp / "hdr.log"), ARM_BODY=json.dumps(body), **env
    )


def test_a_lustre_node_reads_the_mgs_address_with_its_identity_and_mounts_it(tmp_path: Path) -> None:
    root, bin_dir = _node(tmp_path, "azure-ndh100-64")
    body = {"name": "x", "properties": {"clientInfo": {"mgsAddress": "10.0.2.4", "mountCommand": "mount ..."}}}
    run = _lookup(tmp_path, root, bin_dir, body)
    assert run["rc"] == 0, run["err"]
    assert (root / "var/lib/provision/shared-source").read_text() == "10.0.2.4@tcp:/lustrefs\n"
    log = str(run["log"])
    ident = f"/subscriptions/{SUB}/resourceGroups/azure-ndh100-64-rg/providers/Microsoft.ManagedIdentity/"
    assert f"msi_res_id={ident}userAssignedIdentities/azure-ndh100-64-identity" in log
    assert (
        f"https://management.azure.com/subscriptions/{SUB}/resourceGroups/azure-ndh100-64-rg/providers/"
        f"Microsoft.StorageCache/amlFilesystems/azure-ndh100-64-lustre?api-version={fslookup.AMLFS_API}"
    ) in log
    assert "systemctl enable --now provision-imds-root.service" in log  # IMDS is root's before any token
    # The token reaches ARM through a header file, never a command line (ps shows arguments to every user).
    assert "tok-s3cret" not in log and "Authorization: Bearer tok-s3cret" in (tmp_path / "hdr.log").read_text()
    mount = run_step(tmp_path, root, "shared-mount", bin_dir)
    assert mount["rc"] == 0, mount["err"]
    assert "mount -t lustre -o noatime,flock,_netdev 10.0.2.4@tcp:/lustrefs " in str(mount["log"])


def test_a_netapp_node_reads_the_volume_mount_target(tmp_path: Path) -> None:
    root, bin_dir = _node(tmp_path, "azure-ndh100-ci")
    body = {"properties": {"creationToken": "shared", "mountTargets": [{"ipAddress": "10.0.3.4", "smbServerFqdn": ""}]}}
    run = _lookup(tmp_path, root, bin_dir, body)
    assert run["rc"] == 0, run["err"]
    assert "/capacityPools/" in str(run["log"]) and f"api-version={fslookup.NETAPP_API}" in str(run["log"])
    assert (root / "var/lib/provision/shared-source").read_text() == "10.0.3.4\n"
    mount = run_step(tmp_path, root, "shared-mount", bin_dir)
    assert mount["rc"] == 0, mount["err"]
    assert " 10.0.3.4:/" in str(mount["log"]) and "mount -t nfs" in str(mount["log"])


def test_the_lookup_waits_a_bounded_time_and_then_fails_without_a_source(tmp_path: Path) -> None:
    root, bin_dir = _node(tmp_path, "azure-ndh100-64")
    assert f"FS_WAIT_SECONDS={fslookup.FS_WAIT_SECONDS}" in (root / "etc/provision/bootstrap.env").read_text()
    # 403 until the role assignment reaches ARM, 404 until the filesystem exists: curl -f fails either way.
    run = _lookup(tmp_path, root, bin_dir, {}, ARM_FAIL="1", PROVISION_FS_WAIT_SECONDS="60")
    assert run["rc"] == 1 and "no address for" in str(run["err"])
    assert str(run["log"]).count("amlFilesystems/azure-ndh100-64-lustre?api-version") == 3  # 60 s / 20 s
    assert not (root / "var/lib/provision/shared-source").exists()


def test_an_address_that_is_not_an_ipv4_is_never_written(tmp_path: Path) -> None:
    root, bin_dir = _node(tmp_path, "azure-ndh100-64")
    for bad in ("10.0.2.4; reboot", "10.0.2.400", "", "host.example.com"):
        run = _lookup(tmp_path, root, bin_dir, {"properties": {"clientInfo": {"mgsAddress": bad}}})
        assert run["rc"] == 1, bad
        assert not (root / "var/lib/provision/shared-source").exists(), bad
