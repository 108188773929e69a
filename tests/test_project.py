"""The Pulumi project file, the stacks folder and the package's import weight."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
SCHEMA_CANDIDATES = [
    ROOT.parent / "shared" / "reference" / "pulumi-project.schema.json",
    ROOT / "tests" / "data" / "pulumi-project.schema.json",
]


def _schema() -> dict:
    for path in SCHEMA_CANDIDATES:
        if path.exists():
            return json.loads(path.read_text())
    pytest.fail("Pulumi's project schema is missing (tests/data/pulumi-project.schema.json)")


def test_pulumi_yaml_is_valid_by_pulumis_own_schema() -> None:
    project = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
    jsonschema.Draft202012Validator(_schema()).validate(project)


def test_pulumi_yaml_names_the_project_runtime_and_stack_folder() -> None:
    project = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
    assert project["name"] == "provision"  # config namespace provision:cluster depends on it
    assert project["runtime"]["name"] == "python"
    # pulumi-language-python accepts only these option values (parseOptions in its main.go).
    assert project["runtime"]["options"]["toolchain"] in ("pip", "poetry", "uv")
    assert (ROOT / project["stackConfigDir"]).is_dir()
    main = ROOT / project["main"]
    assert (main / "__main__.py").exists() if main.is_dir() else main.exists()


def test_a_bad_runtime_shape_is_rejected_by_the_schema() -> None:
    bad = {"name": "provision", "runtime": {"name": "python", "options": "pip"}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(_schema()).validate(bad)


def test_every_stack_file_holds_a_spec_under_provision_cluster() -> None:
    files = sorted((ROOT / "stacks").glob("Pulumi.*.yaml"))
    assert files, "no stack files"
    for f in files:
        doc = yaml.safe_load(f.read_text())
        assert "provision:cluster" in doc["config"], f.name


def test_import_provision_loads_no_cloud_sdk_and_no_pulumi() -> None:
    code = (
        "import sys, provision, provision.spec.models, provision.cli.app\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('pulumi', 'pulumi_aws', 'pulumi_gcp', 'pulumi_azure_native', 'pulumi_alicloud', 'pulumi_kubernetes', "
        "'boto3', 'botocore'))\n"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "", f"import provision loaded: {out}"


@pytest.mark.parametrize("cloud", ["aws", "gcp", "azure", "alibaba"])
def test_adapter_modules_are_pure(cloud: str) -> None:
    code = (
        f"import sys, provision.clouds.{cloud}.adapter\n"
        "print(','.join(sorted(m for m in sys.modules if m.startswith('pulumi'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "", f"provision.clouds.{cloud}.adapter imported: {out}"


def test_pulumi_yaml_declares_no_config_a_stack_file_would_have_to_set() -> None:
    # Pulumi fails `up` with "Stack 'x' is missing configuration value" for a declared project config key
    # that has no default and is absent from the stack file (pulumi/pulumi workspace project tests).
    project = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
    for key, decl in (project.get("config") or {}).items():
        assert not isinstance(decl, dict) or "default" in decl or "value" in decl, key
