"""The mocked AWS: realistic ids, ARNs, DNS names and addresses for every resource and invoke we use.

Deterministic: every id derives from the logical name through ``ctx.hex_id``, so golden files are
stable. Node addresses come from the node subnet's CIDR, handed out in DESCENDING order so that
the adapter's rank ordering is exercised.
"""

from __future__ import annotations

import ipaddress
from typing import Any

import pulumi

from provision.clouds.mocking import CloudFaultError, MockContext

ACCOUNT = "123456789012"
#: EC2 DescribeInstances: at most 200 filter values in one call.
MAX_FILTER_VALUES = 200
DEFAULT_NODE_CIDR = "172.31.0.0/20"


def _region(ctx: MockContext) -> str:
    return ctx.region or "us-east-1"


def _arn(ctx: MockContext, service: str, resource: str, region: bool = True) -> str:
    return f"arn:aws:{service}:{_region(ctx) if region else ''}:{ACCOUNT}:{resource}"


def _autoname(args: Any, ctx: MockContext, key: str = "name") -> str:
    return str(args.inputs.get(key) or f"{args.name}-{ctx.hex_id(args.name, 7)}")


def _public_ip(ctx: MockContext, name: str) -> str:
    # TEST-NET-2 (RFC 5737): never a real address.
    return f"198.51.100.{int(ctx.hex_id(name, 4), 16) % 254 + 1}"


def node_cidr(ctx: MockContext) -> str:
    """The CIDR of the node subnet the program created (a default-VPC-like range otherwise)."""
    for r in ctx.find("aws:ec2/subnet:Subnet"):
        if r.name.endswith("-private"):
            return str(r.inputs["cidrBlock"])
    return DEFAULT_NODE_CIDR


def instance_ids(ctx: MockContext, seed: str, count: int) -> list[str]:
    return [f"i-{ctx.hex_id(f'{seed}/{i}')}" for i in range(count)]


def resource(args: pulumi.runtime.MockResourceArgs, ctx: MockContext) -> tuple[str, dict[str, Any]]:
    """The id and outputs AWS would return for one resource."""
    typ, name, inputs = args.typ, args.name, dict(args.inputs)
    hx = ctx.hex_id(name)
    out: dict[str, Any] = dict(inputs)
    if "tags" in inputs:
        out["tagsAll"] = inputs["tags"]
    if typ == "aws:ec2/vpc:Vpc":
        rid = f"vpc-{hx}"
        out.update(
            arn=_arn(ctx, "ec2", f"vpc/{rid}"),
            defaultRouteTableId=f"rtb-{ctx.hex_id(name + '/main')}",
            mainRouteTableId=f"rtb-{ctx.hex_id(name + '/main')}",
            defaultSecurityGroupId=f"sg-{ctx.hex_id(name + '/default')}",
            ownerId=ACCOUNT,
        )
    elif typ == "aws:ec2/subnet:Subnet":
        rid = f"subnet-{hx}"
        out.update(arn=_arn(ctx, "ec2", f"subnet/{rid}"), ownerId=ACCOUNT)
        # A subnet is created in a zone given by name or by ID; EC2 reports both (this account's mapping).
        by_name = zone_ids(_region(ctx))
        by_id = {z: n for n, z in by_name.items()}
        zone, zone_id = inputs.get("availabilityZone"), inputs.get("availabilityZoneId")
        out.update(
            availabilityZone=zone or by_id.get(str(zone_id)), availabilityZoneId=zone_id or by_name.get(str(zone))
        )
    elif typ == "aws:ec2/internetGateway:InternetGateway":
        rid = f"igw-{hx}"
        out.update(arn=_arn(ctx, "ec2", f"internet-gateway/{rid}"), ownerId=ACCOUNT)
    elif typ == "aws:ec2/eip:Eip":
        rid = f"eipalloc-{hx}"
        ip = _public_ip(ctx, name)
        out.update(allocationId=rid, publicIp=ip, publicDns=f"ec2-{ip.replace('.', '-')}.compute-1.amazonaws.com")
    elif typ == "aws:ec2/natGateway:NatGateway":
        rid = f"nat-{hx}"
        out.update(privateIp="10.0.64.4", publicIp=_public_ip(ctx, name))
    elif typ == "aws:ec2/routeTable:RouteTable":
        rid = f"rtb-{hx}"
        out.update(arn=_arn(ctx, "ec2", f"route-table/{rid}"), ownerId=ACCOUNT)
    elif typ == "aws:ec2/route:Route":
        rid = f"r-{inputs.get('routeTableId', 'rtb')}{int(hx[:8], 16) % 10**10}"
        out.update(state="active")
    elif typ == "aws:ec2/routeTableAssociation:RouteTableAssociation":
        rid = f"rtbassoc-{hx}"
    elif typ == "aws:ec2/vpcPeeringConnection:VpcPeeringConnection":
        rid = f"pcx-{hx}"
        out.update(acceptStatus="active", peerOwnerId=ACCOUNT, peerRegion=ctx.region)
    elif typ == "aws:ec2/vpcEndpoint:VpcEndpoint":
        rid = f"vpce-{hx}"
        out.update(arn=_arn(ctx, "ec2", f"vpc-endpoint/{rid}"), prefixListId=f"pl-{hx[:8]}", state="available")
    elif typ == "aws:ec2/securityGroup:SecurityGroup":
        rid = f"sg-{hx}"
        out.update(arn=_arn(ctx, "ec2", f"security-group/{rid}"), ownerId=ACCOUNT, name=_autoname(args, ctx))
    elif typ in ("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
                 "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"):  # fmt: skip
        rid = f"sgr-{hx}"
        out.update(arn=_arn(ctx, "ec2", f"security-group-rule/{rid}"), securityGroupRuleId=rid)
    elif typ == "aws:ec2/placementGroup:PlacementGroup":
        rid = _autoname(args, ctx)
        out.update(name=rid, placementGroupId=f"pg-{hx}", arn=_arn(ctx, "ec2", f"placement-group/{rid}"))
    elif typ == "aws:iam/role:Role":
        rid = _autoname(args, ctx)
        out.update(name=rid, arn=_arn(ctx, "iam", f"role/{rid}", region=False), uniqueId=f"AROA{hx[:17].upper()}")
    elif typ == "aws:iam/instanceProfile:InstanceProfile":
        rid = _autoname(args, ctx)
        out.update(name=rid, arn=_arn(ctx, "iam", f"instance-profile/{rid}", region=False))
    elif typ == "aws:iam/rolePolicyAttachment:RolePolicyAttachment":
        rid = f"{inputs.get('role', name)}-{hx[:20]}"
    elif typ == "aws:ec2/keyPair:KeyPair":
        rid = _autoname(args, ctx, "keyName")
        out.update(keyName=rid, keyPairId=f"key-{hx}", arn=_arn(ctx, "ec2", f"key-pair/{rid}"),
                   fingerprint=":".join(hx[i : i + 2] for i in range(0, 16, 2)))  # fmt: skip
    elif typ == "aws:fsx/lustreFileSystem:LustreFileSystem":
        rid = f"fs-{hx}"
        scratch1 = inputs.get("deploymentType") == "SCRATCH_1"
        out.update(
            arn=_arn(ctx, "fsx", f"file-system/{rid}"),
            dnsName=f"{rid}.fsx.{_region(ctx)}.amazonaws.com",
            mountName="fsx" if scratch1 else ctx.hex_id(name + "/mount", 8),
            networkInterfaceIds=[f"eni-{ctx.hex_id(name + f'/eni{i}')}" for i in range(2)],
            ownerId=ACCOUNT,
        )
    elif typ == "aws:ec2/launchTemplate:LaunchTemplate":
        rid = f"lt-{hx}"
        out.update(name=_autoname(args, ctx), arn=_arn(ctx, "ec2", f"launch-template/{rid}"),
                   latestVersion=1, defaultVersion=1)  # fmt: skip
    elif typ == "aws:ec2/fleet:Fleet":
        rid = f"fleet-{hx[:8]}-{hx[8:12]}-4{hx[12:15]}-a{hx[15:17]}{ctx.hex_id(name + '/u', 11)[:11]}"
        spec = inputs.get("targetCapacitySpecification") or {}
        count = int(spec.get("totalTargetCapacity") or 0)
        lifecycle = "spot" if spec.get("defaultTargetCapacityType") == "spot" else "on-demand"
        out.update(
            arn=_arn(ctx, "ec2", f"fleet/{rid}"),
            fleetState="active",
            fulfilledCapacity=float(count),
            fulfilledOnDemandCapacity=float(count if lifecycle == "on-demand" else 0),
            fleetInstanceSets=[
                {"instanceIds": instance_ids(ctx, rid, count), "lifecycle": lifecycle, "platform": "Linux"}
            ],
        )
    elif typ == "aws:ec2/instance:Instance":  # the Slurm controller: a private address in the node subnet
        rid = f"i-{hx[:17]}"
        ip = ctx.ips(node_cidr(ctx), 1, skip=6)[0]  # below the nodes' addresses (skip=10)
        out.update(arn=_arn(ctx, "ec2", f"instance/{rid}"), privateIp=ip, publicIp="", instanceState="running")
    elif typ == "aws:autoscaling/group:Group":
        rid = _autoname(args, ctx)
        out.update(name=rid, arn=_arn(ctx, "autoscaling", f"autoScalingGroup:{hx}:autoScalingGroupName/{rid}"))
    elif typ == "aws:autoscaling/schedule:Schedule":
        rid = str(inputs.get("scheduledActionName") or name)
        out.update(arn=_arn(ctx, "autoscaling", f"scheduledUpdateGroupAction:{hx}:scheduledActionName/{rid}"))
    elif typ == "aws:ec2/eipAssociation:EipAssociation":
        rid = f"eipassoc-{hx}"
    elif typ == "aws:resourcegroups/group:Group":
        rid = _autoname(args, ctx)
        out.update(name=rid, arn=_arn(ctx, "resource-groups", f"group/{rid}"))
    elif typ == "aws:resourcegroups/resource:Resource":
        rid = f"{inputs.get('groupArn')},{inputs.get('resourceArn')}"
    elif typ.startswith("aws:eks/"):
        rid = _eks(typ, name, inputs, out, ctx)
    else:
        rid = f"{name}-{hx[:8]}"
    return rid, out


#: Launch template settings a managed node group refuses (EKS user guide "Customize managed nodes with
#: launch templates", launch template basics).
LT_FORBIDDEN = ("iamInstanceProfile", "instanceInitiatedShutdownBehavior", "hibernationOptions")


def eks_rule_violations(typ: str, inputs: dict[str, Any], ctx: MockContext) -> list[str]:
    """What EKS refuses at create time for a cluster or managed node group (sources inline)."""
    out: list[str] = []
    if typ == "aws:eks/cluster:Cluster":
        ids = list((inputs.get("vpcConfig") or {}).get("subnetIds") or [])
        subnets = [r for r in ctx.find("aws:ec2/subnet:Subnet") if r.id in ids]
        zones = {r.outputs.get("availabilityZoneId") for r in subnets}
        # "Subnets specified must be in at least two different AZs" (EKS CreateCluster, VPC requirements).
        if len(zones) < 2:
            out.append(f"vpcConfig.subnetIds must span at least two Availability Zones, got {sorted(map(str, zones))}")
        # EKS user guide network-reqs.adoc "Subnet requirements for clusters" (UnsupportedAvailabilityZoneException).
        from provision.clouds.aws.kubeplan import EKS_UNSUPPORTED_ZONE_IDS

        refused = sorted(str(z) for z in zones if z in EKS_UNSUPPORTED_ZONE_IDS)
        if refused:
            out.append(
                f"vpcConfig.subnetIds include a subnet in {', '.join(refused)}: UnsupportedAvailabilityZoneException "
                "(EKS creates no cluster subnets in use1-az3, usw1-az2, cac1-az3)"
            )
    if typ != "aws:eks/nodeGroup:NodeGroup":
        return out
    scaling = inputs.get("scalingConfig") or {}
    if not scaling.get("minSize", 0) <= scaling.get("desiredSize", 0) <= scaling.get("maxSize", 0):
        out.append(f"scalingConfig needs minSize <= desiredSize <= maxSize, got {scaling}")
    lt_ref = (inputs.get("launchTemplate") or {}).get("id")
    lt = next((r.inputs for r in ctx.find("aws:ec2/launchTemplate:LaunchTemplate") if r.id == lt_ref), None)
    if lt_ref and lt is None:
        out.append(f"launch template {lt_ref} does not exist")
    if lt is not None:
        out += [f"the launch template sets {k}, which a managed node group forbids" for k in LT_FORBIDDEN if k in lt]
        if any("subnetId" in nic for nic in lt.get("networkInterfaces") or []):
            out.append("the launch template's network interfaces set subnetId, which a managed node group forbids")
        if lt.get("instanceType") and inputs.get("instanceTypes"):
            out.append("the instance type is set in both the launch template and the node group")
    if inputs.get("capacityType") == "CAPACITY_BLOCK":
        # Capacity Blocks: the type and market type live in the launch template (EKS "Capacity Blocks for ML").
        market = ((lt or {}).get("instanceMarketOptions") or {}).get("marketType")
        if inputs.get("instanceTypes") or not (lt or {}).get("instanceType") or market != "capacity-block":
            out.append("CAPACITY_BLOCK needs the instance type and marketType capacity-block in the launch template")
    return out


def _eks(typ: str, name: str, inputs: dict[str, Any], out: dict[str, Any], ctx: MockContext) -> str:
    """EKS answers: cluster endpoint/CA/cluster security group, node group ASG, add-on versions, ARNs."""
    hx = ctx.hex_id(name)
    for rule in eks_rule_violations(typ, inputs, ctx):
        raise CloudFaultError("InvalidParameterException", f"{typ} {name}: {rule}")
    if typ == "aws:eks/cluster:Cluster":
        cluster = str(inputs.get("name") or f"{name}-{ctx.hex_id(name, 7)}")
        vpc = dict(inputs.get("vpcConfig") or {})
        vpc.update(clusterSecurityGroupId=f"sg-{ctx.hex_id(name + '/cluster-sg')}", vpcId=f"vpc-{ctx.hex_id('vpc')}")
        out.update(
            name=cluster,
            arn=_arn(ctx, "eks", f"cluster/{cluster}"),
            endpoint=f"https://{hx[:32].upper()}.gr7.{_region(ctx)}.eks.amazonaws.com",
            certificateAuthority={"data": "TU9DSy1FS1MtQ0E="},
            vpcConfig=vpc,
            identities=[{"oidcs": [{"issuer": f"https://oidc.eks.{_region(ctx)}.amazonaws.com/id/{hx[:32].upper()}"}]}],
            platformVersion="eks.1",
            status="ACTIVE",
            clusterId=f"{hx[:8]}-{hx[8:12]}-{hx[12:16]}-{ctx.hex_id(name + '/id', 4)}-{ctx.hex_id(name, 12)}",
        )
        return cluster
    cluster = str(inputs.get("clusterName") or "")
    if typ == "aws:eks/nodeGroup:NodeGroup":
        group = str(inputs.get("nodeGroupName") or f"{name}-{hx[:7]}")
        asg = f"eks-{group}-{hx[:8]}-{hx[8:12]}-{hx[12:16]}-{hx[16:17]}"
        out.update(
            nodeGroupName=group,
            arn=_arn(ctx, "eks", f"nodegroup/{cluster}/{group}/{hx[:8]}"),
            resources=[{"autoscalingGroups": [{"name": asg}], "remoteAccessSecurityGroupId": ""}],
            status="ACTIVE",
            releaseVersion="1.35.0-20261120",
            version=None,
        )
        return f"{cluster}:{group}"
    if typ == "aws:eks/addon:Addon":
        addon = str(inputs["addonName"])
        out.update(arn=_arn(ctx, "eks", f"addon/{cluster}/{addon}/{hx[:8]}"), addonVersion="v1.0.0-eksbuild.1")
        return f"{cluster}:{addon}"
    if typ == "aws:eks/podIdentityAssociation:PodIdentityAssociation":
        assoc = f"a-{hx[:17]}"
        out.update(associationArn=_arn(ctx, "eks", f"podidentityassociation/{cluster}/{assoc}"), associationId=assoc)
        return f"{cluster},{assoc}"
    raise KeyError(f"the mocked AWS does not know resource type {typ!r}; add it to provision/clouds/aws/mocks.py")


# ---------------------------------------------------------------------- invokes


def _filters(args: Any) -> dict[str, list[str]]:
    return {f["name"]: list(f.get("values") or []) for f in args.args.get("filters") or []}


def get_parameter(args: Any, ctx: MockContext) -> dict[str, Any]:
    name = str(args.args["name"])
    ami = f"ami-0{ctx.hex_id(f'{_region(ctx)}{name}', 16)}"
    return {"id": name, "name": name, "type": "String", "value": ami, "insecureValue": ami, "version": 42,
            "arn": _arn(ctx, "ssm", f"parameter{name}", region=True).replace(ACCOUNT, "")}  # fmt: skip


def _launched(ctx: MockContext) -> list[str]:
    """Every instance the mocked fleets launched, in launch order."""
    return [
        i
        for r in ctx.find("aws:ec2/fleet:Fleet")
        for s in r.outputs.get("fleetInstanceSets") or []
        for i in s.get("instanceIds") or []
    ]


def get_instances(args: Any, ctx: MockContext) -> dict[str, Any]:
    filters = _filters(args)
    tags = dict(args.args.get("instanceTags") or {})
    states = list(args.args.get("instanceStateNames") or [])
    # The provider turns tags and states into filters too; EC2 counts every value against its limit.
    values = sum(len(v) for v in filters.values()) + len(tags) + len(states)
    if values > MAX_FILTER_VALUES:
        raise CloudFaultError(
            "FilterLimitExceeded",
            f"The maximum number of filter values specified on a single call is {MAX_FILTER_VALUES}",
        )
    if "instance-id" in filters:
        ids = filters["instance-id"]
        launched = _launched(ctx)
        order = {i: n for n, i in enumerate(launched)}
        # One stable address per instance, whichever lookup asks; launch order is not address order,
        # so the fleet's addresses are handed out highest first.
        pool = ctx.ips(node_cidr(ctx), len(launched) + len(ids), skip=10)
        known = list(reversed(pool[: len(launched)]))
        ips = [known[order[i]] if i in order else pool[len(launched) + n] for n, i in enumerate(ids)]
    else:
        group = tags.get("aws:autoscaling:groupName", "")
        asg = [r for r in ctx.find("aws:autoscaling/group:Group") if r.outputs.get("name") == group]
        count = int(asg[0].inputs.get("desiredCapacity") or 0) if asg else 0
        ids = instance_ids(ctx, group, count)
        ips = list(reversed(ctx.ips(node_cidr(ctx), len(ids), skip=10)))
    return {
        "id": _region(ctx),
        "ids": ids,
        "privateIps": ips,
        "publicIps": [],
        "instanceTags": tags,
        "instanceStateNames": states,
        "filters": args.args.get("filters") or [],
        "region": _region(ctx),
    }


def get_network_interface(args: Any, ctx: MockContext) -> dict[str, Any]:
    filters = _filters(args)
    instance = (filters.get("attachment.instance-id") or ["i-unknown"])[0]
    eni = f"eni-{ctx.hex_id(instance + '/primary')}"
    return {
        "id": eni,
        "interfaceType": (filters.get("interface-type") or ["interface"])[0],
        "privateIp": str(ipaddress.ip_network(node_cidr(ctx))[10]),
        "attachments": [{"instanceId": instance, "deviceIndex": 0, "networkCardIndex": 0}],
        "region": _region(ctx),
    }


def get_caller_identity(args: Any, ctx: MockContext) -> dict[str, Any]:
    return {
        "id": ACCOUNT,
        "accountId": ACCOUNT,
        "arn": f"arn:aws:iam::{ACCOUNT}:user/provision-mock",
        "userId": "AIDAPROVISIONMOCK0000",
    }


#: Region words in zone IDs (``us-east-1`` -> ``use1``, ``ap-northeast-1`` -> ``apne1``, ``ca-central-1`` -> ``cac1``).
_ZONE_ID_WORDS = {"northeast": "ne", "northwest": "nw", "southeast": "se", "southwest": "sw", "central": "c",
                  "east": "e", "west": "w", "north": "n", "south": "s"}  # fmt: skip


def zone_ids(region: str) -> dict[str, str]:
    """The mocked account's zone names -> zone IDs. AZ names map to IDs per account; this account maps
    ``<region>b`` to ``az3`` (so us-east-1b is ``use1-az3``, which EKS refuses), as some real accounts do."""
    parts = region.split("-")
    prefix = parts[0] + "".join(_ZONE_ID_WORDS.get(w, w[:1]) for w in parts[1:-1]) + parts[-1]
    count = 6 if region == "us-east-1" else 3
    order = [1, 3, 2, *range(4, count + 1)]
    return {f"{region}{chr(ord('a') + i)}": f"{prefix}-az{order[i]}" for i in range(count)}


def get_availability_zones(args: Any, ctx: MockContext) -> dict[str, Any]:
    a = args.args
    state = a.get("state")
    if state is not None and state not in ("available", "information", "impaired", "unavailable"):
        # ec2 DescribeAvailabilityZones filter "state" (AvailabilityZoneState enum).
        raise CloudFaultError("InvalidParameterValue", f"Value ({state}) for parameter state is invalid")
    excluded_ids = set(a.get("excludeZoneIds") or [])
    excluded_names = set(a.get("excludeNames") or [])
    region = str(a.get("region") or _region(ctx))
    pairs = [(n, z) for n, z in zone_ids(region).items() if z not in excluded_ids and n not in excluded_names]
    return {
        "id": region,
        "names": [n for n, _ in pairs],
        "zoneIds": [z for _, z in pairs],
        "groupNames": [region] * len(pairs),
        "state": state,
        "excludeZoneIds": sorted(excluded_ids),
        "excludeNames": sorted(excluded_names),
        "filters": a.get("filters"),
        "region": region,
    }


INVOKES = {
    "aws:ssm/getParameter:getParameter": get_parameter,
    "aws:index/getAvailabilityZones:getAvailabilityZones": get_availability_zones,
    "aws:ec2/getInstances:getInstances": get_instances,
    "aws:ec2/getNetworkInterface:getNetworkInterface": get_network_interface,
    "aws:index/getCallerIdentity:getCallerIdentity": get_caller_identity,
}


def listed_fault(
    typ: str, rid: str, outputs: dict[str, Any], fault: Any, ctx: MockContext
) -> tuple[dict[str, Any], CloudFaultError | None] | None:
    """A ``Fault(reported="listed")`` as EC2 answers it: an instant fleet is created without its instances and
    lists the miss in ``Errors[]`` (provision/clouds/aws/stockout.py); ``None`` for other types."""
    if typ != "aws:ec2/fleet:Fleet":
        return None
    sets = outputs.get("fleetInstanceSets") or [{}]
    lifecycle = sets[0].get("lifecycle", "on-demand")
    ctx.listed_errors[rid] = [{"ErrorCode": fault.code, "ErrorMessage": fault.message, "Lifecycle": lifecycle}]
    return {**outputs, "fleetInstanceSets": [], "fulfilledCapacity": 0.0, "fulfilledOnDemandCapacity": 0.0}, None


class ListedErrors:
    """A ``(service, region)`` client factory answering DescribeFleets from the mocked cloud's error lists."""

    def __init__(self, listed: dict[str, list[dict[str, Any]]]) -> None:
        self._listed = listed

    def __call__(self, service: str, region: str) -> ListedErrors:
        return self

    def describe_fleets(self, FleetIds: list[str]) -> dict[str, Any]:  # noqa: N803  # the boto3 parameter name
        return {"Fleets": [{"FleetId": i, "Type": "instant", "Errors": self._listed.get(i, [])} for i in FleetIds]}
