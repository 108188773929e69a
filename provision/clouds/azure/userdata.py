"""Node custom data for Azure: the common bootstrap with Azure's fabric checks and shared mount.

Pure text rendering (no SDK): :func:`custom_data` returns the base64 the scale set's
``os_profile.custom_data`` takes; cloud-init on the ubuntu-hpc image runs it at first boot.
"""

from __future__ import annotations

import base64
import shlex
from string import Template
from typing import TYPE_CHECKING

from provision.clouds.azure.expiry import expiry_timer
from provision.planning.bootstrap import render_user_data
from provision.planning.images import images_dir

if TYPE_CHECKING:
    from provision.planning.plan import ClusterPlan

#: With azure.delete_at_expiry false nothing on the node enforces the lifetime (an OS shutdown keeps billing).
NO_SELF_DESTRUCT = (
    ": # azure.delete_at_expiry is false: provision reap deletes the resource group after the provision-expires-at tag"
)


def fabric_setup(plan: ClusterPlan) -> str:
    """``images/azure/fabric-setup.sh`` filled in for the plan's instance type (empty without InfiniBand)."""
    if plan.fabric != "infiniband":
        return ""
    template = Template((images_dir() / "azure" / "fabric-setup.sh").read_text(encoding="utf-8"))
    return template.substitute(
        IB_EXPECTED=str(plan.fabric_interfaces),
        TOPO_FILE=plan.nccl_env.get("NCCL_TOPO_FILE", ""),
        GPU_VENDOR=plan.offer.gpu_vendor,
    )


def mount_lines(fs_type: str, source: str, mount: str, options: str) -> str:
    """Shell lines that mount ``source`` now and on every boot (fstab, ``_netdev`` so boot waits for the network)."""
    q_mount = shlex.quote(mount)
    fstab = f"{source} {mount} {fs_type} {options},_netdev 0 0"
    return "\n".join(
        [
            f"mkdir -p {q_mount}",
            f"grep -qs {shlex.quote(' ' + mount + ' ')} /etc/fstab || echo {shlex.quote(fstab)} >> /etc/fstab",
            f"mountpoint -q {q_mount} || mount {q_mount} || {{ echo 'provision: mounting {mount} failed' >&2; "
            "touch /var/run/provision-unhealthy; }",
            f"chmod 1777 {q_mount} || true",
        ]
    )


def custom_data(plan: ClusterPlan, shared_mount: str = "") -> str:
    """The base64-encoded bootstrap script for every node of ``plan``. Holds no secrets."""
    script = render_user_data(
        plan,
        cloud_setup=fabric_setup(plan),
        shared_mount=shared_mount,
        self_destruct=expiry_timer(plan) if plan.extra.get("lifetime") == "node-timer" else NO_SELF_DESTRUCT,
    )
    return base64.b64encode(script.encode()).decode()
