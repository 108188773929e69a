"""AWS deploy blockers from the 2026-12-01 review (issue 11), tested through the mocked graph.

Each test failed before its fix: an SG description EC2 rejects, FSx racing its security-group rules,
and an instant fleet launched seconds after its brand-new instance profile.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from conftest import preview, shipped_preview, stack_spec
from graph_deps import Graph, recorded_graph
from test_aws_plan import spec

SG = "aws:ec2/securityGroup:SecurityGroup"
INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
EGRESS = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"
FSX = "aws:fsx/lustreFileSystem:LustreFileSystem"
FLEET = "aws:ec2/fleet:Fleet"
ASG = "aws:autoscaling/group:Group"
PROFILE = "aws:iam/instanceProfile:InstanceProfile"
SLEEP = "time:index/sleep:Sleep"
ROUTE = "aws:ec2/route:Route"
#: botocore ec2 2016-11-15 CreateSecurityGroupRequest.Description: "Valid characters: a-z, A-Z, 0-9, spaces, and
#: ._-:/()#,@[]+=&;{}!$*" (the same set terraform-provider-aws#18874 quotes from the API error); at most 255.
SG_DESCRIPTION = re.compile(r"^[A-Za-z0-9 ._\-:/()#,@\[\]+=&;{}!$*]{0,255}$")


def graph_of(**over: Any) -> tuple[Any, Graph]:
    with recorded_graph() as graph:
        result = preview(spec(**over))
    return result, graph


@pytest.mark.parametrize("stack", ["aws-p5-64", "aws-p5-16", "aws-p5-ci"])
def test_every_security_group_description_uses_only_characters_ec2_accepts(stack: str) -> None:
    result = shipped_preview(stack)
    descriptions = [r.inputs.get("description", "") for t in (SG, INGRESS, EGRESS) for r in result.of_type(t)]
    assert descriptions
    bad = [d for d in descriptions if not SG_DESCRIPTION.match(d)]
    assert bad == []


@pytest.mark.parametrize("stack", ["aws-p5-64", "aws-p5-16"])
def test_fsx_waits_for_every_rule_of_its_security_group(stack: str) -> None:
    with recorded_graph() as graph:
        result = preview(stack_spec(stack))
    fsx_sg = next(r for r in result.of_type(SG) if r.name.endswith("-fsx-sg"))
    fsx_rules = [
        r.name
        for t in (INGRESS, EGRESS)
        for r in result.of_type(t)
        if fsx_sg.id in (r.inputs["securityGroupId"], r.inputs.get("referencedSecurityGroupId"))
    ]
    assert len(fsx_rules) >= 4
    (fsx,) = graph.of_type(FSX)
    waits_for = {graph.by_urn[u].name for u in graph.ancestors(fsx) if u in graph.by_urn}
    assert set(fsx_rules) <= waits_for


@pytest.mark.parametrize("allocation", ["fleet", "asg"])
def test_gang_launches_only_after_the_instance_profile_had_time_to_propagate(allocation: str) -> None:
    # No shared storage: nothing else (like a 10-minute FSx create) stands between profile and launch.
    result, graph = graph_of(aws={"allocation": allocation})
    (gang,) = graph.of_type(FLEET if allocation == "fleet" else ASG)
    (profile,) = graph.of_type(PROFILE)
    (sleep,) = graph.of_type(SLEEP)
    assert sleep.urn in graph.ancestors(gang)
    assert profile.urn in graph.ancestors(sleep)
    inputs = next(r for r in result.resources if r.type == SLEEP).inputs
    seconds = int(inputs["createDuration"].rstrip("s"))
    assert seconds >= 15
    # A replaced profile is a new profile: the wait runs again.
    assert "profile" in inputs["triggers"]


def test_gang_waits_for_its_security_group_rules_and_the_private_default_route() -> None:
    result, graph = graph_of()
    (fleet,) = graph.of_type(FLEET)
    waits_for = {graph.by_urn[u].name for u in graph.ancestors(fleet) if u in graph.by_urn}
    node_rules = {r.name for t in (INGRESS, EGRESS) for r in result.of_type(t)}
    assert node_rules and node_rules <= waits_for
    assert "t1-private-default" in waits_for


def test_the_ami_lookup_reads_the_unmarked_value(monkeypatch: pytest.MonkeyPatch) -> None:
    # pulumi-aws marks ssm.get_parameter's ``value`` sensitive whatever its type, so the AMI id must come from
    # ``insecure_value`` or image_pin is a [secret]. The mock models that by answering a different ``value``.
    from provision.clouds.aws import mocks

    real = mocks.get_parameter

    def sensitive(args: Any, ctx: Any) -> dict[str, Any]:
        return {**real(args, ctx), "value": "[secret]"}

    monkeypatch.setitem(mocks.INVOKES, "aws:ssm/getParameter:getParameter", sensitive)
    result = preview(spec())
    assert result.outputs["image_pin"].startswith("ami-0")
