"""GKE for ``scheduler: kubernetes`` (Pulumi only; every decision is in ``plan.kubernetes``).

Resources (fixed count, whatever the node count): the VM path's networks (host VPC + one VPC per
GPU NIC, or the RoCE VPC), a node and a jobs service account, the shared filesystem, ONE regional
private GKE cluster (Dataplane V2 + multi-networking, Workload Identity, the Lustre/Filestore CSI
add-on, DNS endpoint), a system pool and ONE GPU pool (compact placement, the GPU VPCs as additional
node networks, reservation / spot / flex-start), with an expiry the Cloud Scheduler job that deletes the
cluster then (:mod:`provision.clouds.gcp.kubeexpiry`), then in the cluster: one ``GKENetworkParamSet`` +
``Network`` per GPU NIC, Google's NCCL plugin installer and NRI device injector DaemonSets, and the
shared training stack of :mod:`provision.clouds.k8s.objects`.

Argument rules: pulumi-gcp 10.2 ``container.Cluster`` / ``container.NodePool`` docstrings; Cluster
Toolkit ``modules/scheduler/gke-cluster`` (``remove_default_node_pool`` needs ``initial_node_count``;
multi-networking needs ``ADVANCED_DATAPATH``; ``network_policy`` must stay off with Dataplane V2).
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s
from pulumi_gcp import container, projects, serviceaccount

from provision.clouds.gcp import kubeexpiry
from provision.clouds.gcp.adapter import assert_labels
from provision.clouds.gcp.kubeplan import gke
from provision.clouds.gcp.network import Networks, build_networks
from provision.clouds.gcp.plan import Filestore, GcpPlan, GkePlan, NodeNetwork, PodNetwork
from provision.clouds.gcp.storage import build_storage
from provision.clouds.k8s import objects
from provision.planning.kubernetes import POOL_LABEL
from provision.planning.outputs import static_outputs
from provision.planning.plan import ClusterPlan

TYPE_TOKEN = "provision:gcp:KubernetesCluster"
#: Node roles: GKE's least-privilege node role plus image pulls ("Use least privilege IAM service
#: accounts" in the GKE hardening guide: roles/container.defaultNodeServiceAccount).
NODE_ROLES = ("roles/container.defaultNodeServiceAccount", "roles/artifactregistry.reader")
GPU_TAINT = container.NodePoolNodeConfigTaintArgs(key="nvidia.com/gpu", value="present", effect="NO_SCHEDULE")


def kubeconfig(name: str, dns_endpoint: str) -> str:
    """A kubeconfig for the cluster's DNS endpoint (a public CA; IAM-authorized through gcloud's plugin)."""
    return objects.kubeconfig_text(
        name,
        f"https://{dns_endpoint}",
        [
            "      command: gke-gcloud-auth-plugin",
            "      provideClusterInfo: true",
            "      installHint: 'gcloud components install gke-gcloud-auth-plugin'",
        ],
    )


class GkeCluster(pulumi.ComponentResource):
    """One GPU cluster on GKE. Attributes: ``cluster``, ``gpu_pool``, ``outputs``."""

    def __init__(self, plan: ClusterPlan[GcpPlan], opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE_TOKEN, plan.name, None, opts)
        assert plan.kubernetes is not None  # noqa: S101
        kp, extra = plan.kubernetes, gke(plan.kubernetes)
        child = pulumi.ResourceOptions(parent=self)
        project = plan.extra.project
        nets = build_networks(plan, self)
        self.nodes_sa = serviceaccount.Account(
            f"{plan.name}-nodes",
            account_id=plan.extra.service_account.account_id,
            display_name=f"provision {plan.name} GKE nodes",
            description="GKE node identity: logs, metrics, image pulls",
            project=project,
            opts=child,
        )
        for role in NODE_ROLES:
            projects.IAMMember(
                f"{plan.name}-nodes-{role.rsplit('.', 1)[-1].lower()}",
                project=nets.project,
                role=role,
                member=self.nodes_sa.member,
                opts=child,
            )
        shared = build_storage(plan, nets, self)
        self.cluster = self._cluster(plan, nets, child)
        system = self._system_pool(plan, child)
        self.gpu_pool = self._gpu_pool(plan, nets, child)
        if plan.expires_at is not None:
            kubeexpiry.build(plan, self.cluster, nets.project, self)
        dns = self.cluster.control_plane_endpoints_config.apply(
            lambda c: (c.dns_endpoint_config.endpoint if c and c.dns_endpoint_config else None) or ""
        )
        config = dns.apply(lambda d: kubeconfig(plan.name, d))
        prov = objects.provider(plan.name, config, self.cluster.id, self, [system, self.gpu_pool])
        ready = self._fabric(plan, nets, prov)
        jobs_sa = self._jobs_identity(plan, nets, child)
        stack = objects.build_training_stack(
            plan,
            prov,
            self,
            shared_csi=self._csi(plan, shared) if kp.job.shared_claim else None,
            service_account_annotations=jobs_sa.email.apply(lambda e: {"iam.gke.io/gcp-service-account": e}),
            deps=ready,
        )
        self.outputs = {
            **static_outputs(plan),
            "hosts": [],
            "hostfile": "",
            "head_node": None,
            "ssh_config": "",
            "shared_fs": shared.summary,
            "kubernetes": objects.kubernetes_outputs(plan, self.cluster.name, dns, config),
            "node_pools": {"system": system.name, "gpu": self.gpu_pool.name},
            "fabric_manifest": _fabric_manifest(plan.fabric, extra),
        }
        self.register_outputs({"cluster": self.cluster.id, "runtime": stack.runtime.id if stack.runtime else None})

    # ------------------------------------------------------------------ control plane and pools
    @staticmethod
    def _cluster(plan: ClusterPlan[GcpPlan], nets: Networks, opts: pulumi.ResourceOptions) -> container.Cluster:
        assert plan.kubernetes is not None and nets.host is not None and nets.host_subnet is not None  # noqa: S101
        kp, extra = plan.kubernetes, gke(plan.kubernetes)
        multi = bool(extra.networks or extra.node_only_networks)
        kind = extra.storage_kind
        cidrs = [
            container.ClusterMasterAuthorizedNetworksConfigCidrBlockArgs(cidr_block=c, display_name=f"allowed-{i}")
            for i, c in enumerate(kp.control_plane.authorized_networks)
        ]
        return container.Cluster(
            f"{plan.name}-gke",
            name=plan.name,
            location=plan.region,
            node_locations=_node_locations(extra),
            description=f"provision cluster {plan.name}",
            network=nets.host.self_link,
            subnetwork=nets.host_subnet.self_link,
            networking_mode="VPC_NATIVE",
            ip_allocation_policy=container.ClusterIpAllocationPolicyArgs(
                cluster_ipv4_cidr_block=extra.pods_cidr, services_ipv4_cidr_block=extra.services_cidr
            ),
            # Pools are separate resources; the default pool is removed right after creation.
            remove_default_node_pool=True,
            initial_node_count=1,
            deletion_protection=False,
            datapath_provider="ADVANCED_DATAPATH",
            enable_multi_networking=True if multi else None,
            private_cluster_config=container.ClusterPrivateClusterConfigArgs(enable_private_nodes=True),
            master_authorized_networks_config=container.ClusterMasterAuthorizedNetworksConfigArgs(
                cidr_blocks=cidrs, gcp_public_cidrs_access_enabled=False
            ),
            control_plane_endpoints_config=container.ClusterControlPlaneEndpointsConfigArgs(
                dns_endpoint_config=container.ClusterControlPlaneEndpointsConfigDnsEndpointConfigArgs(
                    allow_external_traffic=True
                )
            ),
            master_auth=container.ClusterMasterAuthArgs(
                client_certificate_config=container.ClusterMasterAuthClientCertificateConfigArgs(
                    issue_client_certificate=False
                )
            ),
            workload_identity_config=container.ClusterWorkloadIdentityConfigArgs(
                workload_pool=pulumi.Output.concat(nets.project, ".svc.id.goog")
            ),
            release_channel=container.ClusterReleaseChannelArgs(channel=extra.release_channel),
            enable_shielded_nodes=True,
            addons_config=container.ClusterAddonsConfigArgs(
                gce_persistent_disk_csi_driver_config=container.ClusterAddonsConfigGcePersistentDiskCsiDriverConfigArgs(
                    enabled=True
                ),
                gcp_filestore_csi_driver_config=container.ClusterAddonsConfigGcpFilestoreCsiDriverConfigArgs(
                    enabled=kind == "filestore"
                ),
                # Port 6988: the Lustre instance is created with gke_support_enabled, which serves on it.
                # From GKE 1.35.2-gke.1842000 the driver uses every NIC by default and needs all of them in one VPC
                # (Managed Lustre "Connect to an existing instance with the CSI driver"); GPU nodes with extra NICs
                # in their own VPCs (TCPX/TCPXO/RDMA) break that, so multi-NIC is off there (container v1
                # LustreCsiDriverConfig.disableMultiNic): Lustre goes over the primary NIC in the host VPC.
                lustre_csi_driver_config=container.ClusterAddonsConfigLustreCsiDriverConfigArgs(
                    enabled=True,
                    enable_legacy_lustre_port=True,
                    disable_multi_nic=True if extra.networks or extra.node_only_networks else None,
                )
                if kind == "managed-lustre"
                else None,
            ),
            resource_labels=dict(plan.tags),
            project=plan.extra.project,
            opts=pulumi.ResourceOptions.merge(
                opts, pulumi.ResourceOptions(custom_timeouts=pulumi.CustomTimeouts(create="45m", delete="45m"))
            ),
        )

    def _node_config(self, plan: ClusterPlan[GcpPlan], **kw: Any) -> container.NodePoolNodeConfigArgs:
        """Every pool's node config (the lifetime is the expiry job's: :mod:`provision.clouds.gcp.kubeexpiry`)."""
        assert plan.kubernetes is not None  # noqa: S101
        return container.NodePoolNodeConfigArgs(
            image_type="COS_CONTAINERD",
            service_account=self.nodes_sa.email,
            oauth_scopes=list(gke(plan.kubernetes).scopes),
            workload_metadata_config=container.NodePoolNodeConfigWorkloadMetadataConfigArgs(mode="GKE_METADATA"),
            shielded_instance_config=container.NodePoolNodeConfigShieldedInstanceConfigArgs(
                enable_secure_boot=True, enable_integrity_monitoring=True
            ),
            gvnic=container.NodePoolNodeConfigGvnicArgs(enabled=True),
            metadata={"disable-legacy-endpoints": "true"},
            resource_labels=dict(plan.tags),
            **kw,
        )

    def _system_pool(self, plan: ClusterPlan[GcpPlan], opts: pulumi.ResourceOptions) -> container.NodePool:
        assert plan.kubernetes is not None  # noqa: S101
        pool = plan.kubernetes.system_pool
        return container.NodePool(
            f"{plan.name}-system",
            name="system",
            cluster=self.cluster.id,
            location=plan.region,
            node_locations=_node_locations(gke(plan.kubernetes)),
            node_count=pool.nodes,
            management=container.NodePoolManagementArgs(auto_repair=True, auto_upgrade=True),
            node_config=self._node_config(
                plan,
                machine_type=pool.instance_type,
                disk_type="pd-balanced",
                disk_size_gb=100,
                labels={POOL_LABEL: "system"},
            ),
            network_config=container.NodePoolNetworkConfigArgs(enable_private_nodes=True),
            project=plan.extra.project,
            opts=opts,
        )

    def _gpu_pool(self, plan: ClusterPlan[GcpPlan], nets: Networks, opts: pulumi.ResourceOptions) -> container.NodePool:
        assert plan.kubernetes is not None  # noqa: S101
        kp, extra = plan.kubernetes, gke(plan.kubernetes)
        pool = kp.gpu_pool
        flex = extra.flex_start
        nodes_networks: list[NodeNetwork | PodNetwork] = [*extra.node_only_networks, *extra.networks]
        additional = [
            container.NodePoolNetworkConfigAdditionalNodeNetworkConfigArgs(
                network=nets.vpcs[n.vpc].name, subnetwork=nets.subnets[n.subnet].name
            )
            for n in nodes_networks
        ]
        if extra.reservation:
            affinity = container.NodePoolNodeConfigReservationAffinityArgs(
                consume_reservation_type="SPECIFIC_RESERVATION",
                key="compute.googleapis.com/reservation-name",
                values=[extra.reservation],
            )
        else:
            # Flex-start takes no reservation (Cluster Toolkit gke-node-pool precondition); others take none
            # either, so a stray reservation in the project is never used up.
            affinity = container.NodePoolNodeConfigReservationAffinityArgs(consume_reservation_type="NO_RESERVATION")
        # Flex-start nodes end after their run duration (GKE does not re-create them); a standard pool would
        # re-create them, so its lifetime is the expiry job's cluster deletion (kubeexpiry).
        run = extra.max_run_duration_s
        node_config = self._node_config(
            plan,
            machine_type=pool.instance_type,
            disk_type=extra.boot_disk_type,
            disk_size_gb=plan.extra.boot_disk.size_gib,
            guest_accelerators=[
                container.NodePoolNodeConfigGuestAcceleratorArgs(
                    type=extra.accelerator,
                    count=pool.gpus_per_node,
                    gpu_driver_installation_config=container.NodePoolNodeConfigGuestAcceleratorGpuDriverInstallationConfigArgs(
                        gpu_driver_version="LATEST"
                    ),
                )
            ],
            ephemeral_storage_local_ssd_config=container.NodePoolNodeConfigEphemeralStorageLocalSsdConfigArgs(
                local_ssd_count=extra.local_ssd_count
            )
            if extra.local_ssd_count
            else None,
            labels={POOL_LABEL: "gpu"},
            taints=[GPU_TAINT],
            reservation_affinity=affinity,
            spot=True if extra.spot else None,
            flex_start=True if flex else None,
            max_run_duration=f"{run}s" if run else None,
        )
        return container.NodePool(
            f"{plan.name}-gpu",
            name="gpu",
            cluster=self.cluster.id,
            location=plan.region,
            node_locations=_node_locations(extra),
            node_count=None if flex else pool.nodes,
            autoscaling=container.NodePoolAutoscalingArgs(
                total_min_node_count=0, total_max_node_count=pool.max_nodes, location_policy="ANY"
            )
            if flex
            else None,
            placement_policy=container.NodePoolPlacementPolicyArgs(type="COMPACT") if extra.compact else None,
            queued_provisioning=container.NodePoolQueuedProvisioningArgs(enabled=True)
            if extra.queued_provisioning
            else None,
            management=container.NodePoolManagementArgs(auto_repair=not flex, auto_upgrade=True),
            # GPU nodes are never surged (no spare capacity); one at a time during upgrades.
            upgrade_settings=container.NodePoolUpgradeSettingsArgs(strategy="SURGE", max_surge=0, max_unavailable=1),
            node_config=node_config,
            network_config=container.NodePoolNetworkConfigArgs(
                enable_private_nodes=True, additional_node_network_configs=additional or None
            ),
            project=plan.extra.project,
            opts=pulumi.ResourceOptions.merge(
                opts, pulumi.ResourceOptions(custom_timeouts=pulumi.CustomTimeouts(create="60m", update="60m"))
            ),
        )

    # ------------------------------------------------------------------ in-cluster fabric and identity
    def _fabric(self, plan: ClusterPlan[GcpPlan], nets: Networks, prov: k8s.Provider) -> list[pulumi.Resource]:
        """Network objects per GPU NIC and the fabric DaemonSets; returns what jobs must wait for."""
        from provision.clouds.gcp import kubefabric

        return kubefabric.build(plan, nets, prov, self)

    def _jobs_identity(self, plan: ClusterPlan[GcpPlan], nets: Networks, opts: pulumi.ResourceOptions) -> Any:
        """A GCP service account the jobs' Kubernetes service account acts as (Workload Identity)."""
        assert plan.kubernetes is not None  # noqa: S101
        job = plan.kubernetes.job
        sa = serviceaccount.Account(
            f"{plan.name}-jobs",
            account_id=f"{plan.name[:24].rstrip('-')}-jobs",
            display_name=f"provision {plan.name} training jobs",
            description="Identity of the training jobs (Workload Identity); grant it what jobs read and write",
            project=plan.extra.project,
            opts=opts,
        )
        serviceaccount.IAMMember(
            f"{plan.name}-jobs-wi",
            service_account_id=sa.name,
            role="roles/iam.workloadIdentityUser",
            member=pulumi.Output.concat(
                "serviceAccount:", nets.project, f".svc.id.goog[{job.namespace}/{job.service_account}]"
            ),
            opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[self.cluster])),
        )
        return sa

    @staticmethod
    def _csi(plan: ClusterPlan[GcpPlan], shared: Any) -> Any:
        """The PersistentVolume ``csi`` block for the shared filesystem (GKE CSI driver references)."""
        assert plan.kubernetes is not None  # noqa: S101
        fs = shared.resources[-1]
        if gke(plan.kubernetes).storage_kind == "managed-lustre":
            # Lustre CSI static volumes: volumeHandle PROJECT/LOCATION/INSTANCE, the MGS IP and the fsname
            # (Managed Lustre "Lustre CSI driver reference", PersistentVolume).
            return pulumi.Output.all(fs.name, fs.mount_point).apply(
                lambda a: {
                    "driver": "lustre.csi.storage.gke.io",
                    "volumeHandle": "/".join(a[0].split("/")[1::2]),
                    "volumeAttributes": {"ip": a[1].split("@", 1)[0], "filesystem": a[1].rsplit("/", 1)[-1]},
                }
            )
        # Filestore static volumes: modeInstance/LOCATION/INSTANCE/SHARE with the IP and share name
        # (GKE "Access pre-existing Filestore instances with the Filestore CSI driver").
        assert isinstance(plan.extra.storage, Filestore)  # noqa: S101 - the other kinds returned above
        share = plan.extra.storage.share
        return pulumi.Output.all(fs.location, fs.name, fs.networks).apply(
            lambda a: {
                "driver": "filestore.csi.storage.gke.io",
                "volumeHandle": f"modeInstance/{a[0]}/{a[1]}/{share}",
                "volumeAttributes": {"ip": (a[2][0].ip_addresses or [""])[0], "volume": share},
            }
        )


def _node_locations(extra: GkePlan) -> list[str] | None:
    """The pools' one zone (the VM layout's); ``None`` only when the catalog knows no zone for the type."""
    return [extra.zone] if extra.zone is not None else None


def _fabric_manifest(fabric: str, extra: GkePlan) -> dict[str, str]:
    """Pinned versions of what the GPU nodes run: GKE's node image and driver, Google's fabric images."""
    images = extra.images
    out = {
        "image": "COS_CONTAINERD (GKE node image of the release channel)",
        "driver": "GKE LATEST",
        "accelerator": extra.accelerator or "",
    }
    for part in ("installer", "rxdm"):
        if f"{fabric}-{part}" in images:
            out[f"nccl_{part}" if part == "installer" else "rxdm"] = images[f"{fabric}-{part}"]
    if fabric in ("tcpx", "tcpxo"):
        out["device_injector"] = images["device-injector"]
    return out


def build(plan: ClusterPlan[GcpPlan]) -> dict[str, Any]:
    """Create the GKE cluster's resources; returns the stack outputs.

    Raises:
        SpecError: the plan's labels break GCP's rules (before any resource exists).
    """
    assert_labels(plan.tags)
    return GkeCluster(plan).outputs
