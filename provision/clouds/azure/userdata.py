"""Node custom data for Azure: the common bootstrap with Azure's fabric steps and shared mount (pure text).

:func:`custom_data` returns the base64 the scale set's ``os_profile.custom_data`` takes; cloud-init on the
ubuntu-hpc image reads it as ``#cloud-config`` at first boot.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from typing import TYPE_CHECKING

from provision.clouds.azure.expiry import expiry_files
from provision.planning.bootstrap import File, SharedMount, Step, base_values, health_expectations, static_file
from provision.planning.bootstrap import render as render_bootstrap

if TYPE_CHECKING:
    from provision.clouds.azure.plan import AzurePlan
    from provision.planning.plan import ClusterPlan

#: Azure custom data is at most 64 KB before base64 (Azure docs, "Custom data and cloud-init on Azure VMs").
MAX_CUSTOM_DATA_BYTES = 64 * 1024

WATCHER_UNIT = """[Unit]
Description=provision: unmount the shared filesystem when Azure announces this node's eviction (Scheduled Events)
Wants=network-online.target
After=network-online.target

[Service]
Restart=always
RestartSec=5
ExecStart=/usr/bin/python3 /usr/local/lib/provision/provision-scheduled-events

[Install]
WantedBy=multi-user.target
"""


def mount_lines(fs_type: str, source: str, mount: str, options: str) -> str:
    """The shared filesystem as nodes mount it (at every boot, from fstab with ``_netdev``), as a JSON document
    that :func:`custom_data` reads (``storage.py`` carries it through an ``Output[str]``)."""
    client = "nfs-common" if fs_type == "nfs" else ""
    return json.dumps(dataclasses.asdict(SharedMount(source, mount, fs_type, f"{options},_netdev", client)))


def _shared(value: SharedMount | str | None) -> SharedMount | None:
    if isinstance(value, str):
        return SharedMount(**json.loads(value)) if value else None
    return value


def render(plan: ClusterPlan[AzurePlan], shared_mount: SharedMount | str | None = None) -> str:
    """The ``#cloud-config`` for every node of ``plan``. Holds no secrets."""
    shared = _shared(shared_mount)
    values = base_values(plan)
    steps: list[Step] = []
    files: list[File] = []
    if plan.fabric == "infiniband":
        values.add("IB_PORTS", plan.fabric_interfaces, "int", "fabric_interfaces")
        topo = plan.nccl_env.get("NCCL_TOPO_FILE")
        if topo:
            values.add("TOPO_FILE", topo, "path", "nccl_env.NCCL_TOPO_FILE")
        steps.append(Step("fabric-wait", "azure/steps/fabric-wait.sh", every_boot=True))
    if shared is not None and plan.capacity.type == "spot" and shared.fstype == "lustre":
        # Azure Managed Lustre: unmount before an evicted client goes away, or the others pause for up to 15 minutes.
        files += [
            static_file(
                "/usr/local/lib/provision/provision-scheduled-events", "azure/provision-scheduled-events", "0755"
            ),
            File("/etc/systemd/system/provision-scheduled-events.service", WATCHER_UNIT),
        ]
        steps.append(Step("scheduled-events", "azure/steps/scheduled-events.sh"))
    if plan.extra.lifetime == "node-timer":
        # Azure has no VM lifetime and an in-guest shutdown keeps the VM allocated (and billed): at the expiry
        # the node deletes the cluster's resource group instead (expiry.py).
        files += expiry_files(plan)
        steps.append(Step("lifetime", "common/steps/lifetime.sh"))
    health = health_expectations(plan, shared_fstype=shared.fstype if shared else None)
    return render_bootstrap(plan, values=values, steps=steps, files=files, shared=shared, health=health)


def custom_data(plan: ClusterPlan[AzurePlan], shared_mount: SharedMount | str | None = None) -> str:
    """The base64-encoded bootstrap for every node of ``plan``.

    Raises:
        ValueError: over Azure's custom data limit, or a value fails its pattern (UnsafeValueError).
    """
    text = render(plan, shared_mount)
    if len(text.encode()) > MAX_CUSTOM_DATA_BYTES:
        raise ValueError(f"custom data is {len(text.encode())} bytes, over Azure's limit of {MAX_CUSTOM_DATA_BYTES}")
    return base64.b64encode(text.encode()).decode()


def mock_user_data(plan: ClusterPlan[AzurePlan]) -> str:
    """The custom data as the mocked cloud's nodes get it (a shared mount in the mocked cloud's format)."""
    if plan.storage is None:
        return render(plan)
    if plan.storage.protocol == "lustre":
        return render(plan, mount_lines("lustre", "10.0.1.5@tcp:/lustrefs", plan.storage.mount, "noatime,flock"))
    return render(plan, mount_lines("nfs", "10.0.2.4:/shared", plan.storage.mount, "rw,hard,vers=3,tcp"))
