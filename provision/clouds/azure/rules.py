"""Azure's documented limits as pure functions: islands, address plan, SSH keys, image and reservation ids.

No SDK or Pulumi imports; the adapter calls these while planning and ``check`` reports
what they find. Each rule names its source.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import math
import re
import struct
from dataclasses import dataclass

#: Azure reserves 5 addresses in every subnet (network, gateway, 2 DNS, broadcast).
#: https://learn.microsoft.com/azure/virtual-network/virtual-networks-faq ("Are there any restrictions on using IP
#: addresses within these subnets?")
AZURE_RESERVED_PER_SUBNET = 5

#: A Uniform scale set holds at most 1,000 VMs when single_placement_group is false.
VMSS_MAX_NODES = 1000

#: The compute API documents 1-15 characters for a scale set's computer name prefix
#: (VirtualMachineScaleSetOSProfile.computerNamePrefix).
COMPUTER_NAME_PREFIX_MAX = 15

#: Usernames the compute API refuses as adminUsername (OSProfile.adminUsername, "Disallowed values").
# fmt: off
RESERVED_ADMIN_USERNAMES = frozenset((
    "administrator", "admin", "user", "user1", "test", "user2", "test1", "user3", "admin1", "1", "123", "a",
    "actuser", "adm", "admin2", "aspnet", "backup", "console", "david", "guest", "john", "owner", "root", "server",
    "sql", "support", "support_388945a0", "sys", "test2", "test3", "user4", "user5",
))
# fmt: on

#: Minimum subnet prefix for an Azure Managed Lustre file system by capacity (TiB, prefix), from
#: https://learn.microsoft.com/azure/azure-managed-lustre/amlfs-prerequisites ("Network size requirements").
#: The same rule the storagecache getRequiredAmlFSSubnetsSize invoke answers; kept as data so the plan
#: needs no cloud call.
AMLFS_SUBNET_TABLE = ((16, 27), (40, 26), (92, 25), (196, 24), (400, 23))
#: pulumi-azure-native AmlFilesystem.filesystem_subnet: "should have at least a /24 subnet mask".
AMLFS_SDK_MIN_PREFIX = 24
#: Prefix of the subnet delegated to Microsoft.NetApp/volumes (a /24 holds every ANF volume layout).
NETAPP_SUBNET_PREFIX = 24

#: Ranges a VNet must not use. VNet FAQ ("What address ranges can I use in my VNets?"): 224.0.0.0/4, 255.255.255.255/32,
#: 127.0.0.0/8, 169.254.0.0/16 and 168.63.129.16/32 cannot be added; setup-infiniband.md: "The RDMA network in Azure
#: reserves the address space 172.16.0.0/16", which the VNet must not overlap.
AZURE_RESERVED_RANGES = (
    ("172.16.0.0/16", "which Azure's RDMA (InfiniBand) network reserves"),
    ("127.0.0.0/8", "the loopback range Azure refuses in a VNet"),
    ("169.254.0.0/16", "the link-local range Azure refuses in a VNet"),
    ("168.63.129.16/32", "Azure's platform address"),
)
_CAPACITY_RESERVATION_GROUP = re.compile(
    r"^/subscriptions/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/resourceGroups/[-\w.()]{1,90}"
    r"/providers/Microsoft\.Compute/capacityReservationGroups/[-\w.]{1,80}$",
    re.IGNORECASE,
)
_IMAGE_ID = re.compile(
    r"^/subscriptions/[0-9a-f-]{36}/resourceGroups/[-\w.()]+/providers/Microsoft\.Compute/"
    r"(images/[-\w.]+|galleries/[\w.]+/images/[-\w.]+/versions/(?P<gallery_version>[^/]+))$",
    re.IGNORECASE,
)
_SHARED_IMAGE = re.compile(
    r"^/(SharedGalleries|CommunityGalleries)/[^/]+/Images/[^/]+/Versions/(?P<version>[^/]+)$", re.IGNORECASE
)


def split_islands(nodes: int, max_island: int) -> tuple[int, ...]:
    """Nodes per InfiniBand island: as few islands as the cap allows, sizes as even as possible.

    >>> split_islands(256, 100)
    (86, 85, 85)
    """
    count = max(1, math.ceil(nodes / max_island))
    base, extra = divmod(nodes, count)
    return tuple([base + 1] * extra + [base] * (count - extra))


def computer_name_prefixes(name: str, islands: int) -> tuple[str, ...]:
    """One computer name prefix per island scale set, all distinct.

    A Uniform scale set names each VM ``<prefix><instance id as 6 base-36 digits>`` and every scale set
    counts from ``000000``, so islands that shared a prefix would boot duplicate hostnames into one VNet
    (Open MPI, Slurm and Azure-provided DNS all key on the hostname). One island keeps the plain name;
    several get ``i<index>``. Hostnames have a fixed-width tail, so distinct prefixes give distinct names.

    >>> computer_name_prefixes("llm-train", 2)
    ('llm-traini0', 'llm-traini1')
    """
    if islands == 1:
        return (name[:COMPUTER_NAME_PREFIX_MAX].rstrip("-"),)
    out = []
    for i in range(islands):
        suffix = f"i{i}"
        out.append(name[: COMPUTER_NAME_PREFIX_MAX - len(suffix)].rstrip("-") + suffix)
    return tuple(out)


_BASE36 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def vmss_hostnames(prefix: str, count: int) -> list[str]:
    """Hostnames of instances 0..count-1 of a Uniform scale set with computer name ``prefix``.

    "Understand names and instance IDs for Azure Virtual Machine Scale Set VMs": the computer name is
    ``{computer-name-prefix}{base-36-instance-id}``, the id always six base-36 digits (instance 85 of prefix
    "nsgvmss" is "nsgvmss00002D"), and it is the VM's hostname in the Azure-provided DNS of its VNet.

    >>> vmss_hostnames("llm", 2)
    ['llm000000', 'llm000001']
    """
    out = []
    for index in range(count):
        digits, n = "", index
        while True:
            n, r = divmod(n, 36)
            digits = _BASE36[r] + digits
            if n == 0:
                break
        out.append(f"{prefix}{digits.rjust(6, '0')}")
    return out


def amlfs_subnet_prefix(capacity_tib: float) -> int:
    """The largest prefix (smallest subnet) an Azure Managed Lustre file system of ``capacity_tib`` accepts.

    The docs' table stops at 400 TiB; beyond it each doubling of capacity takes one more bit, the
    table's own pattern. Never smaller than the /24 the SDK documents.
    """
    for limit, prefix in AMLFS_SUBNET_TABLE:
        if capacity_tib <= limit:
            return min(prefix, AMLFS_SDK_MIN_PREFIX)
    limit, prefix = AMLFS_SUBNET_TABLE[-1]
    while capacity_tib > limit:
        limit, prefix = limit * 2, prefix - 1
    return min(prefix, AMLFS_SDK_MIN_PREFIX)


def nodes_subnet_prefix(nodes: int) -> int:
    """The largest prefix (at most /24) whose subnet holds ``nodes`` VMs besides Azure's 5 reserved addresses."""
    prefix = 24
    while 2 ** (32 - prefix) - AZURE_RESERVED_PER_SUBNET < nodes:
        prefix -= 1
    return prefix


@dataclass(frozen=True)
class AddressPlan:
    """Subnets carved out of the VNet, by role."""

    subnets: dict[str, str]


#: Azure Bastion's subnet must be named AzureBastionSubnet and be /26 or larger (Microsoft Learn,
#: "Azure Bastion configuration settings": Subnet).
BASTION_SUBNET_PREFIX = 26


def address_plan(vnet_cidr: str, prefixes: dict[str, int]) -> AddressPlan | None:
    """Place one subnet per role in ``vnet_cidr`` (largest first, each aligned); ``None`` when they do not fit.

    The order of ``prefixes`` decides nothing: roles are placed by size (nodes first among equals), so the
    plan is stable.
    """
    net = ipaddress.ip_network(vnet_cidr, strict=True)
    cursor = int(net.network_address)
    end = int(net.broadcast_address) + 1
    out: dict[str, str] = {}
    for role, prefix in sorted(prefixes.items(), key=lambda kv: (kv[1], kv[0] != "nodes", kv[0])):
        if prefix < net.prefixlen:
            return None
        size = 2 ** (32 - prefix)
        cursor = -(-cursor // size) * size
        if cursor + size > end:
            return None
        out[role] = str(ipaddress.ip_network((cursor, prefix)))
        cursor += size
    return AddressPlan(subnets=out)


def vnet_problem(vnet_cidr: str) -> str | None:
    """Why ``vnet_cidr`` cannot be the cluster's VNet, or ``None``."""
    try:
        net = ipaddress.ip_network(vnet_cidr, strict=True)
    except ValueError as e:
        return f"is not an IPv4 network in CIDR form ({e})"
    if net.version != 4:
        return "is not IPv4 (Azure Managed Lustre accepts only IPv4)"
    for reserved, why in AZURE_RESERVED_RANGES:
        if net.overlaps(ipaddress.ip_network(reserved)):
            return f"overlaps {reserved}, {why}"
    # VNet FAQ: RFC 1918 ranges and the RFC 6598 shared space 100.64.0.0/10 (which Python's is_private excludes).
    if not (net.is_private or net.subnet_of(ipaddress.IPv4Network("100.64.0.0/10"))):
        return "is not a private range (RFC 1918 or 100.64.0.0/10)"
    return None


# ------------------------------------------------------------------ SSH keys


def _read_string(blob: bytes, offset: int) -> tuple[bytes, int]:
    (length,) = struct.unpack(">I", blob[offset : offset + 4])
    start = offset + 4
    if start + length > len(blob):
        raise ValueError("truncated key")
    return blob[start : start + length], start + length


def ssh_key_problem(key: str) -> str | None:
    """Why Azure would refuse this OpenSSH public key, or ``None``.

    Azure Linux VMs accept SSH-2 RSA keys of at least 2048 bits and Ed25519 keys; ECDSA and FIDO (sk-)
    keys are refused (learn.microsoft.com/azure/virtual-machines/linux/create-ssh-keys-detailed,
    "Supported SSH key formats").
    """
    parts = key.split()
    kind = parts[0] if parts else ""
    if kind not in ("ssh-rsa", "ssh-ed25519"):
        return f"is a {kind or 'blank'} key; Azure accepts only ssh-rsa (2048 bits or more) and ssh-ed25519 keys"
    try:
        blob = base64.b64decode(parts[1], validate=True)
        name, offset = _read_string(blob, 0)
        if name.decode() != kind:
            return f"says {kind} but its body holds a {name.decode(errors='replace')} key"
        if kind == "ssh-rsa":
            _exponent, offset = _read_string(blob, offset)
            modulus, offset = _read_string(blob, offset)
            bits = int.from_bytes(modulus, "big").bit_length()
            if bits < 2048:
                return f"is a {bits}-bit RSA key; Azure needs at least 2048 bits"
        else:
            point, offset = _read_string(blob, offset)
            if len(point) != 32:
                return "is not a valid Ed25519 key (the point is not 32 bytes)"
    except (IndexError, ValueError, binascii.Error, struct.error, UnicodeDecodeError):
        return "has a body that is not a valid OpenSSH key encoding"
    return None


# ------------------------------------------------------------------ images and reservations


def image_reference(ref: str) -> dict[str, str] | None:
    """The ImageReference fields for ``ref`` (a URN or a resource id), or ``None`` if it is neither.

    URN: ``publisher:offer:sku:version``. Ids: managed image, gallery image version, or a shared /
    community gallery image version.
    """
    parts = ref.split(":")
    if len(parts) == 4 and all(parts) and not ref.startswith("/"):
        return dict(zip(("publisher", "offer", "sku", "version"), parts, strict=True))
    if _IMAGE_ID.match(ref):
        return {"id": ref}
    m = _SHARED_IMAGE.match(ref)
    if m:
        key = "shared_gallery_image_id" if ref.lower().startswith("/sharedgalleries/") else "community_gallery_image_id"
        return {key: ref}
    return None


def image_problem(ref: str) -> str | None:
    """Why ``ref`` is not a pinned Azure image, or ``None``."""
    fields = image_reference(ref)
    if fields is None:
        return (
            "is not an Azure image: use a URN 'publisher:offer:sku:version' or the resource id of a "
            "managed image or gallery image version"
        )
    version = fields.get("version")
    if version is None:
        m = _IMAGE_ID.match(ref) or _SHARED_IMAGE.match(ref)
        version = (m.groupdict().get("gallery_version") or m.groupdict().get("version")) if m else None
    if version is not None and version.lower() == "latest":
        return "asks for 'latest', which moves when a new image ships and then replaces every node"
    return None


def capacity_reservation_problem(group_id: str) -> str | None:
    """Why ``group_id`` is not a capacity reservation group resource id, or ``None``."""
    if _CAPACITY_RESERVATION_GROUP.match(group_id):
        return None
    return (
        "is not a capacity reservation group id "
        "(/subscriptions/<guid>/resourceGroups/<rg>/providers/Microsoft.Compute/capacityReservationGroups/<name>)"
    )
