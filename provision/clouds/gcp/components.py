"""The GCP cluster as a Pulumi component (Pulumi only; every decision is in ``plan.extra``).

Resources (fixed count, whatever the node count): the networks of
:mod:`provision.clouds.gcp.network`, a node service account and its two role bindings, a placement
policy (workload policy for A3, compact placement for A2, none for flex-start), the shared
filesystem of :mod:`provision.clouds.gcp.storage`, ONE regional instance template, ONE zonal managed
instance group and, for flex-start, ONE resize request. Node IPs come from invokes after the group
is stable, ordered by instance name (rank 0 = head node).
"""

from __future__ import annotations

from typing import Any

import pulumi
from pulumi_gcp import compute, projects, serviceaccount

from provision.clouds.gcp import datalink, userdata
from provision.clouds.gcp.adapter import assert_labels
from provision.clouds.gcp.layout import physical_name
from provision.clouds.gcp.network import Networks, build_networks
from provision.clouds.gcp.plan import GcpPlan, SpecificReservation
from provision.clouds.gcp.storage import attached_storage, build_storage, publish
from provision.clouds.gcp.userdata import instance_metadata
from provision.clouds.outputs import stack_outputs
from provision.clouds.volumeref import volume_reference
from provision.planning.plan import ClusterPlan

TYPE_TOKEN = "provision:gcp:Cluster"


def termination_time(plan: ClusterPlan[GcpPlan]) -> str | None:
    """The template's ``termination_time`` (RFC 3339, UTC) when the plan uses one."""
    if plan.extra.scheduling.lifetime != "termination-time" or plan.expires_at is None:
        return None
    return plan.expires_at.strftime("%Y-%m-%dT%H:%M:%SZ")


def internal_dns_names(instance_links: list[str] | None) -> list[str]:
    """The zonal internal DNS name of each instance, by rank (sorted by name, as the MIG names them).

    ``https://.../projects/P/zones/Z/instances/N`` -> ``N.Z.c.P.internal`` (Compute Engine "Internal DNS":
    zonal names are ``VM_NAME.ZONE.c.PROJECT_ID.internal`` and resolve to nic0's primary internal IPv4 address
    from VMs in the same VPC network). A domain-scoped project ``example.com:proj`` is written
    ``proj.example.com`` in DNS names.
    """
    names = []
    for link in instance_links or []:
        parts = link.rstrip("/").split("/")
        project, zone, name = parts[parts.index("projects") + 1], parts[parts.index("zones") + 1], parts[-1]
        if ":" in project:
            domain, _, pid = project.partition(":")
            project = f"{pid}.{domain}"
        names.append(f"{name}.{zone}.c.{project}.internal")
    return sorted(names)


class GcpCluster(pulumi.ComponentResource):
    """One GPU cluster on GCP. Attributes: ``networks``, ``template``, ``group``, ``ips``, ``outputs``."""

    def __init__(self, plan: ClusterPlan[GcpPlan], opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE_TOKEN, plan.name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        extra = plan.extra
        project = extra.project
        # An attached volume: its filesystem lives in its own stack, and the host network (nic0) is a subnet of the
        # volume's VPC (clouds/gcp/network.py), the only place its services' peering reaches.
        volume = volume_reference(plan, self)
        self.networks = build_networks(plan, self, volume)
        nets = self.networks
        sa_plan = extra.service_account
        self.service_account = serviceaccount.Account(
            f"{plan.name}-nodes",
            account_id=sa_plan.account_id,
            display_name=f"provision {plan.name} nodes",
            description="Node identity: writes logs and metrics, nothing else",
            project=project,
            opts=child,
        )
        for role in sa_plan.roles:
            projects.IAMMember(
                f"{plan.name}-nodes-{role.rsplit('.', 1)[-1].lower()}",
                project=nets.project,
                role=role,
                member=self.service_account.member,
                opts=child,
            )
        policy = self._placement_policy(plan, child)
        self.shared = build_storage(plan, nets, self) if volume is None else attached_storage(plan, volume, nets, self)
        if self.shared.source is not None:
            publish(plan, self.shared, self)
        # storage.shared.object_store: the service agent's role on that bucket only (datalink.py); the import itself
        # is an API call that `up` runs once the stack exists (provision.ops.datalink).
        self.gcs_grant = datalink.build_gcs_grant(plan, self) if volume is None else None
        # GCP deletes the VMs itself at the plan's expiry (termination time / run duration): no guest timer.
        user_data = pulumi.Output.from_input(self.shared.mount_script).apply(lambda m: userdata.render(plan, m or ""))
        compact = policy.self_link if policy is not None and extra.placement.kind == "compact-placement" else None
        self.template = self._template(plan, nets, user_data, compact, child)
        workload = policy.self_link if policy is not None and extra.placement.kind == "workload-policy" else None
        self.group, waits = self._group(plan, workload, child)
        self.ips = self._node_ips(plan, waits)
        # Instance names by rank (what IAP TCP forwarding connects to): the first label of each DNS name, so the
        # same single getInstanceGroup read serves both.
        names = self.ips.apply(lambda hosts: [h.split(".", 1)[0] for h in hosts])
        self.outputs = stack_outputs(plan, self.ips, None, self.shared.summary, node_ids=names)
        if self.gcs_grant is not None and self.shared.resources:
            self.outputs["object_store"] = datalink.link_output(plan, self.shared.resources[-1], self.gcs_grant)
        if extra.slurm is not None:  # scheduler: slurm
            from provision.clouds.gcp.slurm import build_controller

            self.outputs["slurm"] = build_controller(plan, nets, self.service_account, self.ips, self)
        self.register_outputs({"hosts": self.ips, "instance_group": self.group.instance_group})

    # ------------------------------------------------------------------ parts
    @staticmethod
    def _placement_policy(plan: ClusterPlan[GcpPlan], opts: pulumi.ResourceOptions) -> compute.ResourcePolicy | None:
        place = plan.extra.placement
        common: dict[str, Any] = {"region": plan.region, "project": plan.extra.project, "opts": opts}
        if place.kind == "workload-policy":
            return compute.ResourcePolicy(
                f"{plan.name}-workload",
                name=physical_name(f"{plan.name}-workload"),
                description=f"dense placement of cluster {plan.name}",
                workload_policy=compute.ResourcePolicyWorkloadPolicyArgs(
                    type=place.type, max_topology_distance=place.max_topology_distance
                ),
                **common,
            )
        if place.kind == "compact-placement":
            return compute.ResourcePolicy(
                f"{plan.name}-compact",
                name=physical_name(f"{plan.name}-compact"),
                description=f"compact placement of cluster {plan.name}",
                group_placement_policy=compute.ResourcePolicyGroupPlacementPolicyArgs(collocation=place.collocation),
                **common,
            )
        return None

    def _template(
        self,
        plan: ClusterPlan[GcpPlan],
        nets: Networks,
        user_data: pulumi.Output[str],
        compact_policy: Any,
        opts: pulumi.ResourceOptions,
    ) -> compute.RegionInstanceTemplate:
        extra = plan.extra
        sched = extra.scheduling
        affinity = sched.reservation_affinity
        reservation = None
        if affinity is not None:
            specific = None
            if isinstance(affinity, SpecificReservation):
                specific = compute.RegionInstanceTemplateReservationAffinitySpecificReservationArgs(
                    key=affinity.key, values=list(affinity.values)
                )
            reservation = compute.RegionInstanceTemplateReservationAffinityArgs(
                type=affinity.type, specific_reservation=specific
            )
        run = sched.max_run_duration_s
        shielded = extra.shielded
        return compute.RegionInstanceTemplate(
            f"{plan.name}-template",
            name=physical_name(f"{plan.name}-template"),
            region=plan.region,
            machine_type=plan.instance_type,
            description=f"nodes of cluster {plan.name}",
            # A2/A3 machine types come with their GPUs: no guest_accelerators.
            disks=[
                compute.RegionInstanceTemplateDiskArgs(
                    boot=True,
                    auto_delete=True,
                    source_image=plan.image.ref,
                    disk_type=extra.boot_disk.type,
                    disk_size_gb=extra.boot_disk.size_gib,
                    labels=dict(plan.tags),
                )
            ],
            network_interfaces=[
                compute.RegionInstanceTemplateNetworkInterfaceArgs(
                    network=nets.vpcs[nic.network].self_link,
                    subnetwork=nets.subnets[nic.subnet].self_link,
                    nic_type=nic.nic_type,
                    stack_type="IPV4_ONLY",
                )  # no access_configs: no external IP on any NIC
                for nic in extra.nics
            ],
            can_ip_forward=False,
            scheduling=compute.RegionInstanceTemplateSchedulingArgs(
                provisioning_model=sched.provisioning_model,
                on_host_maintenance=sched.on_host_maintenance,
                automatic_restart=sched.automatic_restart,
                preemptible=sched.preemptible,
                instance_termination_action=sched.instance_termination_action,
                termination_time=termination_time(plan),
                max_run_duration=compute.RegionInstanceTemplateSchedulingMaxRunDurationArgs(seconds=run)
                if run
                else None,
            ),
            reservation_affinity=reservation,
            resource_policies=compact_policy,
            service_account=compute.RegionInstanceTemplateServiceAccountArgs(
                email=self.service_account.email, scopes=list(extra.service_account.scopes)
            ),
            shielded_instance_config=compute.RegionInstanceTemplateShieldedInstanceConfigArgs(
                enable_secure_boot=shielded.secure_boot,
                enable_vtpm=shielded.vtpm,
                enable_integrity_monitoring=shielded.integrity_monitoring,
            ),
            metadata=instance_metadata(plan, user_data),
            labels=dict(plan.tags),
            project=extra.project,
            opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=self.shared.network)),
        )

    def _group(
        self, plan: ClusterPlan[GcpPlan], workload_policy: Any, opts: pulumi.ResourceOptions
    ) -> tuple[compute.InstanceGroupManager, list[pulumi.Resource]]:
        extra, alloc = plan.extra, plan.extra.allocation
        resize = alloc.mode == "resize-request"
        group = compute.InstanceGroupManager(
            f"{plan.name}-nodes",
            name=physical_name(f"{plan.name}-nodes"),
            base_instance_name=plan.name,
            zone=extra.zone,
            description=f"nodes of cluster {plan.name}",
            versions=[compute.InstanceGroupManagerVersionArgs(name="nodes", instance_template=self.template.self_link)],
            target_size=alloc.target_size,
            target_size_policies=[compute.InstanceGroupManagerTargetSizePolicyArgs(mode="BULK")]
            if alloc.bulk
            else None,
            resource_policies=compute.InstanceGroupManagerResourcePoliciesArgs(workload_policy=workload_policy)
            if workload_policy is not None
            else None,
            # A failed node is not silently replaced mid-training (a new VM would change the hostfile).
            instance_lifecycle_policy=compute.InstanceGroupManagerInstanceLifecyclePolicyArgs(
                default_action_on_failure="DO_NOTHING"
            ),
            # Template changes reach only new VMs; running nodes are never restarted by an update, and no
            # surge VM is ever created (pulumi-gcp's flex-start MIG example also uses OPPORTUNISTIC, surge 0).
            update_policy=compute.InstanceGroupManagerUpdatePolicyArgs(
                type="OPPORTUNISTIC", minimal_action="NONE", max_surge_fixed=0, max_unavailable_fixed=1
            ),
            wait_for_instances=alloc.wait,
            wait_for_instances_status="STABLE" if alloc.wait else None,
            project=extra.project,
            opts=pulumi.ResourceOptions.merge(
                opts,
                pulumi.ResourceOptions(
                    custom_timeouts=pulumi.CustomTimeouts(create="60m", update="60m"),
                    # The resize request raises the target size; Pulumi must not reset it to 0.
                    ignore_changes=["target_size"] if resize else None,
                ),
            ),
        )
        waits: list[pulumi.Resource] = [group]
        if resize:
            waits.append(
                compute.ResizeRequest(
                    f"{plan.name}-resize",
                    name=physical_name(f"{plan.name}-resize"),
                    instance_group_manager=group.name,
                    zone=extra.zone,
                    resize_by=alloc.resize_by,
                    requested_run_duration=compute.ResizeRequestRequestedRunDurationArgs(
                        seconds=str(extra.scheduling.max_run_duration_s)
                    ),
                    description=f"all {alloc.resize_by} nodes of cluster {plan.name}, at once",
                    project=extra.project,
                    opts=opts,
                )
            )
        return group, waits

    def _node_ips(self, plan: ClusterPlan[GcpPlan], waits: list[pulumi.Resource]) -> pulumi.Output[list[str]]:
        """The nodes' zonal internal DNS names by rank, from ONE getInstanceGroup read.

        No per-node getInstance: 1,024 reads on every preview and up would eat the project's read quota
        (issue 11); the DNS name is derived from the instance's self link.
        """
        invoke = pulumi.InvokeOutputOptions(parent=self, depends_on=waits)
        group = compute.get_instance_group_output(
            self_link=self.group.instance_group, zone=plan.extra.zone, opts=invoke
        )
        return group.instances.apply(lambda links: internal_dns_names(list(links or [])))


def build(plan: ClusterPlan[GcpPlan]) -> dict[str, Any]:
    """Create the cluster's resources; returns the stack outputs (docs/contracts.md).

    Raises:
        SpecError: the plan's labels break GCP's rules (before any resource exists).
    """
    assert_labels(plan.tags)
    return GcpCluster(plan).outputs
