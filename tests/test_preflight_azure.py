"""Azure preflight against a fake subscription: what a real account would refuse, found before anything bills."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from test_azure_plan import azure_spec

from provision.clouds.azure.adapter import AzureAdapter
from provision.clouds.azure.preflight import azure_preflight
from provision.spec import load_spec

ND_FAMILY = "standardNDSH100v5Family"


@dataclass
class FakeSubscription:
    """An AzureAccount with a healthy subscription unless a test changes a field."""

    providers: dict[str, str] = field(
        default_factory=lambda: {
            "Microsoft.Compute": "Registered",
            "Microsoft.Network": "Registered",
            "Microsoft.StorageCache": "Registered",
            "Microsoft.NetApp": "Registered",
            "Microsoft.ManagedIdentity": "Registered",
        }
    )
    features: dict[str, str] = field(default_factory=lambda: {"Microsoft.Compute/EncryptionAtHost": "Registered"})
    skus: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {
            "Standard_ND96isr_H100_v5": {
                "family": ND_FAMILY,
                "restrictions": [],
                "capabilities": {"EncryptionAtHostSupported": "True"},
            }
        }
    )
    quota: dict[str, tuple[float, float]] = field(
        default_factory=lambda: {ND_FAMILY: (0, 2000), "cores": (10, 5000), "lowPriorityCores": (0, 1000)}
    )
    #: (actions, notActions) per role of the deployer; Owner by default.
    granted: list[tuple[list[str], list[str]]] = field(default_factory=lambda: [(["*"], [])])
    asked: list[str] = field(default_factory=list)

    def provider_state(self, namespace: str) -> str:
        self.asked.append(namespace)
        return self.providers.get(namespace, "NotRegistered")

    def feature_state(self, namespace: str, feature: str) -> str:
        return self.features.get(f"{namespace}/{feature}", "NotRegistered")

    def sku(self, region: str, size: str) -> dict[str, Any] | None:
        return self.skus.get(size)

    def usages(self, region: str) -> dict[str, tuple[float, float]]:
        return self.quota

    def permissions(self, resource_group: str) -> list[tuple[list[str], list[str]]]:
        self.asked.append(f"permissions:{resource_group}")
        return self.granted


def plan(**over: Any) -> Any:
    return AzureAdapter().plan(load_spec(azure_spec(**over)))


def paths(problems: list[Any]) -> list[str]:
    return [p.path for p in problems]


def test_a_ready_subscription_passes() -> None:
    account = FakeSubscription()
    assert azure_preflight(plan(), account) == []
    assert account.asked[:4] == [
        "Microsoft.Compute",
        "Microsoft.Network",
        "Microsoft.StorageCache",
        "Microsoft.ManagedIdentity",  # the nodes' identity reads the filesystem's address at boot
    ]


def test_unregistered_resource_providers_are_named_with_the_command_that_registers_them() -> None:
    account = FakeSubscription()
    account.providers["Microsoft.StorageCache"] = "NotRegistered"
    (problem,) = azure_preflight(plan(), account)
    assert problem.value == "Microsoft.StorageCache" and "MissingSubscriptionRegistration" in problem.rule
    assert problem.fix == "az provider register --namespace Microsoft.StorageCache --wait"


def test_netapp_needs_its_own_provider() -> None:
    account = FakeSubscription()
    account.providers["Microsoft.NetApp"] = "Registering"
    problems = azure_preflight(plan(storage={"shared": {"kind": "netapp", "size_gib": 4096}}), account)
    assert [p.value for p in problems] == ["Microsoft.NetApp"]


def test_a_zero_nd_quota_is_reported_before_the_gpus_bill() -> None:
    account = FakeSubscription()
    account.quota[ND_FAMILY] = (0, 0)
    (problem,) = azure_preflight(plan(nodes=8), account)
    assert problem.path == "nodes" and "768" in problem.rule and ND_FAMILY in problem.fix


def test_the_regional_total_counts_too() -> None:
    account = FakeSubscription()
    account.quota["cores"] = (4500, 5000)
    (problem,) = azure_preflight(plan(nodes=8), account)
    assert "regional vCPUs" in problem.rule


def test_spot_uses_the_low_priority_quota_only() -> None:
    account = FakeSubscription()
    account.quota[ND_FAMILY] = (0, 0)
    account.quota["lowPriorityCores"] = (0, 96)
    problems = azure_preflight(plan(nodes=2, capacity={"type": "spot"}), account)
    assert len(problems) == 1 and "Spot vCPUs" in problems[0].rule


def test_restricted_sizes_and_zones_are_refused() -> None:
    account = FakeSubscription()
    account.skus["Standard_ND96isr_H100_v5"]["restrictions"] = [
        {"type": "Location", "reason": "NotAvailableForSubscription", "zones": []},
        {"type": "Zone", "reason": "NotAvailableForSubscription", "zones": ["1"]},
    ]
    problems = azure_preflight(plan(zone="1"), account)
    assert paths(problems) == ["instance_type", "zone"]


def test_a_size_missing_from_the_region_stops_further_checks() -> None:
    account = FakeSubscription(skus={})
    problems = azure_preflight(plan(), account)
    assert paths(problems) == ["instance_type"] and "not offered" in problems[0].rule


def test_encryption_at_host_needs_the_feature_only_when_chosen() -> None:
    account = FakeSubscription(features={})
    assert azure_preflight(plan(), account) == []  # off by default: not asked
    problems = azure_preflight(plan(azure={"encryption_at_host": True}), account)
    assert paths(problems) == ["azure.encryption_at_host"] and "NotRegistered" in problems[0].rule
    account.features["Microsoft.Compute/EncryptionAtHost"] = "Registered"
    account.skus["Standard_ND96isr_H100_v5"]["capabilities"]["EncryptionAtHostSupported"] = "False"
    problems = azure_preflight(plan(azure={"encryption_at_host": True}), account)
    assert paths(problems) == ["azure.encryption_at_host"] and "does not support" in problems[0].rule


def test_every_problem_is_reported_at_once() -> None:
    account = FakeSubscription(features={})
    account.providers["Microsoft.Network"] = "NotRegistered"
    account.quota[ND_FAMILY] = (0, 0)
    problems = azure_preflight(plan(azure={"encryption_at_host": True}), account)
    assert paths(problems) == ["cloud", "nodes", "azure.encryption_at_host"]


def test_the_live_account_reads_the_sdk_models_it_gets(monkeypatch: Any) -> None:
    # The real adapter, fed the azure-mgmt-compute models an ARM answer deserialises to (no network).
    models = __import__("azure.mgmt.compute.models", fromlist=["ResourceSku", "Usage"])
    from provision.clouds.azure.preflight import ArmAccount

    class Credential:
        def get_token(self, *scopes: str, **kw: Any) -> Any:  # never called: no request is made
            raise AssertionError("no network in tests")

    account = ArmAccount("00000000-0000-0000-0000-000000000000", credential=Credential())
    sku = models.ResourceSku(
        {
            "resourceType": "virtualMachines",
            "name": "Standard_ND96isr_H100_v5",
            "family": ND_FAMILY,
            "restrictions": [
                {"type": "Zone", "values": ["eastus"], "reasonCode": "NotAvailableForSubscription",
                 "restrictionInfo": {"locations": ["eastus"], "zones": ["2"]}},
            ],
            "capabilities": [{"name": "EncryptionAtHostSupported", "value": "False"}],
        }
    )  # fmt: skip
    usage = models.Usage({"name": {"value": ND_FAMILY}, "currentValue": 96, "limit": 100, "unit": "Count"})
    monkeypatch.setattr(account._compute.resource_skus, "list", lambda filter: [sku])
    monkeypatch.setattr(account._compute.usage, "list", lambda location: [usage])
    assert account.sku("eastus", "Standard_ND96isr_H100_v5") == {
        "family": ND_FAMILY,
        "restrictions": [{"type": "Zone", "reason": "NotAvailableForSubscription", "zones": ["2"]}],
        "capabilities": {"EncryptionAtHostSupported": "False"},
        "zones": None,  # no locationInfo in this answer
    }
    assert account.sku("eastus", "Standard_ND96asr_v4") is None
    assert account.usages("eastus") == {ND_FAMILY: (96.0, 100.0)}


def test_the_dispatcher_has_no_live_check_for_clouds_without_one(monkeypatch: Any) -> None:
    from provision.clouds.gcp.adapter import GcpAdapter
    from provision.engine.preflight import preflight

    monkeypatch.setattr(GcpAdapter, "preflight_asks", None)  # a cloud that declares no live check
    gcp = type("P", (), {"cloud": "gcp"})()
    assert preflight(gcp) == []  # type: ignore[arg-type]


# ---------------------------------------------------------------------- a real `up` runs it (review A5)


def _real_cluster(tmp_path: Any, monkeypatch: Any) -> tuple[Any, Any]:
    from conftest import isolated_home, stack_spec
    from test_automation import FakePulumi

    from provision.ops.cluster import Cluster

    isolated_home(tmp_path, monkeypatch)
    fake = FakePulumi()
    return Cluster.from_spec(stack_spec("azure-ndh100-ci"), stack="az-ci", pulumi_command=fake, display="none"), fake


def test_a_real_up_asks_the_subscription_first_and_creates_nothing_when_it_cannot_hold_the_cluster(
    tmp_path: Any, monkeypatch: Any
) -> None:
    """Review 2026-12-01 Azure A5: the preflight existed, but no `up` ran it, so an unregistered provider or a zero
    ND quota still surfaced minutes into `pulumi up`, after the network was billing."""
    import pytest

    from provision.clouds.azure import preflight
    from provision.spec.errors import SpecError

    account = FakeSubscription(quota={ND_FAMILY: (0, 0), "cores": (0, 5000)})
    account.providers["Microsoft.NetApp"] = "NotRegistered"
    monkeypatch.setattr(preflight.ArmAccount, "from_environment", classmethod(lambda cls: account))
    cluster, fake = _real_cluster(tmp_path, monkeypatch)
    with pytest.raises(SpecError) as e:
        cluster.up()
    assert e.value.exit_code == 2 and sorted(paths(list(e.value.problems))) == ["cloud", "nodes"]
    assert "az provider register --namespace Microsoft.NetApp" in str(e.value)
    assert not any(c[:2] == ["stack", "init"] or c[:1] == ["up"] for c in fake.calls)


def test_a_subscription_that_cannot_be_asked_is_a_warning_not_a_stop(tmp_path: Any, monkeypatch: Any) -> None:
    from provision.clouds.azure import preflight
    from provision.spec.errors import UnsupportedError

    def unreachable(cls: Any) -> Any:
        raise UnsupportedError("the Azure preflight needs AZURE_SUBSCRIPTION_ID; to fix: export it")

    monkeypatch.setattr(preflight.ArmAccount, "from_environment", classmethod(unreachable))
    cluster, fake = _real_cluster(tmp_path, monkeypatch)
    result = cluster.up()
    assert result is not None and any(c[:1] == ["up"] for c in fake.calls)
    assert any("preflight did not run" in w and "AZURE_SUBSCRIPTION_ID" in w for w in result.warnings)


def _aks_plan() -> Any:
    from conftest import stack_spec

    return AzureAdapter().plan(stack_spec("azure-ndh100-64-aks"))


def test_aks_needs_its_providers_the_infiniband_feature_and_role_writes_all_at_once() -> None:
    account = FakeSubscription(granted=[(["*"], ["Microsoft.Authorization/*/write"])])
    account.providers["Microsoft.ManagedIdentity"] = "NotRegistered"  # the fake registers it by default
    problems = azure_preflight(_aks_plan(), account)
    assert {p.value for p in problems if p.path == "cloud"} == {
        "Microsoft.ContainerService",
        "Microsoft.ManagedIdentity",
    }
    fabric = next(p for p in problems if p.path == "fabric")
    assert "AKSInfinibandSupport" in fabric.rule and "az feature register" in fabric.fix
    assert "roleAssignments/write" in next(p for p in problems if p.path == "scheduler.kind").rule


def test_a_subscription_ready_for_aks_passes() -> None:
    account = FakeSubscription()
    account.providers.update({"Microsoft.ContainerService": "Registered", "Microsoft.ManagedIdentity": "Registered"})
    account.features["Microsoft.ContainerService/AKSInfinibandSupport"] = "Registered"
    assert azure_preflight(_aks_plan(), account) == []


# ---------------------------------------------------------------------- GPUs first: the nodes' read-only role


CONTRIBUTOR = [(["*"], ["Microsoft.Authorization/*/Delete", "Microsoft.Authorization/*/Write"])]


def test_a_deployer_who_cannot_assign_roles_is_stopped_before_nodes_wait_for_a_filesystem_they_cannot_read() -> None:
    account = FakeSubscription(granted=CONTRIBUTOR)
    netapp = {"shared": {"kind": "netapp", "tier": "Premium", "size_gib": 1024}}
    problems = azure_preflight(plan(storage=netapp), account)
    (fs,) = [p for p in problems if p.path == "storage.shared"]
    assert "Microsoft.Authorization/roleAssignments/write" in fs.rule and "Role Based Access Control" in fs.fix
    rbac_admin = [(["Microsoft.Authorization/roleAssignments/write"], [])]
    assert azure_preflight(plan(), FakeSubscription(granted=CONTRIBUTOR + rbac_admin)) == []
    assert not [p for p in azure_preflight(plan(storage={"shared": None}), account) if p.path == "storage.shared"]


def test_the_identity_provider_must_be_registered_when_the_nodes_carry_the_identity() -> None:
    account = FakeSubscription()
    account.providers["Microsoft.ManagedIdentity"] = "NotRegistered"
    assert "Microsoft.ManagedIdentity" in [p.value for p in azure_preflight(plan(), account)]
    assert azure_preflight(plan(storage={"shared": None}), FakeSubscription(providers={})) != []  # sanity: fake works
    bare = FakeSubscription()
    bare.providers["Microsoft.ManagedIdentity"] = "NotRegistered"
    assert azure_preflight(plan(storage={"shared": None}), bare) == []  # no identity, no need


def test_the_quota_family_is_matched_without_case() -> None:
    account = FakeSubscription(quota={ND_FAMILY.upper(): (0, 0), "cores": (10, 5000), "lowPriorityCores": (0, 1000)})
    assert "nodes" in paths(azure_preflight(plan(), account))


def test_a_large_netapp_volume_warns_about_the_regional_capacity_quota() -> None:
    large = plan(storage={"shared": {"kind": "netapp", "tier": "Premium", "size_gib": 150 * 1024}})
    assert large.extra.filesystem.large_volume
    assert any("regional capacity quota" in w for w in large.warnings)
    small = plan(storage={"shared": {"kind": "netapp", "tier": "Premium", "size_gib": 1024}})
    assert not any("regional capacity quota" in w for w in small.warnings)
