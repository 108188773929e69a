"""AKS for ``scheduler: kubernetes`` on Azure: the cluster, its pools, the fabric operators and the training stack.

Built from :mod:`provision.clouds.azure.kubeplan` decisions (sources there). Created here, in order:

1. the resource group, and the VM path's network (VNet, NSG, NAT gateway, node subnet, Lustre subnet) and
   Managed Lustre file system (``network.build_network``, ``storage.build_filesystem``), or, with an attached
   volume (``storage.shared.volume``), no file system but the two peerings with the volume's VNet
   (:mod:`provision.clouds.azure.volumelink`);
2. the control plane's user-assigned identity with Network Contributor on the VNet (AKS "Use a managed
   identity in AKS": a cluster in your own subnet needs it, and AKS creates no assignment itself through
   ARM), then the cluster: Standard tier, Microsoft Entra ID with Azure RBAC and local accounts off (no
   static credential exists), Azure CNI overlay, egress through the subnet's NAT gateway
   (``userAssignedNATGateway``), the API server reachable only from ``access.allowed_cidrs``, and the system
   pool inline (a cluster needs one System pool at all times);
3. the deployer's "Azure Kubernetes Service RBAC Cluster Admin" assignment on the cluster (the Helm
   installs below authenticate as the deployer through kubelogin's Azure CLI mode);
4. the GPU agent pool in one proximity placement group, AKS GPU driver skipped;
5. with ``azure.delete_at_expiry`` and a lifetime, the job that deletes the cluster at the expiry
   (:mod:`provision.clouds.azure.kubeexpiry`);
6. the Network Operator + ``NicClusterPolicy``, the GPU Operator, the Lustre CSI driver, then the shared
   training stack (:func:`provision.clouds.k8s.objects.build_training_stack`).
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

import pulumi
import pulumi_kubernetes as k8s
import yaml
from pulumi_azure_native import authorization, compute, containerservice, managedidentity, resources

from provision.clouds.azure.expiry import role_guid
from provision.clouds.azure.kubeexpiry import self_delete
from provision.clouds.azure.kubeplan import aks, helm_values, nic_cluster_policy
from provision.clouds.azure.network import build_network
from provision.clouds.azure.storage import LUSTRE_FSNAME, attached_filesystem, build_filesystem
from provision.clouds.azure.volumelink import build_volume_peering
from provision.clouds.k8s import objects
from provision.clouds.volumeref import volume_reference

if TYPE_CHECKING:
    from provision.clouds.azure.plan import AzurePlan
    from provision.planning.plan import ClusterPlan

TYPE_TOKEN = "provision:azure:KubernetesCluster"
#: Built-in role ids (learn.microsoft.com/azure/role-based-access-control/built-in-roles).
NETWORK_CONTRIBUTOR = "4d97b98b-1d4f-4787-a291-c67834d212e7"
AKS_RBAC_CLUSTER_ADMIN = "b1ff04bb-8a4e-4dc4-8eb5-8693973ce19b"
#: The AKS Microsoft Entra server application id kubelogin asks tokens for (learn.microsoft.com/azure/aks/
#: kubelogin-authentication: "--server-id 6dae42f8-4368-4678-94ff-3960e28e3630").
AKS_SERVER_ID = "6dae42f8-4368-4678-94ff-3960e28e3630"
NIC_POLICY_API = "mellanox.com/v1alpha1"


def kubeconfig(name: str, server: str, ca_data: str | None) -> str:
    """A kubeconfig that authenticates through ``kubelogin`` with the Azure CLI login (no credential stored)."""
    return objects.kubeconfig_text(
        name,
        server,
        [
            "      command: kubelogin",
            f"      args: [get-token, --login, azurecli, --server-id, {AKS_SERVER_ID}]",
        ],
        ca_data=ca_data,
    )


def ca_from_user_kubeconfig(encoded: str) -> str | None:
    """The cluster CA of the kubeconfig ``listClusterUserCredential`` returns (base64 YAML). With local accounts
    off it holds no secret; only the server's CA is read from it."""
    doc = yaml.safe_load(base64.b64decode(encoded).decode())
    clusters = (doc or {}).get("clusters") or []
    return clusters[0]["cluster"].get("certificate-authority-data") if clusters else None


def _builtin_role(subscription: str, role: str) -> str:
    """A built-in role's definition id as a role assignment in ``subscription`` takes it."""
    return f"/subscriptions/{subscription}/providers/Microsoft.Authorization/roleDefinitions/{role}"


def _value(credential: Any) -> str:
    """A ``CredentialResultResponse``'s value (a typed object from the provider, a mapping from some runtimes)."""
    return str(credential["value"] if isinstance(credential, dict) else credential.value)


def _opts(parent: pulumi.Resource, **kw: Any) -> pulumi.ResourceOptions:
    return pulumi.ResourceOptions(parent=parent, **kw)


class AksCluster(pulumi.ComponentResource):
    """One GPU cluster on AKS. Attributes: ``cluster``, ``gpu_pool``, ``outputs``."""

    def __init__(self, plan: ClusterPlan[AzurePlan], opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE_TOKEN, plan.name, None, opts)
        assert plan.kubernetes is not None  # noqa: S101
        ax, extra, k = aks(plan.kubernetes), plan.extra, plan.kubernetes
        child = _opts(self)
        self.resource_group = resources.ResourceGroup(
            extra.resource_group,
            resource_group_name=extra.resource_group,
            location=plan.region,
            tags=plan.tags,
            opts=child,
        )
        rg = self.resource_group.name
        # An attached volume (storage.shared.volume): its Managed Lustre lives in its own stack; the cluster's VNet
        # admits the volume's network and is peered with it both ways, as the VM clusters' (clouds/azure/volumelink.py).
        volume = volume_reference(plan, self)
        net = build_network(plan, rg, plan.tags, child, volume.network_field("cidr") if volume is not None else None)
        shared = None
        if volume is not None:
            shared = attached_filesystem(plan, volume.mount_source, volume.name)
            build_volume_peering(plan, rg, net, volume, child)
        elif extra.filesystem is not None and net.filesystem is not None:
            shared = build_filesystem(plan, rg, net.filesystem, plan.tags, child)
        client = authorization.get_client_config_output(opts=pulumi.InvokeOutputOptions(parent=self))
        identity = managedidentity.UserAssignedIdentity(
            f"{plan.name}-aks-identity",
            resource_name_=f"{plan.name}-aks-identity",
            resource_group_name=rg,
            location=plan.region,
            tags=plan.tags,
            opts=child,
        )
        network_role = authorization.RoleAssignment(
            f"{plan.name}-aks-network",
            role_assignment_name=net.vnet.id.apply(lambda i: role_guid(i, "aks-network")),
            principal_id=identity.principal_id,
            principal_type=authorization.PrincipalType.SERVICE_PRINCIPAL,
            role_definition_id=client.subscription_id.apply(lambda s: _builtin_role(s, NETWORK_CONTRIBUTOR)),
            scope=net.vnet.id,
            description="provision: the AKS control plane joins nodes to the cluster's subnet",
            opts=child,
        )
        system = k.system_pool
        zones = [plan.zone] if plan.zone else None
        key = plan.access.ssh_public_keys[0] if plan.access.ssh_public_keys else None
        self.cluster = containerservice.ManagedCluster(
            f"{plan.name}-aks",
            resource_name_=ax.cluster,
            resource_group_name=rg,
            location=plan.region,
            dns_prefix=ax.dns_prefix,
            kubernetes_version=ax.version,
            sku=containerservice.ManagedClusterSKUArgs(name="Base", tier=ax.tier),
            node_resource_group=ax.node_resource_group,
            identity=containerservice.ManagedClusterIdentityArgs(
                type=containerservice.ResourceIdentityType.USER_ASSIGNED, user_assigned_identities=[identity.id]
            ),
            aad_profile=containerservice.ManagedClusterAADProfileArgs(managed=True, enable_azure_rbac=True),
            disable_local_accounts=True,
            # Workload Identity (the expiry job's only credential): OIDC issuer + the webhook.
            oidc_issuer_profile=containerservice.ManagedClusterOIDCIssuerProfileArgs(enabled=True),
            security_profile=containerservice.ManagedClusterSecurityProfileArgs(
                workload_identity=containerservice.ManagedClusterSecurityProfileWorkloadIdentityArgs(enabled=True)
            ),
            enable_rbac=True,
            # The nodes reach the public API server from the NAT gateway's address: authorize it beside the
            # user's networks (AKS api-server-authorized-ip-ranges: with an outbound type other than the load
            # balancer, add the egress IP yourself).
            api_server_access_profile=containerservice.ManagedClusterAPIServerAccessProfileArgs(
                authorized_ip_ranges=pulumi.Output.all(*([net.nat_ip.ip_address] if net.nat_ip else [])).apply(
                    lambda ips: [*k.control_plane.authorized_networks, *(f"{ip}/32" for ip in ips if ip)]
                )
            ),
            network_profile=containerservice.ContainerServiceNetworkProfileArgs(
                network_plugin="azure",
                network_plugin_mode="overlay",
                pod_cidr=ax.pod_cidr,
                service_cidr=ax.service_cidr,
                dns_service_ip=ax.dns_service_ip,
                outbound_type="userAssignedNATGateway",
            ),
            agent_pool_profiles=[
                containerservice.ManagedClusterAgentPoolProfileArgs(
                    name=ax.system_pool,
                    mode="System",
                    type="VirtualMachineScaleSets",
                    count=system.nodes,
                    vm_size=system.instance_type,
                    os_type="Linux",
                    os_sku=ax.os_sku,
                    max_pods=ax.max_pods,
                    vnet_subnet_id=net.nodes.id,
                    availability_zones=zones,
                    enable_encryption_at_host=extra.encryption_at_host,
                    node_labels={"provision-pool": "system"},
                    tags=plan.tags,
                )
            ],
            linux_profile=containerservice.ContainerServiceLinuxProfileArgs(
                admin_username=plan.access.ssh_user,
                ssh=containerservice.ContainerServiceSshConfigurationArgs(
                    public_keys=[containerservice.ContainerServiceSshPublicKeyArgs(key_data=key)]
                ),
            )
            if key
            else None,
            tags=plan.tags,
            opts=_opts(self, depends_on=[network_role], custom_timeouts=pulumi.CustomTimeouts(create="60m")),
        )
        admin = authorization.RoleAssignment(
            f"{plan.name}-aks-admin",
            role_assignment_name=self.cluster.id.apply(lambda i: role_guid(i, "aks-admin")),
            principal_id=client.object_id,
            role_definition_id=client.subscription_id.apply(lambda s: _builtin_role(s, AKS_RBAC_CLUSTER_ADMIN)),
            scope=self.cluster.id,
            description="provision: the deployer installs the cluster's operators and queues",
            opts=child,
        )
        ppg = compute.ProximityPlacementGroup(
            ax.ppg,
            proximity_placement_group_name=ax.ppg,
            resource_group_name=rg,
            location=plan.region,
            proximity_placement_group_type="Standard",
            intent=compute.ProximityPlacementGroupPropertiesIntentArgs(vm_sizes=[plan.instance_type])
            if plan.zone
            else None,
            zones=zones,
            tags=plan.tags,
            opts=child,
        )
        self.gpu_pool = self._gpu_pool(plan, rg, net.nodes.id, ppg)
        creds = containerservice.list_managed_cluster_user_credentials_output(
            resource_group_name=rg,
            resource_name=self.cluster.name,
            format="exec",
            opts=pulumi.InvokeOutputOptions(parent=self, depends_on=[self.cluster]),
        )
        config = pulumi.Output.all(self.cluster.fqdn, creds.kubeconfigs).apply(
            lambda a: kubeconfig(ax.cluster, f"https://{a[0]}:443", ca_from_user_kubeconfig(_value(a[1][0])))
        )
        prov = objects.provider(plan.name, config, self.cluster.id, self, [self.gpu_pool, admin])
        plugins = self._operators(plan, prov)
        csi = None
        if shared is not None:
            # Static volume of the Lustre CSI driver (AKS "Statically provision Azure Managed Lustre volumes"):
            # the MGS address and the file system name of the mount source <MGS IP>@tcp:/<fs name> (always lustrefs
            # on Managed Lustre, an attached volume's included).
            csi = shared.summary.apply(
                lambda s: {
                    "driver": "azurelustre.csi.azure.com",
                    "volumeHandle": f"{plan.name}-lustre#{LUSTRE_FSNAME}",
                    "volumeAttributes": {
                        "mgs-ip-address": s["source"].split("@", 1)[0],
                        "fs-name": s["source"].rsplit("/", 1)[-1] or LUSTRE_FSNAME,
                    },
                }
            )
        objects.build_training_stack(plan, prov, self, shared_csi=csi, deps=plugins)
        if ax.delete_at_expiry and plan.expires_at is not None:
            self_delete(plan, self.cluster, rg, self.resource_group.id, prov, self)
        self.outputs: dict[str, Any] = {
            "hosts": [],
            "hostfile": "",
            "head_node": None,
            "ssh_config": "",
            "shared_fs": shared.summary if shared is not None else None,
            "kubernetes": objects.kubernetes_outputs(plan, self.cluster.name, self.cluster.fqdn, config),
            "node_pools": {"system": ax.system_pool, "gpu": self.gpu_pool.name},
            "fabric_manifest": {
                "image": ax.node_image,
                **{name: f"{h.chart} {h.version}" for name, h in ax.helm.items()},
                "rdma_resource": ax.rdma_resource,
            },
        }
        self.register_outputs({"cluster": self.cluster.id})

    def _gpu_pool(
        self, plan: ClusterPlan[AzurePlan], rg: pulumi.Input[str], subnet: pulumi.Input[str], ppg: Any
    ) -> containerservice.AgentPool:
        assert plan.kubernetes is not None  # noqa: S101
        ax, pool, extra = aks(plan.kubernetes), plan.kubernetes.gpu_pool, plan.extra
        spot = extra.priority == "Spot"
        return containerservice.AgentPool(
            f"{plan.name}-gpu",
            agent_pool_name=ax.gpu_pool,
            resource_group_name=rg,
            resource_name_=self.cluster.name,
            mode="User",
            type="VirtualMachineScaleSets",
            count=pool.nodes,
            vm_size=plan.instance_type,
            os_type="Linux",
            os_sku=ax.os_sku,
            orchestrator_version=ax.version,
            max_pods=ax.max_pods,
            vnet_subnet_id=subnet,
            availability_zones=[plan.zone] if plan.zone else None,
            proximity_placement_group_id=ppg.id,
            enable_encryption_at_host=extra.encryption_at_host,
            os_disk_size_gb=extra.os_disk_gib,
            gpu_profile=containerservice.GPUProfileArgs(driver=ax.gpu_driver),
            node_labels=dict(ax.gpu_labels),
            node_taints=["nvidia.com/gpu=true:NoSchedule"],
            scale_set_priority="Spot" if spot else "Regular",
            scale_set_eviction_policy="Delete" if spot else None,
            spot_max_price=extra.max_price if spot else None,
            tags=plan.tags,
            opts=_opts(self, custom_timeouts=pulumi.CustomTimeouts(create="60m", update="60m", delete="60m")),
        )

    def _operators(self, plan: ClusterPlan[AzurePlan], prov: k8s.Provider) -> list[pulumi.Resource]:
        """The Network Operator (+ NicClusterPolicy), the GPU Operator and the Lustre CSI driver (pinned charts)."""
        assert plan.kubernetes is not None  # noqa: S101
        ax = aks(plan.kubernetes)
        spot = plan.extra.priority == "Spot"
        out: list[pulumi.Resource] = []
        # The operators' pods need privileged access to the host (aks-rdma-infiniband "Network Operator").
        ns = {
            name: k8s.core.v1.Namespace(
                f"{plan.name}-{name}-ns",
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=name,
                    labels={**objects.labels(plan), "pod-security.kubernetes.io/enforce": "privileged"},
                ),
                opts=_opts(self, provider=prov),
            )
            for name in ("network-operator", "gpu-operator")
        }
        for name, h in ax.helm.items():
            release = k8s.helm.v3.Release(
                f"{plan.name}-{name}",
                name=name,
                chart=h.chart,
                version=h.version,
                repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=h.repo) if h.repo else None,
                namespace=h.namespace,
                values=helm_values(name, spot),
                timeout=900,
                opts=_opts(self, provider=prov, depends_on=[ns[name]] if name in ns else []),
            )
            out.append(release)
            if name == "network-operator":
                out.append(
                    k8s.apiextensions.CustomResource(
                        f"{plan.name}-nic-cluster-policy",
                        api_version=NIC_POLICY_API,
                        kind="NicClusterPolicy",
                        metadata={"name": "nic-cluster-policy", "labels": objects.labels(plan)},
                        spec=nic_cluster_policy(spot),
                        opts=_opts(self, provider=prov, depends_on=[release]),
                    )
                )
        return out


def build(plan: ClusterPlan[AzurePlan]) -> dict[str, Any]:
    """Create the AKS cluster's resources in the current Pulumi context; returns the stack outputs."""
    from provision.planning.outputs import static_outputs

    return {**static_outputs(plan), **AksCluster(plan).outputs}
