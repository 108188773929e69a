"""GCP node user data: the common bootstrap plus the fabric's steps (images/gcp/) (pure text).

``components.py`` calls :func:`render` inside an ``Output.apply`` with the shared filesystem's mount script
(from ``storage.py``, which shell-quotes every value it writes), which runs as the ``storage-mount`` step.
Instance metadata ``user-data`` is read by cloud-init on Ubuntu images (at most 256 KB per value).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from provision.clouds.gcp.hostkeys import GUEST_ATTRIBUTES
from provision.planning.bootstrap import (
    File,
    Step,
    base_values,
    checked,
    health_expectations,
    static_file,
)
from provision.planning.bootstrap import render as render_bootstrap
from provision.planning.images import image_text

if TYPE_CHECKING:
    from provision.clouds.gcp.plan import GcpPlan
    from provision.planning.plan import ClusterPlan

#: Compute Engine metadata: at most 256 KB per value ("About VM metadata", limits).
MAX_USER_DATA_BYTES = 256 * 1024
#: The header every generated step starts with (static steps carry the same two lines).
STEP_HEADER = '#!/bin/bash\n. "${PROVISION_ROOT:-}/usr/local/lib/provision/lib.sh"\n'


def gpu_nics(plan: ClusterPlan[GcpPlan]) -> list[str]:
    """The GPU NIC names the fabric uses (from the NCCL settings of the plan)."""
    env = plan.nccl_env
    names = env.get("NCCL_GPUDIRECTTCPX_SOCKET_IFNAME") or env.get("NCCL_FASTRAK_IFNAME") or ""
    return [n for n in names.split(",") if n]


def _fabric(plan: ClusterPlan[GcpPlan], values: Any) -> tuple[list[Step], list[File]]:
    versions = plan.image.versions
    steps: list[Step] = []
    files: list[File] = []
    if plan.fabric in ("tcpx", "tcpxo"):
        values.add("NCCL_PLUGIN_IMAGE", versions["nccl_plugin"], "image", "image.versions.nccl_plugin")
        values.add("RXDM_IMAGE", versions["rxdm"], "image", "image.versions.rxdm")
        steps.append(Step("docker", "gcp/steps/docker.sh"))
        files += [
            static_file("/usr/local/lib/provision/rxdm-run", "gcp/rxdm-run", "0755"),
            static_file("/etc/systemd/system/provision-rxdm.service", "gcp/provision-rxdm.service"),
        ]
    if plan.fabric == "tcpxo":
        values.add("DMABUF_VERSION", versions["dmabuf_import_helper"], "version", "image.versions.dmabuf_import_helper")
        files.append(static_file("/etc/udev/rules.d/00-a3-megagpu.rules", "gcp/00-a3-megagpu.rules"))
        steps += [Step("google-apt", "gcp/steps/google-apt.sh"), Step("tcpxo", "gcp/steps/tcpxo.sh", timeout=3600)]
    elif plan.fabric == "tcpx":
        files.append(static_file("/etc/provision/tcpx/gpu_rxq_configuration.textproto", "gcp/tcpx-gpu-rxq.textproto"))
        steps += [
            Step("tcpx", "gcp/steps/tcpx.sh", timeout=3600),
            Step("tcpx-firewall", "gcp/steps/tcpx-firewall.sh", every_boot=True),
        ]
    elif plan.fabric == "rdma":
        values.add("NCCL_VERSION", versions["nccl"], "version", "image.versions.nccl")
        values.add("NCCL_GIB_VERSION", versions["nccl_gib"], "version", "image.versions.nccl_gib")
        steps += [Step("google-apt", "gcp/steps/google-apt.sh"), Step("rdma", "gcp/steps/rdma.sh")]
        # The gIB plugin's own environment script (Cluster Toolkit configure_nccl_env.yml), for login shells.
        files.append(static_file("/etc/profile.d/provision-nccl-gib.sh", "gcp/nccl-gib-profile.sh"))
    return steps, files


def render(plan: ClusterPlan[GcpPlan], mount_script: str = "") -> str:
    """The ``#cloud-config`` for every node of ``plan``.

    Raises:
        UnsafeValueError: a value fails its pattern; ValueError: over the metadata size limit.
    """
    values = base_values(plan)
    values.add("SSH_SUDO", True, "flag", "access.ssh_user")
    steps, files = _fabric(plan, values)
    shared_fstype = None
    if mount_script and plan.storage is not None:
        checked("path", plan.storage.mount, "storage.shared.mount")
        # It waits up to storage.WAIT_SECONDS for the filesystem, then installs the client and mounts.
        steps.append(Step("storage-mount", text=STEP_HEADER + mount_script + "\n", timeout=7200))
        shared_fstype = {"lustre": "lustre", "daos": "fuse"}.get(plan.storage.protocol, "nfs")
    nics = gpu_nics(plan)
    health = health_expectations(plan, shared_fstype=shared_fstype, gpu_nics=nics)
    if nics:
        health["fabric_devices"] = len(nics)
    # No local login user on GCP: with OS Login (the default) IAM decides who logs in and who gets sudo; with
    # gcp.os_login false the guest agent makes the user from the instance metadata keys (components.py). A local
    # user with a static key and sudo would bypass OS Login (review 2026-12-01 GCP C2).
    text = render_bootstrap(plan, values=values, steps=steps, files=files, health=health)
    if len(text.encode()) > MAX_USER_DATA_BYTES:
        raise ValueError(f"user data is {len(text.encode())} bytes, over the metadata limit of {MAX_USER_DATA_BYTES}")
    return text


def gcp_snippet(name: str) -> str:
    """A GCP script snippet of ``images/gcp`` (the storage clients ``storage.py`` inlines)."""
    return image_text(f"gcp/{name}")


def mock_user_data(plan: ClusterPlan[GcpPlan]) -> str:
    """The user data as the mocked cloud's nodes get it (the shared mount step reduced to a marker)."""
    return render(plan, ": # mocked shared filesystem mount" if plan.storage is not None else "")


def login_metadata(plan: ClusterPlan[GcpPlan]) -> dict[str, str]:
    """Instance metadata for the way in.

    * OS Login (default): ``enable-oslogin=TRUE``; IAM grants login (roles/compute.osLogin) and sudo
      (roles/compute.osAdminLogin), and metadata keys are ignored ("About OS Login").
    * ``gcp.os_login: false``: OS Login off and ``ssh-keys`` in the instance metadata in the documented
      ``USERNAME:KEY`` lines ("Add SSH keys to VMs"); the guest environment creates the user.
    Project-wide keys are blocked either way, so only this cluster's keys ever work.
    """
    if plan.extra.os_login:
        return {"enable-oslogin": "TRUE", "block-project-ssh-keys": "TRUE"}
    user = plan.access.ssh_user
    keys = "\n".join(f"{user}:{key}" for key in plan.access.ssh_public_keys)
    return {"enable-oslogin": "FALSE", "block-project-ssh-keys": "TRUE", "ssh-keys": keys}


def instance_metadata(plan: ClusterPlan[GcpPlan], user_data: Any) -> dict[str, Any]:
    """The metadata of the nodes and of the Slurm controller: the way in (:func:`login_metadata`), no serial port,
    the host keys published, zonal DNS names and ``user_data``."""
    return {
        **login_metadata(plan),
        "serial-port-enable": "FALSE",
        # The guest agent publishes the host public keys as hostkeys/* guest attributes, which the
        # laptop reads before the first connection (provision/clouds/gcp/hostkeys.py).
        **GUEST_ATTRIBUTES,
        # The hostfile names nodes by their zonal internal DNS names; ZonalOnly makes that the name the
        # VM registers whatever the project's default ("Use Zonal DNS for your internal DNS type": the
        # VmDnsSetting metadata key moves a VM to zonal DNS).
        "VmDnsSetting": "ZonalOnly",
        "user-data": user_data,
    }
