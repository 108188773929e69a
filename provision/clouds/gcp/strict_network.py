"""GCP network rules the discovery document states only in words: where a subnet, firewall rule or router may go,
which ranges a subnet may take, and what a private services access range must be.

Called by :func:`provision.clouds.gcp.strict.check`. A resource may be placed in another stack's network (an
attached volume's VPC, read through a ``pulumi.StackReference``): the mocked cloud records what that stack's outputs
say of its network (:attr:`provision.clouds.mocking.MockContext.references`), so its ranges count like the ranges
this program creates.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from provision.clouds.strict import Resource, Violation

if TYPE_CHECKING:
    from provision.clouds.mocking import MockContext

API = "https://www.googleapis.com/compute/v1/"
SUBNET = "gcp:compute/subnetwork:Subnetwork"
NETWORK = "gcp:compute/network:Network"
ADDRESS = "gcp:compute/globalAddress:GlobalAddress"
#: Types that name the VPC network they belong to by its id or self link.
IN_NETWORK = (SUBNET, "gcp:compute/firewall:Firewall", "gcp:compute/router:Router", ADDRESS)

UNIQUE_SOURCE = (
    "cloud.google.com/vpc/docs/subnets (valid IPv4 ranges: primary and secondary ranges must be unique across all "
    "subnets in a VPC network and any networks connected to it by VPC Network Peering; the private services access "
    "allocated range is used by the peered service producer network)"
)
NETWORK_SOURCE = (
    "compute v1 Subnetwork.network / Firewall.network / Router.network (the URL of an existing network; the API "
    "answers 404 notFound for any other)"
)
PSA_SOURCE = (
    "cloud.google.com/vpc/docs/configure-private-services-access (allocate an IP address range: --purpose=VPC_PEERING,"
    " an internal range with a prefix length, in the consumer network; the range is at least a /24) and pulumi-gcp "
    "10.2 compute.GlobalAddress network docstring ('The IP range must be in RFC1918 space')"
)
#: The longest prefix a private services access range may have (its smallest size, /24).
PSA_MAX_PREFIX = 24


def _key(link: Any) -> str:
    """A network's id from its id or self link (``projects/P/global/networks/N``)."""
    return str(link or "").removeprefix(API)


def _networks(ctx: MockContext) -> dict[str, list[str]]:
    """Every network this program created or read from another stack -> the ranges already taken in it.

    Taken: this program's subnets, the private-services ranges it allocated (address/prefix), and a referenced
    stack's recorded ``network.cidr`` and ``network.service_range``.
    """
    found: dict[str, list[str]] = {}
    for r in ctx.ledger:
        if r.type == NETWORK:
            found.setdefault(_key(r.outputs.get("id") or r.id), [])
    for outputs in ctx.references.values():
        net = outputs.get("network")
        if isinstance(net, dict) and net.get("network_id"):
            taken = found.setdefault(_key(net["network_id"]), [])
            taken += [v for v in (net.get("cidr"), net.get("service_range")) if isinstance(v, str) and v]
    for r in ctx.ledger:
        key = _key(r.inputs.get("network"))
        if r.type == SUBNET and r.inputs.get("ipCidrRange"):
            found.setdefault(key, []).append(str(r.inputs["ipCidrRange"]))
        elif r.type == ADDRESS and r.inputs.get("purpose") == "VPC_PEERING" and r.inputs.get("prefixLength"):
            address = r.outputs.get("address") or r.inputs.get("address")
            if address:
                found.setdefault(key, []).append(f"{address}/{r.inputs['prefixLength']}")
    return found


def _overlaps(cidr: str, taken: list[str]) -> Iterator[str]:
    try:
        mine = ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return
    for other in taken:
        try:
            if mine.overlaps(ipaddress.ip_network(other, strict=False)):
                yield other
        except ValueError:
            continue


def network_rules(res: Resource, ctx: MockContext) -> list[Violation]:
    """Where a subnet, firewall rule, router or private-services range may go, and the ranges a subnet may take."""
    if res.type not in IN_NETWORK:
        return []
    out: list[Violation] = []
    link = res.inputs.get("network")
    networks = _networks(ctx)
    if link and _key(link) not in networks:
        out.append(res.violation("network", link, "names no network of this project that exists", NETWORK_SOURCE))
    if res.type == SUBNET and link:
        cidr = res.inputs.get("ipCidrRange")
        for other in _overlaps(str(cidr), networks.get(_key(link), [])) if cidr else ():
            out.append(
                res.violation(
                    "ipCidrRange", cidr, f"overlaps {other}, a range already used in that network", UNIQUE_SOURCE
                )
            )
    if res.type == ADDRESS and res.inputs.get("purpose") == "VPC_PEERING":
        out += _psa_rules(res)
    return out


def _psa_rules(res: Resource) -> list[Violation]:
    """A private services access range: internal, in a network, with a prefix length of /24 or shorter, RFC 1918."""
    out: list[Violation] = []
    inputs = res.inputs
    if inputs.get("addressType") != "INTERNAL":
        out.append(res.violation("addressType", inputs.get("addressType"), "VPC_PEERING needs INTERNAL", PSA_SOURCE))
    if not inputs.get("network"):
        out.append(res.violation("network", None, "VPC_PEERING needs the consumer network", PSA_SOURCE))
    prefix = inputs.get("prefixLength")
    if not isinstance(prefix, (int, float)) or not 8 <= int(prefix) <= PSA_MAX_PREFIX:
        out.append(
            res.violation(
                "prefixLength", prefix, f"VPC_PEERING needs a prefix length of 8 to {PSA_MAX_PREFIX}", PSA_SOURCE
            )
        )
    address = inputs.get("address")
    if address:
        try:
            ip = ipaddress.ip_address(str(address))
            private = any(ip in ipaddress.ip_network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"))
        except ValueError:
            private = False
        if not private:
            out.append(res.violation("address", address, "must be in RFC 1918 space", PSA_SOURCE))
    return out
