"""What a managed instance group lists about itself while it cannot create its VMs, which its create never says.

A MIG whose zone has no stock keeps retrying its VMs and never becomes stable; the provider's create waits for
``STABLE`` (``wait_for_instances``) until its timeout and then fails with only "timeout while waiting for state to
become 'created'" (terraform-provider-google ``resource_compute_instance_group_manager.go``
``waitForInstancesRefreshFunc``, a ``StateChangeConf``). The stock-out (``ZONE_RESOURCE_POOL_EXHAUSTED``,
``..._WITH_DETAILS``) or quota error of each VM is only in the group's error list: compute v1
``instanceGroupManagers.listErrors`` (``items[].error.code`` / ``.message``, InstanceManagedByIgmError).
Reached through :meth:`provision.clouds.base.Adapter.group_errors`.
"""

from __future__ import annotations

from typing import Any, Protocol

from provision.planning.plan import ClusterPlan


class MigErrors(Protocol):
    """What this asks a project (the mocked cloud passes its own; :class:`ApiMigErrors` asks Google's API)."""

    def list_errors(self, project: str, zone: str, name: str) -> list[dict[str, Any]]:
        """compute v1 ``instanceGroupManagers.listErrors`` ``items[]`` (every page)."""
        ...


class ApiMigErrors:
    """:class:`MigErrors` over google-api-python-client (the gcp extra) with Application Default Credentials."""

    def __init__(self) -> None:
        from googleapiclient import discovery  # the gcp extra

        self._compute = discovery.build("compute", "v1", cache_discovery=False)

    def list_errors(self, project: str, zone: str, name: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        managers = self._compute.instanceGroupManagers()
        request = managers.listErrors(project=project, zone=zone, instanceGroupManager=name)
        while request is not None:
            page = request.execute()
            items += page.get("items", [])
            request = managers.listErrors_next(request, page)
        return items


def group_errors(plan: ClusterPlan, ids: list[str], session: MigErrors | None = None) -> list[str]:
    """``CODE: message`` for every error the groups ``ids`` (``projects/P/zones/Z/instanceGroupManagers/N``) list."""
    groups = [parts for parts in (i.split("/") for i in ids) if len(parts) == 6 and parts[2] == "zones"]
    if not groups:
        return []
    account = session if session is not None else ApiMigErrors()
    found: list[str] = []
    for _, project, _, zone, _, name in groups:
        for item in account.list_errors(project, zone, name):
            err = item.get("error") or {}
            code, text = err.get("code") or "", err.get("message") or ""
            found.append(f"{code}: {text}" if text else code)
    return found
