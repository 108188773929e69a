"""GCP ``scheduler: slurm``: the controller VM (``slurmctld``, and ``slurmdbd`` when accounting is asked).

:func:`slurm_controller_plan` is the adapter's decision (pure data); :func:`build_controller` creates one
``compute.Instance`` in the plan's zone on the host VPC's subnet (the GPU nodes' nic0 network, whose internal
firewall rule lets slurmd and slurmctld talk and whose IAP rule is the way in) with no access config (no
external IP), a boot disk Google encrypts at rest ("Encryption at rest", https://cloud.google.com/docs/security/
encryption/default-encryption), Shielded VM, the node service account, the cluster's login metadata, and the
cluster's lifetime: ``scheduling.terminationTime`` with ``instanceTerminationAction: DELETE`` ("Limit the run
time of a VM", https://cloud.google.com/compute/docs/instances/limit-vm-runtime), plus the same shutdown timer
as the nodes in its cloud-config. The rendered Slurm files are the ``slurm`` stack output.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from provision.clouds.gcp.plan import SlurmController

if TYPE_CHECKING:
    import pulumi

    from provision.clouds.gcp.network import Networks
    from provision.clouds.gcp.plan import GcpPlan
    from provision.planning.plan import ClusterPlan
    from provision.spec import ClusterSpec

#: 4 vCPU, 16 GB, general purpose ("General-purpose machine family", N2,
#: https://cloud.google.com/compute/docs/general-purpose-machines#n2_machines).
DEFAULT_INSTANCE_TYPE = "n2-standard-4"
#: Balanced persistent disk: supported by N2 ("Persistent Disk types").
DISK_TYPE = "pd-balanced"
DEFAULT_OS = "ubuntu-22.04"


def slurm_controller_plan(spec: ClusterSpec) -> SlurmController | None:
    """The controller of a ``scheduler.kind: slurm`` cluster (``None`` for other kinds)."""
    from provision.planning.slurm import controller_plan

    return controller_plan(spec, DEFAULT_INSTANCE_TYPE, SlurmController, disk_type=DISK_TYPE)  # type: ignore[no-any-return]


def _os(plan: ClusterPlan[GcpPlan]) -> str:
    return plan.image.versions.get("os", DEFAULT_OS)


def rendered_files(plan: ClusterPlan[GcpPlan], controller_addr: str | None, node_addrs: list[str]) -> dict[str, str]:
    """slurm.conf, gres.conf, topology.conf, cgroup.conf, plugstack.conf of the plan with these addresses."""
    from provision.planning.slurm import plan_files

    return plan_files(plan, _os(plan), controller_addr, node_addrs)


def build_controller(
    plan: ClusterPlan[GcpPlan],
    nets: Networks,
    service_account: Any,
    node_ips: pulumi.Output[list[str]],
    parent: pulumi.Resource,
) -> dict[str, Any]:
    """Create the controller; returns the ``slurm`` stack output (name, address, instance name, rendered files).

    Its metadata is the nodes' (``userdata.instance_metadata``: OS Login or the ``ssh-keys``, the host keys
    published, zonal DNS)."""
    import pulumi
    from pulumi_gcp import compute

    from provision.clouds.gcp.userdata import instance_metadata
    from provision.planning.slurm import controller_user_data, slurm_pins

    extra = plan.extra
    ctl = extra.slurm
    assert ctl is not None and nets.host is not None and nets.host_subnet is not None  # noqa: S101
    # OS Login or the metadata ssh-keys (login_metadata) log users in: no keys in the user data.
    user_data = controller_user_data(plan, slurm_pins(_os(plan)))
    expires = plan.expires_at.strftime("%Y-%m-%dT%H:%M:%SZ") if plan.expires_at is not None else None
    vm = compute.Instance(
        ctl.name,
        name=ctl.name,
        zone=extra.zone,
        machine_type=ctl.instance_type,
        description=f"Slurm controller of cluster {plan.name}",
        boot_disk=compute.InstanceBootDiskArgs(
            auto_delete=True,
            initialize_params=compute.InstanceBootDiskInitializeParamsArgs(
                image=plan.image.ref, size=ctl.disk_gib, type=ctl.disk_type, labels=dict(plan.tags)
            ),
        ),
        network_interfaces=[
            compute.InstanceNetworkInterfaceArgs(
                network=nets.host.self_link, subnetwork=nets.host_subnet.self_link, stack_type="IPV4_ONLY"
            )  # no access_configs: no external IP
        ],
        can_ip_forward=False,
        scheduling=compute.InstanceSchedulingArgs(
            provisioning_model="STANDARD",
            automatic_restart=True,
            on_host_maintenance="MIGRATE",
            instance_termination_action="DELETE" if expires else None,
            termination_time=expires,
        ),
        service_account=compute.InstanceServiceAccountArgs(
            email=service_account.email, scopes=list(extra.service_account.scopes)
        ),
        shielded_instance_config=compute.InstanceShieldedInstanceConfigArgs(
            enable_secure_boot=extra.shielded.secure_boot,
            enable_vtpm=extra.shielded.vtpm,
            enable_integrity_monitoring=extra.shielded.integrity_monitoring,
        ),
        metadata=instance_metadata(plan, user_data),
        labels=dict(plan.tags),
        project=extra.project,
        opts=pulumi.ResourceOptions(parent=parent),
    )
    addr = vm.network_interfaces.apply(lambda nics: nics[0].network_ip if nics else None)
    return {
        "controller": ctl.name,
        "address": addr,
        "instance_id": vm.name,
        "files": pulumi.Output.all(addr, node_ips).apply(lambda a: rendered_files(plan, a[0], list(a[1] or []))),
    }
