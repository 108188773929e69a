"""GCP shared filesystems: Managed Lustre, Filestore and Parallelstore (Pulumi only, no decisions).

Managed Lustre and Parallelstore attach through private services access: a ``compute.GlobalAddress``
(purpose VPC_PEERING) and a ``servicenetworking.Connection``; the filesystem ``depends_on`` the
connection (pulumi-gcp 10.2 examples for lustre.Instance and parallelstore.Instance). Filestore uses
DIRECT_PEERING, which needs no range of ours. ``storage.shared.retain`` maps to Pulumi's
``retain_on_delete`` on the filesystem and on what it is attached to.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi_gcp import compute, filestore, lustre, parallelstore, servicenetworking

from provision.clouds.gcp.layout import physical_name
from provision.clouds.gcp.network import Networks
from provision.clouds.gcp.plan import Filestore, GcpPlan, ManagedLustre
from provision.planning.images import image_text
from provision.planning.outputs import shared_fs_summary
from provision.planning.plan import ClusterPlan

#: Lustre and NFS mount options; fstab lines add ``_netdev`` so boot waits for the network
#: (Cluster Toolkit's mount.sh uses ``defaults`` on the command line).
MOUNT_OPTIONS = "defaults"
FSTAB_OPTIONS = "defaults,_netdev"
FS_NAMES = {"managed-lustre": "Managed Lustre", "parallelstore": "Parallelstore", "filestore": "Filestore"}


@dataclass
class SharedFs:
    """What the component needs back: the ``shared_fs`` output and the node's mount script."""

    summary: Any  # Output[dict] or None
    mount_script: Any  # Output[str] or ""
    resources: list[pulumi.Resource]


def resource_options(plan: ClusterPlan[GcpPlan], parent: pulumi.Resource, **kw: Any) -> pulumi.ResourceOptions:
    """Options for the filesystem and what it is attached to: retained on destroy when the spec says so."""
    st = plan.extra.storage
    return pulumi.ResourceOptions(parent=parent, retain_on_delete=bool(st and st.retain), **kw)


def build_storage(plan: ClusterPlan[GcpPlan], nets: Networks, parent: pulumi.Resource) -> SharedFs:
    st = plan.extra.storage
    if st is None or plan.storage is None:
        return SharedFs(None, "", [])
    assert nets.host is not None  # noqa: S101
    project, labels = plan.extra.project, dict(plan.tags)
    created: list[pulumi.Resource] = []
    depends: list[pulumi.Resource] = []
    if st.psa:
        address = compute.GlobalAddress(
            f"{plan.name}-psa-range",
            name=physical_name(f"{plan.name}-psa-range"),
            purpose="VPC_PEERING",
            address_type="INTERNAL",
            prefix_length=plan.extra.psa_prefix_length,
            network=nets.host.id,
            labels=labels,
            description=f"private services access range of cluster {plan.name}",
            project=project,
            opts=resource_options(plan, parent),
        )
        connection = servicenetworking.Connection(
            f"{plan.name}-psa",
            network=nets.host.id,
            service="servicenetworking.googleapis.com",
            reserved_peering_ranges=[address.name],
            # A plain DELETE can fail with "Producer services are still using this connection" and leave the
            # peering, which then blocks deleting the host VPC (terraform-provider-google #16275, #19908;
            # pulumi-gcp #3354). REMOVE_PEERING removes the peering in that case (Connection.deletion_policy
            # docstring, pulumi-gcp 10.2; GoogleCloudPlatform/magic-modules#18476).
            deletion_policy="REMOVE_PEERING",
            opts=resource_options(plan, parent),
        )
        created += [address, connection]
        depends = [connection]
        if st.firewall:
            # The filesystem's servers (in the private-services range) open connections to the clients:
            # Lustre on its LNet ports, Parallelstore (DAOS) on any TCP port (no ports = all).
            ports = list(st.firewall_ports) or None
            created.append(
                compute.Firewall(
                    f"{plan.name}-net-0-storage",
                    name=physical_name(f"{plan.name}-net-0-storage"),
                    network=nets.host.self_link,
                    direction="INGRESS",
                    priority=1000,
                    allows=[compute.FirewallAllowArgs(protocol="tcp", ports=ports)],
                    source_ranges=[pulumi.Output.concat(address.address, "/", str(plan.extra.psa_prefix_length))],
                    description=f"{FS_NAMES[st.kind]} servers to clients",
                    project=project,
                    opts=pulumi.ResourceOptions(parent=parent),
                )
            )
    timeouts = pulumi.CustomTimeouts(create="90m", delete="60m")
    fs: pulumi.CustomResource
    if isinstance(st, ManagedLustre):
        ml = lustre.Instance(
            f"{plan.name}-lustre",
            instance_id=st.instance_id,
            location=st.location,
            filesystem=st.filesystem,
            capacity_gib=st.capacity_gib,
            per_unit_storage_throughput=st.throughput,
            gke_support_enabled=True if st.gke_support else None,
            network=nets.host.id,
            labels=labels,
            description=f"shared filesystem of cluster {plan.name}",
            project=project,
            opts=resource_options(plan, parent, depends_on=depends, custom_timeouts=timeouts),
        )
        fs, source = ml, ml.mount_point  # "IP@tcp:/FILESYSTEM"
        summary = source.apply(lambda s: shared_fs_summary(plan, s, "lustre", MOUNT_OPTIONS))
        script = source.apply(lambda s: _fstab_mount(plan, s, "lustre", "lustre-client.sh"))
    elif isinstance(st, Filestore):
        share = st.share
        nfs = filestore.Instance(
            f"{plan.name}-filestore",
            name=physical_name(f"{plan.name}-filestore"),
            tier=st.tier,
            location=st.location,
            file_shares=filestore.InstanceFileSharesArgs(name=st.share, capacity_gb=st.capacity_gib),
            networks=[
                filestore.InstanceNetworkArgs(network=nets.host.name, modes=["MODE_IPV4"], connect_mode=st.connect_mode)
            ],
            labels=labels,
            description=f"shared filesystem of cluster {plan.name}",
            project=project,
            opts=resource_options(plan, parent, custom_timeouts=timeouts),
        )
        fs, source = nfs, nfs.networks.apply(lambda n: f"{(n[0].ip_addresses or [''])[0]}:/{share}")
        summary = source.apply(lambda s: shared_fs_summary(plan, s, "nfs", MOUNT_OPTIONS))
        script = source.apply(lambda s: _fstab_mount(plan, s, "nfs", None))
    else:
        daos = parallelstore.Instance(
            f"{plan.name}-daos",
            instance_id=st.instance_id,
            location=st.location,
            capacity_gib=st.capacity_gib,
            deployment_type=st.deployment_type,
            network=nets.host.name,
            labels=labels,
            description=f"shared filesystem of cluster {plan.name}",
            project=project,
            opts=resource_options(plan, parent, depends_on=depends, custom_timeouts=timeouts),
        )
        fs = daos
        summary = daos.access_points.apply(lambda aps: _daos_summary(plan, list(aps or [])))
        script = daos.access_points.apply(lambda aps: _daos_mount(plan, list(aps or [])))
    return SharedFs(summary, script, [*created, fs])


def _snippet(name: str) -> str:
    return image_text(f"gcp/{name}")


def _fstab_mount(plan: ClusterPlan[GcpPlan], source: str, fs_type: str, client: str | None) -> str:
    assert plan.storage is not None  # noqa: S101
    mount = shlex.quote(plan.storage.mount)
    install = _snippet(client) if client else "apt-get install -y -q nfs-common"
    line = f"{source} {plan.storage.mount} {fs_type} {FSTAB_OPTIONS} 0 0"
    return "\n".join(
        [
            install,
            f"mkdir -p {mount}",
            f"grep -qF {shlex.quote(line)} /etc/fstab || echo {shlex.quote(line)} >> /etc/fstab",
            f"mountpoint -q {mount} || mount {mount}",
            share_owner(plan, mount),
        ]
    )


def share_owner(plan: ClusterPlan[GcpPlan], mount: str) -> str:
    """The shell line that sets who may write the share's root: never everyone (no 1777).

    With metadata keys the login user owns it (mode 0755). With OS Login, users are IAM identities with no
    fixed account on the image, so the root stays root-owned (0755) and OS Login admins create directories
    with sudo (see the plan warning).
    """
    if plan.extra.os_login:
        return f"chown root: {mount} && chmod 0755 {mount} || true"
    return f"chown {shlex.quote(plan.access.ssh_user)}: {mount} && chmod 0755 {mount} || true"


def _dfuse_command(mount: str) -> str:
    # Cluster Toolkit's parallelstore mount service: one pool/container per instance, multi-user.
    return f"dfuse -m {mount} --pool default-pool --container default-container --multi-user"


def _daos_summary(plan: ClusterPlan[GcpPlan], access_points: list[str]) -> dict[str, Any]:
    assert plan.storage is not None  # noqa: S101
    mount = plan.storage.mount
    summary = shared_fs_summary(plan, ",".join(access_points), "daos", "")
    summary["access_points"] = access_points
    summary["mount_command"] = f"sudo mkdir -p {mount} && sudo {_dfuse_command(mount)}"
    return summary


def _daos_mount(plan: ClusterPlan[GcpPlan], access_points: list[str]) -> str:
    assert plan.storage is not None  # noqa: S101
    mount = shlex.quote(plan.storage.mount)
    unit = f"""cat > /etc/systemd/system/provision-dfuse.service <<'UNIT'
[Unit]
Description=Parallelstore (DAOS) mount of {plan.storage.mount}
After=network-online.target daos_agent.service
BindsTo=daos_agent.service
[Service]
Restart=on-failure
RestartSec=10
ExecStart=/bin/{_dfuse_command(mount)} --foreground
ExecStop=/bin/fusermount3 -z -u {mount}
[Install]
WantedBy=multi-user.target
UNIT"""
    return "\n".join(
        [
            f"DAOS_ACCESS_POINTS={shlex.quote(json.dumps(access_points))}",
            _snippet("daos-client.sh"),
            f"mkdir -p {mount} && chmod 0755 {mount}",
            unit,
            "systemctl daemon-reload && systemctl enable --now provision-dfuse.service",
        ]
    )
