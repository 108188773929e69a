"""Shipped data cites vendors, not this machine: no source line points at a local path.

A citation such as ``/work/shared/research/catalog.md [X]`` or a team note means nothing to anyone who installs
the package; every figure's source must be a URL (or a published package and the path inside it).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Data the package and the repository ship: the catalog, the node images and their manifests, the example stacks.
SHIPPED = ("provision/catalog/data", "provision/clouds", "provision/ops/policy_pack", "images", "stacks")
SUFFIXES = {".yaml", ".yml", ".json", ".toml", ".md", ".txt", ".sh", ".cfg"}
#: An absolute path on a build machine, a home directory, or a relative path to notes outside the repository
#: (scripts' own ``../common/lib.sh`` includes are paths inside it).
LOCAL = re.compile(
    r"(?<![\w.:/-])(?:/(?:work|home|Users|root|mnt|tmp)/[\w.-]+|~/[\w.-]+/|(?:\.\./)+(?:shared|team|research|work)/)"
)


def shipped_files() -> list[Path]:
    out = []
    for top in SHIPPED:
        for p in sorted((ROOT / top).rglob("*")):
            if p.is_file() and p.suffix in SUFFIXES and "__pycache__" not in p.parts:
                out.append(p)
    return out


def test_the_scan_covers_the_catalog_and_images() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in shipped_files()}
    assert "provision/catalog/data/aws.yaml" in names and "images/aws.yaml" in names
    assert any(n.startswith("stacks/") for n in names)


@pytest.mark.parametrize(
    "line",
    [
        "  - ref: /work/shared/research/catalog.md [ALI] and note 8",
        "    recordings, see /work/team/notes-prices5.md): no AWS figure",
        "  source: ../shared/research/review/ux.md",
    ],
)
def test_the_pattern_finds_local_citations(line: str) -> None:
    assert LOCAL.search(line)


@pytest.mark.parametrize(
    "line",
    [
        "  - ref: https://learn.microsoft.com/en-us/azure/azure-managed-lustre/create-file-system-portal",
        "  - ref: PyPI moto==5.2.5 moto/ec2/resources/instance_types.json.gz",
        "    mount: /shared",
        "  path: /etc/slurm/slurm.conf",
        "# shellcheck source=../../common/lib.sh",
    ],
)
def test_the_pattern_leaves_urls_and_node_paths_alone(line: str) -> None:
    assert not LOCAL.search(line)


def test_no_shipped_data_file_cites_a_local_path() -> None:
    found = [
        f"{p.relative_to(ROOT)}:{n}: {line.strip()}"
        for p in shipped_files()
        for n, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
        if LOCAL.search(line)
    ]
    assert not found, "cite the vendor's URL instead of a local file:\n" + "\n".join(found)
