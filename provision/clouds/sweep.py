"""What every cloud's sweeper (``clouds/<cloud>/sweeper.py``) reports: a cluster past its expiry.

A sweeper finds expired clusters by their tags in the cloud, without Pulumi state (``provision reap
--<cloud>-...``); :mod:`provision.ops.reaper` dispatches to the cloud's ``sweep`` and never names a cloud.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from provision.spec.units import format_time


@dataclass
class ExpiredCluster:
    """One cluster past its expiry, with what was found of it."""

    cloud: str
    region: str
    cluster: str
    expires_at: datetime
    resources: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "cloud": self.cloud,
            "region": self.region,
            "cluster": self.cluster,
            "expires_at": format_time(self.expires_at),
            "resources": list(self.resources),
        }
