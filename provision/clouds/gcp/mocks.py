"""The mocked GCP: realistic, deterministic answers for the resources and invokes the adapter uses.

Names follow the GCP provider's autonaming (logical name + "-" + 7 hex characters), ids and self
links the API's formats (``projects/{p}/global/networks/{n}``, ``https://www.googleapis.com/compute/
v1/...``), service-account emails ``{id}@{project}.iam.gserviceaccount.com``, private IPs come from
the subnet's CIDR after the two addresses GCP reserves at the start of every subnet. Everything is
derived from logical names, so golden files are stable.
"""

from __future__ import annotations

import hashlib
import ipaddress
from functools import lru_cache
from typing import Any

import pulumi

from provision.clouds.mocking import CloudFaultError, MockContext

API = "https://www.googleapis.com/compute/v1"
#: A private-services range the mocked Service Networking allocates (outside the default subnets).
PSA_BASE = "10.200.0.0"


def project(inputs: dict[str, Any]) -> str:
    """The resource's project: its input, else the provider's ``gcp:project`` config, else a placeholder."""
    return inputs.get("project") or pulumi.runtime.get_config("gcp:project") or "mock-project"


def _name(args: pulumi.runtime.MockResourceArgs, ctx: MockContext) -> str:
    return args.inputs.get("name") or f"{args.name}-{ctx.hex_id(args.name, 7)}"


def _last(url: str) -> str:
    return url.rstrip("/").rsplit("/", 1)[-1]


def _zone_of(inputs: dict[str, Any], ctx: MockContext) -> str:
    return inputs.get("zone") or f"{ctx.region}-a"


def _migs(ctx: MockContext) -> list[Any]:
    return ctx.find("gcp:compute/instanceGroupManager:InstanceGroupManager")


def group_size(ctx: MockContext, mig: Any) -> int:
    """The MIG's size: its target size plus what its resize requests added."""
    resized = sum(
        int(r.inputs.get("resizeBy", 0))
        for r in ctx.find("gcp:compute/resizeRequest:ResizeRequest")
        if r.inputs.get("instanceGroupManager") == mig.outputs.get("name")
    )
    return int(mig.inputs.get("targetSize", 0)) + resized


def instance_links(ctx: MockContext, mig: Any) -> list[str]:
    """Self links of the VMs a MIG holds, sorted: ``{base_instance_name}-{4 chars}`` as GCP names them."""
    out = mig.outputs
    return list(
        _links(out["instanceGroup"], out["project"], out["zone"], mig.inputs["baseInstanceName"], group_size(ctx, mig))
    )


@lru_cache(maxsize=64)
def _links(group: str, proj: str, zone: str, base: str, count: int) -> tuple[str, ...]:
    # Pure and memoised: one getInstance invoke per node would otherwise rebuild the list each time.
    names = sorted(f"{base}-{hashlib.sha256(f'{group}#{i}'.encode()).hexdigest()[:4]}" for i in range(count))
    return tuple(f"{API}/projects/{proj}/zones/{zone}/instances/{n}" for n in names)


@lru_cache(maxsize=64)
def _addresses(cidr: str, count: int) -> tuple[str, ...]:
    """``count`` VM addresses of ``cidr`` after the network and gateway addresses GCP reserves."""
    hosts = ipaddress.ip_network(cidr).hosts()
    next(hosts)  # .1 is the subnet's gateway
    return tuple(str(next(hosts)) for _ in range(count))


def _nic0_cidr(ctx: MockContext, mig: Any) -> str:
    """The CIDR of the subnet the MIG's template puts nic0 on (the node's primary IP comes from it)."""
    link = mig.inputs["versions"][0]["instanceTemplate"]
    for tmpl in ctx.find("gcp:compute/regionInstanceTemplate:RegionInstanceTemplate"):
        if tmpl.outputs.get("selfLink") == link:
            subnet = tmpl.inputs["networkInterfaces"][0]["subnetwork"]
            for s in ctx.find("gcp:compute/subnetwork:Subnetwork"):
                if s.outputs.get("selfLink") == subnet:
                    return str(s.inputs["ipCidrRange"])
    raise KeyError(f"the mocked GCP cannot find nic0's subnet for template {link!r}")


def resource(args: pulumi.runtime.MockResourceArgs, ctx: MockContext) -> tuple[str, dict[str, Any]]:
    inputs = dict(args.inputs)
    typ = args.typ
    proj = project(inputs)
    out: dict[str, Any] = {**inputs, "project": proj}
    name = _name(args, ctx)
    region = inputs.get("region") or ctx.region
    if typ == "gcp:compute/network:Network":
        rid = f"projects/{proj}/global/networks/{name}"
        out.update(name=name, selfLink=f"{API}/{rid}", numericId=ctx.num_id(name), gatewayIpv4="")
    elif typ == "gcp:compute/subnetwork:Subnetwork":
        rid = f"projects/{proj}/regions/{region}/subnetworks/{name}"
        net = ipaddress.ip_network(inputs["ipCidrRange"])
        out.update(name=name, region=region, selfLink=f"{API}/{rid}", gatewayAddress=str(net.network_address + 1))
    elif typ == "gcp:compute/firewall:Firewall":
        rid = f"projects/{proj}/global/firewalls/{name}"
        out.update(name=name, selfLink=f"{API}/{rid}")
    elif typ == "gcp:compute/router:Router":
        rid = f"projects/{proj}/regions/{region}/routers/{name}"
        out.update(name=name, region=region, selfLink=f"{API}/{rid}")
    elif typ == "gcp:compute/routerNat:RouterNat":
        rid = f"{proj}/{region}/{_last(str(inputs.get('router', '')))}/{name}"
        out.update(name=name, region=region)
    elif typ == "gcp:compute/resourcePolicy:ResourcePolicy":
        rid = f"projects/{proj}/regions/{region}/resourcePolicies/{name}"
        out.update(name=name, region=region, selfLink=f"{API}/{rid}")
    elif typ == "gcp:compute/regionInstanceTemplate:RegionInstanceTemplate":
        rid = f"projects/{proj}/regions/{region}/instanceTemplates/{name}"
        out.update(name=name, region=region, selfLink=f"{API}/{rid}", numericId=ctx.num_id(name))
    elif typ == "gcp:compute/instanceGroupManager:InstanceGroupManager":
        zone = _zone_of(inputs, ctx)
        rid = f"projects/{proj}/zones/{zone}/instanceGroupManagers/{name}"
        group = f"{API}/projects/{proj}/zones/{zone}/instanceGroups/{name}"
        out.update(name=name, zone=zone, selfLink=f"{API}/{rid}", instanceGroup=group, fingerprint=ctx.hex_id(rid, 12))
    elif typ == "gcp:compute/resizeRequest:ResizeRequest":
        zone = _zone_of(inputs, ctx)
        mig = inputs["instanceGroupManager"]
        rid = f"projects/{proj}/zones/{zone}/instanceGroupManagers/{mig}/resizeRequests/{name}"
        out.update(name=name, zone=zone, state="ACCEPTED")
    elif typ == "gcp:compute/globalAddress:GlobalAddress":
        rid = f"projects/{proj}/global/addresses/{name}"
        out.update(name=name, address=inputs.get("address") or PSA_BASE, selfLink=f"{API}/{rid}")
    elif typ == "gcp:servicenetworking/connection:Connection":
        rid = f"{inputs['network']}:servicenetworking.googleapis.com"
        out.update(peering="servicenetworking-googleapis-com")
    elif typ == "gcp:serviceaccount/account:Account":
        email = f"{inputs['accountId']}@{proj}.iam.gserviceaccount.com"
        rid = f"projects/{proj}/serviceAccounts/{email}"
        out.update(email=email, member=f"serviceAccount:{email}", name=rid, uniqueId=ctx.num_id(email, 21))
    elif typ == "gcp:projects/iAMMember:IAMMember":
        rid = f"{inputs['project']}/{inputs['role']}/{inputs['member']}"
        out.update(etag=f"BwY{ctx.hex_id(rid, 9)}=")
    elif typ == "gcp:lustre/instance:Instance":
        rid = f"projects/{proj}/locations/{inputs['location']}/instances/{inputs['instanceId']}"
        ip = ipaddress.ip_address(PSA_BASE) + 2
        out.update(name=rid, mountPoint=f"{ip}@tcp:/{inputs['filesystem']}", state="ACTIVE")
    elif typ == "gcp:filestore/instance:Instance":
        rid = f"projects/{proj}/locations/{inputs['location']}/instances/{name}"
        networks = [
            {**n, "ipAddresses": ["10.201.0.2"], "reservedIpRange": "10.201.0.0/29"} for n in inputs["networks"]
        ]
        out.update(name=name, networks=networks)
    elif typ == "gcp:parallelstore/instance:Instance":
        rid = f"projects/{proj}/locations/{inputs['location']}/instances/{inputs['instanceId']}"
        first = ipaddress.ip_address(PSA_BASE) + 2
        out.update(name=rid, accessPoints=[str(first + i) for i in range(3)], daosVersion="2.6", state="ACTIVE")
    elif typ == "gcp:container/cluster:Cluster":
        rid, extra = _gke_cluster(inputs, proj, ctx)
        out.update(extra)
    elif typ == "gcp:container/nodePool:NodePool":
        for rule in node_pool_violations(inputs):
            raise CloudFaultError("INVALID_ARGUMENT", f"{typ} {args.name}: {rule}")
        cluster = str(inputs["cluster"])
        rid = f"{cluster}/nodePools/{inputs['name']}"
        zones = inputs.get("nodeLocations") or [f"{ctx.region}-a"]
        groups = [f"{API}/projects/{proj}/zones/{z}/instanceGroupManagers/gke-{inputs['name']}-{ctx.hex_id(rid, 8)}-grp"
                  for z in zones]  # fmt: skip
        out.update(instanceGroupUrls=groups, managedInstanceGroupUrls=groups, operation="", version="1.34.1-gke.1000")
    elif typ == "gcp:compute/instance:Instance":  # the Slurm controller: the subnet's last address (nodes: first)
        zone = inputs.get("zone") or f"{ctx.region}-a"
        rid = f"projects/{proj}/zones/{zone}/instances/{name}"
        nics: list[dict[str, Any]] = []
        for nic in inputs.get("networkInterfaces") or []:
            subnet = next(
                s
                for s in ctx.find("gcp:compute/subnetwork:Subnetwork")
                if s.outputs.get("selfLink") == nic.get("subnetwork")
            )
            last = str(ipaddress.ip_network(subnet.inputs["ipCidrRange"]).broadcast_address - 1)
            nics.append({**nic, "name": f"nic{len(nics)}", "networkIp": last, "accessConfigs": []})
        out.update(name=name, zone=zone, selfLink=f"{API}/{rid}", instanceId=ctx.num_id(rid), networkInterfaces=nics,
                   currentStatus="RUNNING")  # fmt: skip
    elif typ == "gcp:compute/projectMetadataItem:ProjectMetadataItem":
        rid = str(inputs["key"])  # the provider's id is the key (resource_compute_project_metadata_item.go)
    elif typ == "gcp:projects/iAMCustomRole:IAMCustomRole":  # id and name: projects/P/roles/ID
        rid = f"projects/{proj}/roles/{inputs['roleId']}"
        out.update(name=rid, deleted=False, stage=inputs.get("stage") or "GA")
    elif typ == "gcp:cloudscheduler/job:Job":  # id format of resource_cloud_scheduler_job.go
        rid = f"projects/{proj}/locations/{inputs.get('region') or ctx.region}/jobs/{inputs['name']}"
        out.update(state="ENABLED", paused=bool(inputs.get("paused", False)))
    elif typ == "gcp:projects/serviceIdentity:ServiceIdentity":  # the service's agent (datalink.py)
        agent = str(inputs["service"]).split(".", 1)[0]
        email = f"service-{ctx.num_id(proj, 12)}@gcp-sa-{agent}.iam.gserviceaccount.com"
        rid = f"projects/{proj}/services/{inputs['service']}"
        out.update(email=email, member=f"serviceAccount:{email}")
    elif typ == "gcp:storage/bucketIAMMember:BucketIAMMember":  # id format of the provider's IAM member resources
        rid = f"b/{inputs['bucket']}/{inputs['role']}/{inputs['member']}"
        out.update(etag=f"CAE{ctx.hex_id(rid, 9)}=")
    elif typ == "gcp:serviceaccount/iAMMember:IAMMember":
        rid = f"{inputs['serviceAccountId']}/{inputs['role']}/{inputs['member']}"
        out.update(etag=f"BwY{ctx.hex_id(rid, 9)}=")
    else:
        raise KeyError(f"the mocked GCP does not know resource type {typ!r}; add it to provision/clouds/gcp/mocks.py")
    out["id"] = rid
    return rid, out


def node_pool_violations(inputs: dict[str, Any]) -> list[str]:
    """What GKE refuses for a node pool (Cluster Toolkit gke-node-pool preconditions; GKE flex-start docs)."""
    out: list[str] = []
    config = inputs.get("nodeConfig") or {}
    if (inputs.get("placementPolicy") or {}).get("type") == "COMPACT" and len(inputs.get("nodeLocations") or []) != 1:
        out.append("COMPACT placement needs exactly one node location")
    if config.get("flexStart"):
        if "nodeCount" in inputs or not inputs.get("autoscaling"):
            out.append("flex-start pools autoscale from zero: set autoscaling, not nodeCount")
        if (inputs.get("management") or {}).get("autoRepair", True):
            out.append("flex-start needs management.autoRepair false")
        if (config.get("reservationAffinity") or {}).get("consumeReservationType") != "NO_RESERVATION":
            out.append("flex-start needs reservationAffinity NO_RESERVATION")
        if config.get("spot"):
            out.append("flex-start and spot cannot be combined")
    affinity = config.get("reservationAffinity") or {}
    if affinity.get("consumeReservationType") == "SPECIFIC_RESERVATION" and not (
        affinity.get("key") and affinity.get("values")
    ):
        out.append("SPECIFIC_RESERVATION needs the reservation-name key and values")
    return out


def _gke_cluster(inputs: dict[str, Any], proj: str, ctx: MockContext) -> tuple[str, dict[str, Any]]:
    """A regional GKE cluster: its id, API endpoint, CA and DNS endpoint (the names GKE gives them)."""
    name, location = inputs["name"], inputs["location"]
    rid = f"projects/{proj}/locations/{location}/clusters/{name}"
    endpoints = dict(inputs.get("controlPlaneEndpointsConfig") or {})
    dns = dict(endpoints.get("dnsEndpointConfig") or {})
    dns["endpoint"] = f"gke-{ctx.hex_id(rid, 32)}-{ctx.num_id(rid, 12)}.{location}.gke.goog"
    endpoints["dnsEndpointConfig"] = dns
    return rid, {
        "selfLink": f"https://container.googleapis.com/v1/{rid}",
        "endpoint": f"34.{int(ctx.hex_id(rid, 2), 16) % 200 + 1}.{int(ctx.hex_id(rid + 'b', 2), 16)}.10",
        "masterAuth": {**(inputs.get("masterAuth") or {}), "clusterCaCertificate": "TU9DSy1DQQ=="},
        "controlPlaneEndpointsConfig": endpoints,
        "masterVersion": "1.34.1-gke.1000",
        "labelFingerprint": ctx.hex_id(rid, 8),
        "operation": "",
    }


def _get_instance_group(args: pulumi.runtime.MockCallArgs, ctx: MockContext) -> dict[str, Any]:
    link = args.args.get("selfLink")
    for mig in _migs(ctx):
        if mig.outputs.get("instanceGroup") == link:
            links = instance_links(ctx, mig)
            return {
                "id": link,
                "name": mig.outputs["name"],
                "selfLink": link,
                "zone": mig.outputs["zone"],
                "project": mig.outputs["project"],
                "size": len(links),
                "instances": links,
                "namedPorts": [],
                "description": "",
                "network": "",
            }
    raise KeyError(f"the mocked GCP has no instance group {link!r}")


def _get_instance(args: pulumi.runtime.MockCallArgs, ctx: MockContext) -> dict[str, Any]:
    link = args.args["selfLink"]
    for mig in _migs(ctx):
        links = instance_links(ctx, mig)
        if link in links:
            ip = _addresses(_nic0_cidr(ctx, mig), len(links))[links.index(link)]
            return {
                "id": link,
                "name": _last(link),
                "selfLink": link,
                "zone": mig.outputs["zone"],
                "machineType": mig.outputs.get("machineType", ""),
                "currentStatus": "RUNNING",
                "networkInterfaces": [
                    {"name": "nic0", "networkIp": ip, "nicType": "GVNIC", "accessConfigs": [], "subnetwork": ""}
                ],
            }
    raise KeyError(f"the mocked GCP has no instance {link!r}")


INVOKES = {
    "gcp:compute/getInstanceGroup:getInstanceGroup": _get_instance_group,
    "gcp:compute/getInstance:getInstance": _get_instance,
}


#: What terraform-provider-google's MIG create returns when the group never becomes stable (a StateChangeConf
#: timeout, resource_compute_instance_group_manager.go); the program's create timeout is 60 minutes.
MIG_TIMEOUT = "timeout while waiting for state to become 'created' (last state: 'creating', timeout: 1h0m0s)"


def listed_fault(
    typ: str, rid: str, outputs: dict[str, Any], fault: Any, ctx: MockContext
) -> tuple[dict[str, Any], CloudFaultError | None] | None:
    """A ``Fault(reported="listed")`` as Compute Engine answers it: the group exists but its create times out,
    and the stock-out is only in ``listErrors`` (provision/clouds/gcp/stockout.py); ``None`` for other types."""
    if typ != "gcp:compute/instanceGroupManager:InstanceGroupManager":
        return None
    ctx.listed_errors[rid] = [{"error": {"code": fault.code, "message": fault.message}}]
    return outputs, CloudFaultError("Timeout", f"Error waiting for {rid} to become stable: {MIG_TIMEOUT}")


class ListedErrors:
    """``listErrors`` answered from the mocked cloud's error lists (provision/clouds/gcp/stockout.MigErrors)."""

    def __init__(self, listed: dict[str, list[dict[str, Any]]]) -> None:
        self._listed = listed

    def list_errors(self, project: str, zone: str, name: str) -> list[dict[str, Any]]:
        return list(self._listed.get(f"projects/{project}/zones/{zone}/instanceGroupManagers/{name}", []))
