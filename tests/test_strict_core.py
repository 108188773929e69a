"""The strict mocked cloud itself: on by default everywhere, every problem at once, dependencies, timeouts."""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pulumi_aws as aws
import pytest
from conftest import isolated_home, preview, stack_spec
from strict_helpers import register, run
from typer.testing import CliRunner

from provision.clouds.gcp import strict as gcp_strict
from provision.clouds.mocking import CloudFaultError, CloudMocks, StrictViolationError
from provision.clouds.strict import go_duration_seconds
from provision.testing import StrictViolationError as PublicStrictViolationError
from provision.testing import Violation


@pytest.fixture
def psa_connections_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make a rule every GCP stack with private services access breaks (exercises the plumbing, not the rule)."""
    monkeypatch.setattr(gcp_strict, "PSA_DELETE_POLICIES", ())


def test_every_violation_of_a_resource_is_reported_at_once_with_its_source() -> None:
    with pytest.raises(StrictViolationError) as err:
        register(
            "aws:ec2/fleet:Fleet",
            "x",
            {"type": "sometimes", "targetCapacitySpecification": {"defaultTargetCapacityType": "free"}},
        )
    e = err.value
    assert isinstance(e, CloudFaultError) and e.code == "StrictMockViolation"
    assert {v.field for v in e.violations} == {
        "type",
        "targetCapacitySpecification.defaultTargetCapacityType",
        "targetCapacitySpecification.totalTargetCapacity",
    }
    for v in e.violations:
        assert isinstance(v, Violation) and v.type == "aws:ec2/fleet:Fleet" and v.name == "x" and v.source
        assert str(v) in str(e)


def test_a_refused_resource_is_not_recorded_as_created() -> None:
    mocks = CloudMocks()
    with pytest.raises(StrictViolationError):
        register("gcp:compute/network:Network", "x", {"mtu": 100}, mocks)
    assert mocks.ledger == []


def test_strict_false_accepts_any_input() -> None:
    mocks = register("gcp:compute/network:Network", "x", {"mtu": 100}, CloudMocks(strict=False))
    assert [r.name for r in mocks.ledger] == ["x"]


def test_other_packages_are_not_checked() -> None:
    assert register("random:index/randomId:RandomId", "x", {"byteLength": -1}).ledger


def test_the_public_names_are_the_engines() -> None:
    assert PublicStrictViolationError is StrictViolationError


def test_install_records_dependencies_and_custom_timeouts() -> None:
    def program() -> None:
        vpc = aws.ec2.Vpc("t-vpc", cidr_block="10.0.0.0/16")
        sg = aws.ec2.SecurityGroup("t-sg", vpc_id=vpc.id, description="t")
        aws.ec2.Subnet(
            "t-subnet",
            vpc_id="vpc-x",
            cidr_block="10.0.0.0/24",
            opts=pulumi.ResourceOptions(depends_on=[sg], custom_timeouts=pulumi.CustomTimeouts(create="90m")),
        )

    mocks = run(program)
    by_name = {r.name: r for r in mocks.ledger}
    assert by_name["t-sg"].urn.endswith("::t-sg") and by_name["t-vpc"].urn in by_name["t-sg"].dependencies
    assert by_name["t-sg"].urn in by_name["t-subnet"].dependencies
    assert mocks.ctx.ancestors(by_name["t-subnet"].urn) == {by_name["t-sg"].urn, by_name["t-vpc"].urn}


@pytest.mark.parametrize(("text", "seconds"), [("60m", 3600), ("1h30m", 5400), ("90s", 90), ("", None), ("x", None)])
def test_go_durations(text: str, seconds: float | None) -> None:
    assert go_duration_seconds(text) == seconds


def test_run_program_is_strict_by_default(psa_connections_refused: None) -> None:
    spec = stack_spec("gcp-a3-64")
    with pytest.raises(StrictViolationError) as err:
        preview(spec)
    assert [v.type for v in err.value.violations] == ["gcp:servicenetworking/connection:Connection"]
    assert err.value.partial  # what was created before the refusal stays, as in a real run
    assert preview(spec, strict=False).resources


def test_provision_preview_fails_with_exit_1_listing_each_violation(psa_connections_refused: None) -> None:
    result = CliRunner().invoke(app(), ["preview", "gcp-a3-64", "--json"])
    assert result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    assert doc["error"] == "CloudError" and "strict mocked cloud" in doc["message"]
    [problem] = doc["problems"]
    assert problem["path"] == "gcp:servicenetworking/connection:Connection llm-train-psa: deletionPolicy"
    assert "source:" in problem["rule"] and problem["fix"]


def test_the_users_pytest_fixture_is_strict(psa_connections_refused: None, provision_mock_cloud: Any) -> None:
    with pytest.raises(StrictViolationError):
        provision_mock_cloud("gcp-a3-64")
    assert provision_mock_cloud("gcp-a3-64", strict=False).resources


def test_a_mocked_cluster_up_is_strict(
    psa_connections_refused: None, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from provision import Cluster
    from provision.spec.errors import ProvisionError

    isolated_home(tmp_path, monkeypatch)
    cluster = Cluster("gcp-a3-64", mock=True, display="none")
    with pytest.raises(ProvisionError) as err:
        cluster.up()
    assert "deletionPolicy" in str(err.value)


def app() -> Any:
    from provision.cli.app import app as cli

    return cli


def test_a_preview_reports_every_violation_of_the_whole_program_at_once(
    psa_connections_refused: None, provision_mock_cloud: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A second broken rule that many resources break: no label value may contain a digit.
    monkeypatch.setattr(gcp_strict, "LABEL_VALUE", r"[a-z_-]{0,63}")
    spec = stack_spec("gcp-a3-64").model_dump(mode="json", exclude_none=True)
    with pytest.raises(StrictViolationError) as err:
        provision_mock_cloud(spec)
    types = {v.type for v in err.value.violations}
    assert "gcp:servicenetworking/connection:Connection" in types and len(types) > 2
    labelled = {v.name for v in err.value.violations if "label values" in v.rule}
    assert len(labelled) > 1  # the run went on past the first refused resource


def test_run_program_stops_at_the_first_refused_resource_like_the_cloud(psa_connections_refused: None) -> None:
    with pytest.raises(StrictViolationError) as err:
        preview(stack_spec("gcp-a3-64"))
    refused = err.value.violations[0]
    assert refused.name not in {r.name for r in err.value.partial}  # the refused resource was not created
