"""Address ranges, judged by the addresses they hold rather than by how they are written.

``0.0.0.0/0`` is not the only way to open a port to everyone: ``0.0.0.0/1`` is half the
internet, and 32 CIDRs can cover every IPv4 address but one. A source is *world-wide* when
the public addresses it holds (IANA special-purpose ranges left out) exceed those of one ``/8``
(16,777,216 IPv4 addresses) or, for IPv6, of one ``/16`` of global unicast space: larger than
any single organisation's network, so it can only mean "the internet, more or less".
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from typing import Any

#: IANA special-purpose IPv4 ranges (RFC 6890 and the IANA IPv4 Special-Purpose Address Registry).
NON_PUBLIC_V4 = tuple(
    ipaddress.IPv4Network(n)
    for n in (
        "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
        "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15",
        "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
    )
)  # fmt: skip
#: Global unicast IPv6 (RFC 4291 section 2.4; IANA IPv6 Global Unicast Address Assignments).
GLOBAL_V6 = ipaddress.IPv6Network("2000::/3")
#: More public addresses than this in one source list is world access (one /8; one /16 of IPv6).
WORLD_V4 = 2**24
WORLD_V6 = 2**112
#: Words the clouds accept for "any address" (Azure service tags, "*").
WORLD_WORDS = frozenset({"*", "any", "internet", "0.0.0.0"})


def networks(sources: Iterable[Any]) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    """The sources that parse as addresses or CIDRs (host bits allowed), as networks."""
    out = []
    for s in sources:
        try:
            out.append(ipaddress.ip_network(str(s).strip(), strict=False))
        except ValueError:
            continue
    return out


def public_addresses(sources: Iterable[Any]) -> tuple[int, int]:
    """``(IPv4, IPv6)`` counts of the public addresses in the union of ``sources``."""
    nets = networks(sources)
    v4 = list(ipaddress.collapse_addresses(n for n in nets if isinstance(n, ipaddress.IPv4Network)))
    v6 = list(ipaddress.collapse_addresses(n for n in nets if isinstance(n, ipaddress.IPv6Network)))
    count4 = 0
    for net in v4:  # collapsed CIDRs either nest or are disjoint
        if any(net.subnet_of(p) for p in NON_PUBLIC_V4):
            continue
        count4 += net.num_addresses - sum(p.num_addresses for p in NON_PUBLIC_V4 if p.subnet_of(net))
    count6 = 0
    for net6 in v6:
        if net6.subnet_of(GLOBAL_V6):
            count6 += net6.num_addresses
        elif GLOBAL_V6.subnet_of(net6):
            count6 += GLOBAL_V6.num_addresses
    return count4, count6


def world_wide(sources: Iterable[Any]) -> bool:
    """Whether ``sources`` together admit (nearly) the whole internet; see the module's rule."""
    items = list(sources)
    if any(isinstance(s, str) and s.strip().lower() in WORLD_WORDS for s in items):
        return True
    v4, v6 = public_addresses(items)
    return v4 > WORLD_V4 or v6 > WORLD_V6
