"""AWS node user data: the common bootstrap plus the EFA check, extra SSH keys and the FSx mount.

Pure text rendering (no SDK, no Pulumi). ``components.py`` calls :func:`render` inside an
``Output.apply`` once the file system's DNS and mount names are known, and base64-encodes the
result for the launch template. Nothing secret goes in: only public keys and addresses.
"""

from __future__ import annotations

from datetime import timedelta
from string import Template
from typing import TYPE_CHECKING

from provision.planning.bootstrap import render_user_data, self_destruct_timer
from provision.planning.images import images_dir

if TYPE_CHECKING:
    from provision.planning.plan import ClusterPlan

#: AWS limits raw user data to 16 KB.
MAX_USER_DATA_BYTES = 16 * 1024


def _snippet(name: str, **values: str) -> str:
    text = (images_dir() / "aws" / name).read_text(encoding="utf-8")
    return Template(text).substitute(values)


def extra_keys(plan: ClusterPlan) -> tuple[str, ...]:
    """Public keys installed by user data: all but the first (the EC2 key pair) for the image's user."""
    keys = tuple(plan.access.ssh_public_keys)
    if plan.extra["ssh"]["key_pair"] and plan.access.ssh_user == plan.extra["ssh"]["image_user"]:
        return keys[1:]
    return keys


def fsx_source(dns_name: str, mount_name: str) -> str:
    """The Lustre mount source, ``fs-0123.fsx.us-east-1.amazonaws.com@tcp:/abcdefgh``."""
    return f"{dns_name}@tcp:/{mount_name}"


def render(plan: ClusterPlan, fs_source: str | None = None) -> str:
    """The full user data script for ``plan``; ``fs_source`` is the FSx mount source, if any.

    Raises:
        ValueError: the script is over the 16 KB EC2 limit (too many SSH keys).
    """
    setup = [_snippet("efa-setup.sh", EFA_EXPECTED=str(plan.fabric_interfaces if plan.fabric == "efa" else 0))]
    keys = extra_keys(plan)
    if keys:
        setup.append(_snippet("ssh-keys.sh", SSH_USER=plan.access.ssh_user, KEYS="\n".join(keys)))
    mount = ""
    if plan.storage is not None and fs_source is not None:
        mount = _snippet("lustre-mount.sh", FSX_SOURCE=fs_source, MOUNT=plan.storage.mount, OWNER=plan.access.ssh_user)
    delay = int(plan.extra["lifetime"]["timer_delay_minutes"])
    timer_plan = plan
    if plan.expires_at is not None and delay:
        # The ASG's scheduled scale-to-zero is the primary stop; the node's own timer is a late backstop,
        # so the ASG never sees its nodes vanish first and launch replacements.
        timer_plan = plan.model_copy(update={"expires_at": plan.expires_at + timedelta(minutes=delay)})
    timer = self_destruct_timer(timer_plan)
    script = render_user_data(plan, cloud_setup="\n".join(setup), shared_mount=mount, self_destruct=timer)
    if len(script.encode()) > MAX_USER_DATA_BYTES:
        raise ValueError(f"user data is {len(script.encode())} bytes, over the EC2 limit of {MAX_USER_DATA_BYTES}")
    return script
