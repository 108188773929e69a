"""Trusted Launch for the cluster's VMs (scale sets and the Slurm controller): vTPM on, Secure Boot off.

Pure: imports no Pulumi and no Azure SDK (``components.py`` and ``slurm.py`` turn it into a ``securityProfile``;
``strict_launch.py`` checks the same facts in the strict mocked cloud).

* **Sizes.** Microsoft's "Trusted Launch for Azure virtual machines" (learn.microsoft.com/azure/virtual-machines/
  trusted-launch, "Virtual machines sizes"; MicrosoftDocs/azure-compute-docs articles/virtual-machines/
  trusted-launch.md) lists the ND family (ND H100 v5, ND H200 v5, ND MI300X v5) and the D family (the controller's
  Dsv5) as supported, and NDasrA100_v4 and NDm_A100_v4 as "Currently not supported": those two get no security
  type (Standard), every other size gets ``TrustedLaunch``.
* **Secure Boot off.** The ubuntu-hpc images (the NVIDIA and ROCm ones alike) build the GPU driver and DOCA/MLNX
  OFED as DKMS modules that no key the firmware trusts has signed; with Secure Boot on they are refused at load
  (Azure/azhpc-images issue 298, "MOFED on secureboot enabled vms": "ofed modules managed by dkms can't be loaded
  on secureboot enabled vm"; trusted-launch.md: "Secure Boot should be disabled for installing CUDA drivers on
  other Linux VMs"), and a node would boot without its GPUs and InfiniBand.
* **vTPM on.** Measured boot and attestation without touching which modules load (trusted-launch.md, "vTPM").
* **Explicit, not left to the default.** Without a ``securityType`` the result depends on the subscription (the
  "Trusted Launch as default" preview makes such VMs Trusted Launch with Secure Boot *on*), and from compute API
  2025-11-01 Azure answers ``Standard`` for an unset one (pulumi-azure-native ``SecurityProfileArgs.security_type``).
  ``uefiSettings`` only apply with a security type set (same text), so both are always sent together.
"""

from __future__ import annotations

TRUSTED_LAUNCH = "TrustedLaunch"
SOURCE = "learn.microsoft.com/azure/virtual-machines/trusted-launch (Virtual machines sizes)"
#: Sizes of the families trusted-launch.md lists as "Currently not supported" or "Not supported" that the catalog
#: offers or a spec may name (NDasrA100_v4, NDm_A100_v4).
NOT_SUPPORTED = frozenset({"Standard_ND96asr_v4", "Standard_ND96amsr_A100_v4"})
#: Marketplace images whose kernel modules are DKMS-built and unsigned: (publisher, offer), lower case.
UNSIGNED_MODULE_IMAGES = frozenset({("microsoft-dsvm", "ubuntu-hpc")})
UNSIGNED_SOURCE = (
    "Azure/azhpc-images issue 298 (DKMS-built OFED modules cannot load with Secure Boot); trusted-launch.md note: "
    "Secure Boot should be disabled for installing CUDA drivers on other Linux VMs"
)


def trusted_launch(size: str) -> bool:
    """Whether VMs of ``size`` run as Trusted Launch (every size but the families Microsoft does not support)."""
    return size not in NOT_SUPPORTED


def security_settings(size: str, encryption_at_host: bool) -> dict[str, object] | None:
    """The ``securityProfile`` fields for a VM or scale set of ``size`` (SDK argument names), or ``None``."""
    out: dict[str, object] = {}
    if encryption_at_host:
        out["encryption_at_host"] = True
    if trusted_launch(size):
        out["security_type"] = TRUSTED_LAUNCH
        out["uefi_settings"] = {"secure_boot_enabled": False, "v_tpm_enabled": True}
    return out or None
