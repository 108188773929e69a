"""The Bar of issue 13 over every shipped stack: health and the NCCL acceptance pass on healthy mocked nodes, and
name the broken node and check in each fake-broken scenario that applies to the stack."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest
from nodekit import plan_of

from provision.ops.health import check_health
from provision.ops.nccl import floor_for, nccl_test
from provision.ops.nccl_transport import expectation_for
from provision.ops.nodes import MockNodes, NodeFault, mock_user_data
from provision.planning.bootstrap import parse

STACKS = [
    "aws-p5-ci",
    "aws-p5-64",
    "gcp-a3-ci",
    "gcp-a3-64",
    "gcp-a3high-16",
    "gcp-a3ultra-64",
    "azure-ndh100-ci",
    "azure-ndh100-64",
    "alibaba-gn8-ci",
    "alibaba-gn8-64",
]
HOSTS = [f"10.0.0.{10 + i}" for i in range(3)]


def _plan(stack: str, nodes: int = 3) -> Any:
    # One island of 2 or 3 nodes: 3 name a slow node by pairs; the nccl-tests expectation needs >= 2.
    return plan_of(stack, nodes=nodes, islands=(nodes,))


def _node_files(plan: Any) -> dict[str, str]:
    """The files the rendered user data writes on a node, by path."""
    return {f["path"]: f["content"] for f in parse(mock_user_data(plan))["write_files"]}


def _rendered_expectations(plan: Any) -> dict[str, Any]:
    """What the node's own health check expects: /etc/provision/health.json of the rendered user data."""
    return json.loads(_node_files(plan)["/etc/provision/health.json"])  # type: ignore[no-any-return]


@cache
def _stack_files(stack: str, nodes: int) -> dict[str, str]:
    """:func:`_node_files` of ``_plan(stack, nodes)``, rendered once per process: the broken cases are grouped by
    them at collection and each case reads them again (callers must not change the dict)."""
    return _node_files(_plan(stack, nodes=nodes))


def _applies(expect: dict[str, Any], check: str) -> bool:
    return {
        "gpus": True,
        "driver": bool(expect.get("driver")) and expect.get("gpu_vendor") == "nvidia",
        "cuda": bool(expect.get("cuda")),
        "nvlink": bool(expect.get("nvlink")),
        "fabric": expect.get("fabric", "none") != "none" and bool(expect.get("fabric_devices")),
        "shared_fs": bool(expect.get("shared_fs")),
        "scratch": bool((expect.get("scratch") or {}).get("raid0")),
        "nccl_tests": bool(expect.get("nccl_tests")),
        "bootstrap": True,
    }[check]


CHECKS = ("gpus", "driver", "cuda", "nvlink", "fabric", "shared_fs", "scratch", "nccl_tests", "bootstrap")
#: The health.json fields a broken check's outcome depends on: those the check and its fake tools read, and those of
#: the other checks reading the same tool's output (one nvidia-smi answers gpus, driver, cuda and nvlink; one mount
#: table shared_fs and scratch), which must stay ok. bootstrap reads the step record, built from steps.json.
_GPU = ("gpu_vendor", "gpus", "gpu_model", "driver", "cuda", "nvlink")
READS: dict[str, tuple[str, ...]] = {
    "gpus": _GPU,
    "driver": _GPU,
    "cuda": _GPU,
    "nvlink": _GPU,
    "fabric": ("fabric", "fabric_devices", "gpu_nics"),
    "shared_fs": ("shared_fs", "scratch"),
    "scratch": ("shared_fs", "scratch"),
    "nccl_tests": ("nccl_tests",),
}


def _broken_cases() -> list[Any]:
    """One case per check and distinct input it reads: the stacks whose nodes give that check the same input share
    one run (named after all of them), so a new stack adds a case only where it brings something new to check."""
    groups: dict[tuple[str, str], list[str]] = {}
    for stack in STACKS:
        files = _stack_files(stack, 2)
        expect = json.loads(files["/etc/provision/health.json"])
        steps = [(s["name"], s["critical"]) for s in json.loads(files["/etc/provision/steps.json"])["steps"]]
        for check in CHECKS:
            reads = steps if check == "bootstrap" else {k: expect.get(k) for k in READS[check]}
            groups.setdefault((check, json.dumps(reads, sort_keys=True)), []).append(stack)
    return [pytest.param(check, stacks[0], id=f"{check}-{'+'.join(stacks)}") for (check, _), stacks in groups.items()]


@pytest.mark.parametrize("stack", STACKS)
def test_healthy_nodes_pass_health_and_the_nccl_test(stack: str) -> None:
    plan = _plan(stack)
    floor = floor_for(plan).busbw_gbps
    with MockNodes(plan, HOSTS, busbw_gbps=(floor or 80.0) * 1.25) as mock:
        report = check_health(mock.run)
        result = nccl_test(plan, HOSTS, mock.run)
    assert report.ok, report.failures()
    assert result.ok, result.lines()
    assert floor is None or result.busbw_gbps is not None and result.busbw_gbps >= floor
    # The transport NCCL logged is checked wherever the fabric has an expectation, and nothing is left to warn of.
    assert not result.transports.failures and not result.transports.warnings, result.lines()
    if expectation_for(plan.fabric) is not None:
        assert [n.node for n in result.transports.nodes if n.links and n.gdr_links == n.links] == [0, 1, 2]


@pytest.mark.parametrize(("check", "stack"), _broken_cases())
def test_each_broken_check_is_named_with_its_node(check: str, stack: str) -> None:
    plan = _plan(stack, nodes=2)
    if not _applies(json.loads(_stack_files(stack, 2)["/etc/provision/health.json"]), check):
        pytest.skip(f"{stack} expects no {check}")
    with MockNodes(plan, HOSTS[:2], [NodeFault(1, check)]) as mock:
        report = check_health(mock.run)
    assert [(f["rank"], f["host"], f["check"]) for f in report.failures()] == [(1, HOSTS[1], check)]
    assert any(f"node 1 ({HOSTS[1]}): {check} FAILED" in line for line in report.lines())


@pytest.mark.parametrize("stack", STACKS)
def test_a_slow_node_is_named_by_the_nccl_test(stack: str) -> None:
    plan = _plan(stack)
    floor = floor_for(plan).busbw_gbps
    if floor is None:
        pytest.skip(f"{stack} has no GPU fabric: no floor")
    with MockNodes(plan, HOSTS, [NodeFault(1, "bandwidth")], busbw_gbps=floor * 1.25) as mock:
        result = nccl_test(plan, HOSTS, mock.run)
    assert not result.ok and result.slow_nodes == [1] and "slow node: 1" in result.lines()


@pytest.mark.parametrize("stack", ["aws-p5-ci", "aws-p5-16", "aws-p5-64"])
def test_ssh_keys_at_the_plans_limit_still_fit_in_ec2_user_data(stack: str) -> None:
    """The plan refuses keys beyond MAX_EXTRA_KEY_BYTES because the bootstrap and the keys share EC2's 16 KB; keys
    just under that limit must then render (before: 9000 bytes were allowed and failed at render, past the plan)."""
    import base64
    import hashlib

    from provision.clouds.aws.adapter import MAX_EXTRA_KEY_BYTES
    from provision.clouds.aws.userdata import encode

    keys: list[str] = []
    i = 0
    while sum(len(k) + 1 for k in keys) + 100 < MAX_EXTRA_KEY_BYTES:
        # Incompressible key material, as real keys are (deterministic for the test).
        blob = hashlib.sha512(str(i).encode()).digest()[:51]
        keys.append("ssh-ed25519 " + base64.b64encode(blob).decode() + f" user{i}@host")
        i += 1
    plan = plan_of(stack)
    plan = plan.model_copy(update={"access": plan.access.model_copy(update={"ssh_public_keys": tuple(keys)})})
    assert encode(mock_user_data(plan))


def test_a_single_node_runs_all_reduce_over_nvlink_without_a_fabric_floor() -> None:
    plan = _plan("aws-p5-ci", nodes=1)
    assert _rendered_expectations(plan)["nccl_tests"]["source"] == "image"
    with MockNodes(plan, HOSTS[:1], busbw_gbps=300.0) as mock:
        result = nccl_test(plan, HOSTS[:1], mock.run)
    assert result.ok and result.floor.busbw_gbps is None and result.busbw_gbps == 300.0
