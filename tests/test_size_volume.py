"""`size --write-spec --write-volume`: the sized shared filesystem as a volume spec the cluster attaches, and the
storage the sizing assumed (dataset, checkpoints, write rate, the bucket link) in the spec's header."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from provision.cli.app import app


@pytest.fixture(autouse=True)
def _own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROVISION_HOME", str(tmp_path / "home"))


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def test_written_volume_is_created_and_attached_by_the_written_spec(tmp_path: Path) -> None:
    from provision.planning.sizing import size_training

    spec_path, volume_path = tmp_path / "aws.yaml", tmp_path / "aws-volume.yaml"
    sized = invoke(
        "size", "--params", "7B", "--tokens", "200B", "--cloud", "aws", "--write-spec", str(spec_path),
        "--write-volume", str(volume_path), "--json",
    )  # fmt: skip
    assert sized.exit_code == 0, sized.output
    spec, volume = yaml.safe_load(spec_path.read_text()), yaml.safe_load(volume_path.read_text())
    report = size_training("7B", "200B")
    [fs] = [f for f in report.storage.filesystems if f.cloud == "aws"]
    assert (volume["kind"], volume["size_gib"], volume["region"]) == (fs.kind, fs.size_gib, spec["region"])
    assert spec["storage"]["shared"] == {"volume": volume["name"], "mount": "/shared"}
    header = spec_path.read_text()
    st = report.storage
    assert "storage assumed: dataset" in header and f"x {st.retained_checkpoints} kept" in header
    assert f"{st.required_write_gbps:,.1f} GB/s" in header and "s3://YOUR-BUCKET" in header
    # The volume is created as written, and the cluster spec plans and comes up attached to it.
    created = invoke("volume", "create", str(volume_path), "--mock")
    assert created.exit_code == 0, created.output
    planned = invoke("plan", str(spec_path), "--json")
    assert planned.exit_code == 0, planned.output
    assert json.loads(planned.stdout)["storage"]["volume"] == volume["name"]


def test_without_write_volume_the_spec_keeps_its_own_filesystem_and_the_notes(tmp_path: Path) -> None:
    path = tmp_path / "gcp.yaml"
    sized = invoke("size", "--params", "7B", "--tokens", "200B", "--cloud", "gcp", "--write-spec", str(path), "--json")
    assert sized.exit_code == 0, sized.output
    spec = yaml.safe_load(path.read_text())
    assert "volume" not in spec["storage"]["shared"]
    assert "add storage.shared.object_store: {uri: gs://YOUR-BUCKET" in " ".join(path.read_text().split())
