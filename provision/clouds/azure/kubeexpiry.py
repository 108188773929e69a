"""The AKS cluster deletes itself at the expiry (``azure.delete_at_expiry``): the AKS analog of ``expiry.py``.

AKS has no node or cluster lifetime, and AKS nodes run the AKS image, not provision's timer. So a CronJob on
the system pool fires once, at the expiry minute (UTC), and asks ARM to delete the managed cluster, which
deletes every node pool and the node resource group; the network and the Managed Lustre file system stay
until ``down`` or the reaper (the cluster's resource group carries ``provision-expires-at``).

The job's only right is a custom role holding ``Microsoft.ContainerService/managedClusters/read`` and
``/delete`` (Azure resource provider operations, Microsoft.ContainerService), assigned on the cluster alone to a
user-assigned identity the job's service account federates to through AKS Workload Identity (AKS "Use
Microsoft Entra Workload ID with AKS": OIDC issuer + workload identity on the cluster, a federated credential
with subject ``system:serviceaccount:NS:SA`` and audience ``api://AzureADTokenExchange``, the service account
annotated ``azure.workload.identity/client-id`` and the pod labelled ``azure.workload.identity/use: "true"``).
No secret exists: the pod gets a projected token, which ``az login --federated-token`` exchanges.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

import pulumi
import pulumi_kubernetes as k8s
from pulumi_azure_native import authorization, containerservice, managedidentity

from provision.clouds.azure.expiry import ROLE_PROPAGATION, role_guid, role_name
from provision.clouds.azure.kubeplan import AKS_ROLE_KIND, AKS_ROLE_SUFFIX
from provision.clouds.k8s import objects

if TYPE_CHECKING:
    from provision.clouds.azure.plan import AzurePlan
    from provision.planning.plan import ClusterPlan

ACTIONS = (
    "Microsoft.ContainerService/managedClusters/read",
    "Microsoft.ContainerService/managedClusters/delete",
)
NAMESPACE = "kube-system"
SERVICE_ACCOUNT = "provision-expiry"
#: The Azure CLI image (mcr.microsoft.com/azure-cli, tag = CLI release); the job needs only `az`.
CLI_IMAGE = "mcr.microsoft.com/azure-cli:2.67.0"
AUDIENCE = "api://AzureADTokenExchange"


def cron_at(when: datetime) -> str:
    """A cron schedule firing at ``when``'s minute (UTC) on its day of its month (once a year at most)."""
    return f"{when.minute} {when.hour} {when.day} {when.month} *"


def script(cluster_id: str) -> str:
    """What the job runs: log in with the projected token, delete the cluster without waiting."""
    return (
        "set -eu\n"
        'az login --service-principal -u "$AZURE_CLIENT_ID" -t "$AZURE_TENANT_ID" '
        '--federated-token "$(cat "$AZURE_FEDERATED_TOKEN_FILE")" --output none\n'
        f"az aks delete --ids {cluster_id} --yes --no-wait\n"
    )


def self_delete(
    plan: ClusterPlan[AzurePlan],
    cluster: containerservice.ManagedCluster,
    rg: pulumi.Input[str],
    rg_id: pulumi.Input[str],
    prov: k8s.Provider,
    parent: pulumi.Resource,
) -> k8s.batch.v1.CronJob:
    """The identity, role, assignment, federated credential, service account and CronJob (module docstring)."""
    assert plan.expires_at is not None  # noqa: S101
    opts = pulumi.ResourceOptions(parent=parent)
    identity = managedidentity.UserAssignedIdentity(
        f"{plan.name}-expiry-identity",
        resource_name_=f"{plan.name}-expiry-identity",
        resource_group_name=rg,
        location=plan.region,
        tags=plan.tags,
        opts=opts,
    )
    definition = authorization.RoleDefinition(
        f"{plan.name}-aks-expiry-role",
        role_definition_id=pulumi.Output.from_input(rg_id).apply(lambda i: role_guid(i, AKS_ROLE_KIND)),
        role_name=pulumi.Output.from_input(rg_id).apply(lambda i: role_name(plan.name, i) + AKS_ROLE_SUFFIX),
        description=f"provision: lets cluster {plan.name}'s expiry job delete its AKS cluster",
        role_type="CustomRole",
        scope=pulumi.Output.from_input(rg_id).apply(lambda i: "/".join(i.split("/")[:3])),
        assignable_scopes=[rg_id],
        permissions=[authorization.PermissionArgs(actions=list(ACTIONS))],
        opts=opts,
    )
    import pulumiverse_time  # the azure extra; imported here so `import provision` stays light

    replicated = pulumiverse_time.Sleep(  # a new custom role replicates before it may be assigned (expiry.py)
        f"{plan.name}-aks-expiry-role-propagation",
        create_duration=ROLE_PROPAGATION,
        triggers={"definition": definition.id},
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[definition]),
    )
    assignment = authorization.RoleAssignment(
        f"{plan.name}-aks-expiry-assignment",
        role_assignment_name=cluster.id.apply(lambda i: role_guid(i, "aks-expiry-assignment")),
        principal_id=identity.principal_id,
        principal_type=authorization.PrincipalType.SERVICE_PRINCIPAL,
        role_definition_id=definition.id,
        scope=cluster.id,
        description="provision: the expiry job deletes the AKS cluster",
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[replicated]),
    )
    issuer = cluster.oidc_issuer_profile.apply(lambda p: p.issuer_url if p else "")
    credential = managedidentity.FederatedIdentityCredential(
        f"{plan.name}-expiry-federation",
        federated_identity_credential_resource_name="aks-expiry",
        resource_group_name=rg,
        resource_name_=identity.name,
        issuer=issuer,
        subject=f"system:serviceaccount:{NAMESPACE}:{SERVICE_ACCOUNT}",
        audiences=[AUDIENCE],
        opts=opts,
    )
    k_opts = pulumi.ResourceOptions(parent=parent, provider=prov)
    account = k8s.core.v1.ServiceAccount(
        f"{plan.name}-expiry-sa",
        metadata=k8s.meta.v1.ObjectMetaArgs(
            name=SERVICE_ACCOUNT,
            namespace=NAMESPACE,
            labels=objects.labels(plan),
            annotations={"azure.workload.identity/client-id": identity.client_id},
        ),
        opts=k_opts,
    )
    pod: dict[str, Any] = {
        "metadata": {"labels": {"azure.workload.identity/use": "true"}},
        "spec": {
            "serviceAccountName": SERVICE_ACCOUNT,
            "restartPolicy": "OnFailure",
            "nodeSelector": {"provision-pool": "system"},
            "containers": [
                {
                    "name": "delete-cluster",
                    "image": CLI_IMAGE,
                    "command": ["/bin/sh", "-c", cluster.id.apply(script)],
                }
            ],
        },
    }
    return k8s.batch.v1.CronJob(
        f"{plan.name}-expiry",
        metadata=k8s.meta.v1.ObjectMetaArgs(name="provision-expiry", namespace=NAMESPACE, labels=objects.labels(plan)),
        spec={
            "schedule": cron_at(plan.expires_at),
            "timeZone": "Etc/UTC",
            "concurrencyPolicy": "Forbid",
            # A controller that misses the minute (restart, upgrade) still starts the job within a day.
            "startingDeadlineSeconds": 86400,
            "jobTemplate": {"spec": {"backoffLimit": 6, "template": pod}},
        },
        opts=pulumi.ResourceOptions(parent=parent, provider=prov, depends_on=[account, credential, assignment]),
    )
