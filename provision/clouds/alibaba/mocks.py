"""The mocked Alibaba Cloud: realistic ids, private IPs from the vSwitch, NAS domains, image lookups.

Answers are deterministic (derived from logical names with ``ctx.hex_id``) so golden files stay stable.
Id formats follow the provider's import ids (``vpc-...``, ``vsw-...``, ``sg-...``, ``i-...``, ``ngw-...``,
``eip-...``, ``ds-...``, NAS ``<fs_id>:<mount_target_domain>``, CPFS ``cpfs-...``; RAM roles and policies by
name, ``role:<policy>:<type>:<role>`` for role policy attachments).
"""

from __future__ import annotations

import ipaddress
import re
from typing import TYPE_CHECKING, Any

from provision.clouds.mockids import hex_id

if TYPE_CHECKING:  # annotations only: the id formats below are read without Pulumi (userdata.mock_cpfs_export)
    from provision.clouds.mocking import MockContext

#: Documentation range (RFC 5737 TEST-NET-2) for public EIPs, so no real address appears in tests.
_PUBLIC_NET = "198.51.100.0/24"
_IMAGE_DATE = "20250917"


def _alnum(ctx: MockContext, name: str, length: int) -> str:
    return ctx.hex_id(name, length)


def cpfs_file_system_id(name: str) -> str:
    """The mocked id of the CPFS file system with logical name ``name``."""
    return f"cpfs-{hex_id(name, 16)}"


def cpfs_export_id(name: str) -> str:
    """The mocked export id of the CPFS protocol mount target with logical name ``name``."""
    return f"exp-{hex_id(name, 16)}"


def _find_by_id(ctx: MockContext, rid: str) -> Any:
    for r in ctx.ledger:
        if r.id == rid:
            return r
    return None


def _instance(name: str, inputs: dict[str, Any], ctx: MockContext) -> tuple[str, dict[str, Any]]:
    vswitch = _find_by_id(ctx, inputs.get("vswitchId", ""))
    if vswitch is None:
        raise ValueError(f"instance {name}: vswitchId {inputs.get('vswitchId')!r} is not a registered vSwitch")
    match = re.search(r"-(\d+)$", name)
    rank = int(match.group(1)) if match else 0
    # Alibaba reserves the first and the last three addresses of a vSwitch; nodes get .1, .2, ... by rank, the
    # Slurm controller (no rank) the last usable address.
    net = ipaddress.ip_network(vswitch.inputs["cidrBlock"])
    ip = str(net[rank + 1] if match else net[-4])
    return f"i-{_alnum(ctx, name, 20)}", {
        **inputs,
        "privateIp": ip,
        "primaryIpAddress": ip,
        "publicIp": "",
        "availabilityZone": vswitch.inputs.get("zoneId", ""),
        "status": inputs.get("status", "Running"),
        "osType": "linux",
        "instanceChargeType": inputs.get("instanceChargeType", "PostPaid"),
    }


def _file_system(name: str, inputs: dict[str, Any], ctx: MockContext) -> str:
    kind = inputs.get("fileSystemType", "standard")
    if kind == "cpfs":
        return cpfs_file_system_id(name)
    if kind == "extreme":
        return f"extreme-{_alnum(ctx, name, 8)}"
    return _alnum(ctx, name, 10)


def _mount_target(name: str, inputs: dict[str, Any], ctx: MockContext) -> tuple[str, dict[str, Any]]:
    fs_id = inputs["fileSystemId"]
    fs = _find_by_id(ctx, fs_id)
    kind = fs.inputs.get("fileSystemType", "standard") if fs else "standard"
    suffix = _alnum(ctx, name, 5)
    domain = (
        f"{fs_id}-{suffix}.{ctx.region}.extreme.nas.aliyuncs.com"
        if kind == "extreme"
        else f"{fs_id}-{suffix}.{ctx.region}.nas.aliyuncs.com"
    )
    return f"{fs_id}:{domain}", {**inputs, "mountTargetDomain": domain, "status": "Active"}


def resource(args: Any, ctx: MockContext) -> tuple[str, dict[str, Any]]:
    """The mocked cloud's answer to one resource registration."""
    typ, name, inputs = args.typ, args.name, dict(args.inputs)
    if typ == "alicloud:vpc/network:Network":
        return f"vpc-{_alnum(ctx, name, 21)}", {
            **inputs,
            "routeTableId": f"vtb-{_alnum(ctx, name + 'rt', 21)}",
            "routerId": f"vrt-{_alnum(ctx, name + 'r', 21)}",
            "status": "Available",
        }
    if typ == "alicloud:vpc/switch:Switch":
        return f"vsw-{_alnum(ctx, name, 21)}", {**inputs, "status": "Available"}
    if typ == "alicloud:ecs/securityGroup:SecurityGroup":
        return f"sg-{_alnum(ctx, name, 20)}", inputs
    if typ == "alicloud:ecs/securityGroupRule:SecurityGroupRule":
        source = inputs.get("cidrIp") or inputs.get("ipv6CidrIp") or inputs.get("sourceSecurityGroupId", "")
        rid = ":".join(
            str(inputs.get(k, "")) for k in ("securityGroupId", "type", "ipProtocol", "portRange", "nicType")
        )
        return f"{rid}:{source}:{inputs.get('policy', 'accept')}:{inputs.get('priority', 1)}", inputs
    if typ == "alicloud:vpc/natGateway:NatGateway":
        return f"ngw-{_alnum(ctx, name, 21)}", {
            **inputs,
            "snatTableIds": f"stb-{_alnum(ctx, name + 'snat', 21)}",
            "forwardTableIds": f"ftb-{_alnum(ctx, name + 'dnat', 21)}",
            "status": "Available",
        }
    if typ == "alicloud:ecs/eipAddress:EipAddress":
        rid = f"eip-{_alnum(ctx, name, 21)}"
        ip = ctx.ips(_PUBLIC_NET, 250, skip=1)[int(ctx.hex_id(name, 4), 16) % 250]
        return rid, {**inputs, "ipAddress": ip, "allocationId": rid, "status": "Available"}
    if typ == "alicloud:ecs/eipAssociation:EipAssociation":
        return f"{inputs['allocationId']}:{inputs['instanceId']}", inputs
    if typ == "alicloud:vpc/snatEntry:SnatEntry":
        entry = f"snat-{_alnum(ctx, name, 21)}"
        return f"{inputs['snatTableId']}:{entry}", {**inputs, "snatEntryId": entry, "status": "Available"}
    if typ == "alicloud:ecs/ecsKeyPair:EcsKeyPair":
        fingerprint = ":".join(ctx.hex_id(name + "fp", 32)[i : i + 2] for i in range(0, 32, 2))
        return inputs["keyPairName"], {**inputs, "fingerPrint": fingerprint}
    if typ == "alicloud:ecs/ecsDeploymentSet:EcsDeploymentSet":
        return f"ds-{_alnum(ctx, name, 20)}", inputs
    if typ == "alicloud:ecs/instance:Instance":
        return _instance(name, inputs, ctx)
    if typ == "alicloud:nas/fileSystem:FileSystem":
        return _file_system(name, inputs, ctx), {**inputs, "status": "Running", "regionId": ctx.region}
    if typ == "alicloud:nas/accessGroup:AccessGroup":
        return f"{inputs['accessGroupName']}:{inputs.get('fileSystemType', 'standard')}", inputs
    if typ == "alicloud:nas/accessRule:AccessRule":
        rule = str(int(ctx.hex_id(name, 4), 16) % 1000 + 1)
        return f"{inputs['accessGroupName']}:{rule}:{inputs.get('fileSystemType', 'standard')}", {
            **inputs,
            "accessRuleId": rule,
        }
    if typ == "alicloud:nas/mountTarget:MountTarget":
        return _mount_target(name, inputs, ctx)
    if typ == "alicloud:nas/protocolService:ProtocolService":
        ptc = f"ptc-{_alnum(ctx, name, 16)}"
        return f"{inputs['fileSystemId']}:{ptc}", {**inputs, "protocolServiceId": ptc, "status": "Running"}
    if typ == "alicloud:nas/protocolMountTarget:ProtocolMountTarget":
        exp = cpfs_export_id(name)
        rid = f"{inputs['fileSystemId']}:{inputs['protocolServiceId']}:{exp}"
        return rid, {**inputs, "exportId": exp, "status": "Active"}
    if typ == "alicloud:nas/fileset:Fileset":  # provider id: <file_system_id>:<fileset_id>
        fset = f"fset-{_alnum(ctx, name, 16)}"
        return f"{inputs['fileSystemId']}:{fset}", {**inputs, "filesetId": fset, "status": "CREATED"}
    if typ == "alicloud:nas/dataFlow:DataFlow":  # provider id: <file_system_id>:<data_flow_id>
        flow = f"df-{_alnum(ctx, name, 16)}"
        return f"{inputs['fileSystemId']}:{flow}", {**inputs, "dataFlowId": flow, "status": "Running"}
    if typ in _RAM:
        return _RAM[typ](inputs, ctx)
    if typ in _ACK:
        return _ACK[typ](name, inputs, ctx)
    raise ValueError(f"the mocked Alibaba cloud has no answer for {typ} ({name}); add one to alibaba/mocks.py")


def _ram_role(inputs: dict[str, Any], ctx: MockContext) -> tuple[str, dict[str, Any]]:
    role = inputs["roleName"]
    return role, {
        **inputs,
        "arn": f"acs:ram::{_ACCOUNT}:role/{role}",
        "roleId": ctx.num_id(role, 19),
        "maxSessionDuration": inputs.get("maxSessionDuration", 3600),
    }


def _ram_policy(inputs: dict[str, Any], ctx: MockContext) -> tuple[str, dict[str, Any]]:
    return inputs["policyName"], {**inputs, "defaultVersion": "v1", "type": "Custom", "attachmentCount": 0}


def _ram_role_attachment(inputs: dict[str, Any], ctx: MockContext) -> tuple[str, dict[str, Any]]:
    # The provider's id: role:<policy_name>:<policy_type>:<role_name> (alicloud_ram_role_policy_attachment import).
    return f"role:{inputs['policyName']}:{inputs['policyType']}:{inputs['roleName']}", inputs


#: The mocked account (16 digits, like Alibaba account ids) for RAM ARNs.
_ACCOUNT = "1234567890123456"
_RAM = {
    "alicloud:ram/role:Role": _ram_role,
    "alicloud:ram/policy:Policy": _ram_policy,
    "alicloud:ram/rolePolicyAttachment:RolePolicyAttachment": _ram_role_attachment,
}


def _ack_cluster(name: str, inputs: dict[str, Any], ctx: MockContext) -> tuple[str, dict[str, Any]]:
    """An ACK cluster: its id (``c`` + 32 hex) and endpoints (API server on a CLB, port 6443)."""
    cid = f"c{_alnum(ctx, name, 32)}"
    public = ipaddress.ip_network(_PUBLIC_NET)[int(ctx.hex_id(cid, 2), 16) % 250 + 2]
    connections = {
        "apiServerInternet": f"https://{public}:6443" if inputs.get("slbInternetEnabled", True) else "",
        "apiServerIntranet": f"https://172.16.{int(ctx.hex_id(cid + 'i', 2), 16)}.10:6443",
        "masterPublicIp": str(public),
        "serviceDomain": f"*.{cid}.{ctx.region or 'cn-hangzhou'}.alicontainer.com",
    }
    return cid, {
        **inputs,
        "connections": [connections],
        "workerRamRoleName": f"KubernetesWorkerRole-{ctx.hex_id(cid, 8)}",
        "slbId": f"lb-{_alnum(ctx, cid, 20)}",
        "slbIntranet": connections["apiServerIntranet"],
        "natGatewayId": "",
        "state": "running",
    }


def _ack_node_pool(name: str, inputs: dict[str, Any], ctx: MockContext) -> tuple[str, dict[str, Any]]:
    """A node pool: id ``<cluster id>:np<hex>`` (the provider's import id) and its ESS scaling group."""
    pool = f"np{_alnum(ctx, name, 32)}"
    return f"{inputs['clusterId']}:{pool}", {
        **inputs,
        "nodePoolId": pool,
        "scalingGroupId": f"asg-{_alnum(ctx, pool, 20)}",
        "nodeCount": int(str(inputs.get("desiredSize") or 0)),
    }


def _ack_addon(name: str, inputs: dict[str, Any], ctx: MockContext) -> tuple[str, dict[str, Any]]:
    return f"{inputs['clusterId']}:{inputs['name']}", {**inputs, "version": "v0.1.0", "canUpgrade": False}


_ACK = {
    "alicloud:cs/managedKubernetes:ManagedKubernetes": _ack_cluster,
    "alicloud:cs/nodePool:NodePool": _ack_node_pool,
    "alicloud:cs/kubernetesAddon:KubernetesAddon": _ack_addon,
}


def _get_cluster_credential(args: Any, ctx: MockContext) -> dict[str, Any]:
    """``cs.get_cluster_credential``: the cluster's CA (a placeholder) and short-lived client credentials."""
    cid = args.args.get("clusterId", "")
    if not any(r.id == cid for r in ctx.ledger):
        raise ValueError(f"the mocked ACK has no cluster {cid!r}")
    ca = {"clusterCert": "TU9DSy1BQ0stQ0E=", "clientCert": "", "clientKey": ""}
    return {"id": cid, "clusterId": cid, "clusterName": cid, "certificateAuthorities": [ca], "kubeConfig": ""}


def _get_images(args: Any, ctx: MockContext) -> dict[str, Any]:
    """``ecs.get_images``: the newest system image whose name matches ``nameRegex``."""
    regex = args.args.get("nameRegex", "")
    if args.args.get("owners") != "system":
        raise ValueError("the mocked image lookup only knows system (public) images")
    name = regex.strip("^$").replace("[0-9]{8}", _IMAGE_DATE).replace("\\.", ".")
    if not re.match(regex, name):
        raise ValueError(f"the mocked image lookup cannot invent an image name for {regex!r}")
    image = {
        "id": name,
        "imageId": name,
        "name": name,
        "architecture": "x86_64",
        "osType": "linux",
        "platform": "Ubuntu",
        "imageOwnerAlias": "system",
        "status": "Available",
        "creationTime": "2025-09-17T08:00:00Z",
        "size": 20,
    }
    return {"id": ctx.region or "mock", "ids": [name], "names": [name], "images": [image]}


INVOKES = {
    "alicloud:ecs/getImages:getImages": _get_images,
    "alicloud:cs/getClusterCredential:getClusterCredential": _get_cluster_credential,
}
