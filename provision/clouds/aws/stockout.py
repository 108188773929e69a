"""What an instant EC2 Fleet lists about itself after a capacity miss, which its create does not report.

An instant fleet (``Type=instant``) that cannot launch its ``MinTargetCapacity`` is still created: CreateFleet
returns the misses in its response's ``Errors[]`` (``ErrorCode`` such as ``InsufficientInstanceCapacity``,
``ErrorMessage``, ``Lifecycle``; docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateFleet.html), and the
Terraform provider inside pulumi-aws does not turn them into an error (terraform-provider-aws
``internal/service/ec2/ec2_fleet.go`` ``resourceFleetCreate`` ignores ``output.Errors``). The program's read-back
then fails on the instance count (``provision/clouds/aws/nodes.py``), with no code in the text. DescribeFleets
returns the same ``Errors[]`` for an instant fleet named by id (botocore ec2 2016-11-15 ``FleetData.Errors``:
"Valid only when Type is set to instant"; DescribeFleets: an instant fleet appears only when its id is given).
Reached through :meth:`provision.clouds.base.Adapter.group_errors`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from provision.planning.plan import ClusterPlan


def group_errors(plan: ClusterPlan, ids: list[str], session: Callable[[str, str], Any] | None = None) -> list[str]:
    """``CODE: message`` for every error the fleets ``ids`` list; ``session`` is a ``(service, region)`` client
    factory (default: boto3 with the environment's credentials)."""
    if not ids:
        return []
    if session is None:
        import boto3  # the aws extra

        session = lambda service, region: boto3.client(service, region_name=region)  # noqa: E731
    answer = session("ec2", plan.region).describe_fleets(FleetIds=list(ids))
    found: list[str] = []
    for fleet in answer.get("Fleets") or []:
        for err in fleet.get("Errors") or []:
            code, text = err.get("ErrorCode") or "", err.get("ErrorMessage") or ""
            found.append(f"{code}: {text}" if text else code)
    return found
