"""The compute fabric: a rail-optimized, non-blocking fat tree sized from node count and switch radix.

Rules (pure arithmetic, no catalog access):

* one server: no scale-out fabric (its GPUs talk over NVLink / Infinity Fabric / HCCS);
* every NIC fits one switch (``nodes * rails <= radix``): one tier, one switch;
* otherwise two tiers while the endpoints fit ``radix * radix / 2``: each rail gets its own leaf per group of
  ``radix / 2`` nodes (half the leaf ports face nodes, half face spines, so the leaf is non-blocking), every leaf
  uplink is provisioned, and the spine count is the smallest divisor of ``radix / 2`` that carries them, so each
  leaf spreads its uplinks evenly over the spines;
* beyond that three tiers, as a k-ary fat tree (Al-Fares et al., SIGCOMM 2008, "A Scalable, Commodity Data Center
  Network Architecture"): pods of ``radix / 2`` leaves and ``radix / 2`` spines, spines using half their ports
  upward to ``ceil(uplinks / radix)`` core switches, up to ``radix ** 3 / 4`` endpoints.

These reproduce NVIDIA's DGX SuperPOD H100 compute fabric (RA-11333-001, 32 nodes per scalable unit, 64-port
QM9700): 1 SU = 8 leaves + 4 spines, 2 SU = 16 + 8, 3 SU = 24 + 16, 4 SU = 32 + 16 (tests check it).
"""

from __future__ import annotations

import math
from typing import Any

from provision.planning.onprem.models import FabricDesign


class FabricTooLarge(ValueError):
    """More endpoints than a three-tier fat tree of this radix can connect."""


def _smallest_divisor_at_least(n: int, need: int) -> int:
    for d in range(max(1, need), n + 1):
        if n % d == 0:
            return d
    return n


def design_fabric(nodes: int, rails: int, radix: int, *, kind: str, switch: str | None) -> FabricDesign:
    """Switch and link counts for ``nodes`` servers with ``rails`` scale-out NICs each on ``radix``-port switches.

    Raises:
        ValueError: a count is not positive, or the radix is odd.
        FabricTooLarge: more than ``radix ** 3 / 4`` endpoints.
    """
    if nodes < 1 or rails < 1 or radix < 2 or radix % 2:
        raise ValueError(f"nodes={nodes}, rails={rails}, radix={radix}: need nodes, rails >= 1 and an even radix")
    half = radix // 2
    endpoints = nodes * rails
    two_tier_max = radix * half
    common: dict[str, Any] = {"switch": switch, "radix": radix, "rails": rails, "endpoints": endpoints}
    if nodes == 1:
        return FabricDesign(
            kind="none",
            **{**common, "switch": None, "radix": None},
            tiers=0,
            leaves=0,
            spines=0,
            cores=0,
            node_links=0,
            leaf_spine_links=0,
            spine_core_links=0,
            max_endpoints_two_tier=None,
            rule="one server: GPUs communicate over the in-server interconnect; no scale-out fabric is needed",
        )
    if endpoints <= radix:
        return FabricDesign(
            kind=kind,  # type: ignore[arg-type]
            **common,
            tiers=1,
            leaves=1,
            spines=0,
            cores=0,
            node_links=endpoints,
            leaf_spine_links=0,
            spine_core_links=0,
            max_endpoints_two_tier=two_tier_max,
            rule=f"{nodes} x {rails} = {endpoints} NIC ports fit one {radix}-port switch: a single tier",
        )
    groups = math.ceil(nodes / half)
    leaves = groups * rails
    uplinks = leaves * half
    if endpoints <= two_tier_max:
        spines = _smallest_divisor_at_least(half, math.ceil(uplinks / radix))
        return FabricDesign(
            kind=kind,  # type: ignore[arg-type]
            **common,
            tiers=2,
            leaves=leaves,
            spines=spines,
            cores=0,
            node_links=endpoints,
            leaf_spine_links=uplinks,
            spine_core_links=0,
            max_endpoints_two_tier=two_tier_max,
            rule=(
                f"two tiers (endpoints {endpoints} <= radix^2/2 = {two_tier_max}): leaves = rails {rails} x "
                f"ceil({nodes} nodes / {half}) = {leaves}; each leaf {half} down + {half} up; spines = smallest "
                f"divisor of {half} >= {uplinks} uplinks / {radix} ports = {spines}"
            ),
        )
    three_tier_max = radix * half * half
    if endpoints > three_tier_max:
        raise FabricTooLarge(
            f"{endpoints} endpoints exceed a three-tier fat tree of {radix}-port switches ({three_tier_max})"
        )
    pods = math.ceil(leaves / half)
    spines = pods * half
    spine_uplinks = spines * half
    cores = math.ceil(spine_uplinks / radix)
    return FabricDesign(
        kind=kind,  # type: ignore[arg-type]
        **common,
        tiers=3,
        leaves=leaves,
        spines=spines,
        cores=cores,
        node_links=endpoints,
        leaf_spine_links=uplinks,
        spine_core_links=spine_uplinks,
        max_endpoints_two_tier=two_tier_max,
        rule=(
            f"three tiers (endpoints {endpoints} > radix^2/2 = {two_tier_max}): {leaves} leaves in {pods} pods of "
            f"{half}; {spines} spines ({half} per pod); cores = ceil({spine_uplinks} spine uplinks / {radix}) = {cores}"
        ),
    )


def max_nodes(rails: int, radix: int) -> int:
    """The most servers a three-tier fat tree of ``radix``-port switches connects at ``rails`` NICs each."""
    return radix * (radix // 2) * (radix // 2) // rails
