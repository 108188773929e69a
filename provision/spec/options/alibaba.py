"""Alibaba-only spec options (``alibaba:`` in a spec). Pure pydantic: no SDK imports."""

from __future__ import annotations

import ipaddress
from typing import Literal

from pydantic import Field, field_validator

from provision.spec.options.base import CloudOptions
from provision.spec.units import parse_network

#: Alibaba VPC CIDRs come from the private ranges (VPC docs, "Plan networks"); masks /8 to /24 leave room
#: for the node vSwitch, which must be /16 to /29.
#: Subscription periods in months: terraform-provider-alicloud resource_alicloud_instance.go validates ``period``
#: with ``Any(IntBetween(1, 9), IntInSlice([12, 24, 36, 48, 60]))`` (the pulumi docstring says the same).
SUBSCRIPTION_MONTHS = frozenset((*range(1, 10), 12, 24, 36, 48, 60))
_PRIVATE = tuple(ipaddress.IPv4Network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"))


class AlibabaOptions(CloudOptions):
    vpc_cidr: str = Field(
        default="10.0.0.0/16",
        description="CIDR of the VPC (a private range, /8 to /24); the nodes' vSwitch is carved from it.",
    )
    kms_key_id: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$",
        description="KMS key for system/data disk encryption (and Extreme NAS); the account's default key if unset.",
    )
    resource_group_id: str | None = Field(
        default=None, pattern=r"^rg-[a-z0-9]{6,64}$", description="Resource group for every resource."
    )
    system_disk_gib: int = Field(
        default=200, ge=40, le=500, description="Encrypted ESSD system disk per node (drivers, CUDA, containers)."
    )
    data_disk_gib: int | None = Field(
        default=None, ge=20, le=32768, description="Optional encrypted ESSD data disk per node; none when unset."
    )
    placement: Literal["low-latency", "none"] = Field(
        default="low-latency",
        description="'low-latency' puts the nodes in LowLatency deployment sets (at most 20 nodes each); "
        "'none' skips deployment sets (use when the family is not supported by LowLatency in your region).",
    )
    jumbo_frames: bool | None = Field(
        default=None,
        description="Jumbo frames (MTU 8500) on eRDMA instance types; without them eRDMA nodes use MTU 1400, as "
        "Alibaba requires for NCCL. Unset: on only for the families Alibaba documents with jumbo frames (gn8v); "
        "true on a type Alibaba does not document with them is refused (RunInstances supports them only on "
        "specific 8th-generation and later types; per type: DescribeInstanceTypes JumboFrameSupport). "
        "Ignored without eRDMA.",
    )
    subscription_months: int | None = Field(
        default=None,
        description="Buy the nodes as subscription (PrePaid) for this many months (1-9, 12, 24, 36, 48 or 60) "
        "instead of pay-as-you-go. "
        "A subscription cannot carry auto_release_time, so it cannot be combined with lifetime.ttl or max_cost_usd.",
    )
    metadata_tokens: bool = Field(
        default=True,
        description="Instance metadata in security-hardened mode only (tokens required, like IMDSv2). Needs "
        "cloud-init 23.2.2 or later in the image (ECS 'Instance metadata'); the current public Ubuntu images have "
        "it. Set false only for an older pinned image.",
    )
    nat_bandwidth_mbps: int = Field(
        default=100, ge=1, le=200, description="Peak bandwidth of the egress EIP (pay-by-traffic: 1-200 Mbit/s)."
    )

    @field_validator("subscription_months")
    @classmethod
    def _subscription_months(cls, v: int | None) -> int | None:
        if v is not None and v not in SUBSCRIPTION_MONTHS:
            raise ValueError(
                f"{v} months is not a subscription period ECS sells: 1-9, 12, 24, 36, 48 or 60 "
                "(alicloud_instance period); use one of those"
            )
        return v

    @field_validator("vpc_cidr")
    @classmethod
    def _vpc_cidr(cls, v: str) -> str:
        net = parse_network(v)
        if not isinstance(net, ipaddress.IPv4Network) or not any(net.subnet_of(p) for p in _PRIVATE):
            raise ValueError(f"{v} is not inside 10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16; use a private range")
        if not 8 <= net.prefixlen <= 24:
            raise ValueError(f"{v} has mask /{net.prefixlen}; Alibaba VPCs take /8 to /24 here (e.g. 10.0.0.0/16)")
        return v
