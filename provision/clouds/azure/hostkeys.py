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

from provision.clouds.consolekeys import console_host_keys, preferred

#: ``(resource_group, scale_set, instance_id) -> serial log text``
Fetch = Callable[[str, str, str], str]


def sdk_fetch(subscription: str) -> Fetch:
    """A fetcher through azure-mgmt-compute and azure-identity (lazily imported)."""

    def fetch(group: str, scale_set: str, instance_id: str) -> str:
        import urllib.request

        from azure.identity import DefaultAzureCredential
        from azure.mgmt.compute import ComputeManagementClient

        client = ComputeManagementClient(DefaultAzureCredential(), subscription)
        uris = client.virtual_machine_scale_set_vms.retrieve_boot_diagnostics_data(
            group, scale_set, instance_id, sas_uri_expiration_time_in_minutes=5
        )
        if not uris.serial_console_log_blob_uri:
            return ""
        with urllib.request.urlopen(uris.serial_console_log_blob_uri, timeout=30) as answer:  # noqa: S310 (https SAS)
            # The log can be large; the block is printed near the end of the boot: keep the last 4 MiB.
            data = answer.read()[-4 * 1024 * 1024 :]
        return data.decode("utf-8", "replace")

    return fetch


def read_host_keys(group: str, scale_set: str, instance_ids: Sequence[str], fetch: Fetch) -> dict[int, str]:
    """``rank -> "type base64"`` for each scale set VM whose serial log shows its host keys."""
    out = {}
    for rank, instance_id in enumerate(instance_ids):
        key = preferred(console_host_keys(fetch(group, scale_set, instance_id))) if instance_id else None
        if key:
            out[rank] = key
    return out
