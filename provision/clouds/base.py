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
from datetime import datetime, timezone
from typing import Any, ClassVar

from provision.catalog import Catalog, InstanceOffer, load_catalog
from provision.planning.access import login_warnings
from provision.planning.cost import estimate, expiry, price_basis_warnings, spend_warnings
from provision.planning.images import check_image, default_image
from provision.planning.kubernetes import KubernetesPlan, system_price_note
from provision.planning.plan import ClusterPlan, ImagePlan, StoragePlan
from provision.planning.resolve import Resolution, resolve
from provision.spec import ClusterSpec
from provision.spec.errors import ProblemCollector, SpecError, UnsupportedError

#: Tags every resource carries (contract: the reaper and cost reports rely on them).
TAG_CLUSTER = "provision-cluster"
TAG_OWNER = "provision-owner"
TAG_EXPIRES = "provision-expires-at"
TAG_STACK = "provision-stack"
#: The Pulumi provider config key that sets each cloud's default region.
PROVIDER_REGION_KEYS = {
    "aws": "aws:region",
    "gcp": "gcp:region",
    "azure": "azure-native:location",
    "alibaba": "alicloud:region",
}
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


class Adapter(ABC):
    """One cloud. Subclasses set the class attributes and implement the hooks."""

    cloud: ClassVar[str]
    #: The pip extra that installs this cloud's SDK, e.g. ``aws`` for ``provision[aws]``.
    extra: ClassVar[str]
    #: Python modules ``build`` needs; checked before importing ``components``.
    sdk_modules: ClassVar[tuple[str, ...]]
    #: What this cloud cannot do, with the reason (shown in errors and ``provision offers``).
    limits: ClassVar[dict[str, str]] = {}
    #: What deletes the nodes in the cloud at the expiry (``None``: nothing but the reaper).
    lifetime_mechanism: ClassVar[str | None] = None
    #: What ends managed-Kubernetes nodes at the expiry (``scheduler: kubernetes``); None: as the VMs.
    kubernetes_lifetime_mechanism: ClassVar[str | None] = None
    #: Whether ``components.build`` creates the Slurm controller (``scheduler: slurm``); the seam a cloud
    #: plugs into: its build renders the controller and node files with :mod:`provision.planning.slurm`.
    slurm_controller: ClassVar[bool] = False

    # ------------------------------------------------------------------ plan (pure)
    def plan(
        self,
        spec: ClusterSpec,
        *,
        catalog: Catalog | None = None,
        now: datetime | None = None,
        owner: str | None = None,
        stack: str | None = None,
    ) -> ClusterPlan:
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
        cost = estimate(
            spec,
            catalog,
            offer,
            nodes,
            storage,  # type: ignore[arg-type]
            scheduler=k8s is not None,
            scheduler_hourly_usd=k8s.hourly_usd if k8s is not None else None,
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
        warnings.extend(price_basis_warnings(spec, offer, res.storage))
        warnings.extend(login_warnings(spec))
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
            )
        if k8s is not None:
            image = ImagePlan(ref=k8s.extra["node_image"], source=f"{k8s.control_plane.service} managed node image")
            # Under Kubernetes the environment is the one pods see (their interface names and paths).
            nccl_env = dict(k8s.job.env)
        else:
            image = self.image(spec, offer, res.fabric)
            nccl_env = self.nccl_env(offer, res.fabric)
            # Versions reach root scripts on every node: strict patterns and compatibility rules first.
            image_problems = check_image(image, res.fabric, nccl_env)
            if image_problems:
                raise SpecError(problems=image_problems)
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
            scratch=spec.storage.scratch,
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
        )

    def unsupported(self, offer: InstanceOffer) -> str | None:
        """What ``plan`` lacks for ``offer`` (a catalog row listed for ``offers`` and ``size``), or ``None``.

        Every node image and bootstrap step provision ships is x86_64 (``images/<cloud>.yaml``); NVIDIA Grace
        hosts (GB200) are arm64. ``limits["arm64"]`` names what else the cloud's path would need.
        """
        if offer.cpu_arch == "x86_64":
            return None
        extra = self.limits.get("arm64")
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
            + self.limits.get("kubernetes", "no managed Kubernetes path exists for this cloud"),
            "use scheduler.kind: none (plain VMs), or a gcp / aws cluster for Kubernetes",
        )

    def kubernetes_plan(self, spec: ClusterSpec, res: Resolution) -> KubernetesPlan:
        """The managed Kubernetes cluster (called only when :meth:`check_kubernetes` found nothing)."""
        raise UnsupportedError(f"no Kubernetes plan for {self.cloud}")

    def kubernetes_warnings(self, spec: ClusterSpec, res: Resolution, k8s: KubernetesPlan) -> list[str]:
        """Warnings of the Kubernetes plan (lifetime enforcement, version support, prices)."""
        note = system_price_note(self.cloud, spec.region, k8s.system_pool)
        return [note] if note else []

    def extra_plan(self, spec: ClusterSpec, res: Resolution) -> dict[str, Any]:
        """Cloud-specific decisions to carry into ``build`` (JSON-serialisable)."""
        return {}

    # ------------------------------------------------------------------ build (Pulumi)
    def build(self, plan: ClusterPlan) -> dict[str, Any]:
        """Create the cluster's Pulumi resources; returns the stack outputs (see DESIGN.md).

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

#: cloud -> "module:Class". Adapter modules are pure; importing one loads no cloud SDK.
ADAPTERS: dict[str, str] = {
    "aws": "provision.clouds.aws.adapter:AwsAdapter",
    "gcp": "provision.clouds.gcp.adapter:GcpAdapter",
    "azure": "provision.clouds.azure.adapter:AzureAdapter",
    "alibaba": "provision.clouds.alibaba.adapter:AlibabaAdapter",
}


def get_adapter(cloud: str) -> Adapter:
    """The adapter for ``cloud`` (imported on first use).

    Raises:
        UnsupportedError: no adapter is registered for ``cloud``.
    """
    target = ADAPTERS.get(cloud)
    if target is None:
        raise UnsupportedError(f"no adapter for cloud {cloud!r}; to fix: use one of {', '.join(ADAPTERS)}")
    module_name, _, cls_name = target.partition(":")
    cls = getattr(importlib.import_module(module_name), cls_name)
    return cls()  # type: ignore[no-any-return]


def plan_spec(spec: ClusterSpec, **kwargs: Any) -> ClusterPlan:
    """Shortcut: ``get_adapter(spec.cloud).plan(spec, **kwargs)``."""
    return get_adapter(spec.cloud).plan(spec, **kwargs)
