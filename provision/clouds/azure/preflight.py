"""The Azure preflight: resource providers, size restrictions, family vCPU quota and EncryptionAtHost, asked
before `up`.

An unregistered resource provider (MissingSubscriptionRegistration), a zero ND-family quota or a restricted size
otherwise surfaces minutes into ``pulumi up``, after the network and storage exist. Reached through
:meth:`provision.clouds.base.Adapter.preflight`; takes an account object, so it runs offline against fakes.
"""

from __future__ import annotations

import fnmatch
import os
from typing import Any, Protocol

from provision.clouds.azure.fslookup import needs_identity
from provision.planning.plan import ClusterPlan
from provision.spec.errors import Problem, UnsupportedError


class AzureAccount(Protocol):
    """What the Azure preflight asks a subscription (tests pass fakes; :class:`ArmAccount` asks ARM)."""

    def provider_state(self, namespace: str) -> str:
        """The resource provider's registrationState, e.g. ``Registered`` or ``NotRegistered``."""
        ...

    def feature_state(self, namespace: str, feature: str) -> str:
        """A preview feature's state on the subscription, e.g. ``Registered`` or ``NotRegistered``."""
        ...

    def sku(self, region: str, size: str) -> dict[str, Any] | None:
        """The compute SKU as ``{"family", "restrictions": [{"type", "reason", "zones"}], "capabilities": {}}``,
        or ``None`` when the region does not list it for the subscription."""
        ...

    def usages(self, region: str) -> dict[str, tuple[float, float]]:
        """Compute usage in ``region``: usage name -> (current value, limit)."""
        ...

    def permissions(self, resource_group: str) -> list[tuple[list[str], list[str]]]:
        """The caller's effective permissions on the resource group (the subscription when the group does not
        exist yet), as ``(actions, notActions)`` per role (ARM "Permissions - List For Resource Group")."""
        ...


#: Resource providers each plan needs registered; PUTs to an unregistered namespace fail with
#: MissingSubscriptionRegistration (Azure "Resource providers and types": register before use).
AZURE_PROVIDERS = ("Microsoft.Compute", "Microsoft.Network")
#: AKS's own resource providers (the cluster, the identities the build creates).
AKS_PROVIDERS = ("Microsoft.ContainerService", "Microsoft.ManagedIdentity")
AKS_INFINIBAND_FEATURE = "AKSInfinibandSupport"
AZURE_STORAGE_PROVIDERS = {"amlfs": "Microsoft.StorageCache", "netapp": "Microsoft.NetApp"}
#: Regional vCPU usage names of "az vm list-usage": all regular VMs, and all Spot/low-priority VMs.
AZURE_REGIONAL_CORES = "cores"
AZURE_SPOT_CORES = "lowPriorityCores"
#: What creating the expiry role and its assignment needs (custom-roles-rest.md: "you must be signed in with a user
#: that is assigned a role that has the Microsoft.Authorization/roleDefinitions/write permission ... Of the
#: built-in roles, only Owner and User Access Administrator include this permission"; Contributor has
#: ``Microsoft.Authorization/*/Write`` in NotActions: built-in-roles/privileged.md).
ROLE_WRITE_ACTIONS = (
    "Microsoft.Authorization/roleDefinitions/write",
    "Microsoft.Authorization/roleAssignments/write",
)


#: Assigning the nodes' Reader role on the filesystem (fslookup.py): "To assign Azure roles, you must have
#: Microsoft.Authorization/roleAssignments/write permissions, such as Role Based Access Control Administrator"
#: (MicrosoftDocs/azure-docs role-based-access-control/role-assignments-portal.md, Prerequisites).
ASSIGN_ACTION = "Microsoft.Authorization/roleAssignments/write"
#: The user-assigned identity's provider (Microsoft.ManagedIdentity/userAssignedIdentities; "Resource providers and
#: types": a PUT to an unregistered namespace fails with MissingSubscriptionRegistration).
AZURE_IDENTITY_PROVIDER = "Microsoft.ManagedIdentity"


def _matches(pattern: str, action: str) -> bool:
    """An RBAC action pattern (``*`` wildcards, case-insensitive: role-definitions.md "Actions format")."""
    return fnmatch.fnmatchcase(action.lower(), pattern.lower())


def allowed(permissions: list[tuple[list[str], list[str]]], action: str) -> bool:
    """Whether some role grants ``action``: in its Actions and not in its NotActions (role-definitions.md
    "NotActions": access is the union of every role's Actions minus its own NotActions)."""
    return any(
        any(_matches(a, action) for a in actions) and not any(_matches(n, action) for n in not_actions)
        for actions, not_actions in permissions
    )


def azure_preflight(plan: ClusterPlan, account: AzureAccount | None = None) -> list[Problem]:
    """Problems that would stop ``plan`` in this Azure subscription, before anything is created or billed.

    Checks resource-provider registration (Compute, Network, and StorageCache or NetApp for the shared
    filesystem), that the size is offered to the subscription in the region and zone (resource SKU
    restrictions), the vCPU quota of the size's family (ND families often start at 0) and the regional
    total, that the deployer may create the expiry role and its assignment when the plan has one, and, when
    ``azure.encryption_at_host`` is on, the EncryptionAtHost feature and the size's
    ``EncryptionAtHostSupported`` capability (disks-enable-host-based-encryption-cli).

    Args:
        plan: an Azure plan.
        account: the subscription to ask; default :class:`ArmAccount` from ``AZURE_SUBSCRIPTION_ID`` and
            azure-identity's default credential.
    """
    account = account or ArmAccount.from_environment()
    problems: list[Problem] = []
    from provision.clouds.azure.plan import AzurePlan

    extra = plan.extra
    assert isinstance(extra, AzurePlan), type(extra)  # noqa: S101 - only Azure plans come here
    needed_providers = list(AZURE_PROVIDERS) + (list(AKS_PROVIDERS) if plan.kubernetes is not None else [])
    fs = extra.filesystem
    if fs is not None:
        needed_providers.append(AZURE_STORAGE_PROVIDERS[fs.kind])
    if needs_identity(plan):
        needed_providers.append(AZURE_IDENTITY_PROVIDER)
    for namespace in needed_providers:
        state = account.provider_state(namespace)
        if state != "Registered":
            problems.append(
                Problem(
                    "cloud",
                    namespace,
                    f"resource provider {namespace} is {state} on this subscription, so creating its resources fails "
                    "(MissingSubscriptionRegistration)",
                    f"az provider register --namespace {namespace} --wait",
                )
            )
    if plan.kubernetes is not None:
        problems += aks_preflight(plan, account)
    elif extra.lifetime == "node-timer":
        granted = account.permissions(extra.resource_group)
        missing = [a for a in ROLE_WRITE_ACTIONS if not allowed(granted, a)]
        if missing:
            problems.append(
                Problem(
                    "azure.delete_at_expiry",
                    True,
                    f"the expiry role needs {' and '.join(missing)}, which you do not have on this subscription "
                    "(only Owner and User Access Administrator have them; Contributor does not), so the deploy "
                    "would fail at the role",
                    "ask for User Access Administrator on the subscription, or set azure.delete_at_expiry: false "
                    "(then only `provision reap --azure-subscription` ends the cluster at its expiry)",
                )
            )
    reported = any(p.path == "azure.delete_at_expiry" for p in problems)
    if fs is not None and not reported and not allowed(account.permissions(extra.resource_group), ASSIGN_ACTION):
        problems.append(
            Problem(
                "storage.shared",
                fs.kind,
                f"the nodes look the filesystem's address up at boot with a read-only role on it, and assigning "
                f"that role needs {ASSIGN_ACTION}, which you do not have on this subscription (Contributor does "
                "not), so the nodes would never mount it",
                "ask for Role Based Access Control Administrator or User Access Administrator on the subscription",
            )
        )
    sku = account.sku(plan.region, plan.instance_type)
    if sku is None:
        problems.append(
            Problem(
                "instance_type",
                plan.instance_type,
                f"is not offered to this subscription in {plan.region}",
                f"az vm list-skus -l {plan.region} --size {plan.instance_type}; use another region or ask support",
            )
        )
        return problems
    problems += _azure_restrictions(plan, sku)
    problems += _azure_quota(plan, sku, account.usages(plan.region))
    if extra.encryption_at_host:
        state = account.feature_state("Microsoft.Compute", "EncryptionAtHost")
        if state != "Registered":
            problems.append(
                Problem(
                    "azure.encryption_at_host",
                    True,
                    f"needs the Microsoft.Compute/EncryptionAtHost feature, which is {state} on this subscription",
                    "az feature register --namespace Microsoft.Compute --name EncryptionAtHost, then az provider "
                    "register -n Microsoft.Compute; or set azure.encryption_at_host: false",
                )
            )
        if str(sku.get("capabilities", {}).get("EncryptionAtHostSupported", "True")).lower() == "false":
            problems.append(
                Problem(
                    "azure.encryption_at_host",
                    True,
                    f"{plan.instance_type} does not support encryption at host (EncryptionAtHostSupported: False)",
                    "set azure.encryption_at_host: false",
                )
            )
    return problems


def aks_preflight(plan: ClusterPlan, account: AzureAccount) -> list[Problem]:
    """What AKS needs beyond the VM path's checks (``scheduler: kubernetes``).

    * ``Microsoft.ContainerService/AKSInfinibandSupport`` registered on an InfiniBand cluster, so the GPU pool's
      nodes land on one InfiniBand network (Azure/aks-rdma-infiniband prerequisites: ``az feature register
      --namespace Microsoft.ContainerService --name AKSInfinibandSupport``).
    * The deployer may write role definitions and assignments: the AKS build always assigns Network Contributor on
      the VNet to the control plane's identity and the RBAC Cluster Admin role to the deployer (and, with
      ``azure.delete_at_expiry``, the expiry job's custom role).
    """
    problems: list[Problem] = []
    if plan.fabric == "infiniband":
        state = account.feature_state("Microsoft.ContainerService", AKS_INFINIBAND_FEATURE)
        if state != "Registered":
            problems.append(
                Problem(
                    "fabric",
                    "infiniband",
                    f"needs the Microsoft.ContainerService/{AKS_INFINIBAND_FEATURE} feature on AKS, which is {state} "
                    "on this subscription, so the GPU pool's nodes may not share one InfiniBand network",
                    f"az feature register --namespace Microsoft.ContainerService --name {AKS_INFINIBAND_FEATURE}, then "
                    "az provider register -n Microsoft.ContainerService",
                )
            )
    granted = account.permissions(plan.extra.resource_group)
    missing = [a for a in ROLE_WRITE_ACTIONS if not allowed(granted, a)]
    if missing:
        problems.append(
            Problem(
                "scheduler.kind",
                "kubernetes",
                f"AKS here needs {' and '.join(missing)} (the control plane's Network Contributor on the VNet, your "
                "cluster-admin role), which you do not have on this subscription (Owner or User Access "
                "Administrator have them; Contributor does not)",
                "ask for User Access Administrator on the subscription, or use scheduler.kind: none",
            )
        )
    return problems


def _azure_restrictions(plan: ClusterPlan, sku: dict[str, Any]) -> list[Problem]:
    out = []
    offered = sku.get("zones")
    if plan.zone and offered is not None and plan.zone not in offered:
        # resource SKUs list the zones a size is offered in (locationInfo[].zones); a size absent from a zone
        # carries no restriction there, it is simply not listed.
        out.append(
            Problem(
                "zone",
                plan.zone,
                f"{plan.instance_type} is not offered in zone {plan.zone} of {plan.region} for this subscription "
                f"(offered: {', '.join(offered) or 'no zone'})",
                f"use one of: {', '.join(offered)}" if offered else "drop zone",
            )
        )
    for restriction in sku.get("restrictions", []):
        reason = restriction.get("reason") or "restricted"
        if restriction.get("type") == "Location":
            out.append(
                Problem(
                    "instance_type",
                    plan.instance_type,
                    f"is restricted for this subscription in {plan.region} ({reason})",
                    "ask Azure support to enable the size in this region (a quota/SKU access request), or use another "
                    "region",
                )
            )
        elif restriction.get("type") == "Zone" and plan.zone and plan.zone in restriction.get("zones", []):
            out.append(
                Problem(
                    "zone",
                    plan.zone,
                    f"cannot host {plan.instance_type} for this subscription ({reason})",
                    "use a zone the size is not restricted in, or drop zone",
                )
            )
    return out


def _azure_quota(plan: ClusterPlan, sku: dict[str, Any], usages: dict[str, tuple[float, float]]) -> list[Problem]:
    needed = plan.nodes * plan.offer.vcpus
    spot = plan.capacity.type == "spot"
    # Spot VMs count against the regional low-priority quota only; regular VMs against their family and the
    # regional total ("Check vCPU quotas": az vm list-usage).
    checks = [(AZURE_SPOT_CORES, "Spot vCPUs")] if spot else [(sku["family"], f"{sku['family']} vCPUs")]
    if not spot:
        checks.append((AZURE_REGIONAL_CORES, "regional vCPUs"))
    # Usage names and SKU families differ in case across families (``standardNDSH100v5Family`` in both APIs, but
    # public tables show ``StandardNCadsH100v5Family``): compare without case. A family with no usage entry is left
    # to the deploy (the preflight's problems are errors, and an unreadable quota is not one).
    by_lower = {k.lower(): v for k, v in usages.items()}
    out = []
    for name, label in checks:
        if name.lower() not in by_lower:
            continue
        current, limit = by_lower[name.lower()]
        if current + needed > limit:
            out.append(
                Problem(
                    "nodes",
                    plan.nodes,
                    f"needs {needed} {label} but the quota in {plan.region} is {limit:g} with {current:g} in use",
                    f"request a quota increase to at least {current + needed:g} ({name}) in the portal's Quotas page, "
                    "or use fewer nodes",
                )
            )
    return out


def _text(value: Any) -> str:
    """An SDK enum member's wire value (``str()`` of one gives ``EnumClass.MEMBER``), or the string itself."""
    return str(getattr(value, "value", value))


class ArmAccount:
    """:class:`AzureAccount` over the Azure management SDKs (azure-identity, azure-mgmt-resource,
    azure-mgmt-resource-features, azure-mgmt-compute, azure-mgmt-authorization), imported only when a live
    preflight runs."""

    def __init__(self, subscription_id: str, credential: Any = None) -> None:
        try:
            from azure.identity import DefaultAzureCredential
            from azure.mgmt.compute import ComputeManagementClient
            from azure.mgmt.resource.features import FeatureClient
            from azure.mgmt.resource.resources import ResourceManagementClient
        except ImportError as e:  # pragma: no cover - depends on the installed extras
            raise UnsupportedError(
                f"the Azure preflight needs the Azure management SDKs ({e.name} is missing); to fix: pip install "
                "'provision[azure]'"
            ) from e
        credential = credential or DefaultAzureCredential()
        self._resources = ResourceManagementClient(credential, subscription_id)
        self._features = FeatureClient(credential, subscription_id)
        self._compute = ComputeManagementClient(credential, subscription_id)
        self._subscription = subscription_id
        from azure.mgmt.authorization import AuthorizationManagementClient

        # The multi-api client builds a new operations object on each access: keep one.
        self._permissions = AuthorizationManagementClient(credential, subscription_id).permissions

    @classmethod
    def from_environment(cls) -> ArmAccount:
        """The subscription the azure-native provider deploys to when no stack config names one:
        ``ARM_SUBSCRIPTION_ID`` (the provider's variable, Pulumi registry azure-native installation-configuration),
        else ``AZURE_SUBSCRIPTION_ID``; both set and different is refused, so the preflight never checks another
        subscription than the deploy uses."""
        arm, azure = os.environ.get("ARM_SUBSCRIPTION_ID"), os.environ.get("AZURE_SUBSCRIPTION_ID")
        if arm and azure and arm.lower() != azure.lower():
            raise UnsupportedError(
                f"ARM_SUBSCRIPTION_ID ({arm}) and AZURE_SUBSCRIPTION_ID ({azure}) differ; the provider deploys to "
                "ARM_SUBSCRIPTION_ID. To fix: unset one or make them equal"
            )
        subscription = arm or azure
        if not subscription:
            raise UnsupportedError(
                "the Azure preflight needs ARM_SUBSCRIPTION_ID (the subscription the provider deploys to); to fix: "
                "export ARM_SUBSCRIPTION_ID=$(az account show --query id -o tsv)"
            )
        return cls(subscription)

    def provider_state(self, namespace: str) -> str:
        return _text(self._resources.providers.get(namespace).registration_state)

    def feature_state(self, namespace: str, feature: str) -> str:
        properties = self._features.features.get(namespace, feature).properties
        return _text(properties.state) if properties is not None else "NotRegistered"

    def sku(self, region: str, size: str) -> dict[str, Any] | None:
        for sku in self._compute.resource_skus.list(filter=f"location eq '{region}'"):
            if sku.resource_type != "virtualMachines" or sku.name != size:
                continue
            restrictions = [
                {
                    "type": _text(r.type),
                    "reason": _text(r.reason_code) if r.reason_code else None,
                    "zones": list((r.restriction_info.zones if r.restriction_info else None) or []),
                }
                for r in sku.restrictions or []
            ]
            capabilities = {c.name: c.value for c in sku.capabilities or []}
            # None when ARM sent no locationInfo (nothing to compare with), else the zones offering the size.
            zones = sorted({z for info in sku.location_info for z in info.zones or []}) if sku.location_info else None
            return {"family": sku.family, "restrictions": restrictions, "capabilities": capabilities, "zones": zones}
        return None

    def permissions(self, resource_group: str) -> list[tuple[list[str], list[str]]]:
        from azure.core.exceptions import ResourceNotFoundError

        try:
            found = list(self._permissions.list_for_resource_group(resource_group))
        except ResourceNotFoundError:  # the first `up` creates the group: ask at the subscription
            from azure.core.rest import HttpRequest

            url = f"/subscriptions/{self._subscription}/providers/Microsoft.Authorization/permissions"
            response = self._resources.send_request(HttpRequest("GET", url, params={"api-version": "2022-04-01"}))
            response.raise_for_status()
            return [(list(p.get("actions") or []), list(p.get("notActions") or [])) for p in response.json()["value"]]
        return [(list(p.actions or []), list(p.not_actions or [])) for p in found]

    def usages(self, region: str) -> dict[str, tuple[float, float]]:
        return {str(u.name.value): (float(u.current_value), float(u.limit)) for u in self._compute.usage.list(region)}


def preflight(plan: ClusterPlan, session: AzureAccount | None = None) -> list[Problem]:
    """The hook :meth:`~provision.clouds.base.Adapter.preflight` calls: ``session`` is the subscription."""
    return azure_preflight(plan, session)
