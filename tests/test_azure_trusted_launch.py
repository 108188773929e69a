"""Azure Trusted Launch: nodes and the Slurm controller run with vTPM and without Secure Boot, where the size has it."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import preview, shipped_preview
from strict_helpers import one, register, violations_of
from test_azure_plan import azure_spec

from provision.spec import load_spec

VMSS = "azure-native:compute:VirtualMachineScaleSet"
VM = "azure-native:compute:VirtualMachine"
BASE = {"resourceGroupName": "rg", "location": "eastus"}
TRUSTED = {"securityType": "TrustedLaunch", "uefiSettings": {"secureBootEnabled": False, "vTpmEnabled": True}}
HPC_IMAGE = {"publisher": "microsoft-dsvm", "offer": "ubuntu-hpc", "sku": "2204", "version": "22.04.2024102301"}


def vmss_security(**overrides: Any) -> Any:
    result = preview(load_spec(azure_spec(**overrides)))
    return [r.inputs["virtualMachineProfile"].get("securityProfile") for r in result.resources if r.type == VMSS]


def test_nd_h100_v5_nodes_are_trusted_launch_with_vtpm_and_without_secure_boot() -> None:
    assert vmss_security() == [TRUSTED]


def test_host_encryption_and_trusted_launch_go_in_one_security_profile() -> None:
    assert vmss_security(azure={"encryption_at_host": True}) == [{**TRUSTED, "encryptionAtHost": True}]


def test_a_size_microsoft_does_not_support_for_trusted_launch_gets_none() -> None:
    # trusted-launch.md lists NDm_A100_v4 as "Currently not supported".
    assert vmss_security(gpu="A100-80GB", instance_type="Standard_ND96amsr_A100_v4", storage={}) == [None]


def test_the_slurm_controller_is_trusted_launch_too() -> None:
    result = shipped_preview("azure-ndh100-16-slurm")
    (controller,) = [r for r in result.resources if r.type == VM]
    assert controller.inputs["securityProfile"] == TRUSTED


def _vmss(size: str, security: dict[str, Any]) -> dict[str, Any]:
    return {
        **BASE,
        "vmScaleSetName": "x-island0",
        "sku": {"name": size, "tier": "Standard", "capacity": 2},
        "virtualMachineProfile": {"securityProfile": security, "storageProfile": {"imageReference": HPC_IMAGE}},
    }


def test_strict_cloud_accepts_the_programs_settings() -> None:
    register(VMSS, "x-island0", _vmss("Standard_ND96isr_H100_v5", TRUSTED))  # raises on any violation


def test_strict_cloud_refuses_trusted_launch_on_an_unsupported_size() -> None:
    found = violations_of(VMSS, "x-island0", _vmss("Standard_ND96asr_v4", TRUSTED))
    v = one(found, "virtualMachineProfile.securityProfile.securityType")
    assert "does not support Trusted Launch" in v.rule and "trusted-launch" in v.source


def test_strict_cloud_refuses_uefi_settings_without_a_security_type() -> None:
    found = violations_of(VMSS, "x-island0", _vmss("Standard_ND96isr_H100_v5", {"uefiSettings": {"vTpmEnabled": True}}))
    v = one(found, "virtualMachineProfile.securityProfile.uefiSettings")
    assert "ignored unless securityType is set" in v.rule and "SecurityProfileArgs" in v.source


@pytest.mark.parametrize("type_token", [VMSS, VM])
def test_strict_cloud_refuses_secure_boot_on_the_hpc_image(type_token: str) -> None:
    security = {"securityType": "TrustedLaunch", "uefiSettings": {"secureBootEnabled": True, "vTpmEnabled": True}}
    if type_token == VMSS:
        inputs, prefix = _vmss("Standard_ND96isr_H100_v5", security), "virtualMachineProfile."
    else:
        inputs = {
            **BASE,
            "vmName": "x-slurm",
            "hardwareProfile": {"vmSize": "Standard_D4s_v5"},
            "securityProfile": security,
            "storageProfile": {"imageReference": HPC_IMAGE},
        }
        prefix = ""
    v = one(violations_of(type_token, "x", inputs), f"{prefix}securityProfile.uefiSettings.secureBootEnabled")
    assert "unsigned DKMS" in v.rule and "azhpc-images" in v.source
