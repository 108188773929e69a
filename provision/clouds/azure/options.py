"""Azure-only spec options (``azure:`` in a spec). Pure pydantic: no SDK imports."""

from __future__ import annotations

from pydantic import Field

from provision.clouds._options import CloudOptions


class AzureOptions(CloudOptions):
    max_island_nodes: int = Field(
        default=100,
        ge=1,
        le=300,
        description="Largest InfiniBand island (one single-placement-group VMSS): 100 by default, "
        "300 after a support request.",
    )
    split_islands: bool = Field(
        default=False, description="Split a cluster larger than one island into several IB islands."
    )
    vnet_cidr: str = Field(default="10.0.0.0/16", description="Address space of the cluster's VNet.")
