"""Azure regions without availability zones, and the deploy permissions of the expiry role."""

from __future__ import annotations

from typing import Any

import pytest
from test_azure_plan import plan, problems

from provision.catalog import cloud_facts
from provision.clouds.azure import strict
from provision.clouds.strict import Resource

AMLFS = "azure-native:storagecache:AmlFilesystem"


def test_the_catalog_records_westus_as_a_region_without_zones() -> None:
    assert "westus" in cloud_facts("azure").regions_without_zones
    assert "eastus" not in cloud_facts("azure").regions_without_zones


def test_a_zone_in_a_region_without_zones_is_refused_naming_the_field() -> None:
    found = problems(region="westus", zone="1")
    assert "zone" in found
    assert "westus has no availability zones" in found["zone"].rule
    assert "drop zone" in found["zone"].fix


def test_the_default_filesystem_zone_does_not_apply_where_there_are_no_zones() -> None:
    p = plan(region="westus")
    assert p.extra.filesystem is not None and p.extra.filesystem.zone is None
    assert not [w for w in p.warnings if "availability zone" in w]
    # Where the region has zones the default still applies (and warns that the nodes have none).
    assert plan(region="eastus").extra.filesystem.zone == "1"


def test_the_strict_cloud_refuses_a_zonal_resource_where_there_are_no_zones() -> None:
    zonal = Resource(AMLFS, "x-lustre", {"location": "westus", "zones": ["1"]})
    (v,) = strict.zone_rules(zonal)
    assert (v.field, v.value) == ("zones", ["1"]) and "regions-list" in v.source
    assert strict.zone_rules(Resource(AMLFS, "x-lustre", {"location": "westus"})) == []
    assert strict.zone_rules(Resource(AMLFS, "x-lustre", {"location": "eastus", "zones": ["1"]})) == []


# ---------------------------------------------------------------------- who may create the expiry role

#: Built-in role definitions (MicrosoftDocs/azure-docs role-based-access-control/built-in-roles/privileged.md).
CONTRIBUTOR = (
    ["*"],
    [
        "Microsoft.Authorization/*/Delete",
        "Microsoft.Authorization/*/Write",
        "Microsoft.Authorization/elevateAccess/Action",
        "Microsoft.Blueprint/blueprintAssignments/write",
        "Microsoft.Blueprint/blueprintAssignments/delete",
        "Microsoft.Compute/galleries/share/action",
    ],
)
USER_ACCESS_ADMINISTRATOR = (["*/read", "Microsoft.Authorization/*", "Microsoft.Support/*"], [])


def _bounded_plan() -> object:
    from test_preflight_azure import plan as preflight_plan

    return preflight_plan(lifetime={"ttl": "6h"})


def test_a_contributor_is_told_before_anything_bills_that_the_expiry_role_needs_more() -> None:
    from test_preflight_azure import FakeSubscription

    from provision.clouds.azure.preflight import azure_preflight

    account = FakeSubscription(granted=[CONTRIBUTOR])
    (problem,) = azure_preflight(_bounded_plan(), account)
    assert problem.path == "azure.delete_at_expiry"
    assert "Microsoft.Authorization/roleDefinitions/write" in problem.rule
    assert "Microsoft.Authorization/roleAssignments/write" in problem.rule
    assert "azure.delete_at_expiry: false" in problem.fix and "User Access Administrator" in problem.fix
    # Contributor plus User Access Administrator may; so may Owner (the fake's default).
    assert azure_preflight(_bounded_plan(), FakeSubscription(granted=[CONTRIBUTOR, USER_ACCESS_ADMINISTRATOR])) == []
    assert azure_preflight(_bounded_plan(), FakeSubscription()) == []


def test_without_an_expiry_role_the_permissions_are_not_asked() -> None:
    from test_preflight_azure import FakeSubscription
    from test_preflight_azure import plan as preflight_plan

    from provision.clouds.azure.preflight import azure_preflight

    account = FakeSubscription(granted=[CONTRIBUTOR])
    # No shared filesystem either: nothing for the nodes' identity to read (a filesystem needs the right to assign).
    no_fs = preflight_plan(lifetime={"ttl": "6h"}, azure={"delete_at_expiry": False}, storage={"shared": None})
    assert azure_preflight(no_fs, account) == []
    assert not [a for a in account.asked if a.startswith("permissions:")]


def test_the_live_account_asks_the_subscription_when_the_group_does_not_exist_yet(monkeypatch: object) -> None:
    from azure.core.exceptions import ResourceNotFoundError

    from provision.clouds.azure.preflight import ArmAccount

    class Credential:
        def get_token(self, *scopes: str, **kw: Any) -> Any:
            raise AssertionError("no network in tests")

    account = ArmAccount("00000000-0000-0000-0000-000000000000", credential=Credential())
    sent: list[Any] = []

    class Response:
        def raise_for_status(self) -> None:
            return None

        def json(self) -> dict[str, Any]:
            return {"value": [{"actions": CONTRIBUTOR[0], "notActions": CONTRIBUTOR[1]}]}

    def missing(name: str) -> Any:
        raise ResourceNotFoundError("ResourceGroupNotFound")

    monkeypatch.setattr(account._permissions, "list_for_resource_group", missing)  # type: ignore[attr-defined]
    monkeypatch.setattr(account._resources, "send_request", lambda req: sent.append(req) or Response())  # type: ignore[attr-defined]
    assert account.permissions("c-rg") == [CONTRIBUTOR]
    assert sent[0].url.startswith(
        "/subscriptions/00000000-0000-0000-0000-000000000000/providers/Microsoft.Authorization/permissions"
    )
    assert "api-version=2022-04-01" in sent[0].url


# ---------------------------------------------------------------------- what the scale sets wait for

VMSS = "azure-native:compute:VirtualMachineScaleSet"
ASSIGNMENT = "azure-native:authorization:RoleAssignment"
DEFINITION = "azure-native:authorization:RoleDefinition"
SHIPPED = ("azure-ndh100-64", "azure-ndh100-256", "azure-ndh100-ci")


def _graph(stack: str) -> object:
    from conftest import preview, stack_spec
    from graph_deps import recorded_graph

    with recorded_graph() as graph:
        preview(stack_spec(stack))
    return graph


@pytest.fixture(scope="module", params=SHIPPED)
def shipped_graph(request: pytest.FixtureRequest) -> object:
    return _graph(request.param)


def test_no_scale_set_is_created_before_the_expiry_role_exists(shipped_graph: Any) -> None:
    """A deployer who may not write roles stops at the definition, before any GPU bills; the assignment waits for the
    definition to replicate off the GPUs' path (the preflight checks the right to assign)."""
    (definition,) = shipped_graph.of_type(DEFINITION)
    (assignment,) = [a for a in shipped_graph.of_type(ASSIGNMENT) if a.name.endswith("-expiry-assignment")]
    scale_sets = shipped_graph.of_type(VMSS)
    assert scale_sets and all(definition.urn in shipped_graph.ancestors(v) for v in scale_sets)
    assert not any(assignment.urn in shipped_graph.ancestors(v) for v in scale_sets)


# ---------------------------------------------------------------------- Bastion with a retained file system


def test_the_bastion_proxy_looks_scale_sets_up_in_their_own_group_when_the_fs_is_retained(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import subprocess
    from types import SimpleNamespace

    from provision.ops import proxy

    storage = {"shared": {"kind": "amlfs", "tier": "AMLFS-Durable-Premium-250", "size_gib": 8192, "retain": True}}
    p = plan(azure={"bastion": True}, storage=storage)
    bastion = p.extra.managed_bastion()
    assert bastion.resource_group == p.extra.network_resource_group != p.extra.resource_group
    assert bastion.scale_sets == tuple(f"{p.extra.resource_group}/{i.vmss}" for i in p.extra.islands)
    assert [w for w in p.warnings if "Bastion" in w and "keeps billing" in w]
    calls: list[list[str]] = []

    def run(argv: list[str], **kw: Any) -> Any:
        calls.append(argv)
        return SimpleNamespace(stdout="/subscriptions/s/resourceGroups/x/providers/vm/0\n")

    monkeypatch.setattr(subprocess, "run", run)
    assert proxy._target("az-test000000", bastion.resource_group, bastion.scale_sets)[0] == "--target-resource-id"
    assert calls[0][calls[0].index("-g") + 1] == p.extra.resource_group
    assert calls[0][calls[0].index("-n") + 1] == p.extra.islands[0].vmss
    # Without retain both live in the cluster group: plain names, the Bastion's group.
    plain = plan(azure={"bastion": True}).extra.managed_bastion()
    assert plain.scale_sets == tuple(i.vmss for i in plan(azure={"bastion": True}).extra.islands)


# ---------------------------------------------------------------------- NCCL on ND H100 v5


def test_nd_h100_v5_gets_microsofts_ndv5_nccl_tuning() -> None:
    env = plan().nccl_env
    assert {k: env[k] for k in ("NCCL_PXN_DISABLE", "NCCL_MIN_NCHANNELS", "NCCL_P2P_NET_CHUNKSIZE")} == {
        "NCCL_PXN_DISABLE": "1",
        "NCCL_MIN_NCHANNELS": "32",
        "NCCL_P2P_NET_CHUNKSIZE": "2097152",
    }
    assert env["NCCL_IB_QPS_PER_CONNECTION"] == "4"
    assert "NCCL_COLLNET_ENABLE" not in env  # SHARP needs HPC-X's plugin: not set by default


# ---------------------------------------------------------------------- preflight: zone offering, subscription


def test_a_size_not_offered_in_the_chosen_zone_is_refused() -> None:
    from test_preflight_azure import FakeSubscription
    from test_preflight_azure import plan as preflight_plan

    from provision.clouds.azure.preflight import azure_preflight

    account = FakeSubscription()
    account.skus["Standard_ND96isr_H100_v5"]["zones"] = ["2", "3"]
    (problem,) = azure_preflight(preflight_plan(zone="1"), account)
    assert (problem.path, problem.value) == ("zone", "1") and "not offered in zone 1" in problem.rule
    assert problem.fix == "use one of: 2, 3"
    assert azure_preflight(preflight_plan(zone="2"), account) == []


def test_the_preflight_asks_the_subscription_the_provider_deploys_to(monkeypatch: pytest.MonkeyPatch) -> None:
    from provision.clouds.azure import preflight
    from provision.spec.errors import UnsupportedError

    made: list[str] = []
    monkeypatch.setattr(preflight.ArmAccount, "__init__", lambda self, sub, credential=None: made.append(sub))
    monkeypatch.delenv("AZURE_SUBSCRIPTION_ID", raising=False)
    monkeypatch.setenv("ARM_SUBSCRIPTION_ID", "sub-arm")
    preflight.ArmAccount.from_environment()
    assert made == ["sub-arm"]
    monkeypatch.setenv("AZURE_SUBSCRIPTION_ID", "sub-stale")
    with pytest.raises(UnsupportedError, match="differ"):
        preflight.ArmAccount.from_environment()
