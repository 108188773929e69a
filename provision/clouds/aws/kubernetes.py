"""EKS for ``scheduler: kubernetes`` (Pulumi only; every decision is in the plan).

Resources (fixed count, whatever the node count): the VM path's VPC (private node subnet, NAT,
S3 endpoint) plus a small control-plane subnet in a second Availability Zone, the EFA and FSx
security groups, the cluster placement group, FSx for Lustre, the cluster and node roles, ONE EKS
cluster (API authentication, private + allow-listed public endpoint, standard support), the managed
add-ons, a system node group and ONE GPU managed node group from a launch template carrying the VM
path's full EFA layout in the placement group (ON_DEMAND / SPOT / CAPACITY_BLOCK / ODCR), a scheduled
scale-to-zero at expiry, the NVIDIA and EFA device plugins (Helm), Pod Identity for the jobs, and the
shared training stack of :mod:`provision.clouds.k8s.objects` with FSx as a static volume. With an attached
volume (``storage.shared.volume``) no FSx is created: the VPC is peered with the volume's
(:mod:`provision.clouds.aws.volumelink`) and the static volume is the volume's FSx.
"""

from __future__ import annotations

import base64
import json
from typing import TYPE_CHECKING, Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from provision.clouds.aws import network, nodes, storage, volumelink
from provision.clouds.aws.kubeplan import EKS_UNSUPPORTED_ZONE_IDS, eks, pick_control_plane_zone
from provision.clouds.aws.network import Network, SecurityGroups, tags
from provision.clouds.aws.userdata import FSX_EFA_CLIENT_URL, fsx_efa
from provision.clouds.k8s import objects
from provision.clouds.volumeref import attached_summary, volume_reference
from provision.planning.outputs import shared_fs_summary, static_outputs

if TYPE_CHECKING:
    from provision.clouds.aws.plan import AwsPlan
    from provision.planning.plan import ClusterPlan

TYPE_TOKEN = "provision:aws:KubernetesCluster"
#: Managed policies of the node role (EKS user guide "Amazon EKS node IAM role"), plus SSM for access.
NODE_POLICIES = (
    "AmazonEKSWorkerNodePolicy",
    "AmazonEC2ContainerRegistryReadOnly",
    "AmazonEKS_CNI_Policy",
    "AmazonSSMManagedInstanceCore",
)
#: Add-ons that must run before nodes join (pod networking, Pod Identity); the rest need nodes.
BEFORE_NODES = ("vpc-cni", "kube-proxy", "eks-pod-identity-agent")


def _opts(parent: pulumi.Resource, **kw: Any) -> pulumi.ResourceOptions:
    return pulumi.ResourceOptions(parent=parent, **kw)


def _role(
    plan: ClusterPlan[AwsPlan], key: str, service: str, policies: tuple[str, ...], parent: pulumi.Resource
) -> Any:
    partition = plan.extra.partition
    actions = ["sts:AssumeRole", "sts:TagSession"] if service == "pods.eks.amazonaws.com" else ["sts:AssumeRole"]
    assume = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"Service": service}, "Action": actions}],
    }
    role = aws.iam.Role(
        f"{plan.name}-{key}",
        assume_role_policy=json.dumps(assume, sort_keys=True),
        description=f"provision {plan.name}: {key}",
        permissions_boundary=plan.extra.instance.permissions_boundary_arn,
        tags=tags(plan, key),
        opts=_opts(parent),
    )
    attached = [
        aws.iam.RolePolicyAttachment(
            f"{plan.name}-{key}-{p.lower().replace('_', '-')}",
            role=role.name,
            policy_arn=f"arn:{partition}:iam::aws:policy/{p}",
            opts=_opts(parent),
        )
        for p in policies
    ]
    return role, attached


def kubeconfig(name: str, region: str, endpoint: str, ca_data: str) -> str:
    """A kubeconfig that authenticates through ``aws eks get-token`` (no credential is stored)."""
    return objects.kubeconfig_text(
        name,
        endpoint,
        ["      command: aws", f"      args: [eks, get-token, --cluster-name, {name}, --region, {region}]"],
        ca_data=ca_data,
    )


class EksCluster(pulumi.ComponentResource):
    """One GPU cluster on EKS. Attributes: ``cluster``, ``gpu_group``, ``outputs``."""

    def __init__(self, plan: ClusterPlan[AwsPlan], opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE_TOKEN, plan.name, None, opts)
        assert plan.kubernetes is not None  # noqa: S101
        kx = eks(plan.kubernetes)
        net = network.build_network(plan, self)
        cp_subnet = self._control_plane_subnet(plan, net)
        pg = nodes.placement_group(plan, self)
        sgs = network.build_security_groups(plan, net, self, placement=pg)
        # An attached volume (storage.shared.volume): its FSx lives in its own stack; the cluster's VPC is peered with
        # the volume's and the Lustre ports opened both ways, as the VM clusters do (clouds/aws/volumelink.py).
        volume = volume_reference(plan, self)
        fs = storage.build_fsx(plan, net, sgs, self) if volume is None else None
        reach = volumelink.build_volume_access(plan, net, sgs, volume, self) if volume is not None else []
        cluster_role, cluster_attached = _role(plan, "eks", "eks.amazonaws.com", ("AmazonEKSClusterPolicy",), self)
        node_role, node_attached = _role(plan, "eks-node", "ec2.amazonaws.com", NODE_POLICIES, self)
        self.cluster = aws.eks.Cluster(
            f"{plan.name}-eks",
            name=plan.name,
            role_arn=cluster_role.arn,
            version=kx.version,
            vpc_config=aws.eks.ClusterVpcConfigArgs(
                subnet_ids=[net.subnet_id, cp_subnet.id],
                endpoint_private_access=True,
                endpoint_public_access=bool(kx.public_access_cidrs),
                public_access_cidrs=list(kx.public_access_cidrs) or None,
            ),
            # API access entries only; whoever runs `pulumi up` becomes cluster admin (and nobody else).
            access_config=aws.eks.ClusterAccessConfigArgs(
                authentication_mode="API", bootstrap_cluster_creator_admin_permissions=True
            ),
            # The add-ons are managed explicitly below (versions visible in the plan, no self-managed copies).
            bootstrap_self_managed_addons=False,
            upgrade_policy=aws.eks.ClusterUpgradePolicyArgs(support_type="STANDARD"),
            enabled_cluster_log_types=["api", "audit", "authenticator"],
            tags=tags(plan, "eks"),
            opts=_opts(self, depends_on=cluster_attached, custom_timeouts=pulumi.CustomTimeouts(create="30m")),
        )
        early = [self._addon(plan, a) for a in kx.managed_addons if a in BEFORE_NODES]
        system = aws.eks.NodeGroup(
            f"{plan.name}-system",
            cluster_name=self.cluster.name,
            node_group_name="system",
            node_role_arn=node_role.arn,
            subnet_ids=[net.subnet_id],
            scaling_config=self._scaling(plan.kubernetes.system_pool.nodes),
            ami_type=kx.system_ami_type,
            instance_types=[plan.kubernetes.system_pool.instance_type],
            capacity_type="ON_DEMAND",
            labels={"provision-pool": "system"},
            tags=tags(plan, "system"),
            opts=_opts(self, depends_on=[*node_attached, *early]),
        )
        lt = self._launch_template(plan, sgs, pg)
        self.gpu_group = self._gpu_group(plan, net, node_role, lt, [*node_attached, *early, *reach])
        late = [self._addon(plan, a, [system]) for a in kx.managed_addons if a not in BEFORE_NODES]
        if kx.lifetime_schedule and plan.expires_at is not None:
            # Every node group stops at the expiry (the system nodes bill too); PRV-TTL-001 checks the pairing.
            self._expiry_schedule(plan, self.gpu_group, "gpu", f"{plan.name}-expiry")
            self._expiry_schedule(plan, system, "system", f"{plan.name}-system-expiry")
        config = pulumi.Output.all(self.cluster.endpoint, self.cluster.certificate_authority).apply(
            lambda a: kubeconfig(plan.name, plan.region, a[0], a[1]["data"])
        )
        prov = objects.provider(plan.name, config, self.cluster.arn, self, [system, self.gpu_group, *late])
        plugins = self._device_plugins(plan, prov)
        jobs_role = self._jobs_identity(plan, early)
        shared = None
        csi = None
        if fs is not None:
            shared = pulumi.Output.all(fs.dns_name, fs.mount_name).apply(
                lambda a: shared_fs_summary(plan, f"{a[0]}@tcp:/{a[1]}", "lustre", "relatime,flock")
            )
            # FSx CSI static provisioning: volumeHandle = file system id, dnsname + mountname attributes
            # (kubernetes-sigs/aws-fsx-csi-driver examples/kubernetes/static_provisioning).
            csi = pulumi.Output.all(fs.id, fs.dns_name, fs.mount_name).apply(
                lambda a: {
                    "driver": "fsx.csi.aws.com",
                    "volumeHandle": a[0],
                    "volumeAttributes": {"dnsname": a[1], "mountname": a[2]},
                }
            )
        elif volume is not None:
            shared = volume.mount_source.apply(
                lambda s: attached_summary(shared_fs_summary(plan, s, "lustre", "relatime,flock"), volume.name)
            )
            # The same static volume on the volume's FSx: its id, and the DNS name and mount name of its mount
            # source (<dns>@tcp:/<mount name>, clouds/volumeref.py).
            csi = pulumi.Output.all(volume.filesystem_id, volume.mount_source).apply(
                lambda a: {
                    "driver": "fsx.csi.aws.com",
                    "volumeHandle": a[0],
                    "volumeAttributes": dict(zip(("dnsname", "mountname"), a[1].split("@tcp:/", 1), strict=True)),
                }
            )
        objects.build_training_stack(plan, prov, self, shared_csi=csi, deps=plugins)
        self.outputs = {
            **static_outputs(plan),
            "hosts": [],
            "hostfile": "",
            "head_node": None,
            "ssh_config": "",
            "shared_fs": shared,
            "kubernetes": {
                **objects.kubernetes_outputs(plan, self.cluster.name, self.cluster.endpoint, config),
                "jobs_role_arn": jobs_role.arn,
            },
            "node_groups": {"system": system.node_group_name, "gpu": self.gpu_group.node_group_name},
            "fabric_manifest": {
                "image": f"EKS optimized {kx.gpu_ami_type} (release of the node group's Kubernetes version)",
                **{name: f"{h.chart} {h.version}" for name, h in kx.helm.items()},
            },
        }
        self.register_outputs({"cluster": self.cluster.arn})

    # ------------------------------------------------------------------ network and nodes
    def _control_plane_subnet(self, plan: ClusterPlan[AwsPlan], net: Network) -> aws.ec2.Subnet:
        """The second-AZ subnet EKS requires for its control-plane interfaces (no nodes run in it).

        Placed by zone ID: the account's zones (DescribeAvailabilityZones, default zones only) without the IDs
        EKS refuses (:data:`~provision.clouds.aws.kubeplan.EKS_UNSUPPORTED_ZONE_IDS`), the plan's zone kept
        when its ID is allowed in this account."""
        assert plan.kubernetes is not None  # noqa: S101
        kx = eks(plan.kubernetes)
        node_zone = plan.zone or f"{plan.region}a"
        zones = aws.get_availability_zones_output(
            state="available",
            exclude_zone_ids=list(EKS_UNSUPPORTED_ZONE_IDS),
            filters=[{"name": "opt-in-status", "values": ["opt-in-not-required"]}],
            opts=pulumi.InvokeOutputOptions(parent=self),
        )
        zone_id = zones.apply(
            lambda z: pick_control_plane_zone(list(z.names), list(z.zone_ids), node_zone, kx.control_plane_zone)
        )
        subnet = aws.ec2.Subnet(
            f"{plan.name}-control-plane",
            vpc_id=net.vpc_id,
            cidr_block=kx.control_plane_cidr,
            availability_zone_id=zone_id,
            map_public_ip_on_launch=False,
            tags=tags(plan, "control-plane"),
            opts=_opts(self),
        )
        if net.private_route_table_id is not None:
            aws.ec2.RouteTableAssociation(
                f"{plan.name}-control-plane-rta",
                subnet_id=subnet.id,
                route_table_id=net.private_route_table_id,
                opts=_opts(self),
            )
        return subnet

    @staticmethod
    def _scaling(count: int) -> aws.eks.NodeGroupScalingConfigArgs:
        return aws.eks.NodeGroupScalingConfigArgs(desired_size=count, min_size=count, max_size=count)

    def _launch_template(
        self, plan: ClusterPlan[AwsPlan], sgs: SecurityGroups, pg: aws.ec2.PlacementGroup | None
    ) -> aws.ec2.LaunchTemplate:
        """The GPU nodes' launch template: the VM path's EFA layout, without what EKS forbids in it."""
        assert plan.kubernetes is not None  # noqa: S101
        kx, inst, market = eks(plan.kubernetes), plan.extra.instance, plan.extra.market
        groups = [sgs.cluster.id, self.cluster.vpc_config.cluster_security_group_id]
        nics = nodes.efa_interfaces(plan, groups)
        pg_name = pg.name if pg is not None else plan.extra.placement_group.name
        reservation = None
        if market.reservation_id:
            reservation = aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs(
                capacity_reservation_target=aws.ec2.LaunchTemplateCapacityReservationSpecificationCapacityReservationTargetArgs(
                    capacity_reservation_id=market.reservation_id
                )
            )
        return aws.ec2.LaunchTemplate(
            f"{plan.name}-gpu-nodes",
            description=f"provision {plan.name}: {plan.instance_type} EKS nodes",
            instance_type=plan.instance_type if kx.lt_instance_type else None,
            network_interfaces=nics,
            placement=aws.ec2.LaunchTemplatePlacementArgs(group_name=pg_name) if pg_name else None,
            # Hop limit 1: pods cannot reach the node role's credentials; jobs use Pod Identity.
            metadata_options=nodes.imds_v2(1),
            block_device_mappings=nodes.encrypted_root(kx.root_device_name, inst.root_volume_gib),
            instance_market_options=aws.ec2.LaunchTemplateInstanceMarketOptionsArgs(market_type="capacity-block")
            if kx.capacity_type == "CAPACITY_BLOCK"
            else None,
            capacity_reservation_specification=reservation,
            tag_specifications=nodes.node_tag_specifications(tags(plan, "gpu-node")),
            tags=tags(plan, "gpu-nodes"),
            user_data=fsx_efa_user_data() if fsx_efa(plan) else None,
            update_default_version=True,
            opts=_opts(self),
        )

    def _gpu_group(
        self, plan: ClusterPlan[AwsPlan], net: Network, role: Any, lt: aws.ec2.LaunchTemplate, deps: list[Any]
    ) -> aws.eks.NodeGroup:
        assert plan.kubernetes is not None  # noqa: S101
        kx, pool = eks(plan.kubernetes), plan.kubernetes.gpu_pool
        return aws.eks.NodeGroup(
            f"{plan.name}-gpu",
            cluster_name=self.cluster.name,
            node_group_name="gpu",
            node_role_arn=role.arn,
            subnet_ids=[net.subnet_id],
            scaling_config=self._scaling(pool.nodes),
            ami_type=kx.gpu_ami_type,
            capacity_type=kx.capacity_type,
            instance_types=None if kx.lt_instance_type else [plan.instance_type],
            launch_template=aws.eks.NodeGroupLaunchTemplateArgs(id=lt.id, version=lt.latest_version.apply(str)),
            labels=dict(kx.gpu_labels),
            taints=[aws.eks.NodeGroupTaintArgs(key="nvidia.com/gpu", value="true", effect="NO_SCHEDULE")],
            update_config=aws.eks.NodeGroupUpdateConfigArgs(max_unavailable=1),
            tags=tags(plan, "gpu"),
            opts=_opts(
                self,
                depends_on=deps,
                custom_timeouts=pulumi.CustomTimeouts(create="60m", update="60m", delete="60m"),
            ),
        )

    def _expiry_schedule(self, plan: ClusterPlan[AwsPlan], group: aws.eks.NodeGroup, key: str, action: str) -> None:
        """Scale a node group's Auto Scaling group to 0 at the expiry: its nodes stop billing on time.

        EKS refuses a shutdown behaviour in a node group's launch template, so the nodes cannot end
        themselves; a scheduled action on the group's own ASG (PutScheduledUpdateGroupAction, EC2
        Auto Scaling API) sets min = max = desired = 0 once, at the expiry.
        """
        assert plan.expires_at is not None  # noqa: S101
        asg = group.resources.apply(_asg_name)
        aws.autoscaling.Schedule(
            f"{plan.name}-{key}-expiry",
            scheduled_action_name=action,
            autoscaling_group_name=asg,
            start_time=plan.expires_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
            min_size=0,
            max_size=0,
            desired_capacity=0,
            opts=_opts(self),
        )

    # ------------------------------------------------------------------ add-ons and identity
    def _addon(self, plan: ClusterPlan[AwsPlan], name: str, deps: list[Any] | None = None) -> aws.eks.Addon:
        return aws.eks.Addon(
            f"{plan.name}-{name}",
            cluster_name=self.cluster.name,
            addon_name=name,
            resolve_conflicts_on_create="OVERWRITE",
            resolve_conflicts_on_update="OVERWRITE",
            tags=tags(plan, name),
            opts=_opts(self, depends_on=deps or []),
        )

    def _device_plugins(self, plan: ClusterPlan[AwsPlan], prov: k8s.Provider) -> list[pulumi.Resource]:
        """The NVIDIA and EFA device plugins on the GPU nodes (pinned charts, labels from the node group)."""
        assert plan.kubernetes is not None  # noqa: S101
        out: list[pulumi.Resource] = []
        tolerate = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
        for name, helm in eks(plan.kubernetes).helm.items():
            selector = "vpc.amazonaws.com/efa.present" if name.startswith("aws-efa") else "nvidia.com/gpu.present"
            out.append(
                k8s.helm.v3.Release(
                    f"{plan.name}-{name}",
                    name=name,
                    chart=helm.chart,
                    version=helm.version,
                    repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=helm.repo),
                    namespace="kube-system",
                    values={"nodeSelector": {selector: "true"}, "tolerations": tolerate},
                    timeout=600,
                    opts=_opts(self, provider=prov),
                )
            )
        return out

    def _jobs_identity(self, plan: ClusterPlan[AwsPlan], deps: list[Any]) -> Any:
        """An IAM role the jobs' service account gets through EKS Pod Identity (no policy until you add one)."""
        assert plan.kubernetes is not None  # noqa: S101
        job = plan.kubernetes.job
        role, _ = _role(plan, "jobs", "pods.eks.amazonaws.com", (), self)
        aws.eks.PodIdentityAssociation(
            f"{plan.name}-jobs",
            cluster_name=self.cluster.name,
            namespace=job.namespace,
            service_account=job.service_account,
            role_arn=role.arn,
            tags=tags(plan, "jobs"),
            opts=_opts(self, depends_on=deps),
        )
        return role


def _asg_name(resources: Any) -> str:
    """The Auto Scaling group EKS made for a node group (``resources[0].autoscaling_groups[0].name``)."""
    groups = (resources or [None])[0]
    names = [g.name for g in (groups.autoscaling_groups or [])] if groups is not None else []
    if not names or not names[0]:
        raise pulumi.RunError("EKS reported no Auto Scaling group for a node group")
    return str(names[0])


def build(plan: ClusterPlan[AwsPlan]) -> dict[str, Any]:
    """Create the EKS cluster's resources in the current Pulumi context; returns the stack outputs."""
    return EksCluster(plan).outputs


#: Node user data of GPU nodes that mount an EFA-enabled FSx (MIME multi-part, the form a managed node group
#: merges with its own nodeadm configuration: EKS user guide "Customize managed nodes with launch templates",
#: user data). The shell part does what the VM path's ``images/aws/steps/fsx-efa-client.sh`` does, on AL2023:
#: the Lustre client (``lustre-client``, EKS user guide "Optimize Amazon FSx for Lustre performance on nodes",
#: AL2023), then FSx for Lustre User Guide "Configuring EFA clients" (configure-efa-fsx-lustre-client.zip,
#: setup.sh configures LNet over the EFA interfaces and re-applies it at boot). A node whose LNet has no
#: ``@efa`` interface fails its user data instead of silently mounting over TCP.
_FSX_EFA_SCRIPT = """#!/bin/bash
set -euo pipefail
dnf install -y lustre-client unzip
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
curl -fsSL --retry 5 -o "$work/client.zip" "{url}"
unzip -q -o "$work/client.zip" -d "$work"
setup=$(find "$work" -name setup.sh -type f | head -n 1)
test -n "$setup"
(cd "$(dirname "$setup")" && bash ./setup.sh)
lnetctl net show | grep -q '@efa'
"""


def fsx_efa_user_data() -> str:
    """Base64 MIME user data that configures the node's Lustre client for EFA (see ``_FSX_EFA_SCRIPT``)."""
    body = (
        'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="//"\n\n--//\n'
        'Content-Type: text/x-shellscript; charset="us-ascii"\n\n'
        f"{_FSX_EFA_SCRIPT.format(url=FSX_EFA_CLIENT_URL)}--//--\n"
    )
    return base64.b64encode(body.encode()).decode()
