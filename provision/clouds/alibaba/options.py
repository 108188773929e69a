"""Alibaba-only spec options (``alibaba:`` in a spec). Pure pydantic: no SDK imports."""

from __future__ import annotations

from pydantic import Field

from provision.clouds._options import CloudOptions


class AlibabaOptions(CloudOptions):
    vpc_cidr: str = Field(default="10.0.0.0/16", description="CIDR of the VPC.")
    kms_key_id: str | None = Field(default=None, description="KMS key for disk encryption; default key if unset.")
    resource_group_id: str | None = Field(default=None, description="Resource group for every resource.")
