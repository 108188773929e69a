"""The cluster spec: one pydantic model for every cloud.

Shape and cross-field rules live here; catalog feasibility (is this GPU sold in that
zone?) lives in :mod:`provision.planning.resolve`. Load a spec with :func:`load_spec` (a dict),
:func:`load_spec_file` (a spec YAML or a Pulumi stack file) or :func:`load_target`
(a stack name or a path); each reports every problem at once as a
:class:`~provision.spec.errors.SpecError`.
"""

from __future__ import annotations

import ipaddress
import math
import posixpath
import re
from datetime import timedelta
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationInfo,
    field_validator,
    model_validator,
)

from provision.catalog.models import CLOUDS, Cloud, Consumption, FabricKind, FilesystemKind
from provision.spec.cidrs import GLOBAL_V6 as _GLOBAL_V6
from provision.spec.cidrs import NON_PUBLIC_V4 as _NON_PUBLIC_V4
from provision.spec.cidrs import world_wide
from provision.spec.errors import MISSING, Problem
from provision.spec.objectstore import ObjectStore, object_store_problems
from provision.spec.options.alibaba import AlibabaOptions
from provision.spec.options.aws import AwsOptions
from provision.spec.options.azure import AzureOptions
from provision.spec.options.gcp import GcpOptions
from provision.spec.runtime import RuntimeSpec
from provision.spec.slurm import SlurmSpec
from provision.spec.units import Duration, SizeGiB, parse_network

#: The Pulumi project name; a stack file holds the spec under ``provision:cluster``.
PROJECT = "provision"
CONFIG_KEY = f"{PROJECT}:cluster"

NAME_PATTERN = r"^[a-z][a-z0-9-]{0,38}[a-z0-9]$"
# GCP label rules, the strictest of the four clouds, so a tag is valid everywhere.
LABEL_KEY_PATTERN = r"^[a-z][a-z0-9_-]{0,62}$"
LABEL_VALUE_PATTERN = r"^[a-z0-9_-]{0,63}$"
RESERVED_TAG_PREFIX = "provision-"

MAX_TTL = timedelta(days=90)
MIN_TTL = timedelta(minutes=30)
MAX_COST_USD = 10_000_000.0
MAX_GPUS = 65_536

_PUBLIC_KEY = re.compile(
    r"^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521)|sk-ssh-ed25519@openssh\.com|"
    r"sk-ecdsa-sha2-nistp256@openssh\.com) [A-Za-z0-9+/]+={0,3}( \S.*)?$"
)
_PRIVATE_KEY_MARKERS = ("PRIVATE KEY", "PuTTY-User-Key-File", "OPENSSH PRIVATE")
_WORLD = ("0.0.0.0/0", "::/0")

FabricChoice = Literal["auto", FabricKind]
SharedKind = Literal["auto", "none", FilesystemKind]


def _not_bool(v: Any) -> Any:
    """Refuse true/false where a number belongs: pydantic's lax mode reads ``gpus: yes`` as 1."""
    if isinstance(v, bool):
        raise ValueError("is true/false, not a number; write a number")
    return v


TagKey = Annotated[str, StringConstraints(pattern=LABEL_KEY_PATTERN)]
TagValue = Annotated[str, StringConstraints(pattern=LABEL_VALUE_PATTERN)]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)


# Mount points. Mounting a filesystem over a system folder hides it (a fresh XFS over /etc
# bricks the node) and the node script makes the mount point world-writable (chmod 1777).
#: Folders that may be neither a mount point nor contain one.
SYSTEM_TREES = (
    "/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/lost+found", "/proc", "/root",
    "/run", "/sbin", "/snap", "/sys", "/tmp", "/usr", "/var/cache", "/var/lib", "/var/log", "/var/run",
    "/var/spool", "/var/tmp",
)  # fmt: skip
#: Folders that may hold a mount point below them, but may not be one themselves.
SYSTEM_FOLDERS = ("/", "/home", "/media", "/mnt", "/opt", "/srv", "/var")


def _normpath(path: str) -> str:
    """``posixpath.normpath`` that also folds a leading ``//`` (POSIX keeps it: ``//etc`` stays ``//etc``), so
    ``//etc`` is checked, and mounted, as the ``/etc`` the kernel resolves it to."""
    norm = posixpath.normpath(path)
    return "/" + norm.lstrip("/") if norm.startswith("/") else norm


def mount_problem(path: str) -> str | None:
    """Why ``path`` may not be a mount point, or ``None`` when it may."""
    parts = path.split("/")
    if ".." in parts or "." in parts:
        return "contains '.' or '..'; write the absolute path itself"
    norm = _normpath(path)
    if ".ssh" in norm.split("/"):
        return "is inside a .ssh folder, which holds login keys"
    if norm in SYSTEM_FOLDERS:
        return f"is the system folder {norm}; mounting over it hides what the node needs"
    for tree in SYSTEM_TREES:
        if norm == tree or norm.startswith(tree + "/"):
            return f"is inside the system folder {tree}; mounting there breaks the node"
    if re.fullmatch(r"/home/[^/]+", norm):
        return "is a user's home folder; mounting over it hides the user's login keys"
    return None


def _mount(path: str) -> str:
    why = mount_problem(path)
    if why:
        raise ValueError(f"{why}; use a folder of its own such as /shared, /scratch or /mnt/data")
    return _normpath(path)


def covers_internet(cidrs: Any) -> bool:
    """Whether the union of ``cidrs`` covers the whole internet (all public IPv4, or all global IPv6).

    ``0.0.0.0/1`` + ``128.0.0.0/1`` is the internet as much as ``0.0.0.0/0`` is.
    """
    nets = []
    for c in cidrs:
        try:
            nets.append(ipaddress.ip_network(str(c).strip(), strict=False))
        except ValueError:
            continue
    v4 = [n for n in nets if isinstance(n, ipaddress.IPv4Network)]
    v6 = [n for n in nets if isinstance(n, ipaddress.IPv6Network)]
    if v4 and list(ipaddress.collapse_addresses([*v4, *_NON_PUBLIC_V4])) == [ipaddress.ip_network("0.0.0.0/0")]:
        return True
    return any(_GLOBAL_V6.subnet_of(n) for n in ipaddress.collapse_addresses(v6))


class SharedStorage(_Model):
    """A managed shared filesystem mounted on every node."""

    kind: SharedKind = Field(
        default="auto",
        description="Filesystem service; 'auto' picks the cloud's parallel filesystem "
        "(FSx for Lustre, Managed Lustre, Azure Managed Lustre, CPFS).",
    )
    size_gib: SizeGiB | None = Field(
        default=None, description="Capacity, e.g. 36000, '36TiB'; defaults to the service's minimum."
    )
    throughput_mbps_per_tib: int | None = Field(
        default=None, gt=0, description="Throughput tier in MB/s per TiB where the service sells tiers."
    )
    tier: str | None = Field(
        default=None,
        description="The cloud's tier name (PERSISTENT_2, SCRATCH_2, ZONAL, AMLFS-Durable-Premium-250, "
        "advance_200, ...); chosen from kind and throughput when absent.",
    )
    retain: bool = Field(default=False, description="Keep the filesystem when the cluster is destroyed.")
    object_store: ObjectStore | None = Field(default=None, description="The bucket linked to the filesystem.")
    volume: str | None = Field(
        default=None,
        pattern=NAME_PATTERN,
        description="Attach this existing volume (provision volume create) instead of creating a filesystem.",
    )  # noqa: E501
    mount: str = Field(default="/shared", pattern=r"^/[A-Za-z0-9._/-]*$", description="Mount point on nodes.")

    _numbers = field_validator("throughput_mbps_per_tib", mode="before")(_not_bool)
    _mount_point = field_validator("mount")(_mount)

    @field_validator("size_gib")
    @classmethod
    def _size_positive(cls, v: int | None) -> int | None:
        if v is not None and not 0 < v <= 100 * 1024 * 1024:
            raise ValueError("must be between 1 GiB and 100 PiB; give a size such as 36000 or '36TiB'")
        return v


class ScratchStorage(_Model):
    """The nodes' local NVMe disks."""

    raid0: bool = Field(default=True, description="Stripe all local NVMe disks into one RAID 0 volume.")
    mount: str = Field(default="/scratch", pattern=r"^/[A-Za-z0-9._/-]*$", description="Mount point.")

    _mount_point = field_validator("mount")(_mount)


class StorageSpec(_Model):
    shared: SharedStorage | None = Field(default=None, description="Shared filesystem; none when absent.")
    scratch: ScratchStorage = Field(default_factory=ScratchStorage, description="Local NVMe scratch.")

    @model_validator(mode="after")
    def _separate_mounts(self) -> StorageSpec:
        if self.shared is not None:
            a, b = self.shared.mount, self.scratch.mount
            if a == b or a.startswith(b.rstrip("/") + "/") or b.startswith(a.rstrip("/") + "/"):
                raise ValueError(
                    f"storage.shared.mount {a} and storage.scratch.mount {b} overlap, so one hides the other; "
                    "give each its own folder, e.g. /shared and /scratch"
                )
        return self


class ImageSpec(_Model):
    """Node image pins. Images are always pinned: a 'latest' lookup would replace every node."""

    id: str | None = Field(default=None, description="Exact image: AMI id, GCP image URL, Azure image URN.")
    family: str | None = Field(default=None, description="Image family or name prefix, resolved once and pinned.")
    versions: dict[str, str] = Field(
        default_factory=dict, description="Pinned software versions, e.g. {nccl: 2.23.4, cuda: '12.4'}."
    )


#: Accounts the node images already have: Debian base-passwd's static users (passwd.master) and the
#: service users of Ubuntu cloud images (systemd-* are refused by prefix). None of them may be the login user.
SYSTEM_ACCOUNTS = frozenset(
    {
        "root", "daemon", "bin", "sys", "sync", "games", "man", "lp", "mail", "news", "uucp", "proxy",
        "www-data", "backup", "list", "irc", "gnats", "nobody", "_apt", "messagebus", "syslog", "uuidd",
        "tcpdump", "sshd", "landscape", "pollinate", "lxd", "polkitd", "tss", "usbmux", "dnsmasq",
        "fwupd-refresh", "_chrony", "_rpc", "statd", "nfsnobody",
    }
)  # fmt: skip


class AccessSpec(_Model):
    """Who may log in, and from where. Private nodes by default."""

    model_config = ConfigDict(frozen=True, extra="forbid", hide_input_in_errors=True)

    ssh_user: str = Field(default="ubuntu", pattern=r"^[a-z_][a-z0-9_-]{0,31}$", description="Login user.")
    allow_world_ssh: bool = Field(default=False, description="Explicit opt-in to SSH from 0.0.0.0/0 or ::/0.")

    ssh_public_keys: tuple[str, ...] = Field(
        default=(), description="OpenSSH public keys ('ssh-ed25519 AAAA... comment')."
    )
    allowed_cidrs: tuple[str, ...] = Field(
        default=(), description="Networks allowed to reach SSH. Empty: reachable only inside the cluster."
    )
    public_head_node: bool = Field(default=False, description="Give node 0 a public IP (SSH only).")

    @field_validator("ssh_user")
    @classmethod
    def _login_user(cls, user: str) -> str:
        if user in SYSTEM_ACCOUNTS or user.startswith("systemd-"):
            raise ValueError(
                f"{user!r} is {'the superuser' if user == 'root' else 'a system account of the node image'}: "
                "the nodes create the login user with passwordless sudo and an SSH key, so this would open a "
                "root or service account to SSH; use a normal login name such as 'ubuntu'"
            )
        return user

    @field_validator("ssh_public_keys")
    @classmethod
    def _public_keys(cls, keys: tuple[str, ...]) -> tuple[str, ...]:
        for i, key in enumerate(keys):
            if any(m in key for m in _PRIVATE_KEY_MARKERS):
                raise ValueError(
                    f"[{i}] is a PRIVATE key; never paste a private key into a spec. Use the matching "
                    "public key (the .pub file, e.g. ~/.ssh/id_ed25519.pub) and rotate this private key"
                )
            if not _PUBLIC_KEY.match(key.strip()):
                raise ValueError(
                    f"[{i}] is not an OpenSSH public key; paste one line such as 'ssh-ed25519 AAAA... you@host'"
                )
        return tuple(k.strip() for k in keys)

    @field_validator("allowed_cidrs")
    @classmethod
    def _cidrs(cls, cidrs: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        nets = []
        for c in cidrs:
            net = parse_network(c, "203.0.113.0/24")
            if net.prefixlen == 0 and not info.data.get("allow_world_ssh", False):
                raise ValueError(
                    f"{c} opens SSH to the whole internet; list your own networks instead, "
                    "or set access.allow_world_ssh: true to accept the risk"
                )
            nets.append(net)
        if covers_internet(cidrs) and not info.data.get("allow_world_ssh", False):
            raise ValueError(
                f"{', '.join(cidrs)} together cover the whole internet, which opens SSH to everyone as 0.0.0.0/0 "
                "does; list your own networks instead, or set access.allow_world_ssh: true to accept the risk"
            )
        if world_wide(cidrs) and not info.data.get("allow_world_ssh", False):
            raise ValueError(
                f"{', '.join(cidrs)} hold more public addresses than a /8 (16,777,216), a large part of the "
                "internet, which is world access; list your own networks instead, or set "
                "access.allow_world_ssh: true to accept the risk"
            )
        # Merge: an exact duplicate, or a network inside another listed one, adds nothing but a
        # second identical firewall rule (AWS refuses duplicate security-group rules).
        kept = []
        for i, net in enumerate(nets):
            covered = any(
                j != i
                and other.version == net.version
                and net.subnet_of(other)  # type: ignore[arg-type]
                and (other != net or j < i)
                for j, other in enumerate(nets)
            )
            if not covered:
                # The canonical CIDR text: a bare address becomes its /32 (/128). AWS's provider
                # refuses a bare address in a security-group rule (terraform-provider-aws
                # internal/verify/validate.go ValidateIPv4CIDRBlock: net.ParseCIDR).
                kept.append(str(net))
        return tuple(kept)


class CapacitySpec(_Model):
    """How the capacity is bought."""

    type: Consumption = Field(default="on-demand", description="Consumption model.")
    reservation: str | None = Field(
        default=None,
        pattern=r"^/?[A-Za-z0-9][A-Za-z0-9._:/()-]{0,254}$",
        description="Reservation / Capacity Block id or name (reservation, capacity-block).",
    )
    max_price_per_hour_usd: float | None = Field(default=None, gt=0, description="Spot bid ceiling per node-hour.")

    _numbers = field_validator("max_price_per_hour_usd", mode="before")(_not_bool)

    @model_validator(mode="after")
    def _reservation_needed(self) -> CapacitySpec:
        if self.type in ("reservation", "capacity-block") and not self.reservation:
            raise ValueError(
                f"capacity type {self.type!r} needs capacity.reservation; "
                "set reservation to the reservation (or Capacity Block) id or name"
            )
        if self.reservation and self.type not in ("reservation", "capacity-block"):
            raise ValueError(
                f"capacity.reservation is set but capacity.type is {self.type!r}; "
                "set type: reservation (or capacity-block), or drop reservation"
            )
        if self.max_price_per_hour_usd is not None and self.type != "spot":
            raise ValueError("capacity.max_price_per_hour_usd applies to spot only; set type: spot or drop it")
        return self


#: A Kubernetes object name: an RFC 1123 DNS label (namespaces, queues).
K8S_NAME_PATTERN = r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$"


class SchedulerSpec(_Model):
    """What runs the jobs: the nodes themselves (``none``) or the cloud's managed Kubernetes."""

    kind: Literal["none", "kubernetes", "slurm"] = Field(
        default="none",
        description="'none': plain VMs (SSH, torchrun over the hostfile). 'kubernetes': the cloud's managed "
        "Kubernetes (GKE, EKS, AKS) with the GPU fabric wired into pods, Kueue and Kubeflow Trainer. 'slurm': "
        "the VMs plus a Slurm controller (sbatch/srun, enroot + pyxis containers).",
    )
    slurm: SlurmSpec | None = Field(default=None, description="Slurm options (kind slurm only).")
    version: str | None = Field(
        default=None,
        pattern=r"^1\.[0-9]{2}$",
        description="Kubernetes minor version (EKS, AKS, e.g. '1.35'); GKE follows its release channel. Default: a "
        "version in standard support.",
    )
    system_nodes: int = Field(
        default=2, ge=1, le=10, description="Nodes of the CPU pool for cluster services (DNS, operators, queues)."
    )
    system_instance_type: str | None = Field(
        default=None, description="Machine type of the system pool (default e2-standard-4 / m6i.xlarge)."
    )
    namespace: str = Field(default="training", pattern=K8S_NAME_PATTERN, description="Namespace for training jobs.")
    queue: str = Field(default="training", pattern=K8S_NAME_PATTERN, description="Kueue LocalQueue jobs go to.")

    _numbers = field_validator("system_nodes", mode="before")(_not_bool)

    @model_validator(mode="after")
    def _only_with_kubernetes(self) -> SchedulerSpec:
        if self.slurm is not None and self.kind != "slurm":
            raise ValueError(f"scheduler.slurm applies to kind slurm only (kind is {self.kind!r}); set kind: slurm")
        if self.kind != "kubernetes":
            given = [k for k in ("version", "system_instance_type") if getattr(self, k) is not None]
            if given:
                raise ValueError(
                    f"scheduler.{given[0]} applies to kind kubernetes only; set kind: kubernetes or drop it"
                )
        return self


class LifetimeSpec(_Model):
    """How long the cluster may live and what it may cost."""

    ttl: Duration | None = Field(default=None, description="Lifetime, e.g. '6h'. Enforced in the cloud.")
    max_cost_usd: float | None = Field(
        default=None, description="Cost cap in USD for the whole lifetime; derives the lifetime when ttl is absent."
    )
    hourly_price_usd: float | None = Field(
        default=None, description="Price per node-hour to use when the catalog has none (or to override it)."
    )

    _numbers = field_validator("max_cost_usd", "hourly_price_usd", mode="before")(_not_bool)

    @field_validator("ttl")
    @classmethod
    def _ttl_range(cls, v: timedelta | None) -> timedelta | None:
        if v is None:
            return v
        if v < MIN_TTL:
            raise ValueError("must be at least 30m (clouds refuse shorter self-destruct timers); use 30m or longer")
        if v > MAX_TTL:
            raise ValueError("is over 90d, which is almost certainly a typo; omit ttl for a long-lived cluster")
        return v

    @field_validator("max_cost_usd", "hourly_price_usd")
    @classmethod
    def _money(cls, v: float | None) -> float | None:
        if v is None:
            return v
        if not math.isfinite(v) or v <= 0:
            raise ValueError("must be a positive, finite amount of USD; write a number such as 5000")
        if v > MAX_COST_USD:
            raise ValueError(
                f"is above {MAX_COST_USD:,.0f} USD, which is almost certainly a typo; check the number of digits"
            )
        return v


class FailoverOption(_Model):
    """Where to try next when the cloud has no capacity: fields that replace the spec's for one try.

    A new region without a zone lets the catalog pick the zone; the cost cap, lifetime and every
    other field stay the spec's. Every option is planned (and priced) before anything is created.
    """

    region: str | None = Field(default=None, min_length=1, description="Region to try instead.")
    zone: str | None = Field(default=None, min_length=1, description="Zone to try instead.")
    instance_type: str | None = Field(
        default=None, min_length=1, description="Instance type to try instead (must carry the spec's GPU)."
    )
    capacity: CapacitySpec | None = Field(default=None, description="Consumption model to try instead.")

    @model_validator(mode="after")
    def _changes_something(self) -> FailoverOption:
        if not self.model_dump(exclude_none=True):
            raise ValueError("changes nothing; give a region, zone, instance_type or capacity to try instead")
        return self


class ClusterSpec(_Model):
    """One GPU training cluster, on any of the four clouds."""

    name: str = Field(pattern=NAME_PATTERN, description="2-40 characters: lowercase letters, digits, '-'.")
    cloud: Cloud = Field(description="Cloud provider.")
    region: str = Field(min_length=1, description="Region, e.g. us-east-1, us-central1, eastus, cn-wulanchabu.")
    zone: str | None = Field(default=None, description="Zone; chosen from the catalog when absent.")
    gpu: str | None = Field(
        default=None, description="Accelerator model (H100, H200, A100-80GB, ...) or 'H100:64' for model and count."
    )
    gpus: int | None = Field(default=None, gt=0, le=MAX_GPUS, description="Total GPUs (a multiple of GPUs per node).")
    nodes: int | None = Field(default=None, gt=0, le=MAX_GPUS, description="Node count (instead of gpus).")
    instance_type: str | None = Field(default=None, description="Instance type; chosen from the catalog when absent.")
    fabric: FabricChoice = Field(default="auto", description="GPU network; 'auto' takes the type's best fabric.")
    storage: StorageSpec = Field(default_factory=StorageSpec, description="Shared and scratch storage.")
    image: ImageSpec = Field(default_factory=ImageSpec, description="Node image pins.")
    runtime: RuntimeSpec | None = Field(default=None, description="What jobs run in (default: images/runtime.yaml).")
    access: AccessSpec = Field(default_factory=AccessSpec, description="Login access.")
    capacity: CapacitySpec = Field(default_factory=CapacitySpec, description="Consumption model.")
    lifetime: LifetimeSpec = Field(default_factory=LifetimeSpec, description="TTL and cost cap.")
    scheduler: SchedulerSpec = Field(
        default_factory=SchedulerSpec, description="What runs the jobs: plain VMs (none) or managed Kubernetes."
    )
    tags: dict[TagKey, TagValue] = Field(default_factory=dict, description="Extra tags/labels on every resource.")
    owner: str | None = Field(default=None, description="Owner recorded in tags; defaults to the local user name.")
    failover: Annotated[tuple[FailoverOption, ...], Field(max_length=10)] | Literal["auto"] = Field(
        default=(),
        description="On a capacity error (no stock), `up` tries these in order: other zones, regions, instance "
        "types or capacity types ('auto': derived from the catalog's offers, cheapest first; `provision plan` "
        "lists them). Quota and permission errors fail at once.",
    )
    aws: AwsOptions | None = Field(default=None, description="AWS-only options.")
    gcp: GcpOptions | None = Field(default=None, description="GCP-only options.")
    azure: AzureOptions | None = Field(default=None, description="Azure-only options.")
    alibaba: AlibabaOptions | None = Field(default=None, description="Alibaba-only options.")

    _numbers = field_validator("gpus", "nodes", mode="before")(_not_bool)

    @model_validator(mode="before")
    @classmethod
    def _gpu_shorthand(cls, data: Any) -> Any:
        # Only a well-formed shorthand that agrees with gpus is expanded; anything else stays as
        # written and cross_field_problems reports it with its path, beside every other problem
        # (raising here would stop pydantic from checking the other fields).
        if isinstance(data, dict) and isinstance(data.get("gpu"), str) and ":" in data["gpu"]:
            model, count = _gpu_shorthand_parts(data["gpu"])
            if count is not None and data.get("gpus") in (None, count):
                data = {**data, "gpu": model, "gpus": count}
        return data

    @field_validator("tags")
    @classmethod
    def _tags(cls, tags: dict[str, str]) -> dict[str, str]:
        reserved = [k for k in tags if k.startswith(RESERVED_TAG_PREFIX)]
        if reserved:
            raise ValueError(
                f"tag {reserved[0]!r} uses the prefix 'provision-', reserved for tags this library sets; rename it"
            )
        if len(tags) > 40:
            raise ValueError("has more than 40 tags (the clouds allow 50 and this library sets up to 10); drop some")
        return tags

    @field_validator("owner")
    @classmethod
    def _owner(cls, v: str | None) -> str | None:
        if v is not None and not re.match(LABEL_VALUE_PATTERN, v):
            raise ValueError(
                "must be up to 63 lowercase letters, digits, '_' or '-' (it becomes a label); write it like 'jane-doe'"
            )
        return v

    @model_validator(mode="after")
    def _cross_fields(self, info: ValidationInfo) -> ClusterSpec:
        if info.context and info.context.get("cross_fields_checked"):
            return self
        found = cross_field_problems(self.model_dump(exclude_none=True))
        if found:
            raise ValueError("; ".join(f"{p.rule} ({p.fix})" for p in found))
        return self

    def cloud_options(self) -> Any:
        """This cloud's option model (its defaults when the spec gives none)."""
        # The section's own model (the field named after the cloud, ``X | None``) gives the defaults.
        model = next(a for a in get_args(type(self).model_fields[self.cloud].annotation) if a is not type(None))
        return getattr(self, self.cloud) or model()


def _gpu_shorthand_parts(gpu: str) -> tuple[str, int | None]:
    """``"H100:64"`` -> ``("H100", 64)``; the count is ``None`` when it is not a whole number."""
    model, _, count = gpu.partition(":")
    count = count.strip()
    return model.strip(), int(count) if count.isascii() and count.isdigit() else None


def cross_field_problems(data: dict[str, Any]) -> list[Problem]:
    """Rules that tie several fields together, checked on the raw mapping.

    Running them on raw data (not only in a model validator) lets one report list them
    beside field errors: pydantic skips model validators once any field fails.
    """
    out: list[Problem] = object_store_problems(data)
    gpu = data.get("gpu")
    if gpu is None and data.get("instance_type") is None:
        out.append(
            Problem(
                "gpu",
                MISSING,
                "is required when instance_type is absent",
                "give gpu (e.g. H100) or instance_type (e.g. p5.48xlarge), or both",
            )
        )
    if data.get("gpus") is None and data.get("nodes") is None and not (isinstance(gpu, str) and ":" in gpu):
        out.append(
            Problem(
                "gpus", MISSING, "is required when nodes is absent", "give gpus (total GPUs, e.g. 64) or nodes (e.g. 8)"
            )
        )
    if isinstance(gpu, str) and ":" in gpu:
        model, count = _gpu_shorthand_parts(gpu)
        if count is None:
            out.append(
                Problem("gpu", gpu, "has a count after ':' that is not a whole number", f"write it like '{model}:64'")
            )
        elif data.get("gpus") not in (None, count):
            out.append(
                Problem(
                    "gpus",
                    data.get("gpus"),
                    f"disagrees with gpu {gpu!r} ({count} GPUs)",
                    "keep one: drop the count from gpu or drop gpus",
                )
            )
    cloud = data.get("cloud")
    if cloud in CLOUDS:
        for other in CLOUDS:
            if other != cloud and data.get(other) is not None:
                out.append(
                    Problem(
                        other,
                        "{...}",
                        f"holds {other} options on a {cloud} cluster",
                        f"move them under '{cloud}:' or remove them",
                    )
                )
    zone, region = data.get("zone"), data.get("region")
    if (
        isinstance(zone, str)
        and isinstance(region, str)
        and region
        and cloud != "azure"
        and not zone.startswith(region)
    ):
        out.append(Problem("zone", zone, f"is not in region {region!r}", "pick a zone of that region or drop zone"))
    return out


__all__ = [
    "AccessSpec",
    "FailoverOption",
    "CapacitySpec",
    "ClusterSpec",
    "ImageSpec",
    "LifetimeSpec",
    "SchedulerSpec",
    "ScratchStorage",
    "SharedStorage",
    "StorageSpec",
    "cross_field_problems",
]
