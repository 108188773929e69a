"""Azure `retain: true` more than once (mocked cloud): the kept filesystem, with its data group and network, is a
volume after `down`, attached by later clusters in turn; a second own-filesystem `up` is refused before anything."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import run_cli as cli

from tests.conftest import stack_spec

SHARED = {
    "netapp": {"kind": "netapp", "tier": "Premium", "size_gib": 1024, "retain": True},
    "amlfs": {"kind": "amlfs", "tier": "AMLFS-Durable-Premium-250", "size_gib": 8192, "retain": True},
}


@pytest.fixture(autouse=True)
def _own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROVISION_HOME", str(tmp_path / "home"))


def cluster_file(tmp_path: Path, name: str, shared: dict[str, Any], **extra: Any) -> str:
    data = stack_spec("azure-ndh100-ci").model_dump(mode="json", exclude_none=True)
    data.update(name=name, **extra)
    data["storage"]["shared"] = shared
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def state(stack: str) -> Any:
    from provision.engine.mockstate import MockStore

    return MockStore().load(stack)


@pytest.mark.parametrize("kind", ["netapp", "amlfs"])
def test_a_retained_filesystem_is_attached_again_and_again(tmp_path: Path, kind: str) -> None:
    own = cluster_file(tmp_path, "keeper", SHARED[kind])
    assert cli("up", own, "--mock", "--yes")[0] == 0
    assert cli("down", "keeper", "--mock", "--yes")[0] == 0
    code, out = cli("volume", "list", "--mock", "--json")
    (volume,) = json.loads(out)
    assert volume["name"] == "keeper" and volume["filesystem"] == kind
    kept = state("vol-keeper")
    # Everything the retained group holds outlives `down` (retain_on_delete), so the volume holds all of it.
    network = kept.outputs["network"]
    assert network["resource_group"] == "keeper-data-rg" and network["vnet_name"] == "keeper-vnet"
    assert network["cidr"] == "10.0.0.0/16" and network["vnet_id"].endswith("/virtualNetworks/keeper-vnet")
    types = {r.type for r in kept.resources}
    assert {"azure-native:resources:ResourceGroup", "azure-native:network:VirtualNetwork"} <= types
    assert len({r.key for r in kept.resources}) == len(kept.resources)
    path = cluster_file(tmp_path, "reuser", {"volume": "keeper"}, azure={"vnet_cidr": "10.1.0.0/16"})
    for _ in range(2):  # attached, released, attached again
        code, out = cli("up", path, "--mock", "--yes")
        assert code == 0, out
        outputs = json.loads(cli("outputs", "reuser", "--mock", "--json")[1])
        assert outputs["volume"] == "keeper" and outputs["volume_filesystem_id"] == volume["filesystem_id"]
        assert cli("down", "reuser", "--mock", "--yes")[0] == 0
    assert [v["name"] for v in json.loads(cli("volume", "list", "--mock", "--json")[1])] == ["keeper"]


def test_a_second_own_filesystem_up_is_refused_before_anything_exists(tmp_path: Path) -> None:
    own = cluster_file(tmp_path, "keeper", SHARED["amlfs"])
    assert cli("up", own, "--mock", "--yes")[0] == 0
    assert cli("down", "keeper", "--mock", "--yes")[0] == 0
    code, out = cli("up", own, "--mock", "--yes")
    assert code == 2, out
    assert "storage.shared.retain" in out and "keeper-data-rg" in out and "volume: keeper" in out
    assert state("keeper") is None  # nothing created
