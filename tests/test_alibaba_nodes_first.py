"""The Alibaba GPU nodes are requested before (not after) the shared file system, and release themselves in time.

A node whose user data or dependencies name the file system waits for it in the graph: CPFS takes 20-40 minutes
to create (NAS API, CreateProtocolMountTarget), so every out-of-stock answer and every failover try first paid for
the file system, and a CPFS cluster with a lifetime under about 1.5 h asked RunInstances for an auto_release_time
under 30 minutes away ("The earliest release time is half an hour after the current time", ECS RunInstances
AutoReleaseTime). Both failed before the boot-time lookup (clouds/alibaba/storage.py).
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import pytest
from graph_deps import Graph, Registration, recorded_graph
from test_alibaba_graph import _test_catalog, spec

from conftest import FIXED_NOW, preview, stack_spec  # isort: skip

INSTANCE = "alicloud:ecs/instance:Instance"
CPFS = {"kind": "cpfs", "tier": "advance_200", "size_gib": 7200}
#: RunInstances AutoReleaseTime: at least 30 minutes after the call (ECS API reference, RunInstances).
RELEASE_MIN_MINUTES = 30


@pytest.fixture(scope="module", autouse=True)
def test_catalog() -> Any:
    with pytest.MonkeyPatch.context() as mp:
        catalog = _test_catalog()
        mp.setattr("provision.clouds.base.load_catalog", lambda: catalog)
        yield catalog


def _minutes(value: str) -> float:
    return float(value[:-1]) * {"m": 1, "h": 60, "s": 1 / 60}[value[-1]]


def _storage_types(graph: Graph, node: Registration) -> set[str]:
    return {
        graph.by_urn[u].type for u in graph.ancestors(node) if u in graph.by_urn and ":nas/" in graph.by_urn[u].type
    }


@pytest.mark.parametrize("stack", ["alibaba-gn8-64", "alibaba-gn8-ci"])
def test_no_gpu_node_of_a_shipped_stack_waits_for_the_file_system(stack: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.undo()  # the shipped stacks with the packaged catalog, as their golden tests
    with recorded_graph() as graph:
        preview(stack_spec(stack))
    nodes = graph.of_type(INSTANCE)
    assert nodes and any(":nas/fileSystem:" in r.type for r in graph.by_urn.values())
    for node in nodes:
        assert _storage_types(graph, node) == set(), node.name


def _upstream_minutes(graph: Graph, urn: str, memo: dict[str, float]) -> float:
    """The longest chain of create timeouts ``urn`` can wait through before it is created (its own included)."""
    if urn not in memo:
        reg = graph.by_urn.get(urn)
        own = _minutes(reg.custom_timeouts["create"]) if reg and "create" in reg.custom_timeouts else 0.0
        deps = reg.dependencies if reg else set()
        memo[urn] = own + max((_upstream_minutes(graph, d, memo) for d in deps), default=0.0)
    return memo[urn]


def test_a_short_lived_cpfs_cluster_still_gets_a_release_time_ecs_accepts() -> None:
    with recorded_graph() as graph:
        result = preview(spec(storage={"shared": CPFS}, lifetime={"ttl": "50m"}))
    memo: dict[str, float] = {}
    nodes = [r for r in result.as_dict()["resources"] if r["type"] == INSTANCE]
    assert nodes
    for node in nodes:
        release = dt.datetime.strptime(node["inputs"]["autoReleaseTime"], "%Y-%m-%dT%H:%M:%SZ")
        ahead = (release.replace(tzinfo=dt.timezone.utc) - FIXED_NOW).total_seconds() / 60
        reg = graph.named(node["name"])
        waits = max((_upstream_minutes(graph, d, memo) for d in reg.dependencies), default=0.0)
        # The latest RunInstances can run is after every upstream create has used its timeout.
        assert ahead - waits >= RELEASE_MIN_MINUTES, (node["name"], ahead, waits)


def test_the_lookup_policy_is_fixed_at_plan_time_and_read_only() -> None:
    result = preview(spec(storage={"shared": CPFS}))
    (policy,) = [r for r in result.as_dict()["resources"] if r["type"] == "alicloud:ram/policy:Policy"]
    doc = policy["inputs"]["policyDocument"]
    assert re.findall(r'"nas:(\w+)"', doc) == ["DescribeFileSystems", "DescribeProtocolMountTarget"]
    assert "acs:nas:cn-hangzhou:*:filesystem/*" in doc
