"""AWS-only spec options (``aws:`` in a spec). Pure pydantic: no SDK imports."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from provision.spec.options.base import CloudOptions
from provision.spec.units import parse_network

#: Smallest and largest VPC the adapter carves (AWS allows /16../28; the layout needs a /24 public subnet
#: and a private subnet a quarter of the VPC, so /20 is the smallest that fits).
VPC_PREFIX_RANGE = (16, 20)


class AwsOptions(CloudOptions):
    vpc_id: str | None = Field(default=None, pattern=r"^vpc-[0-9a-f]{8,17}$", description="Use this VPC.")
    subnet_id: str | None = Field(
        default=None,
        pattern=r"^subnet-[0-9a-f]{8,17}$",
        description="Use this private subnet (with vpc_id); it must be in the cluster's zone and have egress.",
    )
    vpc_cidr: str = Field(default="10.0.0.0/16", description="CIDR of the VPC created when vpc_id is absent.")
    allocation: Literal["fleet", "asg"] = Field(
        default="fleet", description="Gang allocation: an instant EC2 Fleet (all or nothing) or an ASG."
    )
    root_volume_gib: int = Field(default=200, ge=100, le=16384, description="Encrypted gp3 root volume size.")
    root_device_name: str = Field(
        default="/dev/sda1",
        pattern=r"^/dev/(sd[a-z][0-9]*|xvd[a-z][0-9]*|nvme[0-9]+n[0-9]+)$",
        description="Root device of the image ('/dev/sda1' on Ubuntu AMIs, '/dev/xvda' on Amazon Linux); "
        "a wrong name adds a second volume instead of sizing the root.",
    )
    permissions_boundary_arn: str | None = Field(
        default=None,
        pattern=r"^arn:aws(-cn|-us-gov)?:iam::([0-9]{12}|aws):policy/[A-Za-z0-9_+=,.@/-]+$",
        description="IAM permissions boundary attached to the node role.",
    )
    imds_hop_limit: Literal[1, 2] = Field(
        default=1,
        description="IMDSv2 PUT response hop limit: 1 keeps tokens on the host; 2 lets containers on a bridge "
        "network reach the instance metadata service.",
    )
    fsx_efa: bool | None = Field(
        default=None,
        description="EFA on the FSx for Lustre file system: the nodes' Lustre client reaches it over EFA instead "
        "of TCP. GPUDirect Storage (nvidia-fs) is not set up on the nodes. Default: on when the deployment type "
        "and size allow it (PERSISTENT_2, size a multiple of the tier's EFA step).",
    )
    placement_group: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$",
        description="Launch into this existing cluster placement group (e.g. the one your Capacity "
        "Reservation was created in) instead of creating one.",
    )

    @field_validator("vpc_cidr")
    @classmethod
    def _vpc_cidr(cls, v: str) -> str:
        net = parse_network(v)
        low, high = VPC_PREFIX_RANGE
        if net.version != 4 or not low <= net.prefixlen <= high:
            raise ValueError(
                f"{v} must be an IPv4 network from /{low} to /{high}; use e.g. 10.0.0.0/16 "
                "(the cluster takes a quarter of it for nodes and a /24 for the NAT gateway)"
            )
        return v
