"""AWS VM findings of the 2026-12-01b reviews: a bare IP in access.allowed_cidrs, GPUs before the filesystem."""

from __future__ import annotations

from conftest import preview
from strict_helpers import one, register, violations_of
from test_aws_plan import spec

INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"


def test_a_bare_ip_is_normalised_to_its_slash_32_in_the_spec() -> None:
    s = spec(access={"allowed_cidrs": ["203.0.113.5", "2001:db8::1"]})
    assert s.access.allowed_cidrs == ("203.0.113.5/32", "2001:db8::1/128")


def test_a_bare_ip_reaches_the_security_group_rule_as_a_cidr_block() -> None:
    result = preview(spec(access={"allowed_cidrs": ["203.0.113.5"]}))
    ssh = [r.inputs.get("cidrIpv4") for r in result.of_type(INGRESS) if r.inputs.get("cidrIpv4")]
    assert ssh == ["203.0.113.5/32"]


def test_the_strict_mock_refuses_a_bare_address_as_the_provider_does() -> None:
    v = one(
        violations_of(INGRESS, "x-ssh", {"securityGroupId": "sg-1", "ipProtocol": "tcp", "cidrIpv4": "203.0.113.5"}),
        "cidrIpv4",
    )
    assert "ValidateIPv4CIDRBlock" in v.source and "/32" in v.rule
    host_bits = violations_of(
        INGRESS, "x-ssh", {"securityGroupId": "sg-1", "ipProtocol": "tcp", "cidrIpv4": "10.0.0.1/8"}
    )
    assert [x.field for x in host_bits] == ["cidrIpv4"]
    register(INGRESS, "x-ok", {"securityGroupId": "sg-1", "ipProtocol": "tcp", "cidrIpv4": "10.0.0.0/8"})
