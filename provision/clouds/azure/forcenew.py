"""Azure inputs that force a new resource under pulumi-azure-native.

pulumi-azure-native replaces a resource when a URL path parameter (the resource group and the resource's own
name) or ``location`` changes (pulumi-azure-native ``provider/pkg/gen/schema.go``: path parameters and
location are ``forceNew``), plus properties the ARM REST specification marks as create-only
(``x-ms-mutability: ["create", "read"]``). Read by :mod:`provision.clouds.replacement`; only the types this
project registers are listed.
"""

from __future__ import annotations

from provision.clouds.replacement import ForceNew

_NATIVE = "pulumi-azure-native provider/pkg/gen/schema.go (path parameters and location are forceNew)"
_SPEC = "azure-rest-api-specs {} (x-ms-mutability create-only)"


def _path(*names: str, extra: tuple[str, ...] = (), source: str = _NATIVE) -> ForceNew:
    return ForceNew(("resourceGroupName", "location", *names, *extra), source)


FORCE_NEW: dict[str, ForceNew] = {
    "azure-native:resources:ResourceGroup": ForceNew(("resourceGroupName", "location"), _NATIVE),
    "azure-native:network:VirtualNetwork": _path("virtualNetworkName"),
    "azure-native:network:Subnet": _path("virtualNetworkName", "subnetName"),
    "azure-native:network:VirtualNetworkPeering": ForceNew(
        ("resourceGroupName", "virtualNetworkName", "virtualNetworkPeeringName"), _NATIVE
    ),
    "azure-native:network:NetworkSecurityGroup": _path("networkSecurityGroupName"),
    "azure-native:network:NatGateway": _path("natGatewayName", extra=("zones",)),
    "azure-native:network:PublicIPAddress": _path("publicIpAddressName", extra=("zones", "sku")),
    "azure-native:compute:ProximityPlacementGroup": _path("proximityPlacementGroupName"),
    # Zones, fault domains and the orchestration mode of a scale set are fixed at create; the VM profile
    # (image, custom data) and the capacity are updated in place (existing VMs keep their model until
    # reimaged, per the upgrade policy).
    "azure-native:compute:VirtualMachineScaleSet": _path(
        "vmScaleSetName",
        extra=(
            "zones",
            "platformFaultDomainCount",
            "orchestrationMode",
            "proximityPlacementGroup",
            "singlePlacementGroup",
        ),
        source=_NATIVE + "; " + _SPEC.format("specification/compute/.../virtualMachineScaleSet.json"),
    ),
    "azure-native:managedidentity:UserAssignedIdentity": _path("resourceName"),
    "azure-native:managedidentity:FederatedIdentityCredential": ForceNew(
        ("resourceGroupName", "resourceName", "federatedIdentityCredentialResourceName"), _NATIVE
    ),
    "azure-native:compute:VirtualMachine": _path(
        "vmName",
        extra=("zones",),
        source=_NATIVE + "; " + _SPEC.format("specification/compute/.../virtualMachine.json"),
    ),
    "azure-native:network:NetworkInterface": _path("networkInterfaceName"),
    "azure-native:network:BastionHost": _path("bastionHostName"),
    # The managed cluster's DNS prefix "cannot be updated once the Managed Cluster has been created" (the
    # ManagedClusterProperties.dnsPrefix description in azure-rest-api-specs containerservice managedClusters.json).
    "azure-native:containerservice:ManagedCluster": _path(
        "resourceName",
        extra=("dnsPrefix",),
        source=_NATIVE + "; " + _SPEC.format("specification/containerservice/.../managedClusters.json"),
    ),
    "azure-native:containerservice:AgentPool": ForceNew(
        ("resourceGroupName", "resourceName", "agentPoolName"), _NATIVE
    ),
    "azure-native:authorization:RoleDefinition": ForceNew(("roleDefinitionId", "scope"), _NATIVE),
    "azure-native:authorization:RoleAssignment": ForceNew(
        ("roleAssignmentName", "scope", "principalId", "roleDefinitionId"),
        _NATIVE + "; role assignments cannot be updated (Azure RBAC: delete and re-create)",
    ),
    "azure-native:netapp:Account": _path("accountName"),
    "azure-native:netapp:CapacityPool": _path("accountName", "poolName", extra=("qosType",)),
    "azure-native:netapp:CapacityPoolVolume": _path(
        "accountName",
        "poolName",
        "volumeName",
        extra=("subnetId", "creationToken", "protocolTypes", "zones"),
        source=_NATIVE + "; " + _SPEC.format("specification/netapp/.../netapp.json"),
    ),
    # Managed Lustre capacity, SKU, zone and subnet are fixed when the file system is created.
    "azure-native:storagecache:AmlFilesystem": _path(
        "amlFilesystemName",
        extra=("sku", "storageCapacityTiB", "zones", "filesystemSubnet"),
        source=_NATIVE + "; " + _SPEC.format("specification/storagecache/.../amlfilesystem.json"),
    ),
}

#: Types whose replacement deletes and recreates GPU nodes.
NODES = frozenset({"azure-native:compute:VirtualMachineScaleSet"})
