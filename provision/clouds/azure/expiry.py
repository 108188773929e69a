"""Azure's cloud-side lifetime: every node deletes the cluster's resource group at the expiry.

Azure has no VM lifetime (an OS shutdown leaves the VM allocated and billed, and scheduled
deallocation is preview-only), so the cluster carries its own backstop:

* a custom role scoped to the cluster's resource group that allows only ``*/delete`` (deleting a
  resource group needs the delete action on the group *and* on every resource in it:
  https://learn.microsoft.com/azure/azure-resource-manager/management/delete-resource-group#required-access),
  assigned to the cluster's user-assigned identity, which the scale sets carry;
* a systemd calendar timer on every node (``Persistent=true``: it fires at the next boot when the
  expiry passed while the node was down) whose service asks the instance metadata service for a
  token of that identity and calls ``DELETE resourceGroups/{rg}`` with
  ``forceDeletionTypes=Microsoft.Compute/virtualMachineScaleSets``
  (https://learn.microsoft.com/rest/api/resources/resource-groups/delete). Every node tries, so
  one dead node does not keep the cluster alive; a second DELETE of a group being deleted is
  harmless. The service retries every 5 minutes until the group is gone.

The retained data resource group (``storage.shared.retain``) is a different group: it survives.
Pure text and names here; the Pulumi resources are made in ``components.py``.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from provision.planning.bootstrap import File

if TYPE_CHECKING:
    from provision.clouds.azure.plan import AzurePlan
    from provision.planning.plan import ClusterPlan

#: What the expiry role may do, and nothing else.
ROLE_ACTIONS = ("*/delete",)
#: The ARM api-version of ResourceGroups_Delete with forceDeletionTypes.
RESOURCE_GROUPS_API = "2021-04-01"
#: The IMDS api-versions for instance metadata and managed-identity tokens.
IMDS_COMPUTE_API = "2021-02-01"
IMDS_TOKEN_API = "2018-02-01"
#: Namespace of the deterministic role GUIDs (a role definition and an assignment name must be GUIDs).
_NAMESPACE = uuid.UUID("6c1f3c52-5f0e-4c55-9a1e-2f6bb0c0f7a1")


def role_guid(cluster: str, kind: str) -> str:
    """A GUID that is the same for the same cluster on every run (logical names must be stable)."""
    return str(uuid.uuid5(_NAMESPACE, f"{kind}:{cluster}"))


def role_name(cluster: str) -> str:
    """The custom role's display name; unique per subscription, so it carries the cluster's name."""
    return f"provision-expiry-{cluster}"


def identity_name(plan: ClusterPlan[AzurePlan]) -> str:
    """The user-assigned identity the nodes carry (``components.py`` names it so)."""
    return f"{plan.name}-identity"


def _script(plan: ClusterPlan[AzurePlan]) -> str:
    """The Python run by the expiry service (python3 ships in the ubuntu-hpc image). No secrets in it."""
    return f"""import json, sys, urllib.error, urllib.request
IMDS = "http://169.254.169.254/metadata"
def get(url):
    req = urllib.request.Request(url, headers={{"Metadata": "true"}})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)
meta = get(f"{{IMDS}}/instance/compute?api-version={IMDS_COMPUTE_API}")
sub, rg = meta["subscriptionId"], meta["resourceGroupName"]
ident = (f"/subscriptions/{{sub}}/resourceGroups/{{rg}}/providers/Microsoft.ManagedIdentity"
         f"/userAssignedIdentities/{identity_name(plan)}")
token = get(f"{{IMDS}}/identity/oauth2/token?api-version={IMDS_TOKEN_API}"
            f"&resource=https://management.azure.com/&msi_res_id={{ident}}")["access_token"]
url = (f"https://management.azure.com/subscriptions/{{sub}}/resourcegroups/{{rg}}"
       f"?forceDeletionTypes=Microsoft.Compute/virtualMachineScaleSets&api-version={RESOURCE_GROUPS_API}")
req = urllib.request.Request(url, method="DELETE", headers={{"Authorization": "Bearer " + token}})
try:
    with urllib.request.urlopen(req, timeout=60) as r:
        print("provision: deleting resource group", rg, "status", r.status)
except urllib.error.HTTPError as e:
    if e.code == 404:
        sys.exit(0)
    print("provision: deleting resource group", rg, "failed:", e.code, e.read()[:500], file=sys.stderr)
    sys.exit(1)
"""


def expiry_files(plan: ClusterPlan[AzurePlan]) -> list[File]:
    """The expiry script and its systemd units (the common ``lifetime`` step enables the timer)."""
    assert plan.expires_at is not None  # noqa: S101  # the adapter plans a node timer only with a lifetime
    stamp = plan.expires_at.strftime("%Y-%m-%d %H:%M:%S UTC")
    service = (
        "[Unit]\nDescription=provision: delete the cluster's resource group (lifetime reached)\n"
        "Wants=network-online.target\nAfter=network-online.target\n\n"
        "[Service]\nType=oneshot\nExecStart=/usr/bin/python3 /usr/local/lib/provision/expire.py\n"
        "Restart=on-failure\nRestartSec=300\n"
    )
    timer = (
        "[Unit]\nDescription=provision: delete the cluster at its expiry\n\n"
        f"[Timer]\nOnCalendar={stamp}\nPersistent=true\nAccuracySec=1s\n\n[Install]\nWantedBy=timers.target\n"
    )
    return [
        File("/usr/local/lib/provision/expire.py", _script(plan), "0755"),
        File("/etc/systemd/system/provision-expiry.service", service),
        File("/etc/systemd/system/provision-expiry.timer", timer),
    ]
