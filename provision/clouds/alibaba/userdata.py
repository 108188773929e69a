"""Alibaba node user data: the common bootstrap plus ``images/alibaba/erdma-setup.sh`` (pure text).

The ECS API takes user data base64-encoded (pulumi_alicloud ``ecs.Instance.user_data``: "It supports
to setting a base64-encoded value, and it is the recommended usage"), at most 32 KiB.
"""

from __future__ import annotations

import base64
import shlex
from string import Template
from typing import Any

from provision.planning.bootstrap import render_user_data
from provision.planning.images import images_dir
from provision.planning.plan import ClusterPlan

#: ECS user data limit (RunInstances ``UserData``: at most 32 KB after base64 encoding).
MAX_USER_DATA_BYTES = 32 * 1024
#: Used when the image carries no manifest (an image pinned by id without versions).
DEFAULT_VERSIONS = {
    "driver_branch": "570",
    "driver_package": "nvidia-driver-570-server-open",
    "fabricmanager": "nvidia-fabricmanager-570",
    "erdma_installer": "1.5.7",
    "erdma_installer_sha256": "cb44f4c4aaaabfbd81224c85a9e7889732bda26cc832ff70ecc0559bcc14165c",
}
ERDMA_MIRROR = "http://mirrors.cloud.aliyuncs.com/erdma"


def cloud_setup(plan: ClusterPlan) -> str:
    """The Alibaba part of the bootstrap: login user, GPU driver, eRDMA stack, ENIs and MTU."""
    versions = {**DEFAULT_VERSIONS, **plan.image.versions}
    template = Template((images_dir() / "alibaba" / "erdma-setup.sh").read_text(encoding="utf-8"))
    return template.safe_substitute(
        PROVISION_SSH_USER=plan.access.ssh_user,
        PROVISION_AUTHORIZED_KEYS="\n".join(plan.access.ssh_public_keys),
        PROVISION_DRIVER_BRANCH=versions["driver_branch"],
        PROVISION_DRIVER_PACKAGE=versions["driver_package"],
        PROVISION_FABRICMANAGER=versions["fabricmanager"],
        PROVISION_ERDMA="true" if plan.fabric == "erdma" else "false",
        PROVISION_ERDMA_INSTALLER_URL=f"{ERDMA_MIRROR}/erdma_installer-{versions['erdma_installer']}.tar.gz",
        PROVISION_ERDMA_INSTALLER_SHA256=versions["erdma_installer_sha256"],
        PROVISION_MTU=str(plan.extra["mtu"]),
    )


def shared_mount(mount_source: str | None, mount_point: str, options: str, owner: str = "root") -> str:
    """Shell lines that mount the shared filesystem now and at every boot (fstab); its root belongs to ``owner``
    (the login user), mode 0755: not world-writable."""
    if not mount_source:
        return ": # the shared filesystem's NFS domain is not known at deploy time (see shared_fs output)"
    point = shlex.quote(mount_point)
    return "\n".join(
        [
            "apt-get install -y nfs-common || true",
            f"mkdir -p {point}",
            f"grep -q ' {mount_point} nfs ' /etc/fstab || "
            f"echo '{mount_source} {mount_point} nfs {options},_netdev 0 0' >> /etc/fstab",
            f"mount {point} || mount -t nfs -o {options} {shlex.quote(mount_source)} {point}",
            f"chown {shlex.quote(owner)}: {point} && chmod 0755 {point} || true",
        ]
    )


def user_data(plan: ClusterPlan, mount_source: str | None = None) -> str:
    """The node's user data, base64-encoded.

    Raises:
        ValueError: the script exceeds the ECS user-data limit.
    """
    storage: dict[str, Any] | None = plan.extra.get("storage")
    mount = (
        shared_mount(mount_source, plan.storage.mount, plan.extra["nfs_options"], plan.access.ssh_user)
        if plan.storage
        else ""
    )
    text = render_user_data(
        plan,
        cloud_setup=cloud_setup(plan),
        shared_mount=mount if storage else "",
        # auto_release_time releases the node in the cloud; a guest shutdown would only stop (not delete) it.
        self_destruct=": # lifetime enforced by ECS auto_release_time",
    )
    encoded = base64.b64encode(text.encode()).decode()
    if len(encoded) > MAX_USER_DATA_BYTES:
        raise ValueError(f"user data is {len(encoded)} bytes base64, over the ECS limit of {MAX_USER_DATA_BYTES}")
    return encoded
