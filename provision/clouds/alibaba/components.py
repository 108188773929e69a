"""The Alibaba cluster as a Pulumi component (Pulumi only: every decision is in ``plan.extra``).

Allocation: one ``ecs.Instance`` per node (see :mod:`provision.clouds.alibaba.adapter` for why launch
templates, instance sets, auto-provisioning groups and ESS cannot carry eRDMA + low-latency placement +
auto release in pulumi-alicloud 4.0). The secondary ERI is created inline with the instance, so the
resource count is one per node, plus one ``ecs.EcsDeploymentSet`` per 20 nodes and a fixed set of
network, key-pair and storage resources.
"""

from __future__ import annotations

from typing import Any

import pulumi
from pulumi_alicloud import ecs

from provision.clouds.alibaba.adapter import image_lookup
from provision.clouds.alibaba.datalink import build_oss_link, link_output
from provision.clouds.alibaba.network import Network, build_network
from provision.clouds.alibaba.plan import AlibabaPlan, auto_release_time
from provision.clouds.alibaba.storage import Storage, build_storage
from provision.clouds.alibaba.userdata import user_data
from provision.clouds.outputs import stack_outputs
from provision.clouds.volumeref import volume_reference
from provision.planning.plan import ClusterPlan

TYPE_TOKEN = "provision:alibaba:Cluster"


class AlibabaCluster(pulumi.ComponentResource):
    """VPC + NAT egress, security group, key pair, deployment sets, nodes and the shared filesystem (with the nodes'
    RAM role for the boot-time domain lookup: :mod:`provision.clouds.alibaba.storage`; the nodes do not wait for the
    file system).

    Attributes:
        ips: private IPs of the nodes by rank (``Output[list[str]]``).
        head_public_ip: node 0's EIP when ``access.public_head_node``, else ``None``.
        shared_fs: the ``shared_fs`` output (``Output[dict]``) or ``None``.
        image_id: the image the nodes boot (``Output[str]``): the pinned id, or the one-time lookup result.
        node_ids: the ECS instance ids of the nodes by rank (``Output[list[str]]``): the outputs' ``access.node_ids``,
            which :func:`provision.ops.hostkeys.read_from_cloud` reads the nodes' host keys by
            (``GetInstanceConsoleOutput``, :mod:`provision.clouds.alibaba.hostkeys`).
    """

    def __init__(self, plan: ClusterPlan[AlibabaPlan], opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE_TOKEN, plan.name, None, opts)
        extra, name, tags = plan.extra, plan.name, dict(plan.tags)
        child = pulumi.ResourceOptions(parent=self)
        net = build_network(plan, self)
        # An attached volume: its file system lives in its own stack; the cluster makes its own way in to it.
        storage = build_storage(plan, net, self, volume_reference(plan, self))
        self.data_flow = build_oss_link(plan, storage.fs, self)
        self.shared_fs = storage.shared_fs

        # ECS key pairs take RSA/ECDSA keys only; without one the nodes get none (login via the user data).
        key = None
        if extra.key_pair_public_key:
            key = ecs.EcsKeyPair(
                f"{name}-key",
                key_pair_name=f"{name}-key",
                public_key=extra.key_pair_public_key,
                resource_group_id=extra.resource_group_id,
                tags=tags,
                opts=child,
            )
        self.image_id = self._image(plan)
        sets = [
            ecs.EcsDeploymentSet(
                f"{name}-ds-{i}",
                deployment_set_name=f"{name}-ds-{i}",
                strategy="LowLatency",
                description=f"provision cluster {name}: nodes of placement group {i}",
                opts=child,
            )
            for i in range(len(extra.placement_groups))
        ]
        group_of = [i for i, size in enumerate(extra.placement_groups) for _ in range(size)]
        # The same user data with or without the file system: the nodes look it up at boot (storage.py), so they
        # never wait for it in the graph.
        data = user_data(plan)
        nodes = [
            self._node(plan, rank, net, key, data, sets[group_of[rank]] if sets else None, storage)
            for rank in range(plan.nodes)
        ]
        self.ips = pulumi.Output.all(*[n.private_ip for n in nodes]).apply(list)
        self.node_ids = pulumi.Output.all(*[n.id for n in nodes]).apply(list)
        self.head_public_ip: Any = None
        if extra.public_head:
            eip = ecs.EipAddress(
                f"{name}-head-eip",
                address_name=f"{name}-head",
                bandwidth=str(extra.head_eip_bandwidth_mbps),
                internet_charge_type="PayByTraffic",
                payment_type="PayAsYouGo",
                isp="BGP",
                description=f"provision cluster {name}: SSH to node 0 (access.public_head_node)",
                resource_group_id=extra.resource_group_id,
                tags=tags,
                opts=child,
            )
            ecs.EipAssociation(f"{name}-head-eip-assoc", allocation_id=eip.id, instance_id=nodes[0].id, opts=child)
            self.head_public_ip = eip.ip_address
        self.slurm: dict[str, Any] | None = None
        if extra.slurm is not None:  # scheduler: slurm
            from provision.clouds.alibaba.slurm import build_controller

            self.slurm = build_controller(
                plan,
                vswitch_id=net.vswitch.id,
                security_group_id=net.security_group.id,
                key_name=key.key_pair_name if key is not None else None,
                node_ips=self.ips,
                parent=self,
                depends_on=[net.snat],  # egress before its bootstrap installs Slurm
            )
        self.register_outputs({"ips": self.ips, "image_id": self.image_id})

    def _image(self, plan: ClusterPlan[AlibabaPlan]) -> Any:
        regex = image_lookup(plan)
        if regex is None:
            return plan.image.ref
        found = ecs.get_images_output(
            name_regex=regex,
            owners="system",
            most_recent=True,
            instance_type=plan.instance_type,
            opts=pulumi.InvokeOutputOptions(parent=self),
        )
        return found.images.apply(lambda images: images[0].id)

    def _node(
        self,
        plan: ClusterPlan[AlibabaPlan],
        rank: int,
        net: Network,
        key: ecs.EcsKeyPair | None,
        data: Any,
        deployment_set: ecs.EcsDeploymentSet | None,
        storage: Storage,
    ) -> ecs.Instance:
        extra, name, tags = plan.extra, plan.name, dict(plan.tags)
        cards = extra.eri_cards
        secondary = None
        if len(cards) > 1:
            secondary = ecs.InstanceNetworkInterfacesArgs(
                network_interface_traffic_mode="HighPerformance",
                network_card_index=cards[1],
                vswitch_id=net.vswitch.id,
                security_group_ids=[net.security_group.id],
            )
        disks = None
        if extra.data_disk_gib:
            disks = [
                ecs.InstanceDataDiskArgs(
                    size=extra.data_disk_gib,
                    category="cloud_essd",
                    performance_level="PL1",
                    encrypted=True,
                    kms_key_id=extra.kms_key_id,
                    delete_with_instance=True,
                    name=f"{name}-{rank}-data",
                )
            ]
        prepaid = extra.charge_type == "PrePaid"
        return ecs.Instance(
            f"{name}-node-{rank}",
            instance_name=f"{name}-{rank}",
            host_name=f"{name}-{rank}",
            instance_type=plan.instance_type,
            image_id=self.image_id,
            vswitch_id=net.vswitch.id,
            security_groups=[net.security_group.id],
            key_name=key.key_pair_name if key is not None else None,
            internet_max_bandwidth_out=0,
            instance_charge_type=extra.charge_type,
            period=extra.period_months if prepaid else None,
            period_unit="Month" if prepaid else None,
            renewal_status="Normal" if prepaid else None,
            # alicloud_instance refuses to delete a PrePaid instance unless force_delete converts it to PostPaid
            # first (provider resourceAliCloudInstanceDelete): without it `down` fails on subscription nodes.
            force_delete=True if prepaid else None,
            auto_release_time=auto_release_time(plan),
            spot_strategy=extra.spot_strategy,
            spot_price_limit=extra.spot_price_limit,
            spot_interruption_behavior="Terminate" if extra.spot_strategy != "NoSpot" else None,
            private_pool_options_match_criteria="Target" if extra.private_pool_id else None,
            private_pool_options_id=extra.private_pool_id,
            deployment_set_id=deployment_set.id if deployment_set is not None else None,
            network_interface_traffic_mode="HighPerformance" if cards else None,
            network_card_index=cards[0] if cards else None,
            network_interfaces=secondary,
            enable_jumbo_frame=True if extra.jumbo_frames else None,
            # Metadata only in security-hardened mode (tokens), like IMDSv2 on AWS (ecs.Instance http_tokens;
            # ECS "Instance metadata": X-aliyun-ecs-metadata-token, cloud-init >= 23.2.2 in the image); the node
            # scripts fetch a token first.
            http_tokens="required" if extra.metadata_tokens else None,
            system_disk_category="cloud_essd",
            system_disk_performance_level="PL1",
            system_disk_size=extra.system_disk_gib,
            system_disk_encrypted=True,
            system_disk_kms_key_id=extra.kms_key_id,
            data_disks=disks,
            user_data=data,
            # The lookup role, attached at launch so its credentials are in the metadata from the first boot.
            # pulumi-alicloud 4.0 marks role_name deprecated in favour of ecs.RamRoleAttachment (provider 1.275.0),
            # which attaches after the instance is running: one more resource per node and a race with the boot.
            role_name=storage.role_name,
            resource_group_id=extra.resource_group_id,
            description=f"provision cluster {name}: rank {rank}",
            tags={**tags, "provision-rank": str(rank)},
            volume_tags=tags,
            opts=pulumi.ResourceOptions(
                parent=self,
                # The provider waits 10 minutes for Running by default (resource_alicloud_instance.go); a
                # bare-metal GPU node can take longer to boot, as AWS nodes here get 30 minutes.
                custom_timeouts=pulumi.CustomTimeouts(create="30m", delete="30m"),
                # Egress (the SNAT entry) must work before the bootstrap downloads drivers, and the lookup role
                # must hold its policy before the node's fs-domain step asks NAS (RAM only: never the file system).
                depends_on=[net.snat, *storage.ready],
                # A one-time image lookup must not replace every node when a newer image ships.
                ignore_changes=["image_id"] if image_lookup(plan) else None,
            ),
        )


def build(plan: ClusterPlan[AlibabaPlan]) -> dict[str, Any]:
    """Create the cluster component and return the stack outputs (plus ``image_pin``)."""
    cluster = AlibabaCluster(plan)
    outputs = stack_outputs(plan, cluster.ips, cluster.head_public_ip, cluster.shared_fs, node_ids=cluster.node_ids)
    outputs["image_pin"] = cluster.image_id
    if cluster.data_flow is not None:
        outputs["object_store"] = link_output(plan, cluster.data_flow)
    if cluster.slurm is not None:
        outputs["slurm"] = cluster.slurm
    return outputs
