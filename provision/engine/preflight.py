"""Checks against the live cloud account before anything is created: offerings and quota.

The catalog says what a cloud sells; the account says what it will sell *you*. Each cloud that can be asked
declares its check in its own folder (``clouds/<cloud>/preflight.py``, reached through
:meth:`provision.clouds.base.Adapter.preflight`, and what it asks in ``Adapter.preflight_asks``): AWS asks
zone offerings and the P-instance vCPU quota, Azure resource providers, size restrictions and quota. This
module only dispatches and never names a cloud. On clouds without one the plan's catalog checks apply and
capacity errors are reported by the cloud at creation.
"""

from __future__ import annotations

from typing import Any

from provision.clouds.base import get_adapter
from provision.planning.plan import ClusterPlan
from provision.spec.errors import Problem, SpecError
from provision.spec.secrets import scrub


class PreflightError(SpecError):
    """The live account cannot hold the plan (a zone not offering the type, a quota, a restricted size): exit 2.

    Raised before anything exists, so a ``failover`` option may be tried next at no cost.
    """


def preflight(plan: ClusterPlan, session: Any = None) -> list[Problem]:
    """The live-account checks for ``plan``'s cloud; ``[]`` where the cloud declares none.

    ``session`` is what the cloud's check asks (a client factory on AWS, an account on Azure; tests pass fakes);
    ``None`` asks the real account. Needs the cloud's credentials and SDKs (its extra); creates nothing.
    """
    return get_adapter(plan.cloud).preflight(plan, session)


def check_before_up(plan: ClusterPlan, session: Any = None) -> str | None:
    """The live-account checks a real ``up`` runs before it creates anything, or ``None`` to go on.

    A zone not offering the type, a zero quota or an unregistered resource provider otherwise surfaces minutes
    into ``pulumi up``, after the network and storage exist.

    Raises:
        PreflightError: every problem the account has with this plan (exit 2); nothing was created.

    Returns:
        A warning when the account could not be asked (no SDK, no credentials, no ``AZURE_SUBSCRIPTION_ID``,
        an API error such as AccessDenied): the check is advisory then and ``up`` goes on; else ``None``.
    """
    adapter = get_adapter(plan.cloud)
    if adapter.preflight_asks is None:
        return None
    label, checked = adapter.preflight_asks
    try:
        problems = adapter.preflight(plan, session)
    except Exception as e:  # noqa: BLE001 - any failure to *ask* must not stop an up the cloud may accept
        cloud = label.split()[0]
        return (
            f"the {cloud} preflight did not run ({type(e).__name__}: {scrub(str(e))[:300]}), so {checked} were not "
            "checked before creating"
        )
    if problems:
        raise PreflightError(f"the {label} cannot hold {plan.name!r} as planned; nothing was created", problems)
    return None
