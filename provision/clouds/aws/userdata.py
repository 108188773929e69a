"""AWS node user data: the common bootstrap plus AWS's steps (pure text; no SDK, no Pulumi).

``nodes.py`` calls :func:`render` inside an ``Output.apply`` once the file system's DNS and mount names are known,
and base64-encodes the result for the launch template. Nothing secret goes in: only public keys and addresses.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from provision.planning.bootstrap import SharedMount, Step, base_values, gzip_base64, health_expectations
from provision.planning.bootstrap import render as render_bootstrap

if TYPE_CHECKING:
    from provision.clouds.aws.plan import AwsPlan
    from provision.planning.plan import ClusterPlan

#: AWS limits raw user data to 16 KB (EC2 User Guide, "Run commands when you launch an EC2 instance with user data").
MAX_USER_DATA_BYTES = 16 * 1024
#: FSx for Lustre User Guide, "Configuring EFA clients": the client configuration package.
FSX_EFA_CLIENT_URL = "https://docs.aws.amazon.com/fsx/latest/LustreGuide/samples/configure-efa-fsx-lustre-client.zip"
#: FSx for Lustre User Guide, "Mounting from Amazon EC2" (fstab entry with the documented options), except the
#: guide's ``x-systemd.requires=network.service``: that is Amazon Linux's initscripts unit, and Ubuntu 22.04 (the
#: DLAMI) has none, so after a reboot the automount could not start ``/shared``'s mount (systemd.mount(5):
#: ``x-systemd.requires=`` adds ``Requires=``/``After=``). ``network-online.target`` exists on every systemd host;
#: tests/test_node_units.py runs the line through systemd-fstab-generator and ``systemd-analyze verify``.
FSX_OPTIONS = "relatime,flock,_netdev,x-systemd.automount,x-systemd.requires=network-online.target"


def extra_keys(plan: ClusterPlan[AwsPlan]) -> tuple[str, ...]:
    """Public keys installed by user data: all but the first (the EC2 key pair) for the image's user."""
    keys = tuple(plan.access.ssh_public_keys)
    if plan.extra.ssh.key_pair and plan.access.ssh_user == plan.extra.ssh.image_user:
        return keys[1:]
    return keys


def fsx_source(dns_name: str, mount_name: str) -> str:
    """The Lustre mount source, ``fs-0123.fsx.us-east-1.amazonaws.com@tcp:/abcdefgh``."""
    return f"{dns_name}@tcp:/{mount_name}"


def fsx_efa(plan: ClusterPlan[AwsPlan]) -> bool:
    """Whether the plan's FSx file system is EFA-enabled (its clients must then be configured for EFA)."""
    return plan.extra.fsx is not None and plan.extra.fsx.efa


def render(plan: ClusterPlan[AwsPlan], fs_source: str | None = None) -> str:
    """The full user data for ``plan``; ``fs_source`` is the FSx mount source, if any.

    Raises:
        UnsafeValueError: a value fails its pattern.
    """
    values = base_values(plan)
    steps = [Step("fabric-manager", "aws/steps/fabric-manager.sh", every_boot=True)]
    shared = None
    if plan.storage is not None and fs_source is not None:
        if fsx_efa(plan):
            values.add("FSX_EFA_CLIENT_URL", FSX_EFA_CLIENT_URL, "url", "aws.fsx_efa")
            steps.append(Step("fsx-efa-client", "aws/steps/fsx-efa-client.sh"))
        shared = SharedMount(fs_source, plan.storage.mount, "lustre", FSX_OPTIONS)
    expires = plan.expires_at
    delay = plan.extra.lifetime.timer_delay_minutes
    if expires is not None and delay:
        # The ASG's scheduled scale-to-zero is the primary stop; the node's own timer is a late backstop,
        # so the ASG never sees its nodes vanish first and launch replacements.
        expires = expires + timedelta(minutes=delay)
    return render_bootstrap(
        plan,
        values=values,
        steps=steps,
        shared=shared,
        login_keys=extra_keys(plan),
        expires_at=expires,
        health=health_expectations(plan, shared_fstype="lustre"),
    )


def encode(text: str) -> str:
    """The launch template's ``user_data``: ``text`` gzip-compressed, base64-encoded.

    Raises:
        ValueError: the compressed user data is over the 16 KB EC2 limit (too many SSH keys).
    """
    encoded = gzip_base64(text)
    size = len(encoded) * 3 // 4
    if size > MAX_USER_DATA_BYTES:
        raise ValueError(f"user data is {size} bytes compressed, over the EC2 limit of {MAX_USER_DATA_BYTES}")
    return encoded


def mock_user_data(plan: ClusterPlan[AwsPlan]) -> str:
    """The user data as the mocked cloud's nodes get it (an FSx source in the mocked cloud's format)."""
    if plan.storage is None:
        return render(plan)
    return render(plan, fsx_source(f"fs-0123456789abcdef0.fsx.{plan.region}.amazonaws.com", "abcdefgh"))
