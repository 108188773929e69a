"""Mocked clouds with state: the store, the resource diff, and up/status/outputs/down on gcp-a3-64."""

from __future__ import annotations

import json
import stat
from datetime import timedelta
from pathlib import Path

import pytest
from conftest import FIXED_NOW, isolated_home, stack_spec

from provision.engine.mockrun import run_mock
from provision.engine.mockstate import (
    MockResource,
    MockState,
    MockStore,
    destroy_steps,
    diff_resources,
    input_diff,
    spec_hash,
)
from provision.spec import load_spec
from provision.spec.errors import CloudError

STACK = "gcp-a3-64"


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = isolated_home(tmp_path, monkeypatch)
    return home


def _r(name: str, **inputs: object) -> MockResource:
    return MockResource("gcp:compute/instance:Instance", name, dict(inputs), f"{name}-id")


# ---------------------------------------------------------------------- pure diff


def test_input_diff_names_nested_paths_and_list_items() -> None:
    old = {"labels": {"a": "1", "b": "2"}, "disks": [{"size": 10}, {"size": 20}], "zone": "z1"}
    new = {"labels": {"a": "1", "b": "3", "c": "4"}, "disks": [{"size": 10}, {"size": 30}], "zone": "z1"}
    assert input_diff(old, new) == ["disks[1].size", "labels.b", "labels.c"]


def test_input_diff_of_lists_with_new_length_names_the_list() -> None:
    assert input_diff({"tags": ["a"]}, {"tags": ["a", "b"]}) == ["tags"]
    assert input_diff({"x": 1}, {"x": 1}) == []


def test_diff_resources_creates_updates_keeps_and_deletes_in_engine_order() -> None:
    old = [_r("net", cidr="10.0.0.0/16"), _r("node", machine="a3"), _r("gone")]
    new = [_r("net", cidr="10.0.0.0/16"), _r("node", machine="a3-mega"), _r("fs")]
    steps = [(s.op, s.name, s.keys) for s in diff_resources(old, new)]
    assert steps == [
        ("same", "net", ()),
        ("update", "node", ("machine",)),
        ("create", "fs", ()),
        ("delete", "gone", ()),
    ]


def test_resources_of_another_type_with_the_same_name_are_different_resources() -> None:
    old = [MockResource("gcp:compute/network:Network", "x", {}, "1")]
    new = [MockResource("gcp:compute/subnetwork:Subnetwork", "x", {}, "2")]
    assert [s.op for s in diff_resources(old, new)] == ["create", "delete"]


def test_destroy_deletes_dependents_first() -> None:
    state = MockState(STACK, {}, "h", [_r("net"), _r("node")], {}, FIXED_NOW, FIXED_NOW)
    assert [(s.op, s.name) for s in destroy_steps(state)] == [("delete", "node"), ("delete", "net")]
    assert destroy_steps(None) == []


# ---------------------------------------------------------------------- the store


def test_store_writes_owner_only_files_and_round_trips(home: Path) -> None:
    store = MockStore()
    state = MockState(STACK, {"name": "x"}, "abc", [_r("node", a=[1])], {"hostfile": "h"}, FIXED_NOW, FIXED_NOW)
    path = store.save(state)
    assert path == home / "mock" / f"{STACK}.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((home / "mock").stat().st_mode) == 0o700
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert store.load(STACK) == state
    assert store.stacks() == [STACK]
    assert store.delete(STACK) == state
    assert store.load(STACK) is None and not path.exists()


def test_state_from_another_layout_version_is_refused_not_read_as_nothing(home: Path) -> None:
    store = MockStore()
    store.path(STACK).write_text(json.dumps({"version": 999, "stack": STACK}))
    with pytest.raises(CloudError, match="state version 999") as err:
        store.load(STACK)
    assert str(store.path(STACK)) in str(err.value)
    assert store.path(STACK).exists()


def test_stack_names_cannot_escape_the_mock_folder(home: Path) -> None:
    assert MockStore().path("org/../../etc").parent == home / "mock"


# ---------------------------------------------------------------------- the program under the mocked cloud


@pytest.fixture(scope="module")
def first_run() -> object:
    return run_mock(stack_spec(STACK), STACK, None, now=FIXED_NOW)


def test_first_up_creates_every_resource_and_realistic_outputs(first_run: object) -> None:
    run = first_run
    assert run.changed and {c.op for c in run.changes} == {"create"}
    assert len(run.changes) == len(run.state.resources) > 3
    outputs = run.state.outputs
    hosts = outputs["hosts"]
    assert len(hosts) == 8 and all(h.endswith(".c.my-ml-project.internal") for h in hosts)  # zonal internal DNS
    assert outputs["hostfile"].splitlines()[0] == f"{hosts[0]} slots=8"
    assert "Host " in outputs["ssh_config"] and outputs["nccl_env"]
    assert run.state.created_at == FIXED_NOW
    assert run.state.spec_hash == spec_hash(stack_spec(STACK))
    json.dumps(run.state.as_dict())  # everything stored is plain JSON


def test_second_up_of_the_same_spec_changes_nothing(first_run: object) -> None:
    later = FIXED_NOW + timedelta(hours=1)
    again = run_mock(stack_spec(STACK), STACK, first_run.state, now=later)
    assert not again.changed
    assert again.counts() == {"same": len(first_run.state.resources)}
    assert again.state.created_at == FIXED_NOW  # the lifetime still counts from the first up


def test_changed_spec_shows_updates_with_their_input_keys(first_run: object) -> None:
    spec = stack_spec(STACK)
    changed = spec.model_copy(update={"tags": {**spec.tags, "team": "infra-changed"}})
    run = run_mock(changed, STACK, first_run.state, now=FIXED_NOW)
    updates = [c for c in run.changes if c.op == "update"]
    assert updates, run.counts()
    assert all(c.keys for c in updates)
    assert any("infra-changed" in json.dumps(r.inputs) for r in run.state.resources)
    assert any(any("team" in k for k in c.keys) for c in updates)
    assert run.state.spec_hash != first_run.state.spec_hash


def test_changed_shape_creates_updates_and_deletes_like_the_engine(first_run: object) -> None:
    data = stack_spec(STACK).model_dump(mode="json", exclude_none=True)
    data["storage"]["shared"] = {"kind": "none"}
    data.update(gpus=128, lifetime={"ttl": "6h"})
    smaller = run_mock(load_spec(data), STACK, first_run.state, now=FIXED_NOW)
    steps = {(c.op, c.type): c for c in smaller.changes}
    assert ("delete", "gcp:lustre/instance:Instance") in steps
    # The template is replaced (its metadata changed), so the group is updated to the new template's id as well.
    mig = steps[("update", "gcp:compute/instanceGroupManager:InstanceGroupManager")]
    assert mig.keys == ("targetSize", "versions[0].instanceTemplate")
    assert ("replace", "gcp:compute/regionInstanceTemplate:RegionInstanceTemplate") in steps
    back = run_mock(stack_spec(STACK), STACK, smaller.state, now=FIXED_NOW)
    assert ("create", "gcp:lustre/instance:Instance") in {(c.op, c.type) for c in back.changes}
    assert {r.key for r in back.state.resources} == {r.key for r in first_run.state.resources}


def test_a_damaged_mock_state_is_a_clear_error_naming_the_file(tmp_path: Path) -> None:
    from provision.engine.mockstate import MockStore
    from provision.spec.errors import CloudError

    store = MockStore(tmp_path / "h")
    store.path("broken").write_text("{not json")
    with pytest.raises(CloudError) as err:
        store.load("broken")
    assert "broken.json" in str(err.value) and "delete it" in str(err.value)
    from provision.engine.mockstate import STATE_VERSION

    store.path("partial").write_text(json.dumps({"version": STATE_VERSION, "stack": "partial"}))
    with pytest.raises(CloudError) as err2:
        store.load("partial")
    assert "damaged" in str(err2.value)
