"""Node custom data for Azure: the common bootstrap with Azure's fabric steps and shared mount (pure text).

:func:`custom_data` returns the base64 the scale set's ``os_profile.custom_data`` takes; cloud-init on the
ubuntu-hpc image reads it as ``#cloud-config`` at first boot.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING

from provision.clouds.azure import fslookup
from provision.clouds.azure.expiry import IMDS_COMPUTE_API, IMDS_ROOT_ONLY, IMDS_TOKEN_API, expiry_files, identity_name
from provision.clouds.azure.fslookup import LUSTRE_OPTIONS, NFS_OPTIONS
from provision.planning.bootstrap import (
    File,
    SharedMount,
    Step,
    Values,
    base_values,
    health_expectations,
    static_file,
)
from provision.planning.bootstrap import render as render_bootstrap

if TYPE_CHECKING:
    from provision.clouds.azure.plan import AzurePlan
    from provision.planning.plan import ClusterPlan

#: Azure custom data is at most 65,535 bytes before base64: azure-rest-api-specs compute
#: ``VirtualMachineScaleSetOSProfile.customData``, "The maximum length of the binary array is 65535 bytes" (Microsoft
#: Learn's "64 KB" rounds it up by one byte).
MAX_CUSTOM_DATA_BYTES = 65535

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


def shared_mount(plan: ClusterPlan[AzurePlan], attached: str | None = None) -> SharedMount | None:
    """The shared filesystem as nodes mount it: the source comes from the ``fs-address`` step (fslookup.py), or
    is ``attached``, an attached volume's mount source (its filesystem exists before the cluster: nothing waits)."""
    look = fslookup.lookup(plan)
    fs = plan.extra.filesystem
    if look is None or fs is None or plan.storage is None:
        return None
    if attached is not None:
        if fs.kind == "amlfs":
            return SharedMount(attached, plan.storage.mount, "lustre", f"{LUSTRE_OPTIONS},_netdev")
        return SharedMount(attached, plan.storage.mount, "nfs", f"{NFS_OPTIONS},_netdev", "nfs-common")
    if fs.kind == "amlfs":
        return SharedMount(
            "", plan.storage.mount, "lustre", f"{LUSTRE_OPTIONS},_netdev", source_file=fslookup.SOURCE_FILE
        )
    return SharedMount(
        "",
        plan.storage.mount,
        "nfs",
        f"{NFS_OPTIONS},_netdev",
        "nfs-common",
        source_file=fslookup.SOURCE_FILE,
        source_path=f"/{fs.creation_token}",
    )


def _lookup_step(plan: ClusterPlan[AzurePlan], values: Values) -> Step | None:
    """The boot-time lookup of the filesystem's address (fslookup.py), with the values it reads."""
    look = fslookup.lookup(plan)
    if look is None:
        return None
    values.add("NODE_RESOURCE_GROUP", plan.extra.resource_group, "token", "azure.resource_group")
    values.add("NODE_IDENTITY", identity_name(plan), "token", "azure.identity")
    values.add("FS_RESOURCE_PATH", look.resource_path, "path", "azure.filesystem")
    values.add("FS_API_VERSION", look.api_version, "token", "azure.filesystem_api")
    values.add("FS_ADDRESS_KEY", look.address_key, "token", "azure.filesystem_address")
    values.add("FS_LUSTRE_NAME", fslookup.LUSTRE_FSNAME, "token", "azure.lustre_name")
    values.add("FS_WAIT_SECONDS", str(fslookup.FS_WAIT_SECONDS), "int", "azure.fs_wait")
    values.add("IMDS_COMPUTE_API", IMDS_COMPUTE_API, "token", "azure.imds_api")
    values.add("IMDS_TOKEN_API", IMDS_TOKEN_API, "token", "azure.imds_token_api")
    return Step("fs-address", "azure/steps/fs-address.sh", timeout=fslookup.FS_WAIT_SECONDS + 300)


def render(plan: ClusterPlan[AzurePlan], attached: str | None = None) -> str:
    """The ``#cloud-config`` for every node of ``plan`` (nothing in it waits for the filesystem). No secrets.

    ``attached``: an attached volume's mount source (storage.shared.volume), mounted as is, with no lookup step."""
    shared = shared_mount(plan, attached)
    values = base_values(plan)
    steps: list[Step] = []
    files: list[File] = []
    if fslookup.needs_identity(plan):
        # The identity's token is for root only: no job or container may take it from IMDS (expiry.py).
        files.append(File("/etc/systemd/system/provision-imds-root.service", IMDS_ROOT_ONLY))
    if plan.fabric == "infiniband":
        values.add("IB_PORTS", plan.fabric_interfaces, "int", "fabric_interfaces")
        topo = plan.nccl_env.get("NCCL_TOPO_FILE")
        if topo:
            values.add("TOPO_FILE", topo, "path", "nccl_env.NCCL_TOPO_FILE")
        steps.append(Step("fabric-wait", "azure/steps/fabric-wait.sh", every_boot=True))
    lookup_step = _lookup_step(plan, values) if attached is None else None
    if lookup_step is not None:
        steps.append(lookup_step)
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


def custom_data(plan: ClusterPlan[AzurePlan], attached: str | None = None) -> str:
    """The base64-encoded bootstrap for every node of ``plan`` (``attached``: as :func:`render`).

    Raises:
        ValueError: over Azure's custom data limit, or a value fails its pattern (UnsafeValueError).
    """
    text = render(plan, attached)
    if len(text.encode()) > MAX_CUSTOM_DATA_BYTES:
        raise ValueError(f"custom data is {len(text.encode())} bytes, over Azure's limit of {MAX_CUSTOM_DATA_BYTES}")
    return base64.b64encode(text.encode()).decode()


def mock_user_data(plan: ClusterPlan[AzurePlan]) -> str:
    """The custom data as the mocked cloud's nodes get it (the same text as the real nodes)."""
    return render(plan)
