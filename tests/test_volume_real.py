"""Volumes without --mock: listed, deleted and attached through the Automation API (a fake Pulumi CLI holds the
stacks and their outputs; the volume outputs are what the Azure volume program gives under the strict mocked cloud)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ROOT, isolated_home, stack_spec
from conftest import run_cli as _cli
from pulumi import automation as auto
from test_automation import ListingPulumi

from provision.engine import automation


class VolumePulumi(ListingPulumi):
    """The test_automation listing fake plus per-stack outputs and `stack rm`."""

    def __init__(self) -> None:
        super().__init__()
        self.outputs: dict[str, dict[str, Any]] = {}

    def add(self, stack: str, outputs: dict[str, Any]) -> None:
        self.stacks.add(stack)
        self.state[stack] = [("pulumi:providers:any", "default")]
        self.outputs[stack] = outputs

    def run(self, args, cwd, additional_env, on_output=None, on_error=None):  # type: ignore[no-untyped-def]
        a = [x for x in args if x != "--non-interactive"]
        if a[:2] == ["stack", "output"]:
            self.calls.append(a)
            stack = a[a.index("--stack") + 1]
            return auto.CommandResult(json.dumps(self.outputs.get(stack, {}) if self.state.get(stack) else {}), "", 0)
        if a[:2] == ["stack", "rm"]:
            self.calls.append(a)
            self.stacks.discard(a[-1])
            return auto.CommandResult("", "", 0)
        return super().run(args, cwd, additional_env, on_output, on_error)


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolated_home(tmp_path, monkeypatch)


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> VolumePulumi:
    cli = VolumePulumi()
    monkeypatch.setattr(automation, "pulumi_command", lambda: cli)
    monkeypatch.chdir(ROOT)  # the project's Pulumi.yaml, as `provision` is run from the checkout
    return cli


def azure_volume_outputs(**changes: Any) -> dict[str, Any]:
    """The outputs of an Azure NetApp volume's stack, from its program under the strict mocked cloud."""
    from datetime import datetime, timezone

    from provision.engine.volumerun import run_volume_mock
    from provision.ops.volumes import _static_outputs, volume_price
    from provision.spec.volume import load_volume_spec

    cluster = stack_spec("azure-ndh100-ci")
    spec = load_volume_spec(
        {"name": "llm-data", "cloud": "azure", "region": cluster.region, "kind": "netapp", "size_gib": 2048, **changes}
    )
    tier, hourly = volume_price(spec)
    static = _static_outputs(spec, tier, hourly, datetime(2026, 11, 29, tzinfo=timezone.utc))
    return run_volume_mock(spec, str(tier), static).outputs


def _ran(fake: VolumePulumi, *words: str) -> list[list[str]]:
    return [c for c in fake.calls if c[: len(words)] == list(words)]


def test_real_list_reads_the_volume_stacks_and_the_clusters_naming_them(fake: VolumePulumi) -> None:
    from provision.ops.inventory import list_clusters

    fake.add("vol-llm-data", azure_volume_outputs())
    fake.add("trainer", {"cluster": "trainer", "volume": "llm-data"})
    fake.add("other", {"cluster": "other"})
    fake.stacks.add("vol-gone")  # destroyed, not removed: no resources, not read
    code, out = _cli("volume", "list", "--json")
    assert code == 0, out
    [row] = json.loads(out)
    assert row["name"] == "llm-data" and row["stack"] == "vol-llm-data" and row["used_by"] == ["trainer"]
    assert (
        row["cloud"] == "azure" and row["filesystem"] == "netapp" and row["filesystem_id"].endswith("llm-data-volume")
    )
    assert row["created_at"] == "2026-11-29T00:00:00Z"
    assert not [c for c in _ran(fake, "stack", "output") if "vol-gone" in c]
    # `provision list` shows clusters only: the volume's stack is not one.
    assert [r.stack for r in list_clusters(mock=False, root=ROOT, command=fake)] == ["other", "trainer"]


def test_real_delete_is_refused_while_a_cluster_attaches_then_destroys_and_removes_the_stack(
    fake: VolumePulumi,
) -> None:
    fake.add("vol-llm-data", azure_volume_outputs())
    fake.add("trainer", {"cluster": "trainer", "volume": "llm-data"})
    code, out = _cli("volume", "delete", "llm-data")
    assert code == 2 and "attached by cluster stack(s) trainer" in out and "provision down" in out
    assert not _ran(fake, "destroy") and "vol-llm-data" in fake.stacks
    fake.state["trainer"] = []  # the cluster went down
    code, out = _cli("volume", "delete", "llm-data", "--json")
    assert code == 0, out
    assert json.loads(out)["deleted"]["name"] == "llm-data"
    [destroy] = _ran(fake, "destroy")
    assert destroy[destroy.index("--stack") + 1] == "vol-llm-data"
    assert _ran(fake, "stack", "rm") == [["stack", "rm", "--yes", "vol-llm-data"]]
    code, out = _cli("volume", "delete", "llm-data")
    assert code == 2 and "names no volume" in out


def test_without_the_pulumi_cli_real_list_and_delete_say_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no `pulumi` on it
    monkeypatch.setenv("HOME", str(tmp_path))  # nor in ~/.pulumi/versions
    for args in (("volume", "list"), ("volume", "delete", "llm-data")):
        code, out = _cli(*args)
        assert code != 0 and "Pulumi CLI" in out and "provision install-pulumi" in out and "--mock" in out


def _attaching(tmp_path: Path, **shared: Any) -> Any:
    from provision.ops.cluster import Cluster

    data = stack_spec("azure-ndh100-ci").model_dump(mode="json", exclude_none=True)
    data["storage"]["shared"] = {"volume": "llm-data", "mount": "/data", **shared}
    return data, Cluster


def test_real_attach_reads_the_volume_stack_plans_its_filesystem_and_runs_up(
    fake: VolumePulumi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outputs = azure_volume_outputs()
    fake.add("vol-llm-data", outputs)
    data, cluster_cls = _attaching(tmp_path)
    cluster = cluster_cls(data, root=ROOT, pulumi_command=fake, display="none")
    plan = cluster.plan()
    assert plan.storage is not None and plan.storage.kind == "netapp" and plan.storage.volume == "llm-data"
    assert plan.storage.size_gib == 2048
    cluster.up()
    assert _ran(fake, "up")
    program_spec, exported = cluster._attached()
    assert exported == {"volume": "llm-data", "volume_filesystem_id": outputs["filesystem_id"]}
    assert program_spec.storage.shared.kind == "netapp" and program_spec.storage.shared.volume == "llm-data"
    # The inline program `up` runs: the cluster program on that spec, and the volume recorded in the outputs
    # (what `volume list` and `volume delete` read to find the clusters using it).
    import pulumi

    from provision.engine import program as program_module

    ran: list[Any] = []
    monkeypatch.setattr(program_module, "main", lambda spec, now: ran.append(spec))
    monkeypatch.setattr(pulumi, "export", lambda key, value: ran.append((key, value)))
    cluster._program(cluster._created_at)()
    assert ran == [program_spec, ("volume", "llm-data"), ("volume_filesystem_id", outputs["filesystem_id"])]


def test_real_attach_problems_are_refused_before_the_stack_exists(fake: VolumePulumi, tmp_path: Path) -> None:
    from provision.spec.volume import VolumeSpecError

    data, cluster_cls = _attaching(tmp_path)
    with pytest.raises(VolumeSpecError) as e:  # no such volume stack
        cluster_cls(data, root=ROOT, pulumi_command=fake, display="none").up()
    assert "names no volume in the Pulumi backend" in str(e.value)
    fake.add("vol-llm-data", azure_volume_outputs(region="westeurope", network_cidr="10.0.0.0/16"))
    with pytest.raises(VolumeSpecError) as e:  # another region, and a network the cluster's VNet overlaps
        cluster_cls(data, root=ROOT, pulumi_command=fake, display="none").up()
    text = str(e.value)
    assert "is in region westeurope" in text and "azure.vnet_cidr" in text and "overlaps volume llm-data" in text
    assert not _ran(fake, "stack", "init") and not _ran(fake, "up")


def test_real_attach_on_a_cloud_without_a_volume_program_is_refused_with_the_reason(
    fake: VolumePulumi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from provision.ops.cluster import Cluster
    from provision.spec.errors import UnsupportedError

    # Every cloud has a volume program now; one without (as GCP was) is refused before anything exists.
    monkeypatch.setattr("provision.engine.volumerun.PROGRAMS", ("aws", "azure", "alibaba"))
    data = stack_spec("gcp-a3-ci").model_dump(mode="json", exclude_none=True)
    data["storage"]["shared"] = {"volume": "gdata"}
    with pytest.raises(UnsupportedError) as e:
        Cluster(data, root=ROOT, pulumi_command=fake, display="none").up()
    assert "a real gcp volume stack cannot be created yet" in str(e.value)
    assert not _ran(fake, "up")


def test_real_create_sets_each_cloud_provider_region_and_refuses_an_existing_volume(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    calls: list[Any] = []

    class Out:
        def __init__(self, value: Any) -> None:
            self.value = value

    class FakeStack:
        def set_config(self, key: str, value: Any) -> None:
            calls.append((key, value.value))

        def up(self, program: Any, color: str) -> Any:
            calls.append("up")
            return type("R", (), {"outputs": {"kind": Out("volume")}})()

        def outputs(self) -> dict[str, Any]:
            return {"kind": Out("volume")} if "up" in calls else {}

    monkeypatch.setattr(automation, "open_stack", lambda *a, **k: FakeStack())
    for volume, key in (
        ({"cloud": "azure", "region": "eastus", "kind": "netapp", "size_gib": 2048}, "azure-native:location"),
        ({"cloud": "alibaba", "region": "cn-hangzhou", "kind": "nas", "size_gib": 1024}, "alicloud:region"),
    ):
        path = tmp_path / "vol.yaml"
        path.write_text(yaml.safe_dump({"name": "vdata", **volume}))
        calls.clear()
        code, out = _cli("volume", "create", str(path))
        assert code == 0, out
        assert calls == [(key, volume["region"]), "up"]
        # Its stack exists now: creating it again is refused before any config or up (no update in place).
        code, out = _cli("volume", "create", str(path))
        assert code == 2 and "names a volume that exists" in out
        assert calls == [(key, volume["region"]), "up"]
