"""The mocked cloud itself: stack config as the CLI hands it over, `pulumi up -s` under mocks, faults, invokes."""

from __future__ import annotations

import json
import runpy
from typing import Any

import pulumi
import pytest
from conftest import FIXED_NOW, ROOT, preview, stack_spec

from provision.engine.program import CREATED_AT_KEY
from provision.spec import CONFIG_KEY
from provision.testing import CloudMocks, Fault, UnknownInvokeError, install_mocks, stack_config


@pytest.fixture(autouse=True)
def an_open_event_loop() -> None:
    """The tests that install the mocks themselves need the loop run_program would give them: after another
    module's asyncio.run() (in the same xdist worker, in any order) the main thread has none."""
    import asyncio

    try:
        asyncio.get_event_loop_policy().get_event_loop()
    except RuntimeError:
        asyncio.set_event_loop(asyncio.new_event_loop())


def test_stack_config_is_flat_namespaced_strings_with_structured_values_as_json() -> None:
    cfg, secret = stack_config(ROOT, "gcp-a3-64")
    assert secret == []
    assert cfg["gcp:project"] == "my-ml-project"
    spec = json.loads(cfg[CONFIG_KEY])
    assert spec["cloud"] == "gcp" and spec["instance_type"] == "a3-megagpu-8g"
    assert all(isinstance(v, str) for v in cfg.values())


def test_pulumi_up_of_a_stack_runs_the_thin_entry_point_and_exports_the_contract_outputs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What `pulumi up -s gcp-a3-64` does: config from the stack file, then stacks/__main__.py."""
    cfg, secret = stack_config(ROOT, "gcp-a3-64")
    cfg[CREATED_AT_KEY] = FIXED_NOW.isoformat().replace("+00:00", "Z")
    exported: dict[str, Any] = {}
    monkeypatch.setattr(pulumi, "export", lambda name, value: exported.__setitem__(name, value))
    pulumi.runtime.set_all_config(cfg, secret)
    pulumi.runtime.settings.ROOT.set(None)
    mocks = CloudMocks(region="us-central1")
    install_mocks(mocks, project="provision", stack="gcp-a3-64", preview=False)
    resolved: dict[str, Any] = {}

    @pulumi.runtime.test
    def run() -> Any:
        runpy.run_path(str(ROOT / "stacks" / "__main__.py"))
        return pulumi.Output.from_input(exported).apply(resolved.update)

    run()
    assert len(resolved["hostfile"].splitlines()) == 8
    assert resolved["expires_at"] == "2026-11-30T00:00:00Z"  # createdAt + the stack's 12h ttl
    assert resolved["fabric"]["kind"] == "tcpxo"
    assert any(r.type == "gcp:compute/instanceGroupManager:InstanceGroupManager" for r in mocks.ledger)


def test_a_bad_stack_spec_fails_the_program_with_a_run_error_and_no_resource(monkeypatch: pytest.MonkeyPatch) -> None:
    cfg, secret = stack_config(ROOT, "gcp-a3-64")
    spec = json.loads(cfg[CONFIG_KEY])
    spec["gpus"] = 12
    cfg[CONFIG_KEY] = json.dumps(spec)
    pulumi.runtime.set_all_config(cfg, secret)
    pulumi.runtime.settings.ROOT.set(None)
    mocks = CloudMocks()
    install_mocks(mocks, project="provision", stack="gcp-a3-64", preview=False)
    with pytest.raises(pulumi.RunError) as err:
        pulumi.runtime.test(lambda: runpy.run_path(str(ROOT / "stacks" / "__main__.py")))()
    assert "gpus: 12 is not a multiple of 8" in str(err.value)
    assert mocks.ledger == []


def test_a_fault_on_the_kth_resource_surfaces_the_cloud_error_code() -> None:
    spec = stack_spec("aws-p5-16")
    with pytest.raises(Exception) as err:
        preview(spec, faults=[Fault(code="InsufficientInstanceCapacity", type_token="aws:ec2/fleet:Fleet")])
    assert "InsufficientInstanceCapacity" in str(err.value)


def test_a_fault_by_index_fails_the_kth_registration() -> None:
    # Pulumi registers siblings concurrently, so *which* resource is k-th may vary; the k-th fails.
    mocks = CloudMocks(faults=[Fault(code="QUOTA_EXCEEDED", index=2)])
    for name in ("a", "b"):
        mocks.new_resource(pulumi.runtime.MockResourceArgs("gcp:compute/network:Network", name, {}, custom=True))
    with pytest.raises(Exception) as err:
        mocks.new_resource(pulumi.runtime.MockResourceArgs("gcp:compute/network:Network", "c", {}, custom=True))
    assert "QUOTA_EXCEEDED" in str(err.value) and "c)" in str(err.value)
    assert [r.name for r in mocks.ledger] == ["a", "b"]


def test_an_invoke_without_a_stub_fails_loudly() -> None:
    mocks = CloudMocks()
    args = pulumi.runtime.MockCallArgs(token="aws:ec2/getVpc:getVpc", args={}, provider="")
    with pytest.raises(UnknownInvokeError) as err:
        mocks.call(args)
    assert "aws:ec2/getVpc:getVpc" in str(err.value)


def test_mocked_ids_are_in_each_clouds_format_and_stable() -> None:
    first, second = preview(stack_spec("aws-p5-16")), preview(stack_spec("aws-p5-16"))
    ids = {(r.type, r.name): r.id for r in first.resources if r.custom}
    assert ids == {(r.type, r.name): r.id for r in second.resources if r.custom}
    vpc = next(r for r in first.resources if r.type == "aws:ec2/vpc:Vpc")
    assert vpc.id.startswith("vpc-")
    gcp = preview(stack_spec("gcp-a3-ci"))
    net = next(r for r in gcp.resources if r.type == "gcp:compute/network:Network")
    assert net.id.startswith("projects/")


def _run_stack_entry(cfg: dict[str, str], secret: list[str], preview: bool) -> CloudMocks:
    pulumi.runtime.set_all_config(cfg, secret)
    pulumi.runtime.settings.ROOT.set(None)
    mocks = CloudMocks()
    install_mocks(mocks, project="provision", stack="gcp-a3-64", preview=preview)
    pulumi.runtime.test(lambda: runpy.run_path(str(ROOT / "stacks" / "__main__.py")))()
    return mocks


def test_an_update_of_a_cluster_with_a_lifetime_needs_created_at(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pulumi, "export", lambda name, value: None)
    cfg, secret = stack_config(ROOT, "gcp-a3-64")
    assert CREATED_AT_KEY not in cfg
    with pytest.raises(pulumi.RunError) as err:
        _run_stack_entry(cfg, secret, preview=False)
    assert "provision:createdAt" in str(err.value) and "pulumi config set provision:createdAt" in str(err.value)


def test_a_preview_without_created_at_counts_from_now(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pulumi, "export", lambda name, value: None)
    cfg, secret = stack_config(ROOT, "gcp-a3-64")
    mocks = _run_stack_entry(cfg, secret, preview=True)
    assert any(r.type == "gcp:compute/instanceGroupManager:InstanceGroupManager" for r in mocks.ledger)
