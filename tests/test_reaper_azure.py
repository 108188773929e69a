"""The Azure tag sweep of `provision reap`: expired cluster groups found and deleted without Pulumi state."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import pytest
from azure.core.exceptions import ClientAuthenticationError, HttpResponseError, ResourceNotFoundError
from typer.testing import CliRunner

from provision.cli.app import app
from provision.clouds.azure.expiry import role_guid, role_name
from provision.clouds.azure.sweeper import ATTEMPTS, BACKOFF_CAP_S, FORCE_DELETION_TYPES, AzureSweeper
from provision.ops import reaper

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)


@dataclass
class Group:
    name: str
    tags: dict[str, str] | None
    location: str = "eastus"
    managed_by: str | None = None


@dataclass
class Poller:
    done: list[str]
    name: str
    events: list[tuple[str, str]] = field(default_factory=list)
    fail: Exception | None = None

    def result(self) -> None:
        self.events.append(("wait", self.name))
        if self.fail is not None:
            raise self.fail
        self.done.append(self.name)


@dataclass
class Groups:
    groups: list[Group]
    filters: list[str | None] = field(default_factory=list)
    deleted: list[tuple[str, str | None]] = field(default_factory=list)
    finished: list[str] = field(default_factory=list)
    deny: bool = False
    #: In order of time: ("begin", group) when a deletion is requested, ("wait", group) when it is waited for.
    events: list[tuple[str, str]] = field(default_factory=list)
    #: Per group, what the next begin_delete calls raise (one entry per call), then what their pollers' waits raise.
    refuse: dict[str, list[Exception]] = field(default_factory=dict)
    fail: dict[str, list[Exception]] = field(default_factory=dict)

    def list(self, *, filter: str | None = None) -> list[Group]:  # noqa: A002  # the SDK's keyword
        if self.deny:
            raise ClientAuthenticationError("no credentials")
        self.filters.append(filter)
        return [g for g in self.groups if filter is None or "provision-expires-at" in (g.tags or {})]

    def begin_delete(self, name: str, *, force_deletion_types: str | None = None) -> Poller:
        if name not in {g.name for g in self.groups}:
            raise ResourceNotFoundError("gone")
        self.events.append(("begin", name))
        if self.refuse.get(name):
            raise self.refuse[name].pop(0)
        self.deleted.append((name, force_deletion_types))
        fail = self.fail[name].pop(0) if self.fail.get(name) else None
        return Poller(self.finished, name, self.events, fail)


class Client:
    def __init__(self, groups: list[Group]) -> None:
        self.resource_groups = Groups(groups)


@dataclass
class Roles:
    """``role_definitions`` of azure-mgmt-authorization: ``delete`` returns None when the role is gone."""

    existing: set[str]
    deleted: list[tuple[str, str]] = field(default_factory=list)

    def delete(self, scope: str, role_definition_id: str) -> object | None:
        self.deleted.append((scope, role_definition_id))
        if role_definition_id in self.existing:
            self.existing.discard(role_definition_id)
            return object()
        return None


def tags(cluster: str, expires: str, **extra: str) -> dict[str, str]:
    return {"provision-cluster": cluster, "provision-expires-at": expires, **extra}


@pytest.fixture
def client() -> Client:
    return Client(
        [
            Group("old-rg", tags("old", "20261130t0900z")),
            Group("old-data-rg", tags("old", "never", **{"provision-retain": "true"})),
            Group("kept-rg", tags("kept", "20261130t0900z", **{"provision-retain": "true"})),
            Group("young-rg", tags("young", "20261202t0900z")),
            Group("garbled-rg", tags("garbled", "soon")),
            Group("someone-elses", {"owner": "x"}),
            Group("untagged", None),
        ]
    )


def test_sweep_lists_only_expired_unretained_cluster_groups(client: Client) -> None:
    found = AzureSweeper("sub", client=client, now=lambda: NOW).find()
    assert [(c.cluster, c.resources) for c in found] == [("old", ["old-rg"])]
    assert found[0].cloud == "azure" and found[0].region == "eastus"
    assert client.resource_groups.filters == ["tagName eq 'provision-expires-at'"]  # ARM filters by tag


def test_delete_removes_the_group_whole_and_force_deletes_scale_sets(client: Client) -> None:
    sweeper = AzureSweeper("sub", client=client, now=lambda: NOW)
    (expired,) = sweeper.find()
    assert sweeper.delete(expired) == ["resourceGroup/old-rg"]
    assert client.resource_groups.deleted == [("old-rg", FORCE_DELETION_TYPES)]
    assert client.resource_groups.finished == ["old-rg"]  # waited for ARM to finish
    client.resource_groups.groups = [g for g in client.resource_groups.groups if g.name != "old-rg"]
    assert sweeper.delete(expired) == []  # already gone: idempotent


def test_delete_removes_the_clusters_expiry_role_definition_after_its_group(client: Client) -> None:
    group_id = "/subscriptions/sub/resourceGroups/old-rg"
    roles = Roles({role_guid(group_id, "definition")})
    sweeper = AzureSweeper("sub", client=client, now=lambda: NOW, roles=roles)
    (expired,) = sweeper.find()
    assert sweeper.delete(expired) == ["resourceGroup/old-rg", f"roleDefinition/{role_name('old', group_id)}"]
    assert roles.deleted == [
        ("/subscriptions/sub", role_guid(group_id, "definition")),
        ("/subscriptions/sub", role_guid(group_id, "aks-expiry-definition")),  # gone: 204, nothing listed
    ]
    assert not roles.existing


def test_reap_cli_sweeps_a_subscription_and_deletes_with_yes(
    client: Client, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    monkeypatch.setenv("PROVISION_HOME", str(tmp_path))
    monkeypatch.setattr("provision.clouds.azure.sweeper._client", lambda sub: client)
    monkeypatch.setattr("provision.clouds.azure.sweeper._roles", lambda sub: Roles(set()))
    monkeypatch.setattr("provision.clouds.azure.sweeper.datetime", _Frozen)
    result = CliRunner().invoke(
        app, ["reap", "--mock", "--azure-subscription", "00000000-0000-4000-8000-000000000001", "--yes", "--json"]
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    rows = [r for r in doc["expired"] if r["source"] == "azure-tags"]
    assert [(r["cluster"], r["deleted"]) for r in rows] == [("old", ["resourceGroup/old-rg"])]


class _Frozen(datetime):
    @classmethod
    def now(cls, tz: Any = None) -> datetime:  # type: ignore[override]
        return NOW


def test_azure_refusals_are_clear_errors_with_exit_1(client: Client) -> None:
    client.resource_groups.deny = True
    with pytest.raises(Exception) as err:
        reaper.sweep("azure", "sub-1", delete=False, client=client)
    assert "sweeping Azure subscription sub-1 failed" in str(err.value)
    assert getattr(err.value, "exit_code", None) == 1


def test_an_aks_clusters_node_group_is_left_to_aks_and_its_expiry_role_is_deleted_after_the_group() -> None:
    cluster_id = "/subscriptions/sub/resourceGroups/aks-rg/providers/Microsoft.ContainerService/managedClusters/aks"
    client = Client(
        [
            Group("aks-rg", tags("aks", "20261130t0900z")),
            # AKS copies the cluster's tags onto its node group, which only AKS may delete.
            Group("aks-rg-nodes", tags("aks", "20261130t0900z"), managed_by=cluster_id),
        ]
    )
    group_id = "/subscriptions/sub/resourceGroups/aks-rg"
    roles = Roles({role_guid(group_id, "aks-expiry-definition")})
    sweeper = AzureSweeper("sub", client=client, now=lambda: NOW, roles=roles)
    (expired,) = sweeper.find()
    assert expired.resources == ["aks-rg"]
    assert sweeper.delete(expired) == ["resourceGroup/aks-rg", f"roleDefinition/{role_name('aks', group_id)}-aks"]
    assert not roles.existing


def http_error(status: int, retry_after: str | None = None) -> HttpResponseError:
    """An ARM refusal as azure-core raises it (status, and the Retry-After header when ARM sends one)."""
    e = HttpResponseError(f"status {status}")
    e.status_code = status
    if retry_after is not None:

        class Response:
            headers = {"Retry-After": retry_after}

        e.response = Response()  # type: ignore[assignment]
    return e


def two_expired() -> Client:
    return Client([Group("a-rg", tags("a", "20261130t0900z")), Group("b-rg", tags("b", "20261130t0800z"))])


def test_expired_groups_are_deleted_side_by_side_not_one_after_another() -> None:
    client = two_expired()
    rows = reaper.sweep("azure", "sub", delete=True, client=client)
    assert [r["deleted"] for r in rows] == [["resourceGroup/b-rg"], ["resourceGroup/a-rg"]]
    # Both deletions are requested before either is waited for: the sweep takes the longest, not the sum.
    assert client.resource_groups.events == [("begin", "b-rg"), ("begin", "a-rg"), ("wait", "b-rg"), ("wait", "a-rg")]


def test_throttling_and_conflicts_are_tried_again_with_bounded_backoff() -> None:
    client = two_expired()
    client.resource_groups.refuse = {"a-rg": [http_error(429, retry_after="7"), http_error(409)]}
    slept: list[float] = []
    sweeper = AzureSweeper("sub", client=client, now=lambda: NOW, sleep=slept.append)
    assert sweeper.delete_all(sweeper.find()) == [["resourceGroup/b-rg"], ["resourceGroup/a-rg"]]
    assert slept == [7.0, 30.0]  # ARM's Retry-After first, then the doubling backoff
    assert sorted(client.resource_groups.finished) == ["a-rg", "b-rg"]


def test_a_group_deletion_that_fails_half_way_is_requested_again() -> None:
    client = two_expired()
    # The long-running operation ends failed (e.g. the filesystem busy in maintenance): delete the group again.
    client.resource_groups.fail = {"a-rg": [http_error(409)]}
    slept: list[float] = []
    sweeper = AzureSweeper("sub", client=client, now=lambda: NOW, sleep=slept.append)
    assert sweeper.delete_all(sweeper.find()) == [["resourceGroup/b-rg"], ["resourceGroup/a-rg"]]
    assert [e for e in client.resource_groups.events if e[1] == "a-rg"] == [
        ("begin", "a-rg"),
        ("wait", "a-rg"),
        ("begin", "a-rg"),
        ("wait", "a-rg"),
    ]
    assert sorted(client.resource_groups.finished) == ["a-rg", "b-rg"] and len(slept) == 1


def test_retries_are_bounded_and_a_lasting_refusal_is_reported() -> None:
    client = two_expired()
    client.resource_groups.refuse = {"a-rg": [http_error(409, retry_after="900") for _ in range(ATTEMPTS + 3)]}
    slept: list[float] = []
    sweeper = AzureSweeper("sub", client=client, now=lambda: NOW, sleep=slept.append)
    with pytest.raises(HttpResponseError):
        sweeper.delete_all(sweeper.find())
    assert len(slept) == ATTEMPTS - 1 and max(slept) <= BACKOFF_CAP_S
    assert [e for e in client.resource_groups.events if e[1] == "a-rg"] == [("begin", "a-rg")] * ATTEMPTS


def test_a_lasting_refusal_other_than_a_transient_one_is_not_retried() -> None:
    client = two_expired()
    client.resource_groups.refuse = {"a-rg": [http_error(403)]}
    slept: list[float] = []
    sweeper = AzureSweeper("sub", client=client, now=lambda: NOW, sleep=slept.append)
    with pytest.raises(HttpResponseError):
        sweeper.delete_all(sweeper.find())
    assert slept == []


def test_a_role_definition_still_assigned_is_deleted_once_the_assignment_is_gone() -> None:
    group_id = "/subscriptions/sub/resourceGroups/old-rg"
    refused = HttpResponseError("RoleDefinitionHasAssignments")
    refused.error_code = "RoleDefinitionHasAssignments"  # type: ignore[attr-defined]

    @dataclass
    class Lagging(Roles):
        refusals: int = 1

        def delete(self, scope: str, role_definition_id: str) -> object | None:
            if self.refusals:
                self.refusals -= 1
                raise refused
            return super().delete(scope, role_definition_id)

    roles = Lagging({role_guid(group_id, "definition")})
    slept: list[float] = []
    client = Client([Group("old-rg", tags("old", "20261130t0900z"))])
    sweeper = AzureSweeper("sub", client=client, now=lambda: NOW, roles=roles, sleep=slept.append)
    (expired,) = sweeper.find()
    assert sweeper.delete(expired) == ["resourceGroup/old-rg", f"roleDefinition/{role_name('old', group_id)}"]
    assert slept == [15.0] and not roles.existing
