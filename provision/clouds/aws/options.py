"""AWS-only spec options (``aws:`` in a spec). Pure pydantic: no SDK imports."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from provision.clouds._options import CloudOptions


class AwsOptions(CloudOptions):
    vpc_id: str | None = Field(default=None, pattern=r"^vpc-[0-9a-f]{8,17}$", description="Use this VPC.")
    subnet_id: str | None = Field(
        default=None, pattern=r"^subnet-[0-9a-f]{8,17}$", description="Use this private subnet (with vpc_id)."
    )
    vpc_cidr: str = Field(default="10.0.0.0/16", description="CIDR of the VPC created when vpc_id is absent.")
    allocation: Literal["fleet", "asg"] = Field(
        default="fleet", description="Gang allocation: an instant EC2 Fleet (all or nothing) or an ASG."
    )
    root_volume_gib: int = Field(default=200, ge=100, le=16384, description="Encrypted gp3 root volume size.")
    permissions_boundary_arn: str | None = Field(
        default=None, description="IAM permissions boundary attached to the node role."
    )
