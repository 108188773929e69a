"""AWS node user data: the common bootstrap plus AWS's steps (pure text; no SDK, no Pulumi).

The user data holds nothing the file system creates: the GPU nodes are requested first (a stock-out then costs no
FSx creation and deletion), and each node looks the mount source up at boot from the SSM parameter
:func:`shared_source_parameter` that the program writes once FSx exists, waiting for it (step ``fsx-source``).
Nothing secret goes in: only public keys and names.
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


#: On the node: where the ``fsx-source`` step writes the mount source it looked up.
SHARED_SOURCE_FILE = "/var/lib/provision/shared-source"
#: How long a node waits for the file system (FSx creation takes minutes: FSx for Lustre User Guide; the
#: program's create timeout is 60 minutes, provision/clouds/aws/storage.py).
FSX_WAIT_SECONDS = 3900


def shared_source_parameter(cluster: str) -> str:
    """The SSM parameter that holds the cluster's FSx mount source (a fixed name, so nodes need no output)."""
    return f"/provision/{cluster}/shared-source"


def fsx_source(dns_name: str, mount_name: str) -> str:
    """The Lustre mount source, ``fs-0123.fsx.us-east-1.amazonaws.com@tcp:/abcdefgh``."""
    return f"{dns_name}@tcp:/{mount_name}"


def fsx_efa(plan: ClusterPlan[AwsPlan]) -> bool:
    """Whether the plan's FSx file system is EFA-enabled (its clients must then be configured for EFA).

    Never for an attached volume: its FSx is reached through a VPC peering, which EFA traffic does not cross
    (clouds/aws/volumelink.py).
    """
    attached = plan.storage is not None and plan.storage.volume is not None
    return plan.extra.fsx is not None and plan.extra.fsx.efa and not attached


def render(plan: ClusterPlan[AwsPlan]) -> str:
    """The full user data for ``plan`` (the same before and after the file system exists).

    Raises:
        UnsafeValueError: a value fails its pattern.
    """
    values = base_values(plan)
    steps = [Step("fabric-manager", "aws/steps/fabric-manager.sh", every_boot=True)]
    shared = None
    if plan.storage is not None and plan.extra.fsx is not None:
        values.add("SHARED_SOURCE_PARAMETER", shared_source_parameter(plan.name), "path", "aws.shared_source")
        values.add("AWS_REGION_NAME", plan.region, "name", "region")
        values.add("FSX_WAIT_SECONDS", str(FSX_WAIT_SECONDS), "int", "aws.fsx_wait")
        steps.append(Step("fsx-source", "aws/steps/fsx-source.sh", timeout=FSX_WAIT_SECONDS + 300))
        if fsx_efa(plan):
            values.add("FSX_EFA_CLIENT_URL", FSX_EFA_CLIENT_URL, "url", "aws.fsx_efa")
            steps.append(Step("fsx-efa-client", "aws/steps/fsx-efa-client.sh"))
        shared = SharedMount("", plan.storage.mount, "lustre", FSX_OPTIONS, source_file=SHARED_SOURCE_FILE)
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
    """The user data as the mocked cloud's nodes get it (the same text as the real nodes)."""
    return render(plan)
