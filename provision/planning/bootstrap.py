"""Node user data: ``images/common/bootstrap.sh`` with the cluster's values filled in.

Pure text rendering; adapters call :func:`render_user_data` (inside an ``Output.apply``
when a value such as the filesystem's DNS name is only known after creation).
"""

from __future__ import annotations

import shlex
from string import Template
from typing import TYPE_CHECKING

from provision.planning.images import images_dir

if TYPE_CHECKING:
    from provision.planning.plan import ClusterPlan


def nccl_env_lines(env: dict[str, str]) -> str:
    return "\n".join(f"export {k}={shlex.quote(v)}" for k, v in sorted(env.items()))


def self_destruct_timer(plan: ClusterPlan) -> str:
    """A systemd timer that powers the node off at the expiry; with shutdown behaviour 'terminate' it deletes the VM.

    A calendar timer with ``Persistent=true`` survives reboots and fires at the next boot when the
    expiry passed while the node was down (a ``shutdown +N`` timer is lost on reboot).
    """
    if plan.expires_at is None:
        return ": # no lifetime set"
    stamp = plan.expires_at.strftime("%Y-%m-%d %H:%M:%S UTC")
    return (
        "cat > /etc/systemd/system/provision-expiry.service <<'UNIT'\n"
        "[Unit]\nDescription=provision: cluster lifetime reached\n"
        "[Service]\nType=oneshot\nExecStart=/bin/systemctl poweroff\n"
        "UNIT\n"
        "cat > /etc/systemd/system/provision-expiry.timer <<'UNIT'\n"
        f"[Unit]\nDescription=provision: power off at the cluster's expiry\n"
        f"[Timer]\nOnCalendar={stamp}\nPersistent=true\nAccuracySec=1s\n"
        "[Install]\nWantedBy=timers.target\n"
        "UNIT\n"
        "systemctl daemon-reload\n"
        "systemctl enable --now provision-expiry.timer"
    )


def render_user_data(
    plan: ClusterPlan,
    *,
    cloud_setup: str = "",
    shared_mount: str = "",
    self_destruct: str | None = None,
) -> str:
    """The bootstrap script for ``plan``.

    Args:
        cloud_setup: shell lines for the cloud's fabric (e.g. EFA checks, TCPXO daemon).
        shared_mount: the shared filesystem's mount command (add to fstab too), if any.
        self_destruct: shell lines for the lifetime backstop; the shutdown timer when ``None``.
    """
    template = Template((images_dir() / "common" / "bootstrap.sh").read_text(encoding="utf-8"))
    return template.safe_substitute(
        CLUSTER=plan.name,
        CLOUD=plan.cloud,
        SELF_DESTRUCT=self_destruct_timer(plan) if self_destruct is None else self_destruct or ": # none",
        SCRATCH_RAID0="true" if plan.scratch.raid0 else "false",
        SCRATCH_MOUNT=shlex.quote(plan.scratch.mount),
        CLOUD_SETUP=cloud_setup or ": # none",
        SHARED_MOUNT=shared_mount or ": # no shared filesystem",
        NCCL_ENV=nccl_env_lines(plan.nccl_env),
        GPUS_PER_NODE=str(plan.gpus_per_node),
    )
