"""Strict mocked GCP: discovery-document rules (regenerated from the installed package), names, sizes, teardown."""

from __future__ import annotations

import pytest
from strict_helpers import one, register, violations_of

from provision.clouds.gcp import strict, strict_data

FIREWALL = "gcp:compute/firewall:Firewall"


def test_committed_rule_data_is_what_the_installed_discovery_documents_give() -> None:
    pytest.importorskip("googleapiclient", reason="google-api-python-client is in the dev extra")
    assert strict_data.render(strict_data.generate()) == strict_data.DATA.read_text(encoding="utf-8"), (
        "regenerate with: python -m provision.clouds.gcp.strict_data"
    )


def test_data_records_the_document_revisions() -> None:
    docs = strict.data()["documents"]
    assert set(docs) == {
        "compute.v1",
        "file.v1",
        "parallelstore.v1",
        "servicenetworking.v1",
        "container.v1",
        "cloudscheduler.v1",
        "iam.v1",
    }
    assert all(d["revision"] for d in docs.values())


def test_parallelstore_capacity_follows_the_api_description() -> None:
    v = one(
        violations_of(
            "gcp:parallelstore/instance:Instance", "x-daos", {"capacityGib": "12288", "instanceId": "x-daos"}
        ),
        "capacityGib",
    )
    assert "multiple of 4,000" in v.rule
    assert "parallelstore.v1" in v.source and "in multiples of 4000" in v.source
    register(
        "gcp:parallelstore/instance:Instance",
        "x-daos",
        {"capacityGib": "16000", "instanceId": "x-daos", "location": "us-central1-a"},
    )
    too_big = violations_of("gcp:parallelstore/instance:Instance", "x", {"capacityGib": "104000", "instanceId": "x"})
    assert "between 12,000 and 100,000" in one(too_big, "capacityGib").rule


def test_autonamed_firewall_over_63_characters_is_refused() -> None:
    name = "c" * 40 + "-gpunet-7-internal"
    found = violations_of(FIREWALL, name, {"direction": "INGRESS", "network": "n"})
    v = [x for x in found if x.field == "name (autonamed)" and "1-63" in x.rule][0]
    assert v.value == name + "-fffffff" and len(v.value) == 66
    assert "compute.v1" in v.source and "Firewall.name" in v.source


@pytest.mark.parametrize(
    ("type_token", "inputs", "field"),
    [
        (FIREWALL, {"direction": "SIDEWAYS"}, "direction"),
        (FIREWALL, {"priority": 70000}, "priority"),
        ("gcp:compute/network:Network", {"mtu": 9000}, "mtu"),
        ("gcp:compute/network:Network", {"routingMode": "WORLD"}, "routingMode"),
        (
            "gcp:compute/regionInstanceTemplate:RegionInstanceTemplate",
            {"scheduling": {"provisioningModel": "CHEAP"}},
            "scheduling.provisioningModel",
        ),
        (
            "gcp:compute/regionInstanceTemplate:RegionInstanceTemplate",
            {"networkInterfaces": [{"nicType": "FAST"}]},
            "networkInterfaces[].nicType",
        ),
        ("gcp:compute/routerNat:RouterNat", {"router": "r", "natIpAllocateOption": "SOME"}, "natIpAllocateOption"),
        ("gcp:compute/instanceGroupManager:InstanceGroupManager", {"baseInstanceName": "b" * 59}, "baseInstanceName"),
        ("gcp:filestore/instance:Instance", {"tier": "GOLD"}, "tier"),
    ],
)
def test_discovery_rules_refuse_bad_values(type_token: str, inputs: dict, field: str) -> None:
    v = one(violations_of(type_token, "x", inputs), field)
    assert v.source.startswith("Google discovery document")


def test_labels_must_be_label_safe() -> None:
    v = one(violations_of("gcp:compute/network:Network", "x", {"labels": {"owner": "Not Safe"}}), "labels.owner")
    assert "labels-overview" in v.source


@pytest.mark.parametrize(
    ("throughput", "capacity", "ok"), [(500, 36000, True), (500, 27000, False), (250, 18000, False)]
)
def test_managed_lustre_capacity_per_tier(throughput: int, capacity: int, ok: bool) -> None:
    inputs = {
        "perUnitStorageThroughput": throughput,
        "capacityGib": str(capacity),
        "filesystem": "fs1",
        "location": "us-central1-a",
        "instanceId": "x",
    }
    if ok:
        register("gcp:lustre/instance:Instance", "x", inputs)
    else:
        assert (
            "performance-tiers" in one(violations_of("gcp:lustre/instance:Instance", "x", inputs), "capacityGib").source
        )


def test_managed_lustre_filesystem_name_is_short() -> None:
    inputs = {"perUnitStorageThroughput": 500, "capacityGib": "36000", "filesystem": "toolongname", "instanceId": "x"}
    assert one(violations_of("gcp:lustre/instance:Instance", "x", inputs), "filesystem")


def test_filestore_capacity_per_tier() -> None:
    inputs = {"tier": "BASIC_SSD", "fileShares": {"name": "share", "capacityGb": 1024}}
    v = one(violations_of("gcp:filestore/instance:Instance", "x", inputs), "fileShares.capacityGb")
    assert "2,560" in v.rule


def test_private_services_connection_must_not_block_teardown() -> None:
    inputs = {"network": "n", "service": "servicenetworking.googleapis.com", "reservedPeeringRanges": ["r"]}
    v = one(violations_of("gcp:servicenetworking/connection:Connection", "x-psa", inputs), "deletionPolicy")
    assert "REMOVE_PEERING" in v.rule and "#16275" in v.source
    register("gcp:servicenetworking/connection:Connection", "x-psa", {**inputs, "deletionPolicy": "REMOVE_PEERING"})


def test_service_account_ids_are_6_to_30_characters() -> None:
    v = one(violations_of("gcp:serviceaccount/account:Account", "x", {"accountId": "a" * 31}), "accountId")
    assert "6-30" in v.rule


JOB = "gcp:cloudscheduler/job:Job"
GOOD_JOB = {
    "name": "c-expiry",
    "region": "us-central1",
    "schedule": "0 0 30 11 *",
    "timeZone": "Etc/UTC",
    "attemptDeadline": "60s",
    "retryConfig": {"retryCount": 5},
    "httpTarget": {
        "uri": "https://container.googleapis.com/v1/projects/p/locations/l/clusters/c",
        "httpMethod": "DELETE",
    },
}


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"schedule": "2026-11-30T00:00Z"}, "schedule", "unix-cron"),
        ({"schedule": "0 24 30 11 *"}, "schedule", "unix-cron"),
        ({"timeZone": "Mars/Olympus"}, "timeZone", "tz database"),
        ({"attemptDeadline": "10s"}, "attemptDeadline", "15s to 1800s"),
        ({"attemptDeadline": "3600s"}, "attemptDeadline", "15s to 1800s"),
        ({"retryConfig": {"retryCount": 6}}, "retryConfig.retryCount", "0 to 5"),
        ({"name": "c.expiry"}, "name", "job id"),
        ({"httpTarget": {"uri": "https://x", "httpMethod": "DELETE", "body": "e30="}}, "httpTarget.body", "POST"),
        ({"httpTarget": {"uri": "https://x", "httpMethod": "ERASE"}}, "httpTarget.httpMethod", ""),
    ],
)
def test_cloud_scheduler_refuses_what_the_api_refuses(change: dict, field: str, words: str) -> None:
    register(JOB, "x", GOOD_JOB)
    v = one(violations_of(JOB, "x", {**GOOD_JOB, **change}), field)
    assert words in v.rule


def test_custom_role_ids_take_no_hyphens_and_need_a_permission() -> None:
    role = {"roleId": "provision_c_expiry", "title": "t", "permissions": ["container.clusters.delete"]}
    register("gcp:projects/iAMCustomRole:IAMCustomRole", "x", role)
    found = violations_of("gcp:projects/iAMCustomRole:IAMCustomRole", "x", {**role, "roleId": "c-expiry"})
    assert "A-Za-z0-9_." in one(found, "roleId").rule
    found = violations_of("gcp:projects/iAMCustomRole:IAMCustomRole", "x", {**role, "permissions": []})
    one(found, "permissions")
