"""ACK for ``scheduler: kubernetes`` (Pulumi only; every decision is in ``plan.kubernetes``).

Resources (fixed count, whatever the node count): the VM path's network (VPC, vSwitch, security group, NAT
gateway + EIP + SNAT: :mod:`provision.clouds.alibaba.network`), the NAS file system with its access group,
rule and mount target (:mod:`provision.clouds.alibaba.storage`), ONE ACK managed cluster Pro in that vSwitch
and security group (Flannel, the CSI plugin; ACK's own NAT gateway off: the VPC has one), a system node pool
and ONE GPU node pool (with a LowLatency deployment set), the ``ack-erdma-controller`` add-on, then in the
cluster the shared training stack of :mod:`provision.clouds.k8s.objects` (Trainer, Kueue, queues, runtime,
the NAS static volume).

Argument rules: pulumi-alicloud 4.0.0 ``cs.ManagedKubernetes``, ``cs.NodePool`` and ``cs.KubernetesAddon``
docstrings; sources of each decision in :mod:`provision.clouds.alibaba.kubeplan`.
"""

from __future__ import annotations

import json
from typing import Any

import pulumi
from pulumi_alicloud import cs, ecs

from provision.clouds.alibaba.kubeplan import ack
from provision.clouds.alibaba.network import Network, build_network
from provision.clouds.alibaba.plan import AlibabaPlan
from provision.clouds.alibaba.storage import build_storage
from provision.clouds.k8s import objects
from provision.clouds.volumeref import volume_reference
from provision.planning.kubernetes import POOL_LABEL
from provision.planning.outputs import static_outputs
from provision.planning.plan import ClusterPlan

TYPE_TOKEN = "provision:alibaba:KubernetesCluster"
#: NAS CSI static volumes (ACK "Mount a statically provisioned NAS volume"): NFSv3 with these options.
NAS_MOUNT_OPTIONS = ("nolock,tcp,noresvport", "vers=3")


def kubeconfig(name: str, cluster_id: str, server: str, ca_data: str) -> str:
    """A kubeconfig whose user gets short-lived credentials from ack-ram-tool (RAM identity; nothing stored).

    ack-ram-tool ``credential-plugin get-credential`` is Alibaba's client-go exec plugin for ACK
    (AliyunContainerService/ack-ram-tool, "credential-plugin"): it asks the CS API for a temporary client
    certificate of the caller's RAM identity.
    """
    return objects.kubeconfig_text(
        name,
        server,
        [
            "      command: ack-ram-tool",
            "      args: [credential-plugin, get-credential, --cluster-id, " + cluster_id + ", --api-version, v1beta1]",
            "      installHint: 'install ack-ram-tool: github.com/AliyunContainerService/ack-ram-tool'",
        ],
        ca_data,
    )


class AckCluster(pulumi.ComponentResource):
    """One GPU cluster on ACK. Attributes: ``cluster``, ``gpu_pool``, ``outputs``."""

    def __init__(self, plan: ClusterPlan[AlibabaPlan], opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE_TOKEN, plan.name, None, opts)
        assert plan.kubernetes is not None  # noqa: S101
        kx = ack(plan.kubernetes)
        net = build_network(plan, self)
        # An attached volume (storage.shared.volume): no file system of the cluster's own, but a mount target of the
        # volume's NAS file system in the cluster's VPC, as the VM clusters get (clouds/alibaba/storage.py).
        storage = build_storage(plan, net, self, volume_reference(plan, self), lookup_role=False)
        # Pods (Flannel range, outside the VPC) reach other nodes' pods through the security group.
        ecs.SecurityGroupRule(
            f"{plan.name}-pods",
            security_group_id=net.security_group.id,
            type="ingress",
            ip_protocol="all",
            port_range="-1/-1",
            nic_type="intranet",
            policy="accept",
            priority=1,
            cidr_ip=kx.pod_cidr,
            description="pod traffic between nodes (ACK Flannel pod range)",
            opts=pulumi.ResourceOptions(parent=self),
        )
        assert plan.extra.key_pair_public_key is not None  # noqa: S101 - kubeplan.check requires an RSA/ECDSA key
        self.key = ecs.EcsKeyPair(
            f"{plan.name}-key",
            key_pair_name=f"{plan.name}-key",
            public_key=plan.extra.key_pair_public_key,
            resource_group_id=plan.extra.resource_group_id,
            tags=dict(plan.tags),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.cluster = self._cluster(plan, net)
        system = self._pool(plan, net, "system")
        self.gpu_pool = self._pool(plan, net, "gpu")
        plugins: list[pulumi.Resource] = []
        if kx.erdma_addon:
            plugins.append(
                cs.KubernetesAddon(
                    f"{plan.name}-{kx.erdma_addon}",
                    cluster_id=self.cluster.id,
                    name=kx.erdma_addon,
                    config=json.dumps(kx.erdma_config, sort_keys=True),
                    opts=pulumi.ResourceOptions(parent=self, depends_on=[self.gpu_pool]),
                )
            )
        cred = cs.get_cluster_credential_output(
            cluster_id=self.cluster.id, temporary_duration_minutes=15, opts=pulumi.InvokeOutputOptions(parent=self)
        )
        server = self.cluster.connections.apply(lambda c: (c[0].api_server_internet if c else None) or "")
        ca = cred.certificate_authorities.apply(lambda c: c[0].cluster_cert if c else "")
        config = pulumi.Output.all(self.cluster.id, server, ca).apply(lambda a: kubeconfig(plan.name, a[0], a[1], a[2]))
        prov = objects.provider(plan.name, config, self.cluster.id, self, [system, self.gpu_pool, *plugins])
        csi = None
        if storage.mount_target_domain is not None and plan.storage is not None:
            export = plan.extra.storage.export_path if plan.extra.storage is not None else "/"
            csi = storage.mount_target_domain.apply(
                lambda d: {
                    "driver": "nasplugin.csi.alibabacloud.com",
                    "volumeHandle": f"{plan.name}-shared",  # must equal the PV's name (NAS CSI static volumes)
                    "volumeAttributes": {"server": d, "path": export},
                }
            )
        stack = objects.build_training_stack(
            plan, prov, self, shared_csi=csi, shared_mount_options=list(NAS_MOUNT_OPTIONS), deps=plugins
        )
        self.outputs = {
            **static_outputs(plan),
            "hosts": [],
            "hostfile": "",
            "head_node": None,
            "ssh_config": "",
            "shared_fs": storage.shared_fs,
            "kubernetes": objects.kubernetes_outputs(plan, self.cluster.name, server, config),
            "node_pools": {"system": system.node_pool_name, "gpu": self.gpu_pool.node_pool_name},
            "fabric_manifest": {
                "image": kx.node_image,
                "driver": kx.gpu_labels.get("ack.aliyun.com/nvidia-driver-version", ""),
                **(
                    {"erdma": f"{kx.erdma_addon} {json.dumps(kx.erdma_config, sort_keys=True)}"}
                    if kx.erdma_addon
                    else {}
                ),
            },
        }
        self.register_outputs({"cluster": self.cluster.id, "runtime": stack.runtime.id if stack.runtime else None})

    def _cluster(self, plan: ClusterPlan[AlibabaPlan], net: Network) -> cs.ManagedKubernetes:
        assert plan.kubernetes is not None  # noqa: S101
        kx = ack(plan.kubernetes)
        return cs.ManagedKubernetes(
            f"{plan.name}-ack",
            name=plan.name,
            cluster_spec=kx.cluster_spec,
            version=kx.version,
            vswitch_ids=[net.vswitch.id],
            security_group_id=net.security_group.id,
            pod_cidr=kx.pod_cidr,
            service_cidr=kx.service_cidr,
            node_cidr_mask=kx.node_cidr_mask,
            # The VPC has provision's NAT gateway and SNAT entry (clouds/alibaba/network.py).
            new_nat_gateway=False,
            slb_internet_enabled=kx.public_endpoint,
            addons=[cs.ManagedKubernetesAddonArgs(name=a) for a in kx.cluster_addons],
            deletion_protection=False,
            resource_group_id=plan.extra.resource_group_id,
            tags=dict(plan.tags),
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=[net.snat],
                custom_timeouts=pulumi.CustomTimeouts(create="60m", delete="60m"),
            ),
        )

    def _pool(self, plan: ClusterPlan[AlibabaPlan], net: Network, role: str) -> cs.NodePool:
        assert plan.kubernetes is not None  # noqa: S101
        kx = ack(plan.kubernetes)
        gpu = role == "gpu"
        pool = plan.kubernetes.gpu_pool if gpu else plan.kubernetes.system_pool
        deployment_set = None
        if gpu and kx.deployment_set:
            deployment_set = ecs.EcsDeploymentSet(
                f"{plan.name}-gpu-ds",
                deployment_set_name=f"{plan.name}-gpu",
                strategy="LowLatency",
                description=f"provision cluster {plan.name}: the ACK GPU node pool",
                opts=pulumi.ResourceOptions(parent=self),
            )
        labels = dict(kx.gpu_labels) if gpu else {POOL_LABEL: "system"}
        return cs.NodePool(
            f"{plan.name}-{role}",
            cluster_id=self.cluster.id,
            node_pool_name=role,
            vswitch_ids=[net.vswitch.id],
            instance_types=[pool.instance_type],
            desired_size=str(pool.nodes),
            instance_charge_type="PostPaid",
            spot_strategy=kx.spot_strategy if gpu else "NoSpot",
            image_type=kx.image_type,
            system_disk_category="cloud_essd",
            system_disk_performance_level="PL1",
            system_disk_size=kx.system_disk_gib if gpu else 120,
            deployment_set_id=deployment_set.id if deployment_set is not None else None,
            labels=[cs.NodePoolLabelArgs(key=k, value=v) for k, v in labels.items()],
            taints=[cs.NodePoolTaintArgs(key="nvidia.com/gpu", value="present", effect="NoSchedule")] if gpu else None,
            key_name=self.key.key_pair_name,
            install_cloud_monitor=True,
            tags=dict(plan.tags),
            resource_group_id=plan.extra.resource_group_id,
            opts=pulumi.ResourceOptions(
                parent=self, custom_timeouts=pulumi.CustomTimeouts(create="60m", update="60m", delete="60m")
            ),
        )


def build(plan: ClusterPlan[AlibabaPlan]) -> dict[str, Any]:
    """Create the ACK cluster's resources in the current Pulumi context; returns the stack outputs."""
    return AckCluster(plan).outputs
