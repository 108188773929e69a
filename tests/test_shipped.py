"""The shipped folders (images/, stacks/): where they are found, how stack names resolve, what a broken install says."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
import yaml
from conftest import ROOT

from provision.spec import shipped
from provision.spec.errors import ProvisionError, SpecError
from provision.spec.loading import stack_dirs, target_path


def test_a_checkout_reads_its_own_folders() -> None:
    assert shipped.shipped_dir("images") == ROOT / "images"
    assert shipped.shipped_dir("stacks") == ROOT / "stacks"


def test_an_installed_package_reads_its_packaged_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "site" / "provision"
    (package / "_images").mkdir(parents=True)
    (package / "_images" / "compat.yaml").write_text("rules: []\n", encoding="utf-8")
    monkeypatch.setattr(shipped.resources, "files", lambda name: package)

    assert shipped.shipped_dir("images") == package / "_images"
    assert shipped.read_shipped("images", "compat.yaml") == "rules: []\n"


def test_a_broken_install_says_to_reinstall(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "site" / "provision"
    (package / "_images").mkdir(parents=True)
    monkeypatch.setattr(shipped.resources, "files", lambda name: package)

    with pytest.raises(ProvisionError, match=r"images/gcp/steps/tcpxo.sh is missing .* reinstall provision"):
        shipped.read_shipped("images", "gcp/steps/tcpxo.sh")
    # No stacks folder anywhere: not installed, and site/ is no checkout (no pyproject.toml).
    (tmp_path / "site" / "stacks").mkdir()
    with pytest.raises(ProvisionError, match=r"stacks/ folder is missing: neither .*_stacks .* reinstall provision"):
        shipped.shipped_dir("stacks")


def test_the_projects_stacks_come_first_then_the_shipped_ones(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    own = tmp_path / "stacks"
    own.mkdir()
    doc = yaml.safe_load((ROOT / "stacks" / "Pulumi.aws-p5-ci.yaml").read_text(encoding="utf-8"))
    (own / "Pulumi.aws-p5-ci.yaml").write_text(yaml.safe_dump(doc), encoding="utf-8")
    (own / "Pulumi.team-ci.yaml").write_text(yaml.safe_dump(doc), encoding="utf-8")
    monkeypatch.chdir(tmp_path)

    assert stack_dirs() == [own, ROOT / "stacks"]
    assert target_path("aws-p5-ci") == own / "Pulumi.aws-p5-ci.yaml"  # the project's copy wins
    assert target_path("team-ci") == own / "Pulumi.team-ci.yaml"
    assert target_path("gcp-a3-64") == ROOT / "stacks" / "Pulumi.gcp-a3-64.yaml"  # shipped, from any folder
    with pytest.raises(SpecError) as e:
        target_path("team-cj")
    assert "did you mean team-ci" in str(e.value)


def test_a_folder_without_stacks_still_names_the_shipped_ones(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert stack_dirs() == [ROOT / "stacks"]
    assert target_path("azure-ndh100-ci") == ROOT / "stacks" / "Pulumi.azure-ndh100-ci.yaml"


def test_the_cli_says_a_missing_file_is_missing_not_a_permissions_problem(capsys: pytest.CaptureFixture[str]) -> None:
    from provision.cli.common import run_command

    def gone() -> None:
        raise FileNotFoundError(2, "No such file or directory", "/nowhere/x.yaml")

    def denied() -> None:
        raise PermissionError(13, "Permission denied", "/root/.provision")

    with pytest.raises(typer.Exit):
        run_command(False, gone)
    err = capsys.readouterr().err
    assert "/nowhere/x.yaml" in err and "check that the path exists" in err and "permissions" not in err
    with pytest.raises(typer.Exit):
        run_command(False, denied)
    assert "permissions and free space" in capsys.readouterr().err
