"""Azure's cloud-side lifetime: every node deletes its own scale set at the expiry.

Azure has no VM lifetime (an OS shutdown leaves the VM allocated and billed, and scheduled
deallocation is preview-only), so the cluster carries its own backstop, with the least
privilege it needs:

* a custom role scoped to the cluster's resource group that allows only
  ``Microsoft.Compute/virtualMachineScaleSets/delete`` (Azure permissions for Compute:
  https://learn.microsoft.com/azure/role-based-access-control/permissions/compute), assigned to
  the cluster's user-assigned identity, which the scale sets carry. The scale sets are the cost;
  the network, the file system and the group are left to ``down`` and the tag reaper
  (``ops/reap_azure.py``), so a process on a node cannot delete the cluster's data with it;
* a systemd calendar timer on every node (``Persistent=true``: it fires at the next boot when the
  expiry passed while the node was down) whose service asks the instance metadata service (IMDS)
  for the node's scale set and a token of that identity and calls
  ``DELETE .../virtualMachineScaleSets/{name}?forceDeletion=true``
  (https://learn.microsoft.com/rest/api/compute/virtual-machine-scale-sets/delete). Every node
  tries, so one dead node does not keep the cluster alive; the service retries every 5 minutes;
* IMDS answers root only: a boot unit rejects non-root traffic to 169.254.169.254 (``iptables -m
  owner``) and container traffic (the ``DOCKER-USER`` chain, which Docker keeps:
  https://docs.docker.com/engine/network/packet-filtering-firewalls/), so a job or a container
  cannot take the identity's token.

Pure text and names here; the Pulumi resources are made in ``components.py``.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Literal

from provision.planning.bootstrap import File

if TYPE_CHECKING:
    from provision.clouds.azure.plan import AzurePlan
    from provision.planning.plan import ClusterPlan

#: What the expiry role may do, and nothing else.
ROLE_ACTIONS = ("Microsoft.Compute/virtualMachineScaleSets/delete",)
#: What it may also do in a cluster with a Slurm controller VM (which deletes itself at the expiry).
VM_DELETE = "Microsoft.Compute/virtualMachines/delete"
Target = Literal["scale-set", "vm"]
#: Per target: the IMDS compute field naming it, its ARM collection, and its name in the log.
_TARGETS: dict[str, tuple[str, str, str]] = {
    "scale-set": ("vmScaleSetName", "virtualMachineScaleSets", "scale set"),
    "vm": ("name", "virtualMachines", "virtual machine"),
}
#: How long the role assignment waits after a new custom role definition (a pulumi-time duration): Azure Resource
#: Manager caches RBAC data, and "it can take up to 10 minutes for changes to take effect" (MicrosoftDocs/azure-docs
#: role-based-access-control/troubleshooting.md, "Role assignment changes are not being detected").
ROLE_PROPAGATION = "10m"
#: The ARM api-version of VirtualMachineScaleSets_Delete with forceDeletion (2022-08-01 REST reference).
VMSS_API = "2022-08-01"
#: The IMDS api-versions for instance metadata and managed-identity tokens.
IMDS_COMPUTE_API = "2021-02-01"
IMDS_TOKEN_API = "2018-02-01"
#: Namespace of the deterministic role GUIDs (a role definition and an assignment name must be GUIDs).
_NAMESPACE = uuid.UUID("6c1f3c52-5f0e-4c55-9a1e-2f6bb0c0f7a1")


def role_guid(group_id: str, kind: str) -> str:
    """A GUID, stable across runs, unique per resource group id (``/subscriptions/{sub}/resourceGroups/{rg}``).

    A role definition's id and its display name must be unique in the whole Microsoft Entra tenant,
    not just the subscription (MicrosoftDocs/azure-docs role-based-access-control/custom-roles.md,
    ``roleName``: "This display name must be unique at the scope of the Microsoft Entra tenant"), so a
    seed of the cluster name alone collides when the same stack runs in a second subscription of the
    tenant. ARM ids are case-insensitive, hence the lower-casing.
    """
    return str(uuid.uuid5(_NAMESPACE, f"{kind}:{group_id.lower()}"))


def role_name(cluster: str, group_id: str) -> str:
    """The custom role's display name: the cluster plus 8 hex digits of its group id (tenant-unique, readable)."""
    return f"provision-expiry-{cluster}-{role_guid(group_id, 'name')[:8]}"


def identity_name(plan: ClusterPlan[AzurePlan]) -> str:
    """The user-assigned identity the nodes carry (``components.py`` names it so)."""
    return f"{plan.name}-identity"


def _script(plan: ClusterPlan[AzurePlan], target: Target = "scale-set") -> str:
    """The Python run by the expiry service (python3 ships in the ubuntu-hpc image). No secrets in it.

    ``target``: what this machine deletes, its scale set (a node) or itself (a standalone VM: the Slurm controller,
    ``VirtualMachines_Delete`` with ``forceDeletion``, https://learn.microsoft.com/rest/api/compute/virtual-machines/delete).
    """
    key, kind, what = _TARGETS[target]
    return f"""import json, sys, urllib.error, urllib.request
IMDS = "http://169.254.169.254/metadata"
def get(url):
    req = urllib.request.Request(url, headers={{"Metadata": "true"}})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)
meta = get(f"{{IMDS}}/instance/compute?api-version={IMDS_COMPUTE_API}")
sub, rg, vmss = meta["subscriptionId"], meta["resourceGroupName"], meta["{key}"]
ident = (f"/subscriptions/{{sub}}/resourceGroups/{{rg}}/providers/Microsoft.ManagedIdentity"
         f"/userAssignedIdentities/{identity_name(plan)}")
token = get(f"{{IMDS}}/identity/oauth2/token?api-version={IMDS_TOKEN_API}"
            f"&resource=https://management.azure.com/&msi_res_id={{ident}}")["access_token"]
url = (f"https://management.azure.com/subscriptions/{{sub}}/resourceGroups/{{rg}}/providers/Microsoft.Compute"
       f"/{kind}/{{vmss}}?forceDeletion=true&api-version={VMSS_API}")
req = urllib.request.Request(url, method="DELETE", headers={{"Authorization": "Bearer " + token}})
try:
    with urllib.request.urlopen(req, timeout=60) as r:
        print("provision: deleting {what}", vmss, "status", r.status)
except urllib.error.HTTPError as e:
    if e.code == 404:
        sys.exit(0)
    print("provision: deleting {what}", vmss, "failed:", e.code, e.read()[:500], file=sys.stderr)
    sys.exit(1)
"""


#: Boot unit: IMDS for root only (host processes by owner; containers through DOCKER-USER, made if absent).
IMDS_ROOT_ONLY = (
    "[Unit]\nDescription=provision: the instance metadata service answers root only\n"
    "DefaultDependencies=no\nBefore=network-pre.target docker.service\nWants=network-pre.target\n\n"
    "[Service]\nType=oneshot\nRemainAfterExit=yes\n"
    "ExecStart=/usr/sbin/iptables -w -I OUTPUT -d 169.254.169.254 -m owner ! --uid-owner 0 -j REJECT\n"
    "ExecStart=-/usr/sbin/iptables -w -N DOCKER-USER\n"
    "ExecStart=/usr/sbin/iptables -w -I DOCKER-USER -d 169.254.169.254 -j REJECT\n"
    "ExecStart=/usr/sbin/iptables -w -I FORWARD -d 169.254.169.254 -j REJECT\n\n"
    "[Install]\nWantedBy=multi-user.target\n"
)


def role_actions(plan: ClusterPlan[AzurePlan]) -> tuple[str, ...]:
    """The expiry role's actions: the scale sets' delete, and the controller VM's when the cluster has one."""
    return (*ROLE_ACTIONS, VM_DELETE) if plan.extra.slurm is not None else ROLE_ACTIONS


def expiry_files(plan: ClusterPlan[AzurePlan], target: Target = "scale-set") -> list[File]:
    """The expiry script and its systemd units (the common ``lifetime`` step enables the timer; ``userdata.py`` writes
    the IMDS unit :data:`IMDS_ROOT_ONLY` whenever the nodes carry the identity)."""
    assert plan.expires_at is not None  # noqa: S101  # the adapter plans a node timer only with a lifetime
    stamp = plan.expires_at.strftime("%Y-%m-%d %H:%M:%S UTC")
    what = "node's scale set" if target == "scale-set" else "VM"
    service = (
        f"[Unit]\nDescription=provision: delete this {what} (lifetime reached)\n"
        "Wants=network-online.target\nAfter=network-online.target\n\n"
        "[Service]\nType=oneshot\nExecStart=/usr/bin/python3 /usr/local/lib/provision/expire.py\n"
        "Restart=on-failure\nRestartSec=300\n"
    )
    timer = (
        "[Unit]\nDescription=provision: delete the cluster at its expiry\n"
        # Armed at every boot with the timer (timers.target): IMDS answers root only before any job runs.
        "Wants=provision-imds-root.service\n\n"
        f"[Timer]\nOnCalendar={stamp}\nPersistent=true\nAccuracySec=1s\n\n[Install]\nWantedBy=timers.target\n"
    )
    return [
        File("/usr/local/lib/provision/expire.py", _script(plan, target), "0755"),
        File("/etc/systemd/system/provision-expiry.service", service),
        File("/etc/systemd/system/provision-expiry.timer", timer),
    ]
