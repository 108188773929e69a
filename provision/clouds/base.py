"""The adapter contract, the shared plan steps and outputs, and the lazy registry.

An adapter has two halves:

* ``plan(spec) -> ClusterPlan`` is pure: catalog checks (shared, in :mod:`provision.planning.resolve`)
  plus the cloud's own rules (:meth:`Adapter.check`), all problems reported at once,
  then cost, lifetime, tags, image and NCCL environment. No SDK or Pulumi calls.
* ``build(plan) -> outputs`` only turns the plan into Pulumi resources. It lives in the
  cloud's ``components.py``, imported lazily so ``import provision`` loads no cloud SDK.
"""

from __future__ import annotations

import getpass
import importlib
import importlib.util
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping
from datetime import datetime, timezone
from enum import Enum
from types import MappingProxyType
from typing import Any, ClassVar, Generic

from provision.catalog import Catalog, InstanceOffer, load_catalog
from provision.catalog.models import CLOUDS
from provision.planning.access import login_warnings
from provision.planning.cost import estimate, estimate_line, expiry, price_basis_warnings, spend_warnings
from provision.planning.images import check_image, default_image
from provision.planning.kubernetes import KubernetesPlan, system_pool_estimate, system_price_note
from provision.planning.plan import ClusterPlan, ImagePlan, P, StoragePlan
from provision.planning.resolve import Resolution, resolve
from provision.planning.runtime import plan_runtime
from provision.spec import ClusterSpec
from provision.spec.errors import Problem, ProblemCollector, SpecError, UnsupportedError

#: Tags every resource carries (contract: the reaper and cost reports rely on them).
TAG_CLUSTER = "provision-cluster"
TAG_OWNER = "provision-owner"
TAG_EXPIRES = "provision-expires-at"
TAG_STACK = "provision-stack"
#: Tag value that marks a resource the user chose to keep (storage.shared.retain).
TAG_RETAIN = "provision-retain"


def label_time(t: datetime | None) -> str:
    """A timestamp that satisfies every cloud's label rules: ``20261129t1955z``; ``never`` for none."""
    if t is None:
        return "never"
    return t.astimezone(timezone.utc).strftime("%Y%m%dt%H%Mz")


def parse_label_time(value: str) -> datetime | None:
    """Inverse of :func:`label_time` (``None`` for ``never`` or garbage)."""
    try:
        return datetime.strptime(value, "%Y%m%dt%H%Mz").replace(tzinfo=timezone.utc)
    except ValueError:
        return None


def default_owner() -> str:
    """The local user name, made label-safe."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return re.sub(r"[^a-z0-9_-]", "-", user.lower())[:63] or "unknown"


class Limit(str, Enum):
    """What a cloud's path may not do: the keys of :attr:`Adapter.limits`, one vocabulary for every cloud."""

    ARM64 = "arm64"
    KUBERNETES = "kubernetes"
    PUBLIC_HEAD_NODE = "public_head_node"
    LIFETIME = "lifetime"
    GANG_SIZE = "gang_size"
    SPOT_GANG = "spot_gang"
    ALL_OR_NOTHING = "all_or_nothing"
    SPOT_MAX_PRICE = "spot_max_price"
    CAPACITY_BLOCK = "capacity_block"
    CAPACITY_RESERVATION = "capacity_reservation"
    FABRIC_ISLAND = "fabric_island"
    FABRIC_INTERFACES = "fabric_interfaces"
    FILESYSTEM = "filesystem"

    @property
    def label(self) -> str:
        """What the limit is about, for people."""
        return _LIMIT_LABELS[self]


_LIMIT_LABELS: Mapping[Limit, str] = MappingProxyType(
    {
        Limit.ARM64: "arm64 (NVIDIA Grace) hosts",
        Limit.KUBERNETES: "scheduler.kind: kubernetes",
        Limit.PUBLIC_HEAD_NODE: "a public head node",
        Limit.LIFETIME: "deleting everything at the expiry",
        Limit.GANG_SIZE: "all-or-nothing node count",
        Limit.SPOT_GANG: "all-or-nothing spot nodes",
        Limit.ALL_OR_NOTHING: "all-or-nothing on-demand or spot nodes",
        Limit.SPOT_MAX_PRICE: "a spot max price",
        Limit.CAPACITY_BLOCK: "capacity blocks",
        Limit.CAPACITY_RESERVATION: "capacity reservations",
        Limit.FABRIC_ISLAND: "nodes in one fabric island",
        Limit.FABRIC_INTERFACES: "fabric interfaces per node",
        Limit.FILESYSTEM: "shared filesystems",
    }
)


def limit_lines(limits: Mapping[Limit, str]) -> list[str]:
    """The one rendering of a cloud's limits: ``<what>: <reason>`` per limit, in :class:`Limit` order."""
    return [f"{limit.label}: {limits[limit]}" for limit in Limit if limit in limits]


class Adapter(ABC, Generic[P]):
    """One cloud. Subclasses set the class attributes and implement the hooks.

    Generic in the cloud's part of the plan (``AwsAdapter(Adapter[AwsPlan])``): :meth:`extra_plan` returns it,
    :meth:`plan` carries it as ``ClusterPlan[P].extra`` and the cloud's ``build`` reads it typed.
    """

    cloud: ClassVar[str]
    #: The pip extra that installs this cloud's SDK, e.g. ``aws`` for ``provision[aws]``.
    extra: ClassVar[str]
    #: Python modules ``build`` needs; checked before importing ``components``.
    sdk_modules: ClassVar[tuple[str, ...]]
    #: What this cloud's path cannot do, with the reason (shown in errors and ``provision offers --cloud``).
    limits: ClassVar[Mapping[Limit, str]] = {}
    #: What deletes the nodes in the cloud at the expiry (``None``: nothing but the reaper).
    lifetime_mechanism: ClassVar[str | None] = None
    #: What ends managed-Kubernetes nodes at the expiry (``scheduler: kubernetes``); None: as the VMs.
    kubernetes_lifetime_mechanism: ClassVar[str | None] = None
    #: The live-account check before a real ``up``, declared by every cloud: (what is asked, what it checks),
    #: e.g. ``("AWS account", "zone offerings and the vCPU quota")``, implemented as ``preflight(plan, session)``
    #: in ``clouds/<cloud>/preflight.py``; ``None``: the cloud has none (capacity errors come at creation).
    preflight_asks: ClassVar[tuple[str, str] | None] = None
    #: What the cloud's tag sweeper sweeps (``"region"``, ``"subscription"``) when the state is gone, declared by
    #: every cloud: ``sweep(target, delete, client)`` in ``clouds/<cloud>/sweeper.py``; ``None``: it has none.
    sweeper: ClassVar[str | None] = None
    #: Whether the cluster's subnets are pinned to its zone (so a try in another zone needs a new network, and
    #: a subnet replaced in place would collide with its own CIDR); ``False``: they span the region's zones.
    network_zonal: ClassVar[bool] = False
    #: The node-group resource whose own error list holds a stock-out its create does not report (an instant
    #: EC2 Fleet, a GCP managed instance group), read by ``group_errors(plan, resources, session)`` in
    #: ``clouds/<cloud>/stockout.py``; ``None``: the cloud's creates carry their stock codes.
    listed_errors_of: ClassVar[str | None] = None
    #: The Slurm controller's default machine type when ``components.build`` creates one (``scheduler: slurm``),
    #: else ``None``; the seam a cloud plugs into: its build renders the controller and node files with
    #: :mod:`provision.planning.slurm`, and the plan prices the controller from the catalog's ``cpu_instances``.
    slurm_controller: ClassVar[str | None] = None

    # ------------------------------------------------------------------ hooks into the cloud's account
    def preflight(self, plan: ClusterPlan, session: Any = None) -> list[Problem]:
        """Problems the live account has with ``plan`` (``[]`` when none, or when the cloud has no preflight).

        ``session`` is what the cloud's check asks (its client factory or account; tests pass fakes), ``None``:
        the real account from the environment. Imports ``clouds/<cloud>/preflight.py`` only when called.
        """
        if self.preflight_asks is None:
            return []
        module = importlib.import_module(f"provision.clouds.{self.cloud}.preflight")
        return module.preflight(plan, session)  # type: ignore[no-any-return]

    def group_errors(self, plan: ClusterPlan, resources: list[dict[str, Any]], session: Any = None) -> list[str]:
        """The error codes the node group of a failed ``up`` lists about itself (``[]``: none, or nothing to ask).

        ``resources`` are the stack's (``type``, ``name``, ``id``) after the failure; ``session`` is what the
        cloud's call asks (a client factory or account; the mocked cloud passes its own), ``None``: the real
        account. Imports ``clouds/<cloud>/stockout.py`` only when called.
        """
        if self.listed_errors_of is None:
            return []
        module = importlib.import_module(f"provision.clouds.{self.cloud}.stockout")
        ids = [str(r.get("id") or "") for r in resources if r.get("type") == self.listed_errors_of]
        return module.group_errors(plan, [i for i in ids if i], session)  # type: ignore[no-any-return]

    def sweep(self, target: str, delete: bool, client: Any = None) -> list[dict[str, Any]]:
        """Expired clusters found by their tags in ``target`` (deleted with ``delete``), one report row each.

        Calls ``sweep`` of ``clouds/<cloud>/sweeper.py`` (imported only when called); ``client``: tests pass fakes.

        Raises:
            UnsupportedError: this cloud declares no sweeper.
        """
        if self.sweeper is None:
            raise UnsupportedError(f"{self.cloud} has no tag sweeper; `provision reap` reaches it through its stacks")
        module = importlib.import_module(f"provision.clouds.{self.cloud}.sweeper")
        return module.sweep(target, delete, client)  # type: ignore[no-any-return]

    # ------------------------------------------------------------------ plan (pure)
    def plan(
        self,
        spec: ClusterSpec,
        *,
        catalog: Catalog | None = None,
        now: datetime | None = None,
        owner: str | None = None,
        stack: str | None = None,
    ) -> ClusterPlan[P]:
        """Resolve ``spec`` into a plan.

        Args:
            spec: a validated spec for this adapter's cloud.
            catalog: the offer catalog (the packaged one when ``None``).
            now: the creation time the lifetime counts from (UTC now when ``None``).
            owner: recorded in tags (``spec.owner``, else the local user).
            stack: the Pulumi stack name, recorded in tags when given.

        Raises:
            SpecError: every problem the catalog and this cloud's rules found.
            BudgetError: the cost cap refuses the plan.
        """
        if spec.cloud != self.cloud:
            raise UnsupportedError(f"the {self.cloud} adapter cannot plan a {spec.cloud} cluster")
        catalog = catalog or load_catalog()
        now = (now or datetime.now(timezone.utc)).replace(microsecond=0)
        found = ProblemCollector()
        res = resolve(spec, catalog, found, today=now.date())
        self._check_supported(catalog, res, found)
        self.check(spec, res, found)
        k8s = self._kubernetes(spec, res, found)
        if spec.scheduler.kind == "slurm" and not self.slurm_controller:
            found.add(
                "scheduler.kind",
                "slurm",
                f"is not supported on {self.cloud} yet: its build does not create the Slurm controller",
                "use scheduler.kind: none (plain VMs, torchrun over the hostfile)",
            )
        found.raise_if_any(SpecError)
        assert res.offer is not None and res.nodes is not None and res.fabric is not None  # noqa: S101
        offer, nodes = res.offer, res.nodes
        storage = (res.storage, res.storage_size_gib, res.storage_throughput) if res.storage else None
        sched_part, sched_usd = ("kubernetes", k8s.hourly_usd) if k8s is not None else ("", None)
        sched_guess = (
            system_pool_estimate(self.cloud, spec.region, k8s.system_pool.instance_type) if k8s is not None else None
        )
        if spec.scheduler.kind == "slurm" and self.slurm_controller:
            from provision.planning.slurm import controller_plan

            ctl = controller_plan(spec, self.slurm_controller)
            sched_part = f"slurm controller ({ctl.instance_type})"
            sched_usd = catalog.cpu_hourly(self.cloud, ctl.instance_type, spec.region)
            sched_guess = catalog.cpu_estimate(self.cloud, ctl.instance_type, spec.region)
        if spec.storage.shared is not None and spec.storage.shared.volume is not None:
            storage = None  # an attached volume is billed by its own stack while it lives (plan shows it beside)
        cost = estimate(
            spec,
            catalog,
            offer,
            nodes,
            storage,  # type: ignore[arg-type]
            scheduler=bool(sched_part),
            scheduler_hourly_usd=sched_usd,
            scheduler_part=sched_part or "kubernetes",
            scheduler_estimated=sched_guess is not None,
        )
        expires_at = expiry(now, cost.lifetime_hours)
        warnings = [*res.warnings, *self.warnings(spec, res)]
        if k8s is not None:
            warnings += self.kubernetes_warnings(spec, res, k8s)
        if cost.unpriced and spec.lifetime.max_cost_usd is not None and cost.hourly_usd is not None:
            warnings.append(
                f"the cost cap counts only the priced parts; {', '.join(cost.unpriced)} have no catalog price "
                "and are not counted against it."
            )
        elif cost.unpriced:
            warnings.append(
                f"no catalog price for: {', '.join(cost.unpriced)}; the hourly estimate "
                + (
                    "is missing (set lifetime.hourly_price_usd to price the nodes)."
                    if cost.hourly_usd is None
                    else "leaves those parts out."
                )
            )
        warnings.extend(spend_warnings(spec, cost.hourly_usd))
        warnings.extend(price_basis_warnings(spec, offer, res.storage, nodes, cost))
        if sched_guess is not None and sched_part in cost.estimated:
            what = "the system pool" if k8s is not None else "the controller"
            warnings.append(estimate_line(sched_part, sched_guess, f"per node-hour for {what}"))
        warnings.extend(login_warnings(spec))
        scratch = _scratch(spec, offer, warnings)
        tags = {
            **spec.tags,
            TAG_CLUSTER: spec.name,
            TAG_OWNER: spec.owner or owner or default_owner(),
            TAG_EXPIRES: label_time(expires_at),
        }
        if stack:
            tags[TAG_STACK] = re.sub(r"[^a-z0-9_-]", "-", stack.lower())[:63]
        storage_plan = None
        if res.storage is not None and spec.storage.shared is not None:
            from provision.planning.cost import storage_hourly_usd

            storage_plan = StoragePlan(
                kind=res.storage.kind,
                tier=res.storage.tier,
                protocol=res.storage.protocol,
                size_gib=res.storage_size_gib or 0,
                throughput_mbps_per_tib=res.storage_throughput,
                retain=spec.storage.shared.retain,
                mount=spec.storage.shared.mount,
                hourly_usd=storage_hourly_usd(
                    res.storage, res.storage_size_gib or 0, res.storage_throughput, spec.region
                ),
                offer=res.storage,
                volume=spec.storage.shared.volume,
                object_store=spec.storage.shared.object_store.uri if spec.storage.shared.object_store else None,
            )
        if k8s is not None:
            image = ImagePlan(ref=k8s.extra.node_image, source=f"{k8s.control_plane.service} managed node image")
            # Under Kubernetes the environment is the one pods see (their interface names and paths).
            nccl_env = dict(k8s.job.env)
            runtime = None  # a TrainJob names its own image
        else:
            image = self.image(spec, offer, res.fabric)
            nccl_env = self.nccl_env(offer, res.fabric)
            # Versions reach root scripts on every node: strict patterns and compatibility rules first.
            image_problems = check_image(image, res.fabric, nccl_env)
            # The job runtime's CUDA against the node image's driver, before anything is created.
            runtime, runtime_problems = plan_runtime(spec, offer.gpu_vendor, res.fabric, image.versions)
            if image_problems or runtime_problems:
                raise SpecError(problems=[*image_problems, *runtime_problems])
            if runtime.source.startswith("no digest-pinned default"):
                warnings.append(f"runtime: {runtime.source}.")
        return ClusterPlan(
            spec=spec,
            name=spec.name,
            cloud=spec.cloud,
            region=spec.region,
            zone=res.zone,
            instance_type=offer.instance_type,
            offer=offer,
            nodes=nodes,
            gpus=nodes * offer.gpus_per_node,
            gpus_per_node=offer.gpus_per_node,
            fabric=res.fabric,
            fabric_interfaces=offer.fabric_interfaces if res.fabric != "none" else 0,
            islands=self.islands(spec, res),
            capacity=spec.capacity,
            storage=storage_plan,
            scratch=scratch,
            image=image,
            access=spec.access,
            tags=tags,
            created_at=now,
            expires_at=expires_at,
            lifetime_enforced_by=self.lifetime_enforcement(spec) if expires_at is not None else None,
            cost=cost,
            nccl_env=nccl_env,
            warnings=tuple(warnings),
            options=spec.cloud_options(),
            extra=self.extra_plan(spec, res),
            kubernetes=k8s,
            runtime=runtime,
        )

    def unsupported(self, offer: InstanceOffer) -> str | None:
        """What ``plan`` lacks for ``offer`` (a catalog row listed for ``offers`` and ``size``), or ``None``.

        Every node image and bootstrap step provision ships is x86_64 (``images/<cloud>.yaml``); NVIDIA Grace
        hosts (GB200) are arm64. ``limits[Limit.ARM64]`` names what else the cloud's path would need.
        """
        if offer.cpu_arch == "x86_64":
            return None
        extra = self.limits.get(Limit.ARM64)
        return (
            f"its hosts are {offer.cpu_arch} (NVIDIA Grace) and provision ships x86_64 node images and bootstrap "
            "only" + (f"; also missing: {extra}" if extra else "")
        )

    def _check_supported(self, catalog: Catalog, res: Resolution, found: ProblemCollector) -> None:
        offer = res.offer
        missing = self.unsupported(offer) if offer is not None else None
        if offer is None or missing is None:
            return

        def peak(o: InstanceOffer) -> float:
            model = catalog.gpu(o.gpu)
            return model.bf16_dense_tflops if model else 0.0

        # The fastest (then largest-memory) supported types of the same vendor on this cloud, as the way out.
        usable = sorted(
            (
                o
                for o in catalog.instances_for(self.cloud)
                if self.unsupported(o) is None and o.gpu_vendor == offer.gpu_vendor
            ),
            key=lambda o: (-peak(o), -o.gpu_memory_gib),
        )
        found.add(
            "instance_type",
            offer.instance_type,
            f"is not yet supported by `provision plan`: {missing}",
            (f"use {' or '.join(o.instance_type for o in usable[:2])} on {self.cloud}; " if usable else "")
            + f"`provision offers` and `provision size` still list {offer.instance_type}",
        )

    def check(self, spec: ClusterSpec, res: Resolution, found: ProblemCollector) -> None:  # noqa: B027
        """Add this cloud's own problems to ``found`` (after the shared catalog checks)."""

    def lifetime_enforcement(self, spec: ClusterSpec) -> str | None:
        """What deletes this spec's nodes in the cloud at the expiry, or ``None`` when only the reaper does."""
        if spec.scheduler.kind == "kubernetes" and self.kubernetes_lifetime_mechanism is not None:
            return self.kubernetes_lifetime_mechanism
        return self.lifetime_mechanism

    def warnings(self, spec: ClusterSpec, res: Resolution) -> list[str]:
        """Warnings the plan shows for this cloud (e.g. lifetime enforcement gaps)."""
        return []

    def sized_options(self, nodes: int) -> tuple[dict[str, Any], tuple[str, ...]]:
        """The ``<cloud>:`` spec options a cluster of ``nodes`` nodes needs before ``plan`` accepts it, each with its
        reason (``size --write-spec`` writes them for very large runs); none by default."""
        return {}, ()

    def islands(self, spec: ClusterSpec, res: Resolution) -> tuple[int, ...]:
        """Nodes per fabric island in rank order; one island by default."""
        return (res.nodes or 0,)

    def image(self, spec: ClusterSpec, offer: InstanceOffer, fabric: str) -> ImagePlan:
        """The pinned image: the spec's id, else the default in ``images/<cloud>.yaml``."""
        return default_image(spec, offer, fabric)

    @abstractmethod
    def nccl_env(self, offer: InstanceOffer, fabric: str) -> dict[str, str]:
        """The NCCL / libfabric / RCCL environment for this type and fabric."""

    def _kubernetes(self, spec: ClusterSpec, res: Resolution, found: ProblemCollector) -> KubernetesPlan | None:
        if spec.scheduler.kind != "kubernetes":
            return None
        before = len(found.problems)
        self.check_kubernetes(spec, res, found)
        if len(found.problems) > before or res.offer is None or res.nodes is None or res.fabric is None:
            return None
        return self.kubernetes_plan(spec, res)

    def check_kubernetes(self, spec: ClusterSpec, res: Resolution, found: ProblemCollector) -> None:
        """Problems of ``scheduler.kind: kubernetes`` on this cloud; by default it is not supported yet."""
        found.add(
            "scheduler.kind",
            "kubernetes",
            f"is not supported on {self.cloud} yet: "
            + self.limits.get(Limit.KUBERNETES, "no managed Kubernetes path exists for this cloud"),
            "use scheduler.kind: none (plain VMs), or a gcp / aws / azure cluster for Kubernetes",
        )

    def kubernetes_plan(self, spec: ClusterSpec, res: Resolution) -> KubernetesPlan:
        """The managed Kubernetes cluster (called only when :meth:`check_kubernetes` found nothing)."""
        raise UnsupportedError(f"no Kubernetes plan for {self.cloud}")

    def kubernetes_warnings(self, spec: ClusterSpec, res: Resolution, k8s: KubernetesPlan) -> list[str]:
        """Warnings of the Kubernetes plan (lifetime enforcement, version support, prices)."""
        note = system_price_note(self.cloud, spec.region, k8s.system_pool)
        return [note] if note else []

    @abstractmethod
    def extra_plan(self, spec: ClusterSpec, res: Resolution) -> P:
        """The cloud's own decisions to carry into ``build`` (``ClusterPlan.extra``; ``clouds/<cloud>/plan.py``)."""

    # ------------------------------------------------------------------ build (Pulumi)
    def build(self, plan: ClusterPlan[P]) -> dict[str, Any]:
        """Create the cluster's Pulumi resources; returns the stack outputs (see docs/contracts.md).

        Raises:
            UnsupportedError: this cloud's SDK is not installed (names the pip extra).
        """
        self.require_sdk()
        if plan.kubernetes is not None:
            self.require_kubernetes_sdk()
            module = importlib.import_module(f"provision.clouds.{self.cloud}.kubernetes")
            return module.build(plan)  # type: ignore[no-any-return]
        module = importlib.import_module(f"provision.clouds.{self.cloud}.components")
        return module.build(plan)  # type: ignore[no-any-return]

    def require_kubernetes_sdk(self) -> None:
        """Raises ``UnsupportedError`` naming the ``kubernetes`` extra when pulumi-kubernetes is missing."""
        if importlib.util.find_spec("pulumi_kubernetes") is None:
            raise UnsupportedError(
                "scheduler.kind kubernetes needs pulumi-kubernetes; to fix: pip install 'provision[kubernetes]'"
            )

    def require_sdk(self) -> None:
        missing = [m for m in self.sdk_modules if importlib.util.find_spec(m) is None]
        if missing:
            raise UnsupportedError(
                f"the {self.cloud} SDK is not installed (missing {', '.join(missing)}); "
                f"to fix: pip install 'provision[{self.extra}]'"
            )


# ---------------------------------------------------------------------- registry

#: cloud -> its adapter module, one per cloud of the catalog (``catalog.models.CLOUDS``). The module defines
#: exactly one :class:`Adapter` subclass whose ``cloud`` is that cloud. Adapter modules are pure; importing
#: one loads no cloud SDK.
ADAPTERS: Mapping[str, str] = MappingProxyType({c: f"provision.clouds.{c}.adapter" for c in CLOUDS})


def adapter_class(cloud: str) -> type[Adapter]:
    """The :class:`Adapter` subclass of ``cloud`` (its module imported on first use).

    Raises:
        UnsupportedError: no adapter is registered for ``cloud``, or its module does not define exactly one.
    """
    module_name = ADAPTERS.get(cloud)
    if module_name is None:
        raise UnsupportedError(f"no adapter for cloud {cloud!r}; to fix: use one of {', '.join(ADAPTERS)}")
    module = importlib.import_module(module_name)
    found = [
        c
        for c in vars(module).values()
        if isinstance(c, type) and issubclass(c, Adapter) and c.__module__ == module_name and c.cloud == cloud
    ]
    if len(found) != 1:
        raise UnsupportedError(
            f"{module_name} defines {len(found)} adapters of cloud {cloud!r}; to fix: define exactly one "
            "Adapter subclass with that `cloud` (docs/adding-a-cloud.md)"
        )
    return found[0]


def get_adapter(cloud: str) -> Adapter[Any]:
    """The adapter for ``cloud`` (imported on first use).

    Raises:
        UnsupportedError: no adapter is registered for ``cloud``.
    """
    return adapter_class(cloud)()


def plan_spec(spec: ClusterSpec, **kwargs: Any) -> ClusterPlan[Any]:
    """Shortcut: ``get_adapter(spec.cloud).plan(spec, **kwargs)``."""
    return get_adapter(spec.cloud).plan(spec, **kwargs)


def _scratch(spec: ClusterSpec, offer: InstanceOffer, warnings: list[str]) -> Any:
    """``storage.scratch`` for this type: RAID 0 over local NVMe only where the catalog records local NVMe disks.

    Types the catalog records with ``local_nvme_disks: 0`` (every Alibaba GPU type: the ECS instance-family pages list
    cloud disks only for ebmgn8v, gn8v and gn7e) have nothing to stripe, and the critical scratch step would fail on
    every node; there the plan turns it off and says so. Unknown (``null``) keeps the spec's choice.
    """
    scratch = spec.storage.scratch
    if scratch.raid0 and offer.local_nvme_disks == 0:
        warnings.append(
            f"storage.scratch.raid0 is off: {offer.instance_type} has no local NVMe disk (catalog), so there is no "
            f"{scratch.mount} volume; keep working data on the shared file system or a data disk."
        )
        return scratch.model_copy(update={"raid0": False})
    return scratch
