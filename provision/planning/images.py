"""Default node images, read from ``images/<cloud>.yaml`` (data, reviewed like code).

Each file lists image entries; the first whose ``match`` fits the instance offer wins.
An entry pins its image per region (``refs``; key ``"*"`` for global images). Where no
pin exists for a region, the entry may name a ``lookup`` the adapter resolves once at
deploy time and reports as an output to pin (never a silent 'latest' on every run).

Entry shape::

    - name: dlami-base-ubuntu2204
      match: {gpu_vendor: [nvidia], fabric: [efa]}     # InstanceOffer attributes
      family: Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04)
      refs: {us-east-1: ami-0123456789abcdef0}
      lookup: /aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id
      versions: {driver: "570.x", cuda: "12.8", nccl: "2.26", efa_installer: "1.41"}
      source: https://docs.aws.amazon.com/dlami/latest/devguide/...
"""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from provision.spec.errors import Problem, SpecError

if TYPE_CHECKING:
    from provision.catalog import InstanceOffer
    from provision.planning.plan import ImagePlan
    from provision.spec import ClusterSpec

LOOKUP_PREFIX = "lookup:"


def images_dir() -> Path:
    """The ``images/`` folder: beside the package in a checkout, else installed data files."""
    for candidate in (
        Path(__file__).resolve().parents[2] / "images",
        Path(sys.prefix) / "share" / "provision" / "images",
    ):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("the images/ folder of provision is missing; reinstall provision")


@cache
def _entries(cloud: str) -> tuple[dict[str, Any], ...]:
    path = images_dir() / f"{cloud}.yaml"
    if not path.exists():
        return ()
    doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return tuple(doc.get("images", ()))


def _matches(entry: dict[str, Any], offer: InstanceOffer, fabric: str) -> bool:
    for key, allowed in (entry.get("match") or {}).items():
        value = fabric if key == "fabric" else getattr(offer, key, None)
        if value not in allowed:
            return False
    return True


def default_image(spec: ClusterSpec, offer: InstanceOffer, fabric: str) -> ImagePlan:
    """The image for ``spec``: its pinned id, else the first matching entry of ``images/<cloud>.yaml``.

    Raises:
        SpecError: no entry fits the offer and the spec pins no image.
    """
    from provision.planning.plan import ImagePlan

    if spec.image.id:
        return ImagePlan(ref=spec.image.id, source="spec", family=spec.image.family, versions=dict(spec.image.versions))
    for entry in _entries(spec.cloud):
        if not _matches(entry, offer, fabric):
            continue
        if spec.image.family and spec.image.family != entry.get("family") and spec.image.family != entry.get("name"):
            continue
        refs = entry.get("refs") or {}
        ref = refs.get(spec.region) or refs.get("*")
        if ref is None and entry.get("lookup"):
            ref = LOOKUP_PREFIX + entry["lookup"]
        if ref is None:
            continue
        versions = {**(entry.get("versions") or {}), **spec.image.versions}
        return ImagePlan(
            ref=ref,
            source=f"images/{spec.cloud}.yaml#{entry['name']}",
            family=entry.get("family"),
            versions={k: str(v) for k, v in versions.items()},
        )
    raise SpecError(
        problems=[
            Problem(
                "image.id",
                spec.image.family or None,
                f"has no default image for {offer.instance_type} in {spec.region}",
                "pin an image with image.id",
            )
        ]
    )
