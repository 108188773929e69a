"""Strict Azure: the Trusted Launch settings of VMs and scale sets (facts and sources in ``trustedlaunch.py``).

* ``TrustedLaunch`` on a size Microsoft does not (yet) support for it is refused (trusted-launch.md sizes table).
* ``uefiSettings`` without a security type are silently not applied (pulumi-azure-native
  ``SecurityProfileArgs.security_type``: "It has to be set to any specified value to enable UefiSettings").
* Secure Boot on a ubuntu-hpc image: the nodes boot, but their unsigned DKMS GPU and InfiniBand drivers do not load.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from provision.clouds.azure.trustedlaunch import NOT_SUPPORTED, SOURCE, UNSIGNED_MODULE_IMAGES, UNSIGNED_SOURCE
from provision.clouds.strict import Resource, Violation

UEFI_SOURCE = (
    "pulumi-azure-native compute SecurityProfileArgs.security_type (azure-rest-api-specs): 'It has to be set to any "
    "specified value to enable UefiSettings'"
)


def _get(value: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def _vm(res: Resource) -> tuple[str, Any, Any, Any] | None:
    """(path prefix, size, securityProfile, imageReference) of a VM or scale set, else ``None``."""
    if res.type == "azure-native:compute:VirtualMachineScaleSet":
        profile = _get(res.inputs, "virtualMachineProfile")
        return (
            "virtualMachineProfile.",
            _get(res.inputs, "sku", "name"),
            _get(profile, "securityProfile"),
            _get(profile, "storageProfile", "imageReference"),
        )
    if res.type == "azure-native:compute:VirtualMachine":
        return (
            "",
            _get(res.inputs, "hardwareProfile", "vmSize"),
            _get(res.inputs, "securityProfile"),
            _get(res.inputs, "storageProfile", "imageReference"),
        )
    return None


def check(res: Resource) -> list[Violation]:
    found = _vm(res)
    if found is None:
        return []
    prefix, size, security, image = found
    if not isinstance(security, Mapping):
        return []
    out: list[Violation] = []
    kind, uefi = security.get("securityType"), security.get("uefiSettings")
    if kind == "TrustedLaunch" and size in NOT_SUPPORTED:
        out.append(
            res.violation(
                f"{prefix}securityProfile.securityType",
                kind,
                f"{size} does not support Trusted Launch: leave securityType unset (Standard)",
                SOURCE,
            )
        )
    if isinstance(uefi, Mapping) and kind in (None, "Standard"):
        out.append(
            res.violation(
                f"{prefix}securityProfile.uefiSettings", dict(uefi), "ignored unless securityType is set", UEFI_SOURCE
            )
        )
    publisher, offer = str(_get(image, "publisher") or "").lower(), str(_get(image, "offer") or "").lower()
    if _get(uefi, "secureBootEnabled") is True and (publisher, offer) in UNSIGNED_MODULE_IMAGES:
        out.append(
            res.violation(
                f"{prefix}securityProfile.uefiSettings.secureBootEnabled",
                True,
                f"image {publisher}:{offer} loads unsigned DKMS GPU and InfiniBand drivers, which Secure Boot refuses",
                UNSIGNED_SOURCE,
            )
        )
    return out
