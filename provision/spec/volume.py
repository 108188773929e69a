"""A volume spec: a shared filesystem with a lifetime of its own, attached to clusters by name.

``provision volume create FILE`` reads one; a cluster attaches it with ``storage.shared.volume: NAME``
in the same cloud, region and zone (see :mod:`provision.ops.volumes`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from provision.catalog.models import Cloud, FilesystemKind
from provision.spec.errors import Problem, SpecError
from provision.spec.models import MAX_TTL, NAME_PATTERN, TagKey, TagValue
from provision.spec.units import Duration, SizeGiB

#: Which filesystem kinds each cloud sells (the clouds' storage.py builders).
KINDS_BY_CLOUD: dict[str, tuple[str, ...]] = {
    "aws": ("fsx-lustre",),
    "gcp": ("filestore", "managed-lustre", "parallelstore"),
    "azure": ("amlfs", "netapp"),
    "alibaba": ("cpfs", "cpfs-lingjun", "nas", "nas-extreme"),
}
#: The prefix of a volume's stack name: ``vol-<name>``.
STACK_PREFIX = "vol-"


class VolumeSpecError(SpecError):
    """A volume spec or a use of a volume is refused (exit 2)."""

    title = "the volume is refused"


class VolumeSpec(BaseModel):
    """One volume: its own stack ``vol-<name>``, cost and tags, kept until ``provision volume delete``."""

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)

    name: str = Field(pattern=NAME_PATTERN, description="Volume name, e.g. 'llm-data' (also its stack: vol-NAME).")
    cloud: Cloud = Field(description="Cloud provider.")
    region: str = Field(min_length=1, description="Region; clusters attaching the volume must be in it.")
    zone: str | None = Field(default=None, min_length=1, description="Zone; clusters must be in it when given.")
    kind: FilesystemKind = Field(description="Filesystem service, e.g. fsx-lustre, managed-lustre, amlfs, cpfs.")
    size_gib: SizeGiB = Field(description="Capacity, e.g. 4800 or '36TiB'.")
    throughput_mbps_per_tib: int | None = Field(default=None, gt=0, description="Throughput tier in MB/s per TiB.")
    lifetime: Duration | None = Field(default=None, description="How long the volume may live, e.g. '30d'.")
    tags: dict[TagKey, TagValue] = Field(default_factory=dict, description="Extra tags/labels on the volume.")
    network_cidr: str = Field(
        default="10.250.0.0/16",
        description="Address range of the volume's own network; attaching clusters' networks must not overlap it.",
    )

    @field_validator("network_cidr")
    @classmethod
    def _cidr(cls, v: str) -> str:
        import ipaddress

        try:
            net = ipaddress.ip_network(v, strict=True)
        except ValueError:
            raise ValueError("is not an IPv4 network in CIDR form with host bits clear, e.g. 10.250.0.0/16") from None
        if net.version != 4 or not net.is_private or not 16 <= net.prefixlen <= 24:
            raise ValueError("must be a private IPv4 range from /16 to /24 (RFC 1918), e.g. 10.250.0.0/16")
        return v

    @field_validator("kind")
    @classmethod
    def _kind_of_cloud(cls, v: str, info: Any) -> str:
        cloud = info.data.get("cloud")
        if cloud and v not in KINDS_BY_CLOUD.get(cloud, ()):
            raise ValueError(f"is not a {cloud} filesystem; use one of {', '.join(KINDS_BY_CLOUD[cloud])}")
        return v

    @field_validator("size_gib")
    @classmethod
    def _size(cls, v: int) -> int:
        if not 0 < v <= 100 * 1024 * 1024:
            raise ValueError("must be between 1 GiB and 100 PiB; give a size such as 4800 or '36TiB'")
        return v

    @field_validator("lifetime")
    @classmethod
    def _lifetime(cls, v: Any) -> Any:
        if v is not None and v > MAX_TTL * 4:
            raise ValueError("is over 360d, which is almost certainly a typo; omit lifetime to keep the volume")
        return v

    @property
    def stack(self) -> str:
        return STACK_PREFIX + self.name


def load_volume_spec(data: Any) -> VolumeSpec:
    """Validate a volume spec mapping.

    Raises:
        SpecError: every problem found, each naming its field.
    """
    from provision.spec.loading import problems_from_validation

    if not isinstance(data, dict):
        raise VolumeSpecError(
            problems=[Problem("", type(data).__name__, "is not a mapping", "write the volume as key: value")]
        )
    try:
        return VolumeSpec.model_validate(data)
    except ValidationError as err:
        raise VolumeSpecError(problems=problems_from_validation(err, data)) from None


def load_volume_file(path: str | Path) -> VolumeSpec:
    """The volume spec in the YAML file ``path`` (bounded reading, as for cluster specs)."""
    from provision.spec.loading import read_yaml

    return load_volume_spec(read_yaml(Path(path)))
