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

import re
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from provision.spec.errors import Problem, SpecError
from provision.spec.shipped import read_shipped, shipped_dir

if TYPE_CHECKING:
    from provision.catalog import InstanceOffer
    from provision.planning.plan import ImagePlan
    from provision.spec import ClusterSpec

LOOKUP_PREFIX = "lookup:"


def images_dir() -> Path:
    """The ``images/`` folder shipped with provision (:func:`provision.spec.shipped.shipped_dir`).

    Raises:
        ProvisionError: it is missing (a broken install), with the fix.
    """
    return shipped_dir("images")


def image_text(relative: str) -> str:
    """The text of ``images/<relative>``.

    Raises:
        ProvisionError: the file is missing (a broken install), with the fix.
    """
    return read_shipped("images", relative)


@cache
def _entries(cloud: str) -> tuple[dict[str, Any], ...]:
    doc = yaml.safe_load(image_text(f"{cloud}.yaml")) or {}
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


# ---------------------------------------------------------------------- checked versions (issue 12, 13)

#: The kind of value each ``image.versions`` key holds (planning/bootstrap.PATTERNS); other keys are versions.
VERSION_KINDS: dict[str, str] = {
    "driver_package": "package",
    "fabricmanager": "package",
    "nccl_plugin": "image",
    "rxdm": "image",
    "erdma_installer_sha256": "digest",
    "topology_files": "paths",
    # Where the image keeps nccl-tests (or rccl-tests) all_reduce_perf and the mpirun it was built with
    # (provision/planning/bootstrap.nccl_tests_expectation); absent: the bootstrap builds nccl_tests.
    "nccl_tests_path": "glob-path",
    "mpirun_path": "glob-path",
    "nccl_tests_lib": "paths",
    "cuda_toolkit_package": "package",
    # The nccl-tests source tarball: its SHA-256, and a copy to fetch first (an in-region mirror, e.g. an OSS
    # object on the region's internal endpoint) before NVIDIA's GitHub archive.
    "nccl_tests_sha256": "digest",
    "nccl_tests_url": "url",
}
_KEY = re.compile(r"[a-z][a-z0-9_]{0,39}")
#: What a good value of each kind looks like (shown in the fix).
_EXAMPLES = {
    "version": "a version such as 570 or 2.27.5-1+cuda12.9",
    "package": "a Debian package name such as nvidia-driver-570-server-open",
    "image": "a container image such as us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/tcpgpudmarxd-dev:v1.0.20",
    "digest": "the 64 lower-case hex digits of a SHA-256",
    "paths": "absolute paths separated by spaces",
    "glob-path": "an absolute path, * allowed, such as /opt/hpcx-*/ompi/bin/mpirun",
    "url": "an http(s) URL such as https://my-bucket.oss-cn-hangzhou-internal.aliyuncs.com/nccl-tests-2.17.6.tar.gz",
}


@cache
def compat_rules() -> dict[str, Any]:
    """``images/compat.yaml``: version compatibility rules, each with its source."""
    return yaml.safe_load(image_text("compat.yaml")) or {}


def version_tuple(text: str) -> tuple[int, ...]:
    """The leading dotted number of a version: ``2.27.5-1+cuda12.9`` -> ``(2, 27, 5)``."""
    m = re.match(r"v?(\d+(?:\.\d+)*)", text.strip())
    return tuple(int(x) for x in m.group(1).split(".")) if m else ()


def check_image(image: ImagePlan, fabric: str, nccl_env: dict[str, str]) -> list[Problem]:
    """Problems with an image's versions: each value against the strict pattern of its kind (they reach root
    scripts on every node), then the rules of ``images/compat.yaml``. Empty when all is well."""
    from provision.planning.values import PATTERNS, UnsafeValueError, checked

    problems: list[Problem] = []
    versions = image.versions
    for key, value in versions.items():
        path = f"image.versions.{key}"
        if not _KEY.fullmatch(key):
            problems.append(
                Problem(path, key, "is not a valid version key (lower-case letters, digits, '_')", "rename it")
            )
            continue
        kind = VERSION_KINDS.get(key, "version")
        try:
            checked(kind, value, path)
        except UnsafeValueError:
            problems.append(
                Problem(
                    path, value, f"is not a valid {kind} (must match ^{PATTERNS[kind]}$)", f"write {_EXAMPLES[kind]}"
                )
            )
    if problems:
        return problems
    rules = compat_rules()
    problems += _cuda_driver(versions, rules.get("cuda_min_driver") or {})
    if not problems:
        problems += _cuda_toolkit_driver(versions, rules.get("cuda_toolkit_driver") or {})
    problems += _plugin_nccl(versions, rules.get("plugin_nccl") or [])
    problems += _env_features(versions, nccl_env, rules.get("nccl_env_features") or [])
    for rule in rules.get("fabric_kernel") or []:
        if fabric == rule["fabric"] and image.source != "spec" and rule["contains"] not in versions.get("kernel", ""):
            problems.append(
                Problem(
                    "image.id",
                    image.ref,
                    f"(the default image) has no {rule['contains']} kernel: {rule['reason']}",
                    rule["fix"],
                )
            )
    return problems


def _cuda_and_driver(versions: dict[str, str]) -> tuple[str, str] | None:
    """The pinned CUDA and driver (or driver branch) when both are versions, else ``None``."""
    cuda, driver = versions.get("cuda"), versions.get("driver") or versions.get("driver_branch")
    if not cuda or not driver or not version_tuple(cuda) or not version_tuple(driver):
        return None
    return cuda, driver


def _cuda_driver(versions: dict[str, str], rule: dict[str, Any]) -> list[Problem]:
    problems = _nccl_cuda(versions)
    pins = _cuda_and_driver(versions)
    if pins is None:
        return problems
    cuda, driver = pins
    minimum = (rule.get("by_cuda_major") or {}).get(str(version_tuple(cuda)[0]))
    if minimum is None or version_tuple(driver)[0] >= int(minimum):
        return problems
    return [
        Problem(
            "image.versions.driver",
            driver,
            f"is older than CUDA {cuda} allows (CUDA {version_tuple(cuda)[0]}.x needs driver >= {minimum}; "
            f"{rule.get('source')})",
            f"pin a driver >= {minimum}, or a CUDA release that driver supports",
        ),
        *problems,
    ]


def _cuda_toolkit_driver(versions: dict[str, str], rule: dict[str, Any]) -> list[Problem]:
    """A driver branch below the pinned CUDA release's own GA driver (``535`` with CUDA 12.8): the node's
    ``nvidia-smi`` reports an older CUDA than the pin and health fails, so refuse it before anything exists."""
    pins = _cuda_and_driver(versions)
    if pins is None:
        return []
    cuda, driver = pins
    table: dict[str, str] = rule.get("by_cuda") or {}
    own = table.get(".".join(str(p) for p in version_tuple(cuda)[:2]))
    if own is None or version_tuple(driver)[0] >= version_tuple(own)[0]:
        return []
    newest = [c for c, d in table.items() if version_tuple(d)[0] <= version_tuple(driver)[0]]
    older = f", or CUDA {max(newest, key=version_tuple)} (the newest that driver branch ships with)" if newest else ""
    return [
        Problem(
            "image.versions.driver",
            driver,
            f"is an older branch than CUDA {cuda}'s own driver {own} ({rule.get('source')}): nvidia-smi would report "
            "an older CUDA than the pin and the node health check fails",
            f"pin driver >= {version_tuple(own)[0]}{older}",
        )
    ]


def _nccl_cuda(versions: dict[str, str]) -> list[Problem]:
    """An NCCL package built for another CUDA major than the pinned toolkit (``2.26.2-1+cuda12.8`` with CUDA 13):
    NVIDIA builds each NCCL package against one CUDA release (the ``+cudaX.Y`` of its version, NCCL Installation
    Guide "Ubuntu 20.04/22.04/24.04"), and CUDA's minor-version compatibility holds only within a major."""
    cuda, nccl = versions.get("cuda"), versions.get("nccl") or ""
    m = re.search(r"\+cuda(\d+(?:\.\d+)?)$", nccl)
    if not cuda or not m or not version_tuple(cuda) or version_tuple(m.group(1))[0] == version_tuple(cuda)[0]:
        return []
    return [
        Problem(
            "image.versions.nccl",
            nccl,
            f"is built for CUDA {m.group(1)}, another major release than the pinned CUDA {cuda}",
            f"pin an NCCL build for CUDA {version_tuple(cuda)[0]}.x (version ending +cuda{version_tuple(cuda)[0]}.N)",
        )
    ]


def _plugin_nccl(versions: dict[str, str], rules: list[dict[str, Any]]) -> list[Problem]:
    nccl = versions.get("nccl")
    out = []
    for rule in rules:
        plugin = versions.get(rule["key"])
        if not nccl or not plugin or not (plugin == rule["match"] or plugin.endswith("/" + rule["match"])):
            continue
        if version_tuple(nccl)[:3] != version_tuple(rule["nccl"])[:3]:
            out.append(
                Problem(
                    "image.versions.nccl",
                    nccl,
                    f"is not the NCCL that {rule['key']} {rule['match']} is released against ({rule['nccl']}; "
                    f"{rule['source']})",
                    f"set image.versions.nccl to {rule['nccl']}, or pin the plugin release made for your NCCL",
                )
            )
    return out


def _env_features(versions: dict[str, str], env: dict[str, str], rules: list[dict[str, Any]]) -> list[Problem]:
    # Both pins: the node's own NCCL (nccl) and the oldest one users may bring in containers (nccl_min), which get
    # the same environment through the env file.
    out = []
    for rule in rules:
        for key in ("nccl", "nccl_min"):
            nccl = versions.get(key)
            if not nccl or env.get(rule["env"]) != str(rule["value"]):
                continue
            if version_tuple(nccl) >= version_tuple(str(rule["min_nccl"])):
                continue
            out.append(
                Problem(
                    f"image.versions.{key}",
                    nccl,
                    f"is older than NCCL {rule['min_nccl']}, which this fabric's {rule['env']}={rule['value']} needs "
                    f"({rule['source']})",
                    f"use NCCL {rule['min_nccl']} or later",
                )
            )
    return out
