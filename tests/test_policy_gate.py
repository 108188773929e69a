"""`provision check` is a gate: the spec it checks cannot exempt itself; CIDRs are judged by the addresses they hold.

Exemptions come from the operator (``--policy-config``, the policy pack's config); ``0.0.0.0/1``
and "every IPv4 address but one" are world access; PRV-TTL-001 covers Azure's scale sets.
"""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import FIXED_NOW, MINIMAL_SPEC, isolated_home, set_dotted, stack_spec
from typer.testing import CliRunner

from provision.cli.app import app
from provision.ops.policy import RULES, evaluate
from provision.ops.policy_rules import Resource, is_world

runner = CliRunner()
ALL_BUT_ONE = [str(n) for n in ipaddress.ip_network("0.0.0.0/0").address_exclude(ipaddress.ip_network("8.8.8.8/32"))]


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolated_home(tmp_path, monkeypatch)


def _check(tmp_path: Path, doc: dict[str, Any], config: Any = None) -> tuple[int, dict[str, Any]]:
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    extra = []
    if config is not None:
        cfg = tmp_path / "policy.json"
        cfg.write_text(json.dumps(config), encoding="utf-8")
        extra = ["--policy-config", str(cfg)]
    result = runner.invoke(app, ["check", str(path), "--json", *extra])
    return result.exit_code, json.loads(result.stdout)


def _rules(doc: dict[str, Any]) -> set[str]:
    return {v["rule"] for v in doc["violations"]}


def test_the_specs_own_gcp_os_login_false_does_not_waive_the_rule(tmp_path: Path) -> None:
    spec = {**MINIMAL_SPEC, "cloud": "gcp", "region": "us-central1", "gcp": {"project": "my-proj-1", "os_login": False}}
    code, doc = _check(tmp_path, spec)
    assert code == 3 and "PRV-GCP-001" in _rules(doc)
    assert doc["spec_opt_ins_not_granted"] == ["gcp.os_login"]
    code, doc = _check(tmp_path, spec, {"PRV-GCP-001": {"gcp_os_login": False}})  # the pack's config layout
    assert "PRV-GCP-001" not in _rules(doc) and doc["spec_opt_ins_not_granted"] == []


@pytest.mark.parametrize("cidrs", [["0.0.0.0/0"], ["0.0.0.0/1"], ALL_BUT_ONE], ids=["world", "half", "all-but-one"])
def test_world_ssh_the_spec_opts_into_still_fails_check_without_the_operator(tmp_path: Path, cidrs: list[str]) -> None:
    spec = set_dotted(MINIMAL_SPEC, "access.allowed_cidrs", cidrs)
    refused = runner.invoke(app, ["plan", str(_write(tmp_path, spec)), "--json"])
    assert refused.exit_code == 2  # no opt-in: world access is refused by the spec itself
    spec = set_dotted(spec, "access.allow_world_ssh", True)
    code, doc = _check(tmp_path, spec)
    assert code == 3 and "PRV-NET-002" in _rules(doc), doc["violations"]
    code, doc = _check(tmp_path, spec, {"allow_world_ssh": True})
    assert "PRV-NET-002" not in _rules(doc)


def _write(tmp_path: Path, doc: dict[str, Any]) -> Path:
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def test_cidr_rules_reason_about_address_ranges() -> None:
    assert is_world("0.0.0.0/1") and is_world("128.0.0.0/2") and is_world("::/1") and is_world("Internet")
    assert not is_world("203.0.113.0/24") and not is_world("10.0.0.0/8") and not is_world("3.0.0.0/8")
    rule = {
        "type": "ingress",
        "protocol": "tcp",
        "fromPort": 22,
        "toPort": 22,
        # 32 /9s: each smaller than a /8, a quarter of the internet together.
        "cidrBlocks": [str(n) for n in ipaddress.ip_network("64.0.0.0/2").subnets(new_prefix=9)],
    }
    graph = [Resource("aws:ec2/securityGroupRule:SecurityGroupRule", "ssh", rule)]
    assert not any(is_world(c) for c in rule["cidrBlocks"])
    assert [v.rule.id for v in evaluate(graph, _no_opt_in())] == ["PRV-NET-002"]


def _no_opt_in() -> Any:
    from provision.ops.policy_rules import Context

    return Context()


def test_a_bad_policy_config_is_exit_2(tmp_path: Path) -> None:
    cfg = tmp_path / "policy.yaml"
    cfg.write_text("- not a mapping\n", encoding="utf-8")
    path = _write(tmp_path, MINIMAL_SPEC)
    result = runner.invoke(app, ["check", str(path), "--policy-config", str(cfg)])
    assert result.exit_code == 2 and "--policy-config" in result.output


def _azure_graph() -> list[Resource]:
    from provision.clouds.mocking import StrictViolationError
    from provision.engine.mockrun import run_program

    try:
        registered = run_program(stack_spec("azure-ndh100-ci"), stack="azure-ndh100-ci", now=FIXED_NOW).resources
    except StrictViolationError as e:
        registered = list(e.partial)
    return [Resource(r.type, r.name, r.inputs, r.outputs, r.id) for r in registered if r.custom]


def test_prv_ttl_001_covers_azure_scale_sets() -> None:
    (ttl,) = [r for r in RULES if r.id == "PRV-TTL-001"]
    graph = _azure_graph()
    assert not evaluate(graph, _no_opt_in(), [ttl])
    for dropped in ("azure-native:authorization:RoleDefinition", "azure-native:authorization:RoleAssignment"):
        found = evaluate([r for r in graph if r.type != dropped], _no_opt_in(), [ttl])
        assert [v.resource_type for v in found] == ["azure-native:compute:VirtualMachineScaleSet"], dropped


def test_prv_img_001_refuses_a_host_holding_container_on_a_tag() -> None:
    (img,) = [r for r in RULES if r.id == "PRV-IMG-001"]
    pinned = "ubuntu:noble-20260911@sha256:b648a2094b746b16f8e688364f6fa0504788b209f328c54bf9e677f238a142df"

    def daemonset(image: str, privileged: bool = True, host_pid: bool = False) -> Resource:
        container = {"name": "setup", "image": image, "securityContext": {"privileged": privileged}}
        spec = {"hostPID": host_pid, "initContainers": [container], "containers": [{"name": "p", "image": "pause"}]}
        return Resource("kubernetes:apps/v1:DaemonSet", "ds", {"spec": {"template": {"spec": spec}}})

    assert [v.rule.id for v in evaluate([daemonset("ubuntu:24.04")], _no_opt_in(), [img])] == ["PRV-IMG-001"]
    assert evaluate([daemonset("ubuntu:24.04", privileged=False, host_pid=True)], _no_opt_in(), [img])
    assert not evaluate([daemonset(pinned)], _no_opt_in(), [img])
    assert not evaluate([daemonset("ubuntu:24.04", privileged=False)], _no_opt_in(), [img])  # holds no host


def test_every_image_of_the_gke_stack_that_holds_the_host_is_pinned() -> None:
    from provision.clouds.gcp.kubeplan import IMAGES

    for key in ("setup", "tcpxo-installer", "tcpxo-rxdm", "device-injector", "pause"):
        assert "@sha256:" in IMAGES[key], key
