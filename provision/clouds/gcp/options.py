"""GCP-only spec options (``gcp:`` in a spec). Pure pydantic: no SDK imports."""

from __future__ import annotations

from pydantic import Field

from provision.clouds._options import CloudOptions


class GcpOptions(CloudOptions):
    project: str | None = Field(
        default=None,
        pattern=r"^[a-z][a-z0-9-]{4,28}[a-z0-9]$",
        description="GCP project id; defaults to the provider's gcp:project config.",
    )
    host_subnet_cidr: str = Field(default="10.0.0.0/20", description="CIDR of the host (gVNIC) subnet.")
    gpu_subnet_cidr_base: str = Field(
        default="10.128.0.0/9", description="Range carved into one /20 per GPU NIC subnet."
    )
