"""GPUs first on Azure: nodes look the shared filesystem's address up at boot (pure text and names; no Pulumi).

The scale sets are requested in parallel with the filesystem (Managed Lustre takes many minutes to create), so their
custom data cannot hold its address. Instead each node, at first boot, reads the filesystem's Azure Resource Manager
resource with a token of the cluster's user-assigned identity (from the instance metadata service, IMDS) and takes
the address from it:

* Azure Managed Lustre: ``properties.clientInfo.mgsAddress``, "The IPv4 address used by clients to mount the AML
  file system's Lustre Management Service (MGS)" (azure-rest-api-specs ``specification/storagecache``,
  ``AmlFilesystemClientInfo``; the .NET SDK's ``AmlFileSystemClientInfo.MgsAddress``), mounted as
  ``<mgs>@tcp:/lustrefs``;
* Azure NetApp Files: ``properties.mountTargets[0].ipAddress`` of the volume (specification/netapp,
  ``MountTargetProperties.ipAddress``), mounted as ``<ip>:/<creation token>``.

The identity holds the built-in **Reader** role on that one resource and nothing else (a role assignment scoped to
the filesystem, https://learn.microsoft.com/azure/role-based-access-control/built-in-roles/general#reader: actions
``*/read``, no data actions), so a node can read the filesystem's properties and no other resource. The assignment
is created once the filesystem exists; the scale sets do not wait for it. A node retries (every 20 s, at most
:data:`FS_WAIT_SECONDS`) until the filesystem exists, the assignment has reached Azure Resource Manager ("it can take
up to 10 minutes for changes to take effect", MicrosoftDocs/azure-docs role-based-access-control/troubleshooting.md,
"Role assignment changes are not being detected") and the address is set. The step uses curl only, and the token
never appears on a command line (curl reads the header from a root-only file).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from provision.clouds.azure.plan import AzurePlan
    from provision.planning.plan import ClusterPlan

#: The built-in Reader role (learn.microsoft.com/azure/role-based-access-control/built-in-roles/general#reader, ID).
READER_ROLE = "acdd72a7-3385-48ef-bd42-f606fba81ae7"
#: The api-versions pulumi-azure-native 3.x uses for these resources (its AmlFilesystem and CapacityPoolVolume
#: docstrings: "Uses Azure REST API version ..."), so the node reads the same model the program wrote.
AMLFS_API = "2024-03-01"
NETAPP_API = "2024-09-01"
#: On the node: where the fs-address step writes the mount source (Lustre) or host (NFS) it looked up.
SOURCE_FILE = "/var/lib/provision/shared-source"
#: How long a node waits for the filesystem's address: a bound on the filesystem's creation plus the role
#: assignment's propagation (10 minutes, above), not a vendor figure for either.
FS_WAIT_SECONDS = 5400
#: Every Azure Managed Lustre file system is named lustrefs (mount <mgs>@tcp:/lustrefs).
LUSTRE_FSNAME = "lustrefs"
LUSTRE_OPTIONS = "noatime,flock"
#: Microsoft's NFSv3 mount options for Azure NetApp Files on Linux (rsize/wsize 256 KiB, hard mounts).
NFS_OPTIONS = "rw,hard,rsize=262144,wsize=262144,vers=3,tcp"


@dataclass(frozen=True)
class Lookup:
    """What the fs-address step reads, and how it builds the mount source."""

    resource_path: str  # below the subscription: /resourceGroups/{rg}/providers/...
    api_version: str
    address_key: str  # the JSON key whose first IPv4 value is the address
    source_suffix: str  # appended to the address (Lustre: @tcp:/lustrefs); empty for NFS (host only)


def lookup(plan: ClusterPlan[AzurePlan]) -> Lookup | None:
    """The plan's filesystem as the nodes look it up, or ``None`` without one."""
    extra = plan.extra
    fs = extra.filesystem
    if fs is None:
        return None
    group = f"/resourceGroups/{extra.network_resource_group}/providers"
    if fs.kind == "amlfs":
        path = f"{group}/Microsoft.StorageCache/amlFilesystems/{fs.name}"
        return Lookup(path, AMLFS_API, "mgsAddress", f"@tcp:/{LUSTRE_FSNAME}")
    path = f"{group}/Microsoft.NetApp/netAppAccounts/{fs.account}/capacityPools/{fs.pool}/volumes/{fs.volume}"
    return Lookup(path, NETAPP_API, "ipAddress", "")


def needs_identity(plan: ClusterPlan[AzurePlan]) -> bool:
    """Whether the nodes carry the cluster's user-assigned identity: for the expiry timer or the filesystem lookup."""
    return plan.extra.lifetime == "node-timer" or plan.extra.filesystem is not None
