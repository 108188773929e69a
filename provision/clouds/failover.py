"""Failover on capacity errors: the spec's alternatives, each planned before anything exists.

A spec may list ``failover`` options (other zones, regions, instance types or capacity types).
``up`` tries the spec first; when the cloud answers that it has no stock, the next option is tried: in
the same region on the same stack, so the network and a filesystem still valid there are kept and only what
the option changes is replaced (:func:`keeps_network`); in another region after what the try created is
removed. Quota and permission errors are not retried: another zone
does not raise a quota, so they fail at once with the quota named.

Try 0 is the spec as written; try ``i`` (1-based) is the spec with ``failover[i-1]``'s fields in
place of its own (a new region without a zone lets the catalog pick the zone) and no failover list.
The chosen try is recorded with the stack (``provision:failover`` in its config, or the mocked
state's spec), so a later ``up`` keeps the cluster where it landed instead of moving it back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from provision.clouds.failover_auto import apply_option
from provision.spec.errors import BudgetError, CapacityError, Problem, ProvisionError, QuotaError, SpecError

if TYPE_CHECKING:
    from provision.planning.plan import ClusterPlan
    from provision.spec import ClusterSpec
    from provision.spec.models import FailoverOption

#: The stack config key that records which try holds the cluster (0: the spec as written).
CONFIG_KEY = "provision:failover"

#: Codes meaning "no stock here now": another zone, region or capacity type may have it.
#: AWS: docs.aws.amazon.com/AWSEC2/latest/APIReference/errors-overview.html; GCP:
#: cloud.google.com/compute/docs/troubleshooting/troubleshooting-resource-availability; Azure:
#: learn.microsoft.com/troubleshoot/azure/virtual-machines/windows/allocation-failure; Alibaba: ECS
#: RunInstances error codes (OperationDenied.NoStock).
STOCK_CODES = (
    "InsufficientInstanceCapacity",
    "InsufficientHostCapacity",
    "InsufficientReservedInstanceCapacity",
    "ZONE_RESOURCE_POOL_EXHAUSTED",
    # GKE node pools report a zone stock-out as "[GCE_STOCKOUT]: Instance ... creation failed: The zone ... does
    # not have enough resources available to fulfill the request" (hashicorp/terraform-provider-google#6287).
    "GCE_STOCKOUT",
    "does not have enough resources available",
    "OverconstrainedAllocationRequest",
    "ZonalAllocationFailed",
    "AllocationFailed",
    "OperationDenied.NoStock",
)
#: Codes meaning "your quota is used up": no failover helps; the user must ask for more.
QUOTA_CODES = (
    "VcpuLimitExceeded",
    "InstanceLimitExceeded",
    "MaxSpotInstanceCountExceeded",
    "QUOTA_EXCEEDED",
    "QuotaExceeded",
    "QuotaExceed",
)


def capacity_error(text: str, message: str) -> CapacityError | None:
    """The error for a cloud failure whose ``text`` holds a stock or quota code; ``None`` for other failures."""
    quota = next((c for c in QUOTA_CODES if c in text), "")
    if quota:
        return QuotaError(
            f"{message}: the quota is used up ({quota}). To fix: ask the cloud for a larger quota "
            "(another zone or region does not help)",
            code=quota,
        )
    stock = next((c for c in STOCK_CODES if c in text), "")
    if stock:
        return CapacityError(f"{message}: the cloud has no capacity ({stock})", code=stock)
    return None


def listed_capacity_error(
    plan: ClusterPlan, resources: list[dict[str, Any]], message: str, detail: str, session: Any = None
) -> CapacityError | None:
    """The stock or quota error a failed ``up``'s node group lists about itself, when its create said no code.

    An instant EC2 Fleet and a GCP managed instance group report a stock-out only in their own error lists
    (``Adapter.group_errors``: DescribeFleets ``Errors``, ``instanceGroupManagers.listErrors``), so the failure
    reads as a plain cloud error until they are asked. ``resources`` are the stack's after the failure;
    ``detail`` is the failure's own text, kept in the message. ``None``: nothing listed a stock or quota code.
    """
    from provision.clouds.base import get_adapter

    listed = get_adapter(plan.cloud).group_errors(plan, resources, session)
    found = capacity_error("\n".join(listed), message)
    if found is not None:
        found.message = f"{found.message}; the node group lists: {'; '.join(listed)[:600]}.\n{detail}"
        found.args = (found.render(),)
    return found


def options(spec: ClusterSpec) -> tuple[FailoverOption, ...]:
    """The spec's failover options: its list, or for ``failover: auto`` the tries the catalog's offers give
    (:func:`provision.clouds.failover_auto.auto_tries`; pass the result on as ``opts`` to plan it only once)."""
    if spec.failover == "auto":
        from provision.clouds.failover_auto import auto_tries

        return auto_tries(spec).options
    return spec.failover


def alternative(spec: ClusterSpec, index: int, opts: tuple[FailoverOption, ...] | None = None) -> ClusterSpec:
    """Try ``index`` of ``spec``: 0 is the spec itself, ``i`` applies ``failover[i-1]`` (of ``opts`` when given).

    Raises:
        SpecError: the option makes an invalid spec (paths under ``failover[i-1]``).
        IndexError: no such option.
    """
    if index == 0:
        return spec
    opts = options(spec) if opts is None else opts
    if not 0 < index <= len(opts):
        raise IndexError(index)
    try:
        return apply_option(spec, opts[index - 1].model_dump(mode="json", exclude_none=True))
    except SpecError as e:
        raise SpecError(problems=[_under(index, p) for p in e.problems]) from None


def tries(spec: ClusterSpec, opts: tuple[FailoverOption, ...] | None = None) -> int:
    """How many tries the spec allows (1 + its failover options)."""
    return 1 + len(options(spec) if opts is None else opts)


def _under(index: int, p: Problem) -> Problem:
    return Problem(f"failover[{index - 1}].{p.path}" if p.path else f"failover[{index - 1}]", p.value, p.rule, p.fix)


def plan_all(
    spec: ClusterSpec, plan: Callable[[ClusterSpec], ClusterPlan], opts: tuple[FailoverOption, ...] | None = None
) -> list[ClusterPlan]:
    """Plan every try with ``plan``; all problems of all tries at once, before anything exists.

    With ``failover: auto`` the first plan's warnings name the derived tries, and those left out with why.

    Raises:
        SpecError: some try is infeasible (its problems carry ``failover[i]`` paths).
        BudgetError: no spec problem, but some try breaks the cost cap.
    """
    explained: tuple[str, ...] = ()
    if opts is None and spec.failover == "auto":
        from provision.clouds.failover_auto import auto_tries

        derived = auto_tries(spec)
        opts, explained = derived.options, derived.explanation()
    opts = options(spec) if opts is None else opts
    plans: list[ClusterPlan] = []
    spec_problems: list[Problem] = []
    budget_problems: list[Problem] = []
    for i in range(tries(spec, opts)):
        try:
            plans.append(plan(alternative(spec, i, opts)))
        except SpecError as e:
            spec_problems.extend(e.problems if i == 0 else [_under(i, p) for p in e.problems])
        except BudgetError as e:
            budget_problems.extend(e.problems if i == 0 else [_under(i, p) for p in e.problems])
    if spec_problems:
        raise SpecError(problems=spec_problems)
    if budget_problems:
        raise BudgetError("a failover option breaks the cost policy", budget_problems)
    if explained:
        plans[0] = plans[0].model_copy(update={"warnings": (*plans[0].warnings, *explained)})
    return plans


def deployed_try(
    spec: ClusterSpec, deployed: dict[str, Any] | None, opts: tuple[FailoverOption, ...] | None = None
) -> int | None:
    """Which try a deployed spec (as dumped to JSON) is, or ``None`` when it is none of them."""
    if deployed is None:
        return None
    opts = options(spec) if opts is None else opts
    for i in range(tries(spec, opts)):
        try:
            if alternative(spec, i, opts).model_dump(mode="json", exclude_none=True) == deployed:
                return i
        except ProvisionError:
            continue
    return None


def describe(spec: ClusterSpec, index: int, opts: tuple[FailoverOption, ...] | None = None) -> str:
    """A short label of a try: ``us-east-1a on-demand p5.48xlarge``."""
    s = alternative(spec, index, opts)
    parts = [s.zone or s.region, s.capacity.type]
    if s.instance_type:
        parts.append(s.instance_type)
    return " ".join(parts)
