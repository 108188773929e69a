"""One volume as ``provision volume list`` shows it: shared by the mocked store's reader
(:mod:`provision.ops.volumes`) and the Pulumi backend's (:mod:`provision.ops.volume_stacks`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from provision.spec.errors import Problem
from provision.spec.units import format_time
from provision.spec.volume import STACK_PREFIX, VolumeSpecError

#: The ``kind`` output that marks a stack as a volume (``provision list`` skips such stacks).
VOLUME_MARK = "volume"


@dataclass(frozen=True)
class VolumeRecord:
    """One volume in the state."""

    name: str
    outputs: dict[str, Any]
    created_at: datetime | None
    used_by: tuple[str, ...]

    def row(self) -> dict[str, Any]:
        """The ``provision volume list`` row (JSON shape)."""
        out = self.outputs
        return {
            "name": self.name,
            "stack": STACK_PREFIX + self.name,
            "cloud": out.get("cloud"),
            "region": out.get("region"),
            "zone": out.get("zone"),
            "filesystem": out.get("filesystem"),
            "size_gib": out.get("size_gib"),
            "filesystem_id": out.get("filesystem_id"),
            "tier": out.get("tier"),
            "hourly_usd": out.get("hourly_usd"),
            "lifetime_until": out.get("expires_at"),
            "origin": out.get("origin"),
            "tags": out.get("tags") or {},
            "created_at": format_time(self.created_at) if self.created_at else None,
            "used_by": list(self.used_by),
        }


def refuse_if_attached(record: VolumeRecord, mock: bool) -> None:
    """``volume delete`` is refused while a cluster stack records attaching the volume (names them all)."""
    if record.used_by:
        down = "provision down STACK" + (" --mock" if mock else "")
        raise VolumeSpecError(
            problems=[
                Problem(
                    "name",
                    record.name,
                    f"is attached by cluster stack(s) {', '.join(record.used_by)}",
                    f"bring those clusters down first (`{down}`), then delete the volume",
                )
            ]
        )
