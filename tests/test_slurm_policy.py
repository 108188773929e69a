"""`provision check` holds the Slurm controller to the nodes' rules on every cloud: the shipped Slurm stacks pass, and
a controller with a public address or without its cloud-side lifetime is reported (Azure: its NIC, its identity, the
role that lets it delete itself, its timer)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from conftest import shipped_preview

from provision.ops.policy import evaluate
from provision.ops.policy_rules import Context, Resource

STACKS = ["aws-p5-16-slurm", "gcp-a3-16-slurm", "azure-ndh100-16-slurm", "alibaba-gn8-16-slurm"]
AZ_VM, AZ_NIC = "azure-native:compute:VirtualMachine", "azure-native:network:NetworkInterface"
AZ_ROLE = "azure-native:authorization:RoleDefinition"


def _graph(stack: str) -> list[Resource]:
    registered = shipped_preview(stack, stack=stack).resources
    return [Resource(r.type, r.name, r.inputs, r.outputs, r.id) for r in registered if r.custom]


@pytest.mark.parametrize("stack", STACKS)
def test_shipped_slurm_stacks_pass_every_rule(stack: str) -> None:
    assert [str(v) for v in evaluate(_graph(stack), Context())] == []


def _mutate(graph: list[Resource], type_token: str, change: Callable[[dict[str, Any]], None]) -> list[Resource]:
    (i,) = [k for k, r in enumerate(graph) if r.type == type_token]
    inputs = copy.deepcopy(dict(graph[i].inputs))
    change(inputs)
    return [*graph[:i], Resource(graph[i].type, graph[i].name, inputs), *graph[i + 1 :]]


def _public_ip(inputs: dict[str, Any]) -> None:
    inputs["ipConfigurations"][0]["publicIPAddress"] = {"id": "/subscriptions/s/x/publicIPAddresses/ip"}


def _no_identity(inputs: dict[str, Any]) -> None:
    inputs.pop("identity")


def _no_vm_delete(inputs: dict[str, Any]) -> None:
    inputs["permissions"] = [{"actions": ["Microsoft.Compute/virtualMachineScaleSets/delete"]}]


@pytest.mark.parametrize(
    ("type_token", "change", "rule", "flagged", "words"),
    [
        (AZ_NIC, _public_ip, "PRV-NET-001", AZ_NIC, "public IP"),
        (AZ_VM, _no_identity, "PRV-TTL-001", AZ_VM, "no user-assigned identity"),
        (AZ_ROLE, _no_vm_delete, "PRV-TTL-001", AZ_VM, "Microsoft.Compute/virtualMachines/delete"),
    ],
)
def test_an_azure_controller_that_breaks_a_rule_is_reported(
    type_token: str, change: Callable[[dict[str, Any]], None], rule: str, flagged: str, words: str
) -> None:
    graph = _mutate(_graph("azure-ndh100-16-slurm"), type_token, change)
    found = [v for v in evaluate(graph, Context()) if v.rule.id == rule and v.resource_type == flagged]
    assert found and any(words in v.message for v in found), [str(v) for v in found]
