"""What an attaching cluster needs of a volume's network, per cloud: the recorded outputs and the checks.

A volume's stack records ``mount_source`` and ``network`` (see :mod:`provision.clouds.volumeref`); the cluster
program reads them to mount the filesystem and to build its way in to the volume's network:

* AWS: a VPC peering, routes both ways and Lustre rules (``clouds/aws/volumelink.py``): the VPC, its CIDR, a
  route table of the volume's VPC and the FSx security group. Peered VPCs must not overlap ("You cannot create a
  VPC peering connection between VPCs that have matching or overlapping IPv4 CIDR blocks", Amazon VPC Peering
  Guide, "VPC peering limitations").
* Azure: two VNet peerings (``clouds/azure/volumelink.py``): the VNet's id, name, resource group and address
  space, which must not overlap the cluster's ("The address spaces of the virtual networks can't overlap",
  learn.microsoft.com/azure/virtual-network/virtual-network-manage-peering, "Requirements and constraints").
* Alibaba CPFS: the protocol service each cluster exports from (``clouds/alibaba/storage.py``), whose export VPC
  must not overlap the file system's (NAS API CreateProtocolMountTarget). NAS: a mount target of the cluster's.
* GCP: the cluster's host network (nic0) is a subnet of the volume's VPC, with the cluster's firewall rules and
  Cloud NAT there (``clouds/gcp/network.py``; see :data:`GCP_REACH`): the VPC's name, id, self link and project,
  and the ranges the cluster's subnet must not overlap, the volume's subnet (``cidr``) and the range its
  filesystem's servers use (``service_range``, also the source of the cluster's storage firewall rule). Subnet
  ranges in one VPC must be unique ("Primary and secondary IPv4 address ranges must be unique across all subnets
  in a VPC network and any networks it is connected to by VPC Network Peering", cloud.google.com/vpc/docs/subnets,
  "Valid IPv4 ranges").

Managed Kubernetes clusters reach a volume the same way (EKS, AKS and ACK run the VM path's network pieces; AKS
also keeps its pod and service ranges off the volume's VNet); GKE clusters cannot attach one yet.

Checked before anything exists (:func:`network_problems`), so a volume without them, or an overlapping network,
is a clear error, not a failed ``up``.
"""

from __future__ import annotations

import hashlib
import ipaddress
from typing import Any

from provision.spec.errors import Problem

#: The ``network`` outputs each cloud's cluster program reads (Alibaba CPFS adds ``protocol_service_id``).
NETWORK_KEYS: dict[str, tuple[str, ...]] = {
    "aws": ("vpc_id", "cidr", "route_table_id", "security_group_id"),
    "azure": ("vnet_id", "vnet_name", "resource_group", "cidr"),
    "alibaba": ("vpc_id", "cidr"),
    "gcp": ("network", "network_id", "self_link", "project"),
}
#: How a GCP cluster reaches an attached volume, and why that way.
GCP_REACH = (
    "Filestore, Managed Lustre and Parallelstore are reached through a peering of the volume's VPC with Google's "
    "service network, and VPC peering is not transitive (cloud.google.com/vpc/docs/vpc-peering, 'Transitive "
    "peering is not supported'), so the cluster's host network (nic0) is a subnet of the volume's VPC, with its "
    "firewall rules and Cloud NAT, all named for the cluster (down removes them; the VPC stays with the volume); "
    "the GPU NICs keep the cluster's own VPCs"
)
#: Why an overlapping range is refused, by cloud.
_OVERLAP = {
    "gcp": "the cluster's host subnet is created in the volume's VPC, where subnet ranges and the ranges of its "
    "peered service networks must be unique",
}
_FIELD = "storage.shared.volume"


def _cluster_cidr(spec: Any) -> tuple[str, str] | None:
    """The cluster network's field and CIDR that must not overlap the volume's, where the cluster creates one."""
    opts = spec.cloud_options()
    if spec.cloud == "aws" and getattr(opts, "vpc_id", None) is None:
        return "aws.vpc_cidr", str(opts.vpc_cidr)
    if spec.cloud == "azure":
        return "azure.vnet_cidr", str(opts.vnet_cidr)
    if spec.cloud == "alibaba":
        return "alibaba.vpc_cidr", str(opts.vpc_cidr)
    if spec.cloud == "gcp" and spec.scheduler.kind != "kubernetes":  # the host subnet goes in the volume's VPC
        return "gcp.host_subnet_cidr", str(opts.host_subnet_cidr)
    return None


def network_problems(spec: Any, name: str, outputs: dict[str, Any]) -> list[Problem]:
    """Why the cluster ``spec`` cannot reach the volume ``name`` whose stack recorded ``outputs``; [] when it can."""
    out: list[Problem] = []
    fix = "recreate the volume (provision volume create) so its stack records what attaching clusters read"
    if not isinstance(outputs.get("mount_source"), str) and spec.cloud != "alibaba":
        out.append(Problem(_FIELD, name, "names a volume whose stack records no mount_source", fix))
    raw = outputs.get("network")
    network: dict[str, Any] = raw if isinstance(raw, dict) else {}
    keys = NETWORK_KEYS.get(spec.cloud, ())
    if str(outputs.get("filesystem", "")).startswith("cpfs"):
        keys = (*keys, "protocol_service_id")
    if spec.cloud == "gcp" and outputs.get("filesystem") in ("managed-lustre", "parallelstore"):
        keys = (*keys, "service_range")  # the source of the cluster's storage firewall rule
    missing = [k for k in keys if not network.get(k)]
    if missing:
        out.append(
            Problem(
                _FIELD,
                name,
                f"names a volume whose stack records no network {', '.join(missing)} (the cluster's way in needs them)",
                fix,
            )
        )
    if spec.cloud == "gcp" and spec.scheduler.kind == "kubernetes":
        out.append(
            Problem(
                _FIELD,
                name,
                "cannot be attached by a GKE cluster yet: its nodes would need the volume's VPC, and the GKE program "
                "builds a filesystem of its own instead",
                "attach the volume to VM nodes (drop scheduler.kind: kubernetes), or give the GKE cluster its own "
                "filesystem (storage.shared.kind and size_gib instead of volume)",
            )
        )
    own = _cluster_cidr(spec)
    ranges = [r for r in (network.get("cidr"), network.get("service_range")) if isinstance(r, str) and r]
    if spec.cloud == "azure" and spec.scheduler.kind == "kubernetes":
        out += _aks_range_problems(name, ranges)
    if own is not None:
        field, cidr = own
        why = _OVERLAP.get(
            spec.cloud,
            "the cluster's network is peered with (or exports into) the volume's, and overlapping ranges cannot be",
        )
        for theirs in ranges:
            try:
                overlap = ipaddress.ip_network(cidr).overlaps(ipaddress.ip_network(theirs))
            except ValueError:
                overlap = False
            if overlap:
                prefix = 20 if spec.cloud == "gcp" else 16
                out.append(
                    Problem(
                        field,
                        cidr,
                        f"overlaps volume {name}'s network {theirs}: {why}",
                        f"set {field} to a range outside {', '.join(ranges)}, e.g. {_free_range(ranges, prefix)}",
                    )
                )
    return out


def _aks_range_problems(name: str, ranges: list[str]) -> list[Problem]:
    """AKS: the pod and service ranges must not overlap the volume's VNet, which is peered with the cluster's.

    "Service address range: must not overlap with any other virtual networks with which the cluster virtual network
    peers" (learn.microsoft.com/azure/aks/configure-azure-cni, "Plan IP addressing"); the overlay pod CIDR "must not
    overlap with directly connected networks (like VNet peering)" (learn.microsoft.com/azure/aks/azure-cni-overlay).
    """
    from provision.clouds.azure.kubeplan import POD_CIDR, SERVICE_CIDR

    out: list[Problem] = []
    for theirs in ranges:
        for mine, what in ((POD_CIDR, "pod"), (SERVICE_CIDR, "service")):
            try:
                overlap = ipaddress.ip_network(theirs).overlaps(ipaddress.ip_network(mine))
            except ValueError:
                continue
            if overlap:
                out.append(
                    Problem(
                        _FIELD,
                        name,
                        f"names a volume whose network {theirs} overlaps the AKS {what} range {mine}; the volume's "
                        "VNet is peered with the cluster's, and AKS refuses pod and service ranges that overlap a "
                        "peered network",
                        f"recreate the volume with a network_cidr outside {POD_CIDR} and {SERVICE_CIDR}, "
                        f"e.g. {_free_range([theirs, POD_CIDR, SERVICE_CIDR])}",
                    )
                )
    return out


def sibling_problems(spec: Any, name: str, siblings: dict[str, Any]) -> list[Problem]:
    """GCP: the clusters already attaching volume ``name`` (stack -> their spec mapping) have their host subnets in
    its VPC too, so ``spec``'s must not overlap theirs (subnet ranges are unique in a VPC)."""
    own = _cluster_cidr(spec)
    if spec.cloud != "gcp" or own is None:
        return []
    field, cidr = own
    out: list[Problem] = []
    for stack, data in siblings.items():
        if stack == spec.name or not isinstance(data, dict):
            continue
        theirs = str((data.get("gcp") or {}).get("host_subnet_cidr") or "10.0.0.0/20")
        try:
            overlap = ipaddress.ip_network(cidr).overlaps(ipaddress.ip_network(theirs))
        except ValueError:
            continue
        if overlap:
            out.append(
                Problem(
                    field,
                    cidr,
                    f"overlaps {theirs}, the host subnet cluster {stack} has in volume {name}'s VPC: {_OVERLAP['gcp']}",
                    f"set {field} to a range outside {theirs}, e.g. {_free_range([theirs], 20)}",
                )
            )
    return out


def _free_range(taken: list[str] | str, prefix: int = 16) -> str:
    """A ``/prefix`` in 10.0.0.0/8 that overlaps none of ``taken`` (the fix's example)."""
    nets = [ipaddress.ip_network(t) for t in ([taken] if isinstance(taken, str) else taken)]
    for cand in ipaddress.ip_network("10.0.0.0/8").subnets(new_prefix=prefix):
        if cand.network_address.packed[1] and not any(cand.overlaps(n) for n in nets):
            return str(cand)
    return "172.16.0.0/16"


#: A retained cluster filesystem's network resources kept with it (their ``retain_on_delete``), by cloud:
#: (type token, logical-name suffix) -> the network output it gives.
_RETAINED: dict[str, tuple[tuple[str, str, str], ...]] = {
    "aws": (
        ("aws:ec2/vpc:Vpc", "-vpc", "vpc_id"),
        ("aws:ec2/subnet:Subnet", "-private", ""),
        ("aws:ec2/securityGroup:SecurityGroup", "-fsx-sg", "security_group_id"),
    ),
    "alibaba": (
        ("alicloud:vpc/network:Network", "-vpc", "vpc_id"),
        ("alicloud:vpc/switch:Switch", "-vsw", ""),
    ),
}


def _azure_retained(resources: list[Any]) -> tuple[dict[str, Any], list[Any]]:
    """Azure: the data resource group and everything in it (``retain_on_delete``: network, NetApp account and pool).

    The cluster program puts a retained filesystem and its network in ``<name>-data-rg``
    (``clouds/azure/components.py``); all of it outlives ``down``, so all of it goes with the volume.
    """
    groups = [r for r in resources if r.type == "azure-native:resources:ResourceGroup" and r.name.endswith("-data-rg")]
    if not groups:
        return {}, []
    rg = str((groups[0].inputs or {}).get("resourceGroupName") or groups[0].name)
    inside = [r for r in resources if r is not groups[0] and (r.inputs or {}).get("resourceGroupName") == rg]
    kept = [groups[0], *inside]
    network: dict[str, Any] = {}
    for r in kept:
        if r.type == "azure-native:network:VirtualNetwork":
            prefixes = ((r.inputs or {}).get("addressSpace") or {}).get("addressPrefixes") or []
            network.update(vnet_id=r.id, vnet_name=(r.inputs or {}).get("virtualNetworkName"), resource_group=rg)
            if prefixes:
                network["cidr"] = prefixes[0]
    return network, kept


def _gcp_retained(resources: list[Any], shared_fs: dict[str, Any]) -> tuple[dict[str, Any], list[Any]]:
    """GCP: the host VPC (``-net-0``, kept with a retained filesystem) and its private-services range and connection.

    The cluster's subnet goes with the cluster; an attaching cluster adds its own (``clouds/gcp/network.py``).
    Managed Lustre and Parallelstore servers sit in the private-services range, which the cluster's ``shared_fs``
    output records (``service_range``, ``clouds/gcp/storage.py``): an attaching cluster's storage firewall rule
    opens it and its host subnet must not overlap it.
    """
    kept = [
        r
        for r in resources
        if (r.type == "gcp:compute/network:Network" and r.name.endswith("-net-0"))
        or r.type in ("gcp:compute/globalAddress:GlobalAddress", "gcp:servicenetworking/connection:Connection")
    ]
    vpc = next((r for r in kept if r.type == "gcp:compute/network:Network"), None)
    if vpc is None:
        return {}, []
    parts = str(vpc.id).split("/")  # projects/P/global/networks/N
    network = {
        "network": parts[-1],
        "network_id": vpc.id,
        "self_link": f"https://www.googleapis.com/compute/v1/{vpc.id}",
        "project": parts[1] if len(parts) > 1 else None,
    }
    if isinstance(shared_fs.get("service_range"), str) and shared_fs["service_range"]:
        network["service_range"] = shared_fs["service_range"]
    return network, kept


def retained_network(
    cloud: str, resources: list[Any], shared_fs: dict[str, Any] | None = None
) -> tuple[dict[str, Any], list[Any]]:
    """The ``network`` output of a retained cluster filesystem (its cluster's ``shared_fs`` output gives what the
    resources do not) and the network resources kept with it."""
    if cloud == "azure":
        return _azure_retained(resources)
    if cloud == "gcp":
        return _gcp_retained(resources, shared_fs or {})
    network: dict[str, Any] = {}
    kept: list[Any] = []
    for token, suffix, key in _RETAINED.get(cloud, ()):
        for r in resources:
            if r.type == token and r.name.endswith(suffix):
                kept.append(r)
                if key:
                    network[key] = r.id
                cidr = (r.inputs or {}).get("cidrBlock")
                if token.endswith(("vpc:Vpc", "network:Network")) and isinstance(cidr, str):
                    network["cidr"] = cidr
    if cloud == "aws" and "vpc_id" in network:
        # The private route table goes with the cluster: the VPC's main route table (which the node subnet falls
        # back to once its association is deleted: Amazon VPC User Guide, "Route tables", main route table).
        network["route_table_id"] = "rtb-" + hashlib.sha256(f"{network['vpc_id']}/main".encode()).hexdigest()[:17]
    return network, kept
