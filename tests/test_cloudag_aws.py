"""AWS VM findings of the 2026-12-01b reviews: a bare IP in access.allowed_cidrs, GPUs before the filesystem."""

from __future__ import annotations

from pathlib import Path

from conftest import preview
from nodekit import plan_of, run_bootstrap
from strict_helpers import one, register, violations_of
from test_aws_plan import spec

from provision.clouds.aws import userdata
from provision.ops.nodes import mock_user_data

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


def test_nodes_read_the_fsx_mount_source_at_boot_and_mount_it(tmp_path: Path) -> None:
    plan = plan_of("aws-p5-ci")
    source = "fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com@tcp:/abcdefgh"
    run = run_bootstrap(tmp_path, mock_user_data(plan), STUB_OUT_aws=source, STUB_OUT_lsblk="/dev/nvme1n1 disk")
    steps = run["state"]["steps"]
    assert steps["fsx-source"]["status"] == "ok" and steps["shared-mount"]["status"] == "ok", run["output"]
    assert "aws ssm get-parameter --region us-east-1 --name /provision/aws-p5-ci/shared-source" in run["log"]
    assert f"mount -t lustre -o {userdata.FSX_OPTIONS} {source} " in run["log"]
    assert f"{source} /shared lustre" in (run["root"] / "etc/fstab").read_text()


def test_a_node_without_a_mount_source_fails_the_step_and_mounts_nothing(tmp_path: Path) -> None:
    run = run_bootstrap(
        tmp_path, mock_user_data(plan_of("aws-p5-ci")), STUB_OUT_aws="x; reboot", STUB_OUT_lsblk="/dev/nvme1n1 disk"
    )
    assert run["state"]["steps"]["fsx-source"]["status"] != "ok"
    assert "mount -t lustre" not in run["log"]
    assert "no FSx mount source" in (run["root"] / "var/log/provision-bootstrap.log").read_text()
    # a value that is not a mount source fails at once: the wait (65 min on a node) is only for a missing parameter
    assert run["log"].count("aws ssm get-parameter") == 1, run["log"].count("aws ssm get-parameter")
    assert "reboot" not in (run["root"] / "var/log/provision-bootstrap.log").read_text()
