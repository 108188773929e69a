"""The Azure sweeper of ``provision reap --azure-subscription``: expired clusters by resource-group tags.

Every Azure cluster lives in one resource group (plus a separate data group when its filesystem
is retained) tagged ``provision-cluster`` and ``provision-expires-at``. The sweep lists the
subscription's groups that carry the expiry tag (ARM filters by tag name:
https://learn.microsoft.com/rest/api/resources/resource-groups/list ``$filter=tagName eq '...'``),
keeps those whose expiry has passed and that are not marked ``provision-retain=true``, and with
``yes`` deletes each group whole, force-deleting its scale sets
(``forceDeletionTypes=Microsoft.Compute/virtualMachineScaleSets``). It backs up the nodes' own
expiry timer (``clouds/azure/expiry.py``) when that could not run or was opted out of.

After the group, it deletes the cluster's custom expiry role definition, which Azure keeps at the
subscription (deleting the group removes the role's assignment, which lives in the group; a
definition still assigned is refused with ``RoleDefinitionHasAssignments``:
https://learn.microsoft.com/azure/role-based-access-control/custom-roles-rest "Delete a custom
role"). Its id is derived from the group's id (``clouds/azure/expiry.role_guid``), so no lookup is
needed, and a left-behind role would otherwise block nothing but still count toward the 5,000
custom roles per tenant.

Deletions run side by side: every expired group's deletion is requested before any is waited for (ARM runs each
group delete as its own asynchronous operation, and a Managed Lustre delete alone takes many minutes), then the
sweep waits for them all. Transient refusals are tried again with a bounded exponential backoff (``Retry-After``
first when ARM sends one): 429 once azure-core's own retries are spent (ARM throttling:
https://learn.microsoft.com/azure/azure-resource-manager/management/request-limits-and-throttling "Error code"),
409 Conflict while another operation holds the resource (the nodes' own expiry timer deleting the same group), a
group deletion that ends failed half-way (a filesystem busy in maintenance; deleting the group again finishes
it), and ``RoleDefinitionHasAssignments`` while the assignment's deletion replicates.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from typing import Any

from provision.clouds.azure.expiry import role_guid, role_name
from provision.clouds.azure.kubeplan import AKS_ROLE_KIND, AKS_ROLE_SUFFIX
from provision.clouds.base import TAG_CLUSTER, TAG_EXPIRES, TAG_RETAIN, parse_label_time
from provision.clouds.sweep import ExpiredCluster

#: Scale sets are force-deleted with their group: no graceful shutdown to wait for at an expiry.
FORCE_DELETION_TYPES = "Microsoft.Compute/virtualMachineScaleSets"
#: HTTP answers tried again: throttled (429) and Conflict with an operation in progress (409).
RETRY_STATUS = frozenset({409, 429})
#: Role deletion refused until the group's assignment is gone everywhere (custom-roles-rest "Delete a custom role").
RETRY_CODES = frozenset({"RoleDefinitionHasAssignments"})
#: Tries per request or group deletion, and the backoff between them (seconds: 15, 30, 60, 120).
ATTEMPTS = 5
BACKOFF_S = 15.0
BACKOFF_CAP_S = 120.0


def _transient(e: Exception) -> bool:
    return getattr(e, "status_code", None) in RETRY_STATUS or getattr(e, "error_code", None) in RETRY_CODES


def backoff(attempt: int, e: Exception | None = None) -> float:
    """Seconds before try ``attempt + 1``: ARM's ``Retry-After`` when given, else 15 s doubling; at most 120 s."""
    headers = getattr(getattr(e, "response", None), "headers", None) or {}
    try:
        after = float(headers.get("Retry-After", ""))
    except ValueError:
        after = BACKOFF_S * 2**attempt
    return max(0.0, min(BACKOFF_CAP_S, after))


def _client(subscription: str) -> Any:
    """A ``ResourceManagementClient`` with the default Azure credential chain (az login, env, managed identity)."""
    from azure.identity import DefaultAzureCredential

    try:  # azure-mgmt-resource >= 24 moved the client into the resources subpackage
        from azure.mgmt.resource.resources import ResourceManagementClient
    except ImportError:  # pragma: no cover - older layout
        from azure.mgmt.resource import ResourceManagementClient  # type: ignore[attr-defined,no-redef]
    return ResourceManagementClient(DefaultAzureCredential(), subscription)


def _roles(subscription: str) -> Any:
    """The ``role_definitions`` operations of an ``AuthorizationManagementClient`` (azure-mgmt-authorization)."""
    from azure.identity import DefaultAzureCredential
    from azure.mgmt.authorization import AuthorizationManagementClient

    return AuthorizationManagementClient(DefaultAzureCredential(), subscription).role_definitions


class AzureSweeper:
    """Tag-based discovery and deletion of expired clusters in one Azure subscription.

    Args:
        subscription: the subscription id.
        client: a ``ResourceManagementClient``-like object (tests pass a fake); made from the
            default credential chain when ``None``.
        roles: ``role_definitions`` operations (``AuthorizationManagementClient``); made from the default
            credential chain when both it and ``client`` are ``None``.
        now: the time expiries are compared with (UTC now when ``None``).
        sleep: how the backoff between tries waits (``time.sleep`` when ``None``; tests record it).
    """

    def __init__(
        self,
        subscription: str,
        client: Any = None,
        now: Callable[[], datetime] | None = None,
        roles: Any = None,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        self.subscription = subscription
        self._sleep = sleep or time.sleep
        self.roles = roles if roles is not None or client is not None else _roles(subscription)
        self.client = client if client is not None else _client(subscription)
        self._now = now or (lambda: datetime.now(timezone.utc))

    def _groups(self) -> Iterable[Any]:
        return self.client.resource_groups.list(filter=f"tagName eq '{TAG_EXPIRES}'")

    def find(self) -> list[ExpiredCluster]:
        """Expired, unretained cluster groups, one entry per group (a cluster's data group is never listed)."""
        now = self._now()
        found = []
        for group in self._groups():
            tags = dict(getattr(group, "tags", None) or {})
            if tags.get(TAG_RETAIN) == "true" or TAG_CLUSTER not in tags:
                continue
            if getattr(group, "managed_by", None):
                # An AKS node resource group (managedBy: the cluster) carries the cluster's tags but only AKS may
                # delete it; it goes with the cluster in the cluster's own group.
                continue
            expires = parse_label_time(tags.get(TAG_EXPIRES, ""))
            if expires is None or expires > now:
                continue
            found.append(
                ExpiredCluster(
                    cloud="azure",
                    region=str(getattr(group, "location", "")),
                    cluster=tags[TAG_CLUSTER],
                    expires_at=expires,
                    resources=[str(group.name)],
                )
            )
        return sorted(found, key=lambda c: (c.expires_at, c.cluster))

    def delete(self, cluster: ExpiredCluster, wait: bool = True) -> list[str]:
        """Delete one cluster's resource group(s): :meth:`delete_all` of that cluster."""
        return self.delete_all([cluster], wait=wait)[0]

    def delete_all(self, clusters: list[ExpiredCluster], wait: bool = True) -> list[list[str]]:
        """Delete the clusters' groups side by side, then their role definitions; what was deleted, per cluster.

        Idempotent: a gone group is skipped. Transient refusals are tried again (module docstring), at most
        ``ATTEMPTS`` times each.

        Raises:
            azure.core.exceptions.HttpResponseError: ARM refused for good (the caller reports it).
        """
        pollers: dict[str, Any] = {}
        for cluster in clusters:
            for name in cluster.resources:
                poller = self._begin(name)
                if poller is not None:
                    pollers[name] = poller
        if wait:
            self._finish(pollers)
        out: list[list[str]] = []
        for cluster in clusters:
            deleted = [f"resourceGroup/{name}" for name in cluster.resources if name in pollers]
            if wait and self.roles is not None:
                deleted += self._delete_roles(cluster)
            out.append(deleted)
        return out

    def _retry(self, call: Callable[[], Any]) -> Any:
        for attempt in range(ATTEMPTS):
            try:
                return call()
            except Exception as e:
                if attempt == ATTEMPTS - 1 or not _transient(e):
                    raise
                self._sleep(backoff(attempt, e))
        raise AssertionError("unreachable")  # pragma: no cover

    def _begin(self, name: str) -> Any:
        """Request the group's deletion (tried again while transient); ``None`` when the group is gone."""
        from azure.core.exceptions import ResourceNotFoundError

        try:
            return self._retry(
                lambda: self.client.resource_groups.begin_delete(name, force_deletion_types=FORCE_DELETION_TYPES)
            )
        except ResourceNotFoundError:
            return None

    def _finish(self, pollers: dict[str, Any]) -> None:
        """Wait for every deletion; a deletion that failed is requested again, at most ``ATTEMPTS`` times in all."""
        from azure.core.exceptions import HttpResponseError, ResourceNotFoundError

        pending = dict(pollers)
        for attempt in range(ATTEMPTS):
            failed: dict[str, HttpResponseError] = {}
            for name, poller in pending.items():
                try:
                    poller.result()
                except ResourceNotFoundError:
                    continue
                except HttpResponseError as e:  # the operation ended failed (ARM's error), or the wait was refused
                    failed[name] = e
            if not failed:
                return
            first = next(iter(failed.values()))
            if attempt == ATTEMPTS - 1:
                raise first
            self._sleep(backoff(attempt, first))
            pending = {name: p for name in failed if (p := self._begin(name)) is not None}

    def _delete_roles(self, cluster: ExpiredCluster) -> list[str]:
        deleted = []
        for name in cluster.resources:
            group_id = f"/subscriptions/{self.subscription}/resourceGroups/{name}"
            # ARM answers 204 for a definition already gone (the SDK returns None): idempotent. The VM path's
            # expiry role, then the AKS expiry job's (clouds/azure/kubeexpiry.py); a cluster has at most one.
            for kind, suffix in (("definition", ""), (AKS_ROLE_KIND, AKS_ROLE_SUFFIX)):
                guid = role_guid(group_id, kind)
                scope = f"/subscriptions/{self.subscription}"
                if self._retry(functools.partial(self.roles.delete, scope, guid)):
                    deleted.append(f"roleDefinition/{role_name(cluster.cluster, group_id)}{suffix}")
        return deleted


#: What the group deletion leaves: the expiry role definition lives at the subscription; the sweep deletes it next.
KEPT = {"azure-native:authorization:RoleDefinition": "by its id, derived from the group's id, after the group"}


def coverage(type_token: str) -> str | None:
    """How the sweep removes a resource of ``type_token`` (every Azure resource lives in the cluster's group)."""
    if type_token in KEPT:
        return KEPT[type_token]
    return "with its resource group" if type_token.startswith("azure-native:") else None


def sweep(subscription: str, delete: bool, client: Any = None) -> list[dict[str, Any]]:
    """The sweeper hook: expired clusters in one subscription by tag (deleted with ``delete``), as report rows.

    Raises:
        UnsupportedError: the Azure SDK is not installed. CloudError: Azure refused (no credentials, access denied).
    """
    from provision.spec.errors import CloudError, UnsupportedError

    try:
        from azure.core.exceptions import AzureError
    except ImportError:
        raise UnsupportedError(
            "--azure-subscription needs the Azure SDK, which is not installed. To fix: pip install 'provision[azure]'"
        ) from None
    rows = []
    try:
        sweeper = AzureSweeper(subscription, client=client)
        found = sweeper.find()
        deleted = sweeper.delete_all(found) if delete else [None] * len(found)
        for c, gone in zip(found, deleted, strict=True):
            row = {**c.as_dict(), "source": "azure-tags"}
            if gone is not None:
                row["deleted"] = gone
            rows.append(row)
    except AzureError as e:
        code = str(getattr(e, "error_code", "") or type(e).__name__)
        raise CloudError(f"sweeping Azure subscription {subscription} failed: {e.message}", code=code) from None
    return rows
