"""``ClusterCost``: what a cluster costs per hour, since its creation and over its lifetime."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from provision.spec.units import format_time


@dataclass(frozen=True)
class ClusterCost:
    """The estimated cost: per hour, and since the cluster was created (at the estimated rate).

    ``created_at`` is ``None`` (and ``spent_usd`` 0) while the cluster does not exist.
    """

    hourly_usd: float | None
    created_at: datetime | None
    elapsed_hours: float
    spent_usd: float | None
    lifetime_usd: float | None
    expires_at: datetime | None

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for k in ("created_at", "expires_at"):
            d[k] = format_time(d[k]) if d[k] else None
        return d

    def __str__(self) -> str:
        if self.hourly_usd is None:
            return "unpriced"
        spent = f", ${self.spent_usd:,.2f} so far ({_duration(self.elapsed_hours)})" if self.created_at else ""
        return f"${self.hourly_usd:,.2f}/h{spent}"

    def __repr__(self) -> str:
        lifetime = f", ~${self.lifetime_usd:,.2f} for the whole lifetime" if self.lifetime_usd is not None else ""
        expires = f", expires {self.as_dict()['expires_at']}" if self.expires_at else ""
        return f"<ClusterCost {self}{lifetime}{expires}>"


def _duration(hours: float) -> str:
    minutes = hours * 60
    if minutes < 1:
        return f"{minutes * 60:.0f} s"
    if minutes < 120:
        return f"{minutes:.0f} min"
    return f"{hours:.1f} h"
