"""The nodes' host keys as Azure reports them: the boot diagnostics serial log, where cloud-init prints them.

With boot diagnostics on (managed storage), ``retrieveBootDiagnosticsData`` on a scale set VM returns
a read-only SAS URI of its serial console log
(https://learn.microsoft.com/en-us/rest/api/compute/virtual-machine-scale-set-vms/retrieve-boot-diagnostics-data);
cloud-init prints the host public keys in that log at boot (:mod:`provision.clouds.consolekeys`).
The management call is made with the user's credentials; the log is written by the hypervisor from
the VM's serial port, so the node needs no role (its identity only deletes its scale set).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from provision.clouds.consolekeys import console_host_keys, preferred

#: ``(resource_group, scale_set, instance_id) -> serial log text``
Fetch = Callable[[str, str, str], str]


def compute_client(subscription: str) -> Any:
    """A ``ComputeManagementClient`` (azure-mgmt-compute, azure-identity; lazily imported), user credentials."""
    try:
        from azure.identity import DefaultAzureCredential
        from azure.mgmt.compute import ComputeManagementClient
    except ImportError as e:
        raise RuntimeError("reading Azure host keys needs the Azure SDK: pip install 'provision[azure]'") from e
    return ComputeManagementClient(DefaultAzureCredential(), subscription)


def download(uri: str) -> str:
    """The serial log behind a read-only SAS URI; the last 4 MiB (the key block is printed near the end of boot)."""
    import urllib.request

    with urllib.request.urlopen(uri, timeout=30) as answer:  # noqa: S310 (https SAS URI from the API)
        data = answer.read()[-4 * 1024 * 1024 :]
    return data.decode("utf-8", "replace")


def _serial_log(client: Any, group: str, scale_set: str, instance_id: str, get: Callable[[str], str]) -> str:
    uris = client.virtual_machine_scale_set_vms.retrieve_boot_diagnostics_data(
        group, scale_set, instance_id, sas_uri_expiration_time_in_minutes=5
    )
    return get(uris.serial_console_log_blob_uri) if uris.serial_console_log_blob_uri else ""


def sdk_fetch(subscription: str) -> Fetch:
    """A fetcher through azure-mgmt-compute and azure-identity (lazily imported)."""

    def fetch(group: str, scale_set: str, instance_id: str) -> str:
        return _serial_log(compute_client(subscription), group, scale_set, instance_id, download)

    return fetch


def subscription_of(resource_group_id: str) -> str:
    """The subscription in ``/subscriptions/{subscription}/resourceGroups/{group}``."""
    parts = resource_group_id.strip("/").split("/")
    if len(parts) < 2 or parts[0].lower() != "subscriptions":
        raise ValueError(f"not a resource group id: {resource_group_id!r}")
    return parts[1]


def read_scale_sets(
    outputs: dict[str, Any], client: Any | None = None, get: Callable[[str], str] | None = None
) -> dict[int, str]:
    """``rank -> "type base64"`` for the VMs of the scale sets the ``scale_sets`` output names.

    A scale set's VM instance ids exist only once it runs, so each set's VMs are listed
    (``VirtualMachineScaleSetVMs.list``,
    https://learn.microsoft.com/en-us/rest/api/compute/virtual-machine-scale-set-vms/list) and a VM's rank
    is where its ``osProfile.computerName`` stands in the ``hosts`` output (the nodes' names by rank).
    """
    sets = dict(outputs.get("scale_sets") or {})
    hosts = [str(h) for h in outputs.get("hosts") or []]
    if not sets.get("names") or not hosts:
        return {}
    rank_of = {h.lower(): rank for rank, h in enumerate(hosts)}  # Windows-style names: case-insensitive
    group = str(sets["resource_group"])
    compute = client or compute_client(subscription_of(str(sets["resource_group_id"])))
    out = {}
    for scale_set in sets["names"]:
        for vm in compute.virtual_machine_scale_set_vms.list(group, str(scale_set)):
            name = getattr(getattr(vm, "os_profile", None), "computer_name", None)
            rank = rank_of.get(str(name or "").lower())
            if rank is None or not vm.instance_id:
                continue  # not one of this cluster's ranks (a VM being deleted, renamed)
            log = _serial_log(compute, group, str(scale_set), vm.instance_id, get or download)
            key = preferred(console_host_keys(log))
            if key:
                out[rank] = key
    return out


def read_vm(
    outputs: dict[str, Any], vm_name: str, client: Any | None = None, get: Callable[[str], str] | None = None
) -> str | None:
    """``"type base64"`` of a standalone VM of the cluster (the Slurm controller) from its boot diagnostics serial
    log (``VirtualMachines.retrieveBootDiagnosticsData``,
    https://learn.microsoft.com/en-us/rest/api/compute/virtual-machines/retrieve-boot-diagnostics-data), in the
    cluster's resource group the ``scale_sets`` output names; ``None`` when the log shows no key."""
    sets = dict(outputs.get("scale_sets") or {})
    if not sets.get("resource_group") or not sets.get("resource_group_id"):
        return None
    compute = client or compute_client(subscription_of(str(sets["resource_group_id"])))
    uris = compute.virtual_machines.retrieve_boot_diagnostics_data(
        str(sets["resource_group"]), vm_name, sas_uri_expiration_time_in_minutes=5
    )
    log = (get or download)(uris.serial_console_log_blob_uri) if uris.serial_console_log_blob_uri else ""
    return preferred(console_host_keys(log))


def read_host_keys(group: str, scale_set: str, instance_ids: Sequence[str], fetch: Fetch) -> dict[int, str]:
    """``rank -> "type base64"`` for each scale set VM whose serial log shows its host keys."""
    out = {}
    for rank, instance_id in enumerate(instance_ids):
        key = preferred(console_host_keys(fetch(group, scale_set, instance_id))) if instance_id else None
        if key:
            out[rank] = key
    return out
