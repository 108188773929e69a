"""Failover on capacity errors: `up` removes a failed try and tries the spec's next fallback, on every cloud.

The mocked cloud fails the node group with the cloud's own shortage code in the first region
(``Fault(region=...)``); quota errors are not retried.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import isolated_home, stack_spec
from test_spec_errors import BASES, mutate

from provision.engine.mockstate import MockStore
from provision.ops.cluster import Cluster
from provision.planning.failover import apply_fallback, error_code, is_shortage
from provision.spec import load_spec
from provision.spec.errors import CapacityError, SpecError
from provision.testing import Fault


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolated_home(tmp_path, monkeypatch)


def _with_fallbacks(data: dict[str, Any], *fallbacks: dict[str, Any]) -> Any:
    data = json.loads(json.dumps(data))
    data.setdefault("capacity", {})["fallbacks"] = list(fallbacks)
    return load_spec(data)


def _stack(name: str) -> dict[str, Any]:
    return stack_spec(name).model_dump(mode="json", exclude_none=True)


CASES = {
    # cloud: (spec data, fallback, first region, node-group type, shortage code)
    "aws": (
        _stack("aws-p5-16"),
        {"region": "us-east-2"},
        "us-east-1",
        "aws:ec2/fleet:Fleet",
        "InsufficientInstanceCapacity",
    ),
    "gcp": (
        _stack("gcp-a3-ci"),
        {"region": "us-east4", "zone": "us-east4-a"},
        "us-central1",
        "gcp:compute/instanceGroupManager:InstanceGroupManager",
        "ZONE_RESOURCE_POOL_EXHAUSTED",
    ),
    "azure": (
        _stack("azure-ndh100-ci"),
        {"region": "eastus2"},
        "eastus",
        "azure-native:compute:VirtualMachineScaleSet",
        "AllocationFailed",
    ),
    "alibaba": (
        mutate(
            BASES["alibaba"],
            {
                "gpu": "A100-80GB",
                "instance_type": "ecs.ebmgn7ex.32xlarge",
                "gpus": 16,
                "region": "cn-beijing",
                "zone": "cn-beijing-a",
            },
        ),
        {"region": "cn-shenzhen", "zone": "cn-shenzhen-a"},
        "cn-beijing",
        "alicloud:ecs/instance:Instance",
        "OperationDenied.NoStock",
    ),
}


@pytest.mark.parametrize("cloud", sorted(CASES))
def test_up_falls_back_to_the_next_region_on_a_capacity_shortage(cloud: str) -> None:
    data, fallback, first, node_type, code = CASES[cloud]
    spec = _with_fallbacks(data, fallback)
    fault = Fault(code=code, type_token=node_type, region=first)
    cluster = Cluster(spec, stack=f"fo-{cloud}", mock=True, faults=[fault], display="none")

    result = cluster.up()

    assert result is not None
    assert cluster.spec.region == fallback["region"]
    state = MockStore().load(f"fo-{cloud}")
    assert state is not None and any(r.type == node_type for r in state.resources)
    # Nothing of the failed try is left: every recorded resource belongs to the fallback region's try.
    old_place = re.compile(rf'"{re.escape(first)}(-?[a-z])?"')  # the region or one of its zones, as a value
    assert not old_place.search(json.dumps([r.inputs for r in state.resources]))
    cluster.down()
    assert MockStore().load(f"fo-{cloud}") is None


def test_every_try_short_of_capacity_fails_listing_the_tries() -> None:
    data, _, _, node_type, code = CASES["aws"]
    spec = _with_fallbacks(data, {"region": "us-east-2"}, {"type": "spot"})
    cluster = Cluster(spec, stack="fo-all", mock=True, faults=[Fault(code=code, type_token=node_type)], display="none")

    with pytest.raises(CapacityError) as err:
        cluster.up()

    text = str(err.value)
    # Each fallback applies to the spec as written: the region move keeps on-demand, the spot one the first region.
    assert "3 tries" in text and "us-east-1/us-east-1a, on-demand" in text
    assert "us-east-2, on-demand" in text and "us-east-1/us-east-1a, spot" in text
    assert MockStore().load("fo-all") is not None  # the last try's partial resources stay for `down`, as before
    cluster.down()


def test_a_quota_error_fails_fast_and_names_the_quota() -> None:
    data, _, _, node_type, _ = CASES["aws"]
    spec = _with_fallbacks(data, {"region": "us-east-2"})
    fault = Fault(code="VcpuLimitExceeded", type_token=node_type)
    cluster = Cluster(spec, stack="fo-quota", mock=True, faults=[fault], display="none")

    with pytest.raises(CapacityError) as err:
        cluster.up()

    assert "quota or permission limit (VcpuLimitExceeded)" in str(err.value)
    assert cluster.spec.region == "us-east-1"  # no fallback was tried
    cluster.down()


def test_fallbacks_are_validated_before_anything_is_created() -> None:
    data, _, _, _, _ = CASES["aws"]
    spec = _with_fallbacks(data, {"region": "us-east-2"}, {"region": "antarctica-1"})
    cluster = Cluster(spec, stack="fo-bad", mock=True, display="none")

    with pytest.raises(SpecError) as err:
        cluster.up()

    assert [p.path for p in err.value.problems][0].startswith("capacity.fallbacks[1] -> region")
    assert MockStore().load("fo-bad") is None


def test_a_fallback_must_change_something() -> None:
    data = _stack("aws-p5-16")
    with pytest.raises(Exception) as err:
        _with_fallbacks(data, {})
    assert "changes nothing" in str(err.value)


def test_applying_a_fallback_moves_region_and_drops_the_old_zone() -> None:
    spec = _with_fallbacks(_stack("aws-p5-16"), {"region": "us-east-2"}, {"type": "spot"})

    moved, spot = apply_fallback(spec, 0), apply_fallback(spec, 1)

    assert (moved.region, moved.zone, moved.capacity.fallbacks) == ("us-east-2", None, ())
    assert (spot.region, spot.zone, spot.capacity.type) == ("us-east-1", "us-east-1a", "spot")


@pytest.mark.parametrize(
    ("message", "shortage"),
    [
        ("up failed: the cloud has no capacity (InsufficientInstanceCapacity)", True),
        ("ZONE_RESOURCE_POOL_EXHAUSTED in us-central1-a", True),
        ("ZonalAllocationFailed", True),
        ("OperationDenied.NoStock: sold out", True),
        ("QUOTA_EXCEEDED: NVIDIA_H100_GPUS", False),
        ("VcpuLimitExceeded", False),
        ("something else", False),
    ],
)
def test_shortages_are_told_from_quota_errors(message: str, shortage: bool) -> None:
    assert is_shortage(message) is shortage
    assert (error_code(message) is not None) is (message != "something else")
