"""A plan says when nobody will be able to log in (review 2026-12-01, ux.md friction 2).

The bundled stacks carry a documentation key whose private half nobody has, and an AWS spec without any key
planned silently; both deploy a cluster that `provision ssh`, `exec` and `launch` cannot reach.
"""

from __future__ import annotations

from typing import Any

from conftest import stack_spec

from provision.clouds.base import plan_spec
from provision.spec import load_spec

REAL_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFuklxbbk6t4b9QFinnkHIycCB4EVKbeaSXofdzno6PC me@laptop"


def _login(warnings: tuple[str, ...]) -> list[str]:
    return [w for w in warnings if "nobody can log in" in w]


def _aws(**access: Any) -> Any:
    spec = {"name": "t1", "cloud": "aws", "region": "us-east-1", "gpu": "H100", "gpus": 16, "access": access}
    return plan_spec(load_spec(spec))


def test_a_bundled_stack_with_the_example_key_says_to_replace_it() -> None:
    warned = _login(plan_spec(stack_spec("aws-p5-16")).warnings)
    assert len(warned) == 1 and "EXAMPLE key" in warned[0] and "your own public key" in warned[0]


def test_an_aws_spec_without_keys_says_nobody_can_log_in() -> None:
    warned = _login(_aws().warnings)
    assert len(warned) == 1 and "no access.ssh_public_keys" in warned[0] and "provision ssh" in warned[0]


def test_a_real_key_gets_no_login_warning() -> None:
    assert _login(_aws(ssh_public_keys=[REAL_KEY]).warnings) == []


def test_gcp_os_login_needs_no_key_in_the_spec() -> None:
    assert _login(plan_spec(stack_spec("gcp-a3-64")).warnings) == []  # the example key is not installed there
    spec = stack_spec("gcp-a3-64").model_dump(mode="json", exclude_none=True)
    spec["access"]["ssh_public_keys"] = []
    assert _login(plan_spec(load_spec(spec)).warnings) == []


def _way_in(warnings: tuple[str, ...]) -> list[str]:
    return [w for w in warnings if "no way in from outside" in w]


def test_azure_stacks_without_a_bastion_say_their_private_nodes_have_no_way_in() -> None:
    """Review ux.md friction 2 and gcp.md B6 ("warn when allowed_cidrs is set but there is no path to the nodes"):
    the Azure stacks admit SSH from a public range that cannot route to the VNet's private addresses."""
    warned = _way_in(plan_spec(stack_spec("azure-ndh100-64")).warnings)
    assert len(warned) == 1 and "azure.bastion: true" in warned[0] and "203.0.113.0/24" in warned[0]
    spec = stack_spec("azure-ndh100-64").model_dump(mode="json", exclude_none=True)
    spec["azure"] = {"bastion": True}
    assert _way_in(plan_spec(load_spec(spec)).warnings) == []


def test_gcp_without_iap_and_alibaba_without_a_public_head_node_say_so_too() -> None:
    gcp = stack_spec("gcp-a3-64").model_dump(mode="json", exclude_none=True)
    assert _way_in(plan_spec(load_spec(gcp)).warnings) == []  # IAP is on by default
    gcp["gcp"]["allow_iap_ssh"] = False
    assert "gcp.allow_iap_ssh: true" in _way_in(plan_spec(load_spec(gcp)).warnings)[0]
    assert "access.public_head_node: true" in _way_in(plan_spec(stack_spec("alibaba-gn8-ci")).warnings)[0]


def test_aws_and_networks_on_a_vpn_need_no_such_warning() -> None:
    assert _way_in(plan_spec(stack_spec("aws-p5-16")).warnings) == []  # SSM Session Manager
    spec = stack_spec("azure-ndh100-64").model_dump(mode="json", exclude_none=True)
    spec["access"]["allowed_cidrs"] = ["10.8.0.0/16"]  # a VPN or peered range reaches private addresses
    assert _way_in(plan_spec(load_spec(spec)).warnings) == []
