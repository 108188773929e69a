"""Failover on capacity errors: the specs ``up`` tries, in order, and which cloud errors allow the next try.

A capacity shortage (the cloud has no machines of that type in that zone right now) is worth retrying
elsewhere; a quota or permission error is not (another zone hits the same account limit), so ``up`` fails
fast and names it. Codes, per cloud:

* AWS EC2: ``InsufficientInstanceCapacity``, ``InsufficientHostCapacity``,
  ``InsufficientReservedInstanceCapacity`` (shortage); ``VcpuLimitExceeded`` (quota)
  (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/errors-overview.html);
* GCP Compute: ``ZONE_RESOURCE_POOL_EXHAUSTED`` (shortage); ``QUOTA_EXCEEDED`` (quota)
  (https://cloud.google.com/compute/docs/troubleshooting/troubleshooting-resource-availability);
* Azure Compute: ``AllocationFailed``, ``ZonalAllocationFailed`` (shortage)
  (https://learn.microsoft.com/troubleshoot/azure/virtual-machines/allocation-failure); ``OperationNotAllowed``
  with a quota message is a quota error;
* Alibaba ECS: ``OperationDenied.NoStock`` (shortage) (ECS RunInstances error codes).

Pure: specs in, specs out. ``provision.ops.cluster.Cluster.up`` runs the tries.
"""

from __future__ import annotations

import re

from provision.spec import ClusterSpec

SHORTAGE_CODES = (
    "InsufficientInstanceCapacity",
    "InsufficientHostCapacity",
    "InsufficientReservedInstanceCapacity",
    "ZONE_RESOURCE_POOL_EXHAUSTED",
    "ZonalAllocationFailed",
    "AllocationFailed",
    "OperationDenied.NoStock",
)
QUOTA_CODES = ("VcpuLimitExceeded", "QUOTA_EXCEEDED", "OperationNotAllowed", "QuotaExceeded")


def error_code(message: str) -> str | None:
    """The first shortage or quota code named in a cloud error message (longest codes matched first)."""
    for code in sorted((*SHORTAGE_CODES, *QUOTA_CODES), key=len, reverse=True):
        if re.search(rf"\b{re.escape(code)}\b", message):
            return code
    return None


def is_shortage(message: str) -> bool:
    """True when the error is a capacity shortage another zone, region or capacity type may not have."""
    return error_code(message) in SHORTAGE_CODES


def apply_fallback(spec: ClusterSpec, index: int) -> ClusterSpec:
    """``spec`` with its ``capacity.fallbacks[index]`` applied (and no fallbacks of its own).

    Raises:
        pydantic.ValidationError: the combination is not a valid spec (the caller reports the path).
    """
    fb = spec.capacity.fallbacks[index]
    data = spec.model_dump(mode="python", exclude_none=False)
    if fb.region:
        data["region"] = fb.region
        data["zone"] = fb.zone  # a zone of the old region would not exist in the new one
    elif fb.zone:
        data["zone"] = fb.zone
    capacity = dict(data["capacity"], fallbacks=())
    if fb.type:
        capacity["type"] = fb.type
        capacity["reservation"] = fb.reservation
        if fb.type != "spot":
            capacity["max_price_per_hour_usd"] = None
    elif fb.reservation:
        capacity["reservation"] = fb.reservation
    data["capacity"] = capacity
    return ClusterSpec.model_validate(data)


def describe(spec: ClusterSpec) -> str:
    """Where a try runs: ``region/zone, capacity``."""
    where = f"{spec.region}/{spec.zone}" if spec.zone else spec.region
    return f"{where}, {spec.capacity.type}"
