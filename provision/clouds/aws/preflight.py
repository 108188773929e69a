"""The AWS preflight: what the account will sell *you* (zone offerings, P-instance vCPU quota), asked before `up`.

AZ names map to different physical zones per account, GPU types are offered in fewer zones than the region
lists, and a new account's P-instance vCPU quota is 0: ``CreateFleet`` would otherwise fail with
InsufficientInstanceCapacity / VcpuLimitExceeded after the VPC and FSx exist. Reached through
:meth:`provision.clouds.base.Adapter.preflight`; takes a client factory, so it runs offline against fakes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from provision.planning.plan import ClusterPlan
from provision.spec.errors import Problem

#: AWS Service Quotas codes for running On-Demand / Spot instances, by instance family letter.
#: https://docs.aws.amazon.com/servicequotas/latest/userguide/ (EC2 quotas "Running On-Demand P instances")
AWS_ON_DEMAND_QUOTA = {"p": "L-417A185B"}
AWS_SPOT_QUOTA = {"p": "L-7212CCBC"}


def aws_preflight(plan: ClusterPlan, client: Callable[[str, str], Any] | None = None) -> list[Problem]:
    """Problems that would stop ``plan`` in this AWS account (empty when none found).

    Args:
        plan: an AWS plan.
        client: ``(service, region) -> boto3 client`` factory (tests pass moto or stubs).
    """
    if client is None:
        import boto3

        client = lambda service, region: boto3.client(service, region_name=region)  # noqa: E731
    problems: list[Problem] = []
    ec2 = client("ec2", plan.region)
    if plan.zone:
        offered = ec2.describe_instance_type_offerings(
            LocationType="availability-zone",
            Filters=[{"Name": "instance-type", "Values": [plan.instance_type]}],
        )["InstanceTypeOfferings"]
        zones = sorted({o["Location"] for o in offered})
        if plan.zone not in zones:
            problems.append(
                Problem(
                    "zone",
                    plan.zone,
                    f"does not offer {plan.instance_type} in this account",
                    f"use one of: {', '.join(zones)}" if zones else "use another region",
                )
            )
    if plan.kubernetes is not None:
        problems += _eks_zones(plan, ec2)
    if plan.capacity.type in ("on-demand", "spot"):
        codes = AWS_ON_DEMAND_QUOTA if plan.capacity.type == "on-demand" else AWS_SPOT_QUOTA
        code = codes.get(plan.instance_type[0])
        if code:
            quota = client("service-quotas", plan.region).get_service_quota(ServiceCode="ec2", QuotaCode=code)
            limit = float(quota["Quota"]["Value"])
            needed = plan.nodes * plan.offer.vcpus
            if needed > limit:
                problems.append(
                    Problem(
                        "nodes",
                        plan.nodes,
                        f"needs {needed} vCPUs of {plan.capacity.type} P instances but the account's quota "
                        f"({code}) in {plan.region} is {limit:g}",
                        f"request a quota increase to {needed} in the Service Quotas console, or use fewer nodes",
                    )
                )
    return problems


def _eks_zones(plan: ClusterPlan, ec2: Any) -> list[Problem]:
    """EKS refuses cluster subnets in some zone IDs; the node subnet is one of the cluster's subnets, so its
    zone's ID in *this* account must not be one of them (the control-plane subnet is placed by ID at deploy)."""
    from provision.clouds.aws.kubeplan import EKS_UNSUPPORTED_ZONE_IDS

    zones = ec2.describe_availability_zones(Filters=[{"Name": "opt-in-status", "Values": ["opt-in-not-required"]}])
    by_name = {z["ZoneName"]: z["ZoneId"] for z in zones["AvailabilityZones"]}
    node_zone = plan.zone or f"{plan.region}a"
    allowed = sorted(n for n, z in by_name.items() if z not in EKS_UNSUPPORTED_ZONE_IDS)
    problems: list[Problem] = []
    zone_id = by_name.get(node_zone)
    if zone_id in EKS_UNSUPPORTED_ZONE_IDS:
        problems.append(
            Problem(
                "zone",
                node_zone,
                f"is {zone_id} in this account, where EKS creates no cluster subnets (EKS user guide, "
                '"Subnet requirements for clusters": not in use1-az3, usw1-az2, cac1-az3)',
                f"use one of: {', '.join(n for n in allowed if n != node_zone)}",
            )
        )
    if not [n for n in allowed if n != node_zone]:
        problems.append(
            Problem(
                "region",
                plan.region,
                f"has no zone besides {node_zone} that EKS accepts in this account (EKS needs subnets in two zones)",
                "use another region",
            )
        )
    return problems


def preflight(plan: ClusterPlan, session: Callable[[str, str], Any] | None = None) -> list[Problem]:
    """The hook :meth:`~provision.clouds.base.Adapter.preflight` calls: ``session`` is the client factory."""
    return aws_preflight(plan, session)
