"""The mocked Azure: ARM resource ids, private IPs from the subnet's range, Lustre and NFS endpoints.

Deterministic: every id and address derives from logical names and the ledger, so golden files
are stable. ``resource(args, ctx)`` answers registrations; ``INVOKES`` answers invokes (the VMSS
network-interface read that feeds the hostfile).
"""

from __future__ import annotations

import re
from typing import Any

from provision.clouds.mocking import MockContext, Registered

#: ARM path per type token: provider namespace/type segments, formatted with the inputs.
_PATHS = {
    "azure-native:network:NetworkSecurityGroup": "Microsoft.Network/networkSecurityGroups/{networkSecurityGroupName}",
    "azure-native:network:PublicIPAddress": "Microsoft.Network/publicIPAddresses/{publicIpAddressName}",
    "azure-native:network:NatGateway": "Microsoft.Network/natGateways/{natGatewayName}",
    "azure-native:network:VirtualNetwork": "Microsoft.Network/virtualNetworks/{virtualNetworkName}",
    "azure-native:network:Subnet": "Microsoft.Network/virtualNetworks/{virtualNetworkName}/subnets/{subnetName}",
    "azure-native:network:VirtualNetworkPeering": (
        "Microsoft.Network/virtualNetworks/{virtualNetworkName}/virtualNetworkPeerings/{virtualNetworkPeeringName}"
    ),
    "azure-native:network:BastionHost": "Microsoft.Network/bastionHosts/{bastionHostName}",
    "azure-native:compute:ProximityPlacementGroup": (
        "Microsoft.Compute/proximityPlacementGroups/{proximityPlacementGroupName}"
    ),
    "azure-native:compute:VirtualMachineScaleSet": "Microsoft.Compute/virtualMachineScaleSets/{vmScaleSetName}",
    "azure-native:compute:VirtualMachine": "Microsoft.Compute/virtualMachines/{vmName}",
    "azure-native:network:NetworkInterface": "Microsoft.Network/networkInterfaces/{networkInterfaceName}",
    "azure-native:managedidentity:UserAssignedIdentity": (
        "Microsoft.ManagedIdentity/userAssignedIdentities/{resourceName}"
    ),
    "azure-native:storagecache:AmlFilesystem": "Microsoft.StorageCache/amlFilesystems/{amlFilesystemName}",
    "azure-native:netapp:Account": "Microsoft.NetApp/netAppAccounts/{accountName}",
    "azure-native:netapp:CapacityPool": "Microsoft.NetApp/netAppAccounts/{accountName}/capacityPools/{poolName}",
    "azure-native:netapp:CapacityPoolVolume": (
        "Microsoft.NetApp/netAppAccounts/{accountName}/capacityPools/{poolName}/volumes/{volumeName}"
    ),
    "azure-native:containerservice:ManagedCluster": "Microsoft.ContainerService/managedClusters/{resourceName}",
    "azure-native:managedidentity:FederatedIdentityCredential": (
        "Microsoft.ManagedIdentity/userAssignedIdentities/{resourceName}/federatedIdentityCredentials/"
        "{federatedIdentityCredentialResourceName}"
    ),
    "azure-native:containerservice:AgentPool": (
        "Microsoft.ContainerService/managedClusters/{resourceName}/agentPools/{agentPoolName}"
    ),
}


def guid(ctx: MockContext, seed: str) -> str:
    """A stable version-4-shaped GUID derived from ``seed``."""
    h = ctx.hex_id(seed, 32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-8{h[17:20]}-{h[20:32]}"


def subscription(ctx: MockContext) -> str:
    return guid(ctx, "mock-subscription")


def _rg_id(ctx: MockContext, rg: str) -> str:
    return f"/subscriptions/{subscription(ctx)}/resourceGroups/{rg}"


def _subnet_cidr(ctx: MockContext, subnet_id: str) -> str:
    for r in ctx.find("azure-native:network:Subnet"):
        if r.id.lower() == subnet_id.lower():
            return str(r.inputs["addressPrefix"])
    raise LookupError(f"no mocked subnet with id {subnet_id}")


def _amlfs(ctx: MockContext, inputs: dict[str, Any]) -> dict[str, Any]:
    cidr = _subnet_cidr(ctx, inputs["filesystemSubnet"])
    mgs = ctx.ips(cidr, 1)[0]
    return {
        "clientInfo": {
            "mgsAddress": mgs,
            "mountCommand": f"mount -t lustre -o noatime,flock {mgs}@tcp:/lustrefs /lustre",
            "lustreVersion": "2.15.7",
            "containerStorageInterface": {
                "persistentVolume": "",
                "persistentVolumeClaim": "",
                "storageClass": "",
            },
        },
        "health": {"state": "Available", "statusCode": "0", "statusDescription": "Available"},
        "provisioningState": "Succeeded",
        "throughputProvisionedMBps": 0,
    }


def _volume(ctx: MockContext, inputs: dict[str, Any], name: str) -> dict[str, Any]:
    cidr = _subnet_cidr(ctx, inputs["subnetId"])
    return {
        "mountTargets": [
            {
                "fileSystemId": guid(ctx, name + "/fs"),
                "ipAddress": ctx.ips(cidr, 1)[0],
                "mountTargetId": guid(ctx, name),
            }
        ],
        "fileSystemId": guid(ctx, name + "/fs"),
        "provisioningState": "Succeeded",
    }


def resource(args: Any, ctx: MockContext) -> tuple[str, dict[str, Any]]:
    """Answer one registration like ARM would: the resource id and the outputs it returns."""
    inputs = dict(args.inputs)
    outputs: dict[str, Any] = {**inputs, "provisioningState": "Succeeded", "type": args.typ.split(":")[-1]}
    if args.typ == "azure-native:resources:ResourceGroup":
        rid = _rg_id(ctx, inputs["resourceGroupName"])
        outputs.update(name=inputs["resourceGroupName"], properties={"provisioningState": "Succeeded"})
        return rid, outputs
    if args.typ == "azure-native:authorization:RoleDefinition":
        # Custom roles live at their scope (the subscription):
        # {scope}/providers/Microsoft.Authorization/roleDefinitions/{id}
        rid = f"{inputs['scope']}/providers/Microsoft.Authorization/roleDefinitions/{inputs['roleDefinitionId']}"
        outputs.update(name=inputs["roleDefinitionId"], roleName=inputs["roleName"])
        return rid, outputs
    if args.typ == "azure-native:authorization:RoleAssignment":
        rid = f"{inputs['scope']}/providers/Microsoft.Authorization/roleAssignments/{inputs['roleAssignmentName']}"
        outputs.update(name=inputs["roleAssignmentName"])
        return rid, outputs
    path = _PATHS.get(args.typ)
    if path is None:
        raise LookupError(f"the mocked Azure does not know resource type {args.typ}")
    rid = f"{_rg_id(ctx, inputs['resourceGroupName'])}/providers/{path.format(**inputs)}"
    # ARM names nested resources by their path below the provider type: account/pool, account/pool/volume.
    segments = path.format(**inputs).split("/")[2:]
    outputs["name"] = "/".join(segments[::2]) if args.typ.startswith("azure-native:netapp:") else segments[-1]
    if args.typ == "azure-native:network:PublicIPAddress":
        outputs["ipAddress"] = f"198.51.100.{int(ctx.hex_id(args.name, 2), 16) % 250 + 4}"
    elif args.typ == "azure-native:managedidentity:UserAssignedIdentity":
        outputs.update(
            principalId=guid(ctx, args.name + "/principal"),
            clientId=guid(ctx, args.name + "/client"),
            tenantId=guid(ctx, "mock-tenant"),
        )
    elif args.typ in ("azure-native:compute:VirtualMachineScaleSet", "azure-native:compute:VirtualMachine"):
        outputs["uniqueId" if args.typ.endswith("ScaleSet") else "vmId"] = guid(ctx, args.name)
        identity = inputs.get("identity")
        if identity:  # ARM answers the identity list as a map keyed by identity id
            ids = identity.get("userAssignedIdentities") or []
            outputs["identity"] = {
                "type": identity.get("type"),
                "userAssignedIdentities": {
                    i: {"principalId": guid(ctx, i + "/principal"), "clientId": guid(ctx, i + "/client")} for i in ids
                },
            }
    elif args.typ == "azure-native:network:NetworkInterface":  # the Slurm controller's NIC: a dynamic private IP
        outputs["ipConfigurations"] = [_nic_ip(ctx, dict(c)) for c in inputs.get("ipConfigurations") or []]
    elif args.typ == "azure-native:storagecache:AmlFilesystem":
        outputs.update(_amlfs(ctx, inputs))
    elif args.typ == "azure-native:netapp:CapacityPoolVolume":
        outputs.update(_volume(ctx, inputs, args.name))
    elif args.typ == "azure-native:netapp:CapacityPool":
        outputs["poolId"] = guid(ctx, args.name)
    elif args.typ == "azure-native:containerservice:ManagedCluster":
        # ARM answers the API server's name: {dnsPrefix}-{hash}.hcp.{location}.azmk8s.io.
        outputs["fqdn"] = f"{inputs['dnsPrefix']}-{ctx.hex_id(args.name, 8)}.hcp.{inputs['location']}.azmk8s.io"
        outputs["currentKubernetesVersion"] = inputs.get("kubernetesVersion")
        if (inputs.get("oidcIssuerProfile") or {}).get("enabled"):
            outputs["oidcIssuerProfile"] = {
                "enabled": True,
                "issuerURL": f"https://{inputs['location']}.oic.prod-aks.azure.com/{guid(ctx, 'mock-tenant')}/"
                f"{guid(ctx, args.name + '/oidc')}/",
            }
        identity = inputs.get("identity") or {}
        ids = identity.get("userAssignedIdentities") or []
        outputs["identity"] = {  # ARM answers the identity list as a map keyed by identity id
            "type": identity.get("type"),
            "userAssignedIdentities": {
                i: {"principalId": guid(ctx, i + "/principal"), "clientId": guid(ctx, i + "/client")} for i in ids
            },
        }
    return rid, outputs


def _nic_ip(ctx: MockContext, config: dict[str, Any]) -> dict[str, Any]:
    """A standalone NIC's IP configuration as ARM answers it: the last usable address of its subnet (Azure hands
    out dynamic addresses in order; the scale sets' instances fill the subnet from its start, ``_scale_set_ip``)."""
    import ipaddress

    cidr = _subnet_cidr(ctx, str((config.get("subnet") or {}).get("id")))
    last = ipaddress.ip_network(cidr, strict=False).broadcast_address - 1  # Azure keeps .255 (broadcast)
    return {
        **config,
        "privateIPAddress": str(last),
        "privateIPAddressVersion": "IPv4",
        "provisioningState": "Succeeded",
    }


_VMSS_VM = re.compile(r"^virtualMachineScaleSets/(?P<vmss>[^/]+)/virtualMachines/(?P<index>\d+)$")


def _scale_set_ip(ctx: MockContext, vmss_name: str, index: int) -> str:
    """The address Azure would give instance ``index``: scale sets on one subnet fill it in name order.

    (Azure fills it in creation order; registration order under mocks varies between runs, names do not.)
    """
    sets: list[Registered] = sorted(
        ctx.find("azure-native:compute:VirtualMachineScaleSet"),
        key=lambda r: (len(r.inputs["vmScaleSetName"]), r.inputs["vmScaleSetName"]),
    )
    target = next((r for r in sets if r.inputs.get("vmScaleSetName") == vmss_name), None)
    if target is None:
        raise LookupError(f"ResourceNotFound: no scale set {vmss_name}")
    capacity = int(target.inputs["sku"]["capacity"])
    if not 0 <= index < capacity:
        raise LookupError(f"ResourceNotFound: {vmss_name} has no instance {index}")

    def subnet_of(r: Registered) -> str:
        nic = r.inputs["virtualMachineProfile"]["networkProfile"]["networkInterfaceConfigurations"][0]
        return str(nic["ipConfigurations"][0]["subnet"]["id"])

    subnet_id = subnet_of(target)
    before = 0
    for r in sets:
        if r is target:
            break
        if subnet_of(r) == subnet_id:
            before += int(r.inputs["sku"]["capacity"])
    cidr = _subnet_cidr(ctx, subnet_id)
    return ctx.ips(cidr, before + index + 1)[before + index]


def _get_resource(args: Any, ctx: MockContext) -> dict[str, Any]:
    a = dict(args.args)
    m = _VMSS_VM.match(a.get("parentResourcePath", ""))
    if (
        a.get("resourceProviderNamespace") != "Microsoft.Compute"
        or a.get("resourceType") != "networkInterfaces"
        or m is None
    ):
        raise LookupError(f"the mocked Azure answers getResource only for VMSS VM network interfaces, not {a}")
    # No check of a["apiVersion"]: azure-native sends its own resources API version on an invoke's GET
    # whatever the program passes (review 2026-12-01 Azure A4), so a mock that judged it would test
    # something the real provider never does.
    ip = _scale_set_ip(ctx, m["vmss"], int(m["index"]))
    nic_id = f"{_rg_id(ctx, a['resourceGroupName'])}/providers/Microsoft.Compute/{a['parentResourcePath']}"
    nic_id += f"/networkInterfaces/{a['resourceName']}"
    return {
        "id": nic_id,
        "name": a["resourceName"],
        "type": "Microsoft.Compute/virtualMachineScaleSets/virtualMachines/networkInterfaces",
        "location": ctx.region,
        "properties": {
            "provisioningState": "Succeeded",
            "primary": True,
            "enableAcceleratedNetworking": True,
            "ipConfigurations": [
                {
                    "name": "ipconfig1",
                    "properties": {
                        "privateIPAddress": ip,
                        "privateIPAllocationMethod": "Dynamic",
                        "privateIPAddressVersion": "IPv4",
                        "primary": True,
                    },
                }
            ],
        },
        "tags": {},
    }


def _client_config(args: Any, ctx: MockContext) -> dict[str, Any]:
    """``authorization:getClientConfig``: who runs the program (a mocked user)."""
    return {
        "clientId": guid(ctx, "mock-client"),
        "objectId": guid(ctx, "mock-deployer"),
        "subscriptionId": subscription(ctx),
        "tenantId": guid(ctx, "mock-tenant"),
    }


def _user_credentials(args: Any, ctx: MockContext) -> dict[str, Any]:
    """``containerservice:listManagedClusterUserCredentials``: a kubeconfig without secrets (local accounts off,
    ``format=exec``), as ``az aks get-credentials`` writes it for a Microsoft Entra ID cluster."""
    import base64

    a = dict(args.args)
    name = a["resourceName"]
    body = (
        "apiVersion: v1\nkind: Config\nclusters:\n- name: {n}\n  cluster:\n    certificate-authority-data: {ca}\n"
        "    server: https://{n}.hcp.azmk8s.io:443\ncontexts: []\nusers: []\n"
    ).format(n=name, ca=base64.b64encode(b"MOCK-AKS-CA").decode())
    return {"kubeconfigs": [{"name": "clusterUser", "value": base64.b64encode(body.encode()).decode()}]}


INVOKES = {
    "azure-native:resources:getResource": _get_resource,
    "azure-native:authorization:getClientConfig": _client_config,
    "azure-native:containerservice:listManagedClusterUserCredentials": _user_credentials,
}
