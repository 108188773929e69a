"""The ``osProfile.linuxConfiguration`` every Azure VM of a cluster gets: the node scale sets
(:mod:`provision.clouds.azure.components`) and the Slurm controller VM (:mod:`provision.clouds.azure.slurm`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pulumi_azure_native import compute

if TYPE_CHECKING:
    from provision.spec import AccessSpec


def linux_configuration(access: AccessSpec) -> compute.LinuxConfigurationArgs:
    """The ``osProfile.linuxConfiguration`` of the node scale sets and the Slurm controller VM: no password, the
    VM agent, and ``access.ssh_public_keys`` in ``access.ssh_user``'s ``authorized_keys``."""
    user = access.ssh_user
    return compute.LinuxConfigurationArgs(
        disable_password_authentication=True,
        provision_vm_agent=True,
        ssh=compute.SshConfigurationArgs(
            public_keys=[
                compute.SshPublicKeyArgs(path=f"/home/{user}/.ssh/authorized_keys", key_data=key)
                for key in access.ssh_public_keys
            ]
        ),
    )
