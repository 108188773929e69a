"""Node user data: the common bootstrap and the in-guest lifetime backstop."""

from __future__ import annotations

import subprocess
from datetime import timedelta

from conftest import FIXED_NOW, stack_spec

from provision.clouds.base import get_adapter
from provision.planning.bootstrap import render_user_data, self_destruct_timer


def _plan(stack: str, **update):
    spec = stack_spec(stack)
    if update:
        spec = spec.model_copy(update=update)
    return get_adapter(spec.cloud).plan(spec, now=FIXED_NOW, owner="test")


def test_self_destruct_is_a_persistent_calendar_timer_at_the_expiry() -> None:
    plan = _plan("aws-p5-ci")
    timer = self_destruct_timer(plan)
    assert plan.expires_at == FIXED_NOW + timedelta(hours=2)
    assert "OnCalendar=2026-11-29 14:00:00 UTC" in timer
    assert "Persistent=true" in timer  # fires at the next boot when the expiry passed while the node was down
    assert "systemctl enable --now provision-expiry.timer" in timer
    assert "ExecStart=/bin/systemctl poweroff" in timer


def test_no_lifetime_means_no_timer() -> None:
    from provision.spec import LifetimeSpec

    plan = _plan("aws-p5-16", lifetime=LifetimeSpec())
    assert plan.expires_at is None
    assert "provision-expiry" not in self_destruct_timer(plan)


def test_rendered_user_data_is_valid_bash_and_holds_the_nccl_env() -> None:
    plan = _plan("aws-p5-ci")
    script = render_user_data(plan, cloud_setup="echo setup", shared_mount="echo mount")
    subprocess.run(["bash", "-n"], input=script, text=True, check=True)
    for key, value in plan.nccl_env.items():
        assert f"export {key}=" in script and value.split(",")[0] in script
    assert "${" + "CLUSTER}" not in script and plan.name in script
