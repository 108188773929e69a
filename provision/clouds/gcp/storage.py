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
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pulumi
from pulumi_gcp import compute, filestore, lustre, parallelstore, servicenetworking

from provision.clouds.gcp.layout import physical_name
from provision.clouds.gcp.network import Networks
from provision.clouds.gcp.plan import Filestore, GcpPlan, ManagedLustre, SharedStorage
from provision.planning.images import image_text
from provision.planning.outputs import shared_fs_summary
from provision.planning.plan import ClusterPlan

if TYPE_CHECKING:
    from provision.clouds.volumeref import VolumeRef

#: Lustre and NFS mount options; fstab lines add ``_netdev`` so boot waits for the network
#: (Cluster Toolkit's mount.sh uses ``defaults`` on the command line).
MOUNT_OPTIONS = "defaults"
FSTAB_OPTIONS = "defaults,_netdev"
FS_NAMES = {"managed-lustre": "Managed Lustre", "parallelstore": "Parallelstore", "filestore": "Filestore"}


#: How long a node waits for the filesystem's address: its create timeout (90 minutes, below) and a margin.
WAIT_SECONDS = 5700
#: The address as each kind publishes it (checked on the node before use): Managed Lustre ``IP@tcp:/fs``,
#: Filestore ``IP:/share``, Parallelstore a JSON list of access-point IPs.
SOURCE_PATTERNS = {
    "lustre": r"^[0-9]{1,3}(\.[0-9]{1,3}){3}@tcp:/[a-z][a-z0-9]{0,7}$",
    "nfs": r"^[0-9]{1,3}(\.[0-9]{1,3}){3}:/[A-Za-z][A-Za-z0-9_]{0,31}$",
    "daos": r'^\["[0-9.]{7,15}"(,"[0-9.]{7,15}"){0,15}\]$',
}


def shared_source_key(plan: ClusterPlan[GcpPlan]) -> str:
    """The project metadata key that holds the filesystem's address (a fixed name: the nodes need no output).

    Project metadata reaches every VM of the project through its metadata server, with no IAM role (Compute
    Engine "About VM metadata": project metadata is "propagated to all VMs within a project"), so the node
    service account gains no permission. Keys: letters, digits, '-', '_', at most 128 bytes.
    """
    return f"provision-{plan.name}-shared-source"


def publish(plan: ClusterPlan[GcpPlan], shared: SharedFs, parent: pulumi.Resource) -> compute.ProjectMetadataItem:
    """The project metadata entry the VM nodes wait for at boot (written once the filesystem exists).

    GPUs first: the node template carries no filesystem output (the mount script is static text), so the MIG
    is requested while the filesystem is still being created.
    """
    return compute.ProjectMetadataItem(
        f"{plan.name}-shared-source",
        key=shared_source_key(plan),
        value=shared.source,
        project=plan.extra.project,
        opts=pulumi.ResourceOptions(parent=parent, depends_on=shared.resources),
    )


def _lookup(plan: ClusterPlan[GcpPlan], kind: str) -> str:
    """Shell lines that wait for the filesystem's address in project metadata and set ``src`` to it."""
    return "\n".join(
        [
            f"key={shared_source_key(plan)}",
            'url="http://metadata.google.internal/computeMetadata/v1/project/attributes/$key"',
            f"re={shlex.quote(SOURCE_PATTERNS[kind])}",
            f"tries={WAIT_SECONDS // 20}",
            'until src=$(curl -fsS -H "Metadata-Flavor: Google" "$url") && [[ $src =~ $re ]]; do',
            "  tries=$((tries - 1))",
            '  if [ "$tries" -le 0 ]; then pv_log "no filesystem address in project metadata $key"; exit 1; fi',
            "  sleep 20",
            "done",
        ]
    )


@dataclass
class SharedFs:
    """What the component needs back: the ``shared_fs`` output and the node's mount script."""

    summary: Any  # Output[dict] or None
    mount_script: str  # static text: it waits for the address in project metadata (no filesystem output)
    resources: list[pulumi.Resource]
    #: What the nodes need of the storage's network (the private-services range, peering, firewall), never the
    #: filesystem itself.
    network: list[pulumi.Resource] = field(default_factory=list)
    #: The address the VM nodes wait for at boot (:func:`publish`); ``None`` without a filesystem.
    source: Any = None


def resource_options(plan: ClusterPlan[GcpPlan], parent: pulumi.Resource, **kw: Any) -> pulumi.ResourceOptions:
    """Options for the filesystem and what it is attached to: retained on destroy when the spec says so."""
    st = plan.extra.storage
    return pulumi.ResourceOptions(parent=parent, retain_on_delete=bool(st and st.retain), **kw)


def private_services(
    name: str, network: Any, prefix_length: int, labels: dict[str, str], project: str | None, what: str, opts: Any
) -> tuple[compute.GlobalAddress, servicenetworking.Connection]:
    """The private services access range of ``network`` and its Service Networking connection (``<name>-psa``)."""
    address = compute.GlobalAddress(
        f"{name}-psa-range",
        name=physical_name(f"{name}-psa-range"),
        purpose="VPC_PEERING",
        address_type="INTERNAL",
        prefix_length=prefix_length,
        network=network,
        labels=labels,
        description=f"private services access range of {what}",
        project=project,
        opts=opts,
    )
    connection = servicenetworking.Connection(
        f"{name}-psa",
        network=network,
        service="servicenetworking.googleapis.com",
        reserved_peering_ranges=[address.name],
        # A plain DELETE can fail with "Producer services are still using this connection" and leave the
        # peering, which then blocks deleting the host VPC (terraform-provider-google #16275, #19908;
        # pulumi-gcp #3354). REMOVE_PEERING removes the peering in that case (Connection.deletion_policy
        # docstring, pulumi-gcp 10.2; GoogleCloudPlatform/magic-modules#18476).
        deletion_policy="REMOVE_PEERING",
        opts=opts,
    )
    return address, connection


def storage_firewall(
    name: str, st: SharedStorage, network_link: Any, source_range: Any, project: Any, parent: pulumi.Resource
) -> compute.Firewall:
    """The rule that lets the filesystem's servers (in the private-services range) open connections to the clients:
    Lustre on its LNet ports, Parallelstore (DAOS) on any TCP port (no ports = all)."""
    ports = list(st.firewall_ports) or None
    return compute.Firewall(
        f"{name}-net-0-storage",
        name=physical_name(f"{name}-net-0-storage"),
        network=network_link,
        direction="INGRESS",
        priority=1000,
        allows=[compute.FirewallAllowArgs(protocol="tcp", ports=ports)],
        source_ranges=[source_range],
        description=f"{FS_NAMES[st.kind]} servers to clients",
        project=project,
        opts=pulumi.ResourceOptions(parent=parent),
    )


@dataclass
class Filesystem:
    """One filesystem resource and what the nodes mount (its address in the kind's form)."""

    resource: pulumi.CustomResource
    source: Any  # Output[str]: Lustre "IP@tcp:/fs", Filestore "IP:/share", Parallelstore a JSON list of IPs


def filesystem(
    name: str,
    st: SharedStorage,
    network: Any,
    labels: dict[str, str],
    project: str | None,
    what: str,
    opts: pulumi.ResourceOptions,
) -> Filesystem:
    """The filesystem of ``st`` in ``network`` (a VPC resource: Lustre takes its id, Filestore and Parallelstore its
    name), logical names ``<name>-lustre``, ``<name>-filestore``, ``<name>-daos``."""
    description = f"shared filesystem of {what}"
    if isinstance(st, ManagedLustre):
        ml = lustre.Instance(
            f"{name}-lustre",
            instance_id=st.instance_id,
            location=st.location,
            filesystem=st.filesystem,
            capacity_gib=st.capacity_gib,
            per_unit_storage_throughput=st.throughput,
            gke_support_enabled=True if st.gke_support else None,
            network=network.id,
            labels=labels,
            description=description,
            project=project,
            opts=opts,
        )
        return Filesystem(ml, ml.mount_point)  # "IP@tcp:/FILESYSTEM"
    if isinstance(st, Filestore):
        share = st.share
        nfs = filestore.Instance(
            f"{name}-filestore",
            name=physical_name(f"{name}-filestore"),
            tier=st.tier,
            location=st.location,
            file_shares=filestore.InstanceFileSharesArgs(name=st.share, capacity_gb=st.capacity_gib),
            networks=[
                filestore.InstanceNetworkArgs(network=network.name, modes=["MODE_IPV4"], connect_mode=st.connect_mode)
            ],
            labels=labels,
            description=description,
            project=project,
            opts=opts,
        )
        return Filesystem(nfs, nfs.networks.apply(lambda n: f"{(n[0].ip_addresses or [''])[0]}:/{share}"))
    daos = parallelstore.Instance(
        f"{name}-daos",
        instance_id=st.instance_id,
        location=st.location,
        capacity_gib=st.capacity_gib,
        deployment_type=st.deployment_type,
        network=network.name,
        labels=labels,
        description=description,
        project=project,
        opts=opts,
    )
    return Filesystem(daos, daos.access_points.apply(lambda aps: json.dumps(list(aps or []), separators=(",", ":"))))


def build_storage(plan: ClusterPlan[GcpPlan], nets: Networks, parent: pulumi.Resource) -> SharedFs:
    st = plan.extra.storage
    if st is None or plan.storage is None:
        return SharedFs(None, "", [])
    assert nets.host is not None  # noqa: S101
    project, labels = plan.extra.project, dict(plan.tags)
    created: list[pulumi.Resource] = []
    depends: list[pulumi.Resource] = []
    what = f"cluster {plan.name}"
    psa_range: Any = None
    if st.psa:
        address, connection = private_services(
            plan.name, nets.host.id, plan.extra.psa_prefix_length, labels, project, what, resource_options(plan, parent)
        )
        created += [address, connection]
        depends = [connection]
        psa_range = pulumi.Output.concat(address.address, "/", str(plan.extra.psa_prefix_length))
        if st.firewall:
            created.append(storage_firewall(plan.name, st, nets.host.self_link, psa_range, project, parent))
    timeouts = pulumi.CustomTimeouts(create="90m", delete="60m")
    opts = resource_options(plan, parent, depends_on=depends, custom_timeouts=timeouts)
    fs = filesystem(plan.name, st, nets.host, labels, project, what, opts)
    source = fs.source
    if isinstance(st, ManagedLustre):
        summary = source.apply(lambda s: shared_fs_summary(plan, s, "lustre", MOUNT_OPTIONS))
        script = _fstab_mount(plan, "lustre", "lustre-client.sh")
    elif isinstance(st, Filestore):
        summary = source.apply(lambda s: shared_fs_summary(plan, s, "nfs", MOUNT_OPTIONS))
        script = _fstab_mount(plan, "nfs", None)
    else:
        summary = source.apply(lambda s: _daos_summary(plan, list(json.loads(s))))
        script = _daos_mount(plan)
    if psa_range is not None:
        # The private-services range the filesystem's servers use: a retained filesystem's volume records it
        # (ops/volume_network.py), as attaching clusters open their storage firewall rule from it.
        summary = pulumi.Output.all(summary, psa_range).apply(lambda a: {**a[0], "service_range": a[1]})
    return SharedFs(summary, script, [*created, fs.resource], list(created), source)


def attached_storage(plan: ClusterPlan[GcpPlan], ref: VolumeRef, nets: Networks, parent: pulumi.Resource) -> SharedFs:
    """An attached volume's filesystem (its own stack holds it): the same mount script and published source as a
    cluster-owned filesystem of that kind, no resource of the filesystem's.

    Managed Lustre and Parallelstore servers open connections to their clients, so the cluster opens its nodes to
    the volume's private-services range (its ``network.service_range``) in the volume's VPC, by a rule named for
    the cluster.
    """
    source, volume = ref.mount_source, ref.name
    st = plan.extra.storage
    assert st is not None and plan.storage is not None and nets.host is not None  # noqa: S101  # the caller checked
    network: list[pulumi.Resource] = []
    if st.firewall:
        service_range = ref.network_field("service_range")
        network.append(storage_firewall(plan.name, st, nets.host.self_link, service_range, nets.host.project, parent))
    if isinstance(st, ManagedLustre):
        fs_type, script = "lustre", _fstab_mount(plan, "lustre", "lustre-client.sh")
    elif isinstance(st, Filestore):
        fs_type, script = "nfs", _fstab_mount(plan, "nfs", None)
    else:
        summary = source.apply(lambda s: {**_daos_summary(plan, list(json.loads(s))), "volume": volume})
        return SharedFs(summary, _daos_mount(plan), network, network, source)
    summary = source.apply(lambda s: {**shared_fs_summary(plan, s, fs_type, MOUNT_OPTIONS), "volume": volume})
    return SharedFs(summary, script, network, network, source)


def _snippet(name: str) -> str:
    return image_text(f"gcp/{name}")


def _fstab_mount(plan: ClusterPlan[GcpPlan], fs_type: str, client: str | None) -> str:
    assert plan.storage is not None  # noqa: S101
    mount = shlex.quote(plan.storage.mount)
    install = _snippet(client) if client else "apt-get install -y -q nfs-common"
    rest = shlex.quote(f" {plan.storage.mount} {fs_type} {FSTAB_OPTIONS} 0 0")
    return "\n".join(
        [
            _lookup(plan, fs_type),
            install,
            f"mkdir -p {mount}",
            f'line="$src"{rest}',
            'grep -qF "$line" /etc/fstab || echo "$line" >> /etc/fstab',
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


def _daos_mount(plan: ClusterPlan[GcpPlan]) -> str:
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
            _lookup(plan, "daos"),
            'DAOS_ACCESS_POINTS="$src"',
            _snippet("daos-client.sh"),
            f"mkdir -p {mount} && chmod 0755 {mount}",
            unit,
            "systemctl daemon-reload && systemctl enable --now provision-dfuse.service",
        ]
    )
