"""GCP volume stack (``provision volume create``): Filestore, Managed Lustre or Parallelstore in a VPC of its own.

The stack holds a VPC, one subnet (the volume's ``network_cidr``, in the volume's region), for Managed Lustre and
Parallelstore the private services access range and its Service Networking connection (both reach their clients
only through it: pulumi-gcp 10.2 ``lustre.Instance`` and ``parallelstore.Instance`` examples), and the filesystem,
built by the same functions as a cluster's own (:mod:`provision.clouds.gcp.storage`). Filestore connects with
DIRECT_PEERING, as a cluster's own Filestore does, and needs no range of ours.

The services' peering is not transitive (cloud.google.com/vpc/docs/vpc-peering, "Transitive peering is not
supported"), so an attaching cluster puts its host network (nic0) in this VPC: a subnet, firewall rules and a
Cloud NAT of its own, named for the cluster (:mod:`provision.clouds.gcp.network`). The ``network`` output is what
it needs: the VPC's ``network`` (name), ``network_id``, ``self_link``, ``project`` and ``region``, the ranges it
must not overlap (``cidr``, the volume's subnet; ``service_range``, the range the filesystem's servers use) and
the firewall source for them. No NAT or router of the volume's: nothing in the volume's VPC reaches out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pulumi
from pulumi_gcp import compute

from provision.clouds.gcp.adapter import assert_labels
from provision.clouds.gcp.layout import LUSTRE_PORTS, MTU_JUMBO, lustre_filesystem_name, physical_name
from provision.clouds.gcp.plan import Filestore, ManagedLustre, Parallelstore, SharedStorage
from provision.clouds.gcp.storage import filesystem, private_services
from provision.spec.errors import Problem
from provision.spec.volume import VolumeSpecError

if TYPE_CHECKING:
    from provision.spec.volume import VolumeSpec

#: The private services access range's size: the cluster options' default (``gcp.psa_prefix_length``).
PSA_PREFIX_LENGTH = 20
#: Filestore tiers that are regional (their location is the region, not a zone: Filestore "Service tiers").
REGIONAL_FILESTORE = ("REGIONAL", "ENTERPRISE")


def volume_zone(spec: VolumeSpec) -> str:
    """The volume's zone: the spec's, else the first zone the catalog knows in its region (GCP regions do not all
    have an ``-a`` zone: "Regions and zones", cloud.google.com/compute/docs/regions-zones).

    Raises:
        VolumeSpecError: no zone given and the catalog knows none in the region.
    """
    if spec.zone:
        return spec.zone
    from provision.catalog import load_catalog

    zones = load_catalog().zones("gcp", spec.region)
    if not zones:
        raise VolumeSpecError(
            problems=[
                Problem(
                    "zone",
                    None,
                    f"is needed: {spec.kind} is zonal and the catalog knows no zone of {spec.region}",
                    f"set zone to a zone of {spec.region} (gcloud compute zones list --filter=region:{spec.region})",
                )
            ]
        )
    return zones[0]


def volume_storage(spec: VolumeSpec, tier: str) -> SharedStorage:
    """The filesystem's settings, in the form a cluster's own filesystem of that kind has (``clouds/gcp/layout.py``)."""
    n = f"vol-{spec.name}"
    regional = spec.kind == "filestore" and tier in REGIONAL_FILESTORE
    zone = spec.region if regional else volume_zone(spec)
    if spec.kind == "managed-lustre":
        return ManagedLustre(
            retain=False,
            mount="",
            instance_id=f"{n}-lustre",
            filesystem=lustre_filesystem_name(spec.name),
            capacity_gib=str(spec.size_gib),
            throughput=str(spec.throughput_mbps_per_tib or tier),
            psa=True,
            firewall=True,
            firewall_ports=LUSTRE_PORTS,
            location=zone,
        )
    if spec.kind == "parallelstore":
        return Parallelstore(
            retain=False,
            mount="",
            instance_id=f"{n}-daos",
            capacity_gib=str(spec.size_gib),
            deployment_type=tier,
            psa=True,
            firewall=True,
            firewall_ports=(),
            location=zone,
        )
    return Filestore(
        retain=False,
        mount="",
        tier=tier,
        capacity_gib=spec.size_gib,
        share="shared",
        location=zone,
        psa=False,
        firewall=False,
        firewall_ports=(),
    )


def build_volume(spec: VolumeSpec, tier: str, tags: dict[str, str]) -> dict[str, Any]:
    """Create the volume's resources in the current Pulumi context; returns the stack outputs.

    Raises:
        SpecError: the tags break GCP's label rules (before any resource exists).
    """
    assert_labels(tags)
    n = f"vol-{spec.name}"
    what = f"volume {spec.name}"
    st = volume_storage(spec, tier)
    vpc = compute.Network(
        f"{n}-net",
        name=physical_name(f"{n}-net"),
        auto_create_subnetworks=False,
        # The largest MTU (what Google's Managed Lustre and Parallelstore VPC set-ups use); an attaching cluster's
        # host NIC takes the MTU of this VPC.
        mtu=MTU_JUMBO,
        routing_mode="REGIONAL",
        description=f"provision {what}: the filesystem's network; attaching clusters add their own subnets",
    )
    subnet = compute.Subnetwork(
        f"{n}-subnet",
        name=physical_name(f"{n}-subnet"),
        network=vpc.id,
        region=spec.region,
        ip_cidr_range=spec.network_cidr,
        private_ip_google_access=True,
        stack_type="IPV4_ONLY",
    )
    depends: list[pulumi.Resource] = []
    service_range: Any = None
    if st.psa:
        address, connection = private_services(
            n, vpc.id, PSA_PREFIX_LENGTH, tags, None, what, pulumi.ResourceOptions(depends_on=[subnet])
        )
        depends = [connection]
        service_range = pulumi.Output.concat(address.address, "/", str(PSA_PREFIX_LENGTH))
    fs = filesystem(
        n,
        st,
        vpc,
        tags,
        None,
        what,
        pulumi.ResourceOptions(
            depends_on=depends or [subnet], custom_timeouts=pulumi.CustomTimeouts(create="90m", delete="60m")
        ),
    )
    if isinstance(st, Filestore):  # DIRECT_PEERING: the range Filestore reserved in the VPC for its servers
        service_range = fs.resource.networks.apply(lambda nets: nets[0].reserved_ip_range or "")  # type: ignore[attr-defined]
    zone = st.location if st.location != spec.region else spec.zone
    return {
        "mount_source": fs.source,
        "filesystem_id": fs.resource.id,
        "zone": zone,
        "network": pulumi.Output.all(vpc.name, vpc.id, vpc.self_link, vpc.project, service_range).apply(
            lambda a: {
                "network": a[0],
                "network_id": a[1],
                "self_link": a[2],
                "project": a[3],
                "region": spec.region,
                "cidr": spec.network_cidr,
                "service_range": a[4] or None,
            }
        ),
    }


#: The resources a GCP cluster keeps with a retained filesystem (``retain_on_delete``: the host VPC ``net-0``, the
#: private services range and connection, the filesystem; ``clouds/gcp/layout.py`` and ``storage.py``), which its
#: volume stack adopts: type token -> (class, the part of its logical name, as :func:`build_volume` names it).
def _adopted() -> dict[str, tuple[Any, str]]:
    from pulumi_gcp import filestore, lustre, parallelstore, servicenetworking

    return {
        "gcp:compute/network:Network": (compute.Network, "net"),
        "gcp:compute/globalAddress:GlobalAddress": (compute.GlobalAddress, "psa-range"),
        "gcp:servicenetworking/connection:Connection": (servicenetworking.Connection, "psa"),
        "gcp:filestore/instance:Instance": (filestore.Instance, "filestore"),
        "gcp:lustre/instance:Instance": (lustre.Instance, "lustre"),
        "gcp:parallelstore/instance:Instance": (parallelstore.Instance, "parallelstore"),
    }


def adopt_volume(name: str, kept: list[dict[str, Any]]) -> dict[str, Any]:
    """The volume stack of a cluster's retained filesystem: the kept VPC, private services range and connection and
    the filesystem imported as they exist (their recorded inputs declared). Nothing is added: the cluster's subnet,
    firewall rules and NAT went with it, and an attaching cluster brings its own (:mod:`provision.clouds.gcp.network`).
    Returns the outputs an attaching cluster reads (``mount_source`` comes from the cluster's ``shared_fs``)."""
    from provision.clouds.adopt import adopt_resources

    made = adopt_resources(f"vol-{name}", kept, _adopted())
    vpc = made["gcp:compute/network:Network"]
    fs_type = next(t for t in made if t.endswith("/instance:Instance"))
    fs = made[fs_type]
    address = made.get("gcp:compute/globalAddress:GlobalAddress")
    if address is not None:  # Managed Lustre, Parallelstore: their servers use the private services range
        service_range: Any = pulumi.Output.concat(address.address, "/", address.prefix_length.apply(str))
    elif fs_type.startswith("gcp:filestore"):  # DIRECT_PEERING: the range Filestore reserved for its servers
        service_range = fs.networks.apply(lambda nets: nets[0].reserved_ip_range or "")
    else:
        service_range = None
    location = str(next(k["inputs"].get("location") for k in kept if k["type"] == fs_type))
    zonal = location.count("-") > 1  # us-central1-a (a zone), not us-central1 (a regional Filestore)
    region = location.rsplit("-", 1)[0] if zonal else location
    return {
        "filesystem_id": fs.id,
        "zone": location if zonal else None,
        "network": pulumi.Output.all(vpc.name, vpc.id, vpc.self_link, vpc.project, service_range).apply(
            lambda a: {
                "network": a[0],
                "network_id": a[1],
                "self_link": a[2],
                "project": a[3],
                "region": region,
                "cidr": None,  # the VPC has no subnet of the volume's: the cluster's went with it
                "service_range": a[4] or None,
            }
        ),
    }
