"""storage.scratch.raid0 (on by default) is resolved against the catalog: a type recorded with no local NVMe disk
gets no scratch step that must fail.

Every Alibaba GPU type has cloud disks only (catalog ``local_nvme_disks: 0``, sourced to the ECS instance-family
pages), so the critical, every-boot scratch step found no NVMe disk and failed on every node of both shipped
Alibaba stacks, and health reported every node unhealthy.
"""

from __future__ import annotations

import json

import pytest
from nodekit import files_of, plan_of

from provision.ops.nodes import mock_user_data


@pytest.mark.parametrize("stack", ["alibaba-gn8-64", "alibaba-gn8-ci"])
def test_alibaba_stacks_plan_no_raid0_scratch_and_say_why(stack: str) -> None:
    plan = plan_of(stack)
    assert plan.offer.local_nvme_disks == 0
    assert plan.scratch.raid0 is False
    assert any("storage.scratch.raid0 is off" in w and "no local NVMe" in w for w in plan.warnings)
    files = files_of(mock_user_data(plan))
    assert "SCRATCH_RAID0=false" in files["/etc/provision/bootstrap.env"]
    assert json.loads(files["/etc/provision/health.json"])["scratch"]["raid0"] is False  # no scratch check to fail


def test_a_type_with_local_nvme_keeps_its_raid0_scratch() -> None:
    plan = plan_of("aws-p5-ci")
    assert plan.offer.local_nvme_disks and plan.scratch.raid0 is True
    assert not any("storage.scratch.raid0 is off" in w for w in plan.warnings)
