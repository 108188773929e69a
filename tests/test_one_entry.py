"""Every mocked run takes the real program's entry (``engine/program.cluster_program``) and its stack config.

``provision preview``, ``up --mock``, the Python API's mock mode and ``provision.testing.run_program`` all go
through ``run_program``; the stack config a ``pulumi up`` reads (``provision:failover``: which failover try
holds the stack; ``provision:createdAt``: where the lifetime counts from) must count the same way there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import FIXED_NOW, stack_spec

from provision.clouds.failover import CONFIG_KEY as FAILOVER_KEY
from provision.engine.program import CREATED_AT_KEY
from provision.spec import load_spec
from provision.spec.errors import SpecError
from provision.testing import CloudFaultError, Fault, run_program


def _gcp_with_failover() -> Any:
    data = stack_spec("gcp-a3-64").model_dump(mode="json", exclude_none=True)
    return load_spec({**data, "failover": [{"region": "us-east4"}]})


def test_run_program_builds_the_failover_try_the_stack_config_holds() -> None:
    spec = _gcp_with_failover()
    assert spec.region != "us-east4"
    result = run_program(spec, now=FIXED_NOW, owner="test", config={FAILOVER_KEY: "1"})
    assert result.plan.region == "us-east4"
    assert result.outputs["region"] == "us-east4"
    zones = {r.inputs.get("zone") for r in result.resources if r.inputs.get("zone")}
    assert zones and all(z.startswith("us-east4-") for z in zones)


def test_a_fault_placed_in_the_try_s_region_fires() -> None:
    """The mocked cloud places faults by the plan the program made, not by the spec as written."""
    with pytest.raises(CloudFaultError, match="ZONE_RESOURCE_POOL_EXHAUSTED"):
        run_program(
            _gcp_with_failover(),
            now=FIXED_NOW,
            owner="test",
            config={FAILOVER_KEY: "1"},
            faults=[
                Fault(
                    type_token="gcp:compute/instanceGroupManager:InstanceGroupManager",
                    code="ZONE_RESOURCE_POOL_EXHAUSTED",
                    where="us-east4",
                )
            ],
        )


def test_run_program_counts_the_lifetime_from_the_stack_s_created_at() -> None:
    result = run_program(stack_spec("gcp-a3-64"), owner="test", config={CREATED_AT_KEY: "2026-11-29T12:00:00Z"})
    assert result.outputs["expires_at"] == "2026-11-30T00:00:00Z"  # createdAt + the stack's 12h ttl
    assert result.plan.expires_at is not None and result.plan.expires_at.isoformat() == "2026-11-30T00:00:00+00:00"


def test_a_bad_created_at_in_the_stack_config_fails_before_any_resource() -> None:
    with pytest.raises(SpecError) as err:
        run_program(stack_spec("gcp-a3-64"), owner="test", config={CREATED_AT_KEY: "yesterday"})
    (problem,) = err.value.problems
    assert problem.path == CREATED_AT_KEY and problem.value == "yesterday"


def test_the_pytest_fixture_runs_the_try_a_stack_file_holds(tmp_path: Path, provision_mock_cloud: Any) -> None:
    spec = _gcp_with_failover()
    stack_file = tmp_path / "Pulumi.held.yaml"
    cluster = spec.model_dump(mode="json", exclude_none=True)
    stack_file.write_text(yaml.safe_dump({"config": {"provision:cluster": cluster, FAILOVER_KEY: 1}}))
    result = provision_mock_cloud(stack_file, now=FIXED_NOW)
    assert result.plan.region == "us-east4"


def test_provision_preview_of_a_stack_file_shows_the_try_and_lifetime_the_file_holds(tmp_path: Path) -> None:
    import json

    from typer.testing import CliRunner

    from provision.cli.app import app

    cluster = _gcp_with_failover().model_dump(mode="json", exclude_none=True)
    stack_file = tmp_path / "Pulumi.held.yaml"
    held = {"provision:cluster": cluster, FAILOVER_KEY: 1, CREATED_AT_KEY: "2026-11-29T12:00:00Z"}
    stack_file.write_text(yaml.safe_dump({"config": held}))
    result = CliRunner().invoke(app, ["preview", str(stack_file), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["outputs"]["region"] == "us-east4"
    assert doc["outputs"]["expires_at"] == "2026-11-30T00:00:00Z"


def test_a_mocked_run_collects_garbage_less_often_and_gives_the_callers_thresholds_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import gc

    from provision.engine import mockrun, program

    seen: list[tuple[int, int, int]] = []
    entry = program.cluster_program

    def recording(**kwargs: Any) -> Any:
        seen.append(gc.get_threshold())
        return entry(**kwargs)

    monkeypatch.setattr(program, "cluster_program", recording)
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 200)  # the caller's own: a higher one is kept
        run_program(stack_spec("aws-p5-ci"), now=FIXED_NOW, owner="test")
        with pytest.raises(CloudFaultError):  # and after a failed run too
            run_program(stack_spec("aws-p5-ci"), now=FIXED_NOW, owner="test", faults=[Fault("InternalError", index=0)])
        after = gc.get_threshold()
    finally:
        gc.set_threshold(*before)
    assert seen == [(mockrun.MOCK_RUN_GC_THRESHOLDS[0], mockrun.MOCK_RUN_GC_THRESHOLDS[1], 200)] * 2
    assert after == (700, 10, 200)
