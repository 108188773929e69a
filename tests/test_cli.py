"""The `provision` command: exit codes, --json documents, no tracebacks, no secrets echoed.

Contract (docs/contracts.md): exit 0 success, 2 the user's input is wrong, 3 refused by policy or budget,
1 anything else; with --json every command prints exactly one JSON document on stdout.
Bad specs come from the table in test_spec_errors.py, written to a YAML file and planned.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ROOT
from test_spec_errors import BASES, CASES_BY_ID, PRIVATE_KEYS, SECRET_MATERIAL, Case, mutate
from typer.testing import CliRunner

from provision.catalog import load_catalog
from provision.cli.app import app
from provision.spec import ClusterSpec, load_spec

runner = CliRunner()

#: Plan contract keys (docs/contracts.md, "provision plan").
PLAN_KEYS = {
    "cloud",
    "region",
    "zone",
    "instance_type",
    "nodes",
    "gpus",
    "fabric",
    "storage",
    "image",
    "hourly_usd",
    "max_lifetime_hours",
    "expires_at",
    "warnings",
}
#: Offer contract keys (docs/contracts.md, "provision offers").
OFFER_KEYS = {
    "cloud",
    "instance_type",
    "gpu",
    "gpus_per_node",
    "gpu_memory_gib",
    "vcpus",
    "memory_gib",
    "local_nvme_gib",
    "fabric",
    "fabric_gbps",
    "fabric_interfaces",
    "regions",
    "price_per_hour_usd",
}

CLI_CASE_IDS = [
    # refused by the spec's own rules (no adapter involved)
    "name-uppercase",
    "name-trailing-dash",
    "cloud-typo-gpc",
    "zone-in-other-region-gcp",
    "gpus-zero",
    "shorthand-count-not-number",
    "capacity-type-typo",
    "reservation-without-id-aws",
    "spot-price-on-on-demand",
    "fs-size-garbage",
    "tag-key-uppercase",
    "tag-reserved-prefix",
    "ttl-1000d",
    "ttl-10m",
    "cost-nan",
    "cost-1e12",
    "ssh-world-v4-aws",
    "cidr-host-bits",
    "key-type-only",
    "field-top-regoin",
    "field-shared-sise",
    "options-aws-on-gcp",
    "multi-three-shape",
    # refused by the catalog, through the adapter
    "gpus-12-aws",
    "a3-ultra-on-demand",
    "fabric-ib-on-aws",
    "fs-off-step-aws",
    "region-typo-gcp",
    "type-does-not-carry-gpu-azure",
    "multi-three-catalog",
    # refused by the cost cap (exit 3)
    "cap-below-one-hour-aws",
    "cap-with-ttl-over-budget-aws",
    "cap-on-unpriced-gcp",
]
CLI_CASES = [CASES_BY_ID[i] for i in CLI_CASE_IDS]
SUBPROCESS_CASES = [CASES_BY_ID[i] for i in ("ttl-10m", "key-private-openssh", "cap-below-one-hour-aws")]


def _needs_adapter(cloud: str) -> None:
    pytest.importorskip(
        f"provision.clouds.{cloud}.adapter",
        reason=f"provision/clouds/{cloud}/adapter.py is not written yet (being built in parallel)",
    )


def write_spec(tmp_path: Path, data: Any, name: str = "spec.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def one_json_document(text: str) -> Any:
    """The single JSON document in ``text`` (json.loads refuses trailing data, so two documents fail)."""
    assert text.strip(), "nothing on stdout"
    return json.loads(text)


def exit_code_of(case: Case) -> int:
    return 3 if case.stage == "budget" else 2


def invoke(*args: str) -> Any:
    result = runner.invoke(app, list(args))
    # typer reports exits as SystemExit; any other exception escaped the command.
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


# ------------------------------------------------------------------------------------- bad specs


@pytest.mark.parametrize("case", CLI_CASES, ids=[c.id for c in CLI_CASES])
def test_plan_bad_spec_prints_paths_without_traceback(case: Case, tmp_path: Path) -> None:
    if case.stage != "spec":
        _needs_adapter(case.cloud)
    path = write_spec(tmp_path, case.data)

    result = invoke("plan", str(path))

    assert result.exit_code == exit_code_of(case), result.output
    assert "Traceback" not in result.stdout + result.stderr
    assert result.stdout == ""
    assert result.stderr.startswith("error: ")
    for p in case.paths:
        assert f"  - {p}: " in result.stderr, result.stderr


@pytest.mark.parametrize("case", CLI_CASES, ids=[c.id for c in CLI_CASES])
def test_plan_bad_spec_json_is_one_document_with_problems(case: Case, tmp_path: Path) -> None:
    if case.stage != "spec":
        _needs_adapter(case.cloud)
    path = write_spec(tmp_path, case.data)

    result = invoke("plan", str(path), "--json")

    assert result.exit_code == exit_code_of(case)
    assert result.stderr == ""
    doc = one_json_document(result.stdout)
    assert doc["error"] == ("BudgetError" if case.stage == "budget" else "SpecError")
    assert sorted(p["path"] for p in doc["problems"]) == sorted(case.paths)
    assert all(set(p) == {"path", "value", "rule", "fix"} and p["rule"] and p["fix"] for p in doc["problems"])


def _command() -> list[str]:
    script = Path(sys.executable).with_name("provision")
    return [str(script)] if script.exists() else [sys.executable, "-m", "provision.cli"]


@pytest.mark.parametrize("case", SUBPROCESS_CASES, ids=[c.id for c in SUBPROCESS_CASES])
@pytest.mark.parametrize("as_json", [False, True], ids=["human", "json"])
def test_plan_in_a_real_process(case: Case, as_json: bool, tmp_path: Path) -> None:
    if case.stage != "spec":
        _needs_adapter(case.cloud)
    path = write_spec(tmp_path, case.data)
    args = [*_command(), "plan", str(path), *(["--json"] if as_json else [])]

    proc = subprocess.run(args, capture_output=True, text=True, cwd=tmp_path, timeout=120, check=False)

    assert proc.returncode == exit_code_of(case), proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    assert SECRET_MATERIAL["openssh"] not in proc.stdout + proc.stderr
    if as_json:
        assert proc.stderr == ""
        doc = one_json_document(proc.stdout)
        assert sorted(p["path"] for p in doc["problems"]) == sorted(case.paths)
    else:
        assert proc.stdout == ""
        assert all(f"  - {p}: " in proc.stderr for p in case.paths)


@pytest.mark.parametrize("module", ["provision", "provision.cli"])
def test_module_entry_point_runs(module: str, tmp_path: Path) -> None:
    path = write_spec(tmp_path, CASES_BY_ID["name-uppercase"].data)

    proc = subprocess.run(
        [sys.executable, "-m", module, "plan", str(path), "--json"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )

    assert proc.returncode == 2
    assert [p["path"] for p in one_json_document(proc.stdout)["problems"]] == ["name"]


@pytest.mark.parametrize("kind", sorted(PRIVATE_KEYS))
@pytest.mark.parametrize("as_json", [False, True], ids=["human", "json"])
def test_private_key_is_not_echoed_by_the_cli(kind: str, as_json: bool, tmp_path: Path) -> None:
    data = mutate(BASES["gcp"], {"access.ssh_public_keys": [PRIVATE_KEYS[kind]]})
    path = write_spec(tmp_path, data)
    assert SECRET_MATERIAL[kind] in path.read_text(encoding="utf-8")  # the check below can fail

    result = invoke("plan", str(path), *(["--json"] if as_json else []))

    assert result.exit_code == 2
    assert SECRET_MATERIAL[kind] not in result.stdout + result.stderr
    assert "PRIVATE key" in result.stdout + result.stderr


# ------------------------------------------------------------------------------ targets and files


def test_plan_unknown_stack_name_exits_2(tmp_path: Path) -> None:
    result = invoke("plan", "no-such-stack-anywhere", "--json")

    assert result.exit_code == 2
    (problem,) = one_json_document(result.stdout)["problems"]
    assert problem["path"] == "target"
    assert problem["fix"]


def test_plan_missing_yaml_file_exits_2(tmp_path: Path) -> None:
    result = invoke("plan", str(tmp_path / "absent.yaml"))

    assert result.exit_code == 2
    assert "does not exist" in result.stderr
    assert "Traceback" not in result.stderr


def test_plan_yaml_syntax_error_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("name: llm-train\ncloud: [aws\nregion: us-east-1\n", encoding="utf-8")

    result = invoke("plan", str(path), "--json")

    assert result.exit_code == 2
    (problem,) = one_json_document(result.stdout)["problems"]
    assert "is not valid YAML (line" in problem["rule"]


def test_plan_yaml_that_is_not_a_mapping_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "list.yaml"
    path.write_text("- name: llm-train\n", encoding="utf-8")

    result = invoke("plan", str(path), "--json")

    assert result.exit_code == 2
    assert one_json_document(result.stdout)["problems"][0]["rule"] == "holds no spec mapping"


def test_plan_stack_file_without_cluster_key_exits_2(tmp_path: Path) -> None:
    path = write_spec(tmp_path, {"config": {"aws:region": "us-east-1"}}, "Pulumi.dev.yaml")

    result = invoke("plan", str(path), "--json")

    assert result.exit_code == 2
    (problem,) = one_json_document(result.stdout)["problems"]
    assert problem["path"] == "config"
    assert "provision:cluster" in problem["fix"]


def test_plan_stack_file_reports_spec_paths(tmp_path: Path) -> None:
    data = CASES_BY_ID["multi-three-shape"].data
    path = write_spec(tmp_path, {"config": {"provision:cluster": data}}, "Pulumi.dev.yaml")

    result = invoke("plan", str(path), "--json")

    assert result.exit_code == 2
    assert sorted(p["path"] for p in one_json_document(result.stdout)["problems"]) == [
        "capacity.typ",
        "lifetime.ttl",
        "name",
    ]


# ---------------------------------------------------------------------------------- good plans


@pytest.mark.parametrize("cloud", ["aws", "gcp", "azure"])
def test_plan_json_has_the_contract_keys(cloud: str, tmp_path: Path) -> None:
    _needs_adapter(cloud)
    path = write_spec(tmp_path, mutate(BASES[cloud], {"lifetime.ttl": "6h"}))

    result = invoke("plan", str(path), "--json")

    assert result.exit_code == 0, result.stdout
    doc = one_json_document(result.stdout)
    assert set(doc) >= PLAN_KEYS
    assert (doc["cloud"], doc["gpus"], doc["nodes"], doc["max_lifetime_hours"]) == (cloud, 64, 8, 6.0)
    assert doc["expires_at"].endswith("Z")


def test_plan_human_output_exits_0(tmp_path: Path) -> None:
    _needs_adapter("aws")
    path = write_spec(tmp_path, BASES["aws"])

    result = invoke("plan", str(path))

    assert result.exit_code == 0, result.stderr
    assert "p5.48xlarge" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr


# ---------------------------------------------------------------------------------------- offers


def test_offers_json_rows_follow_the_contract() -> None:
    result = invoke("offers", "--json")

    assert result.exit_code == 0
    rows = one_json_document(result.stdout)
    assert len(rows) == len(load_catalog().instances)
    for row in rows:
        assert set(row) >= OFFER_KEYS, row["instance_type"]
        assert set(row["price_per_hour_usd"]) == set(row["regions"])


def test_offers_filters_by_cloud_gpu_alias_and_region() -> None:
    result = invoke("offers", "--cloud", "aws", "--gpu", "h100-sxm", "--region", "us-east-1", "--json")

    assert result.exit_code == 0
    rows = one_json_document(result.stdout)
    assert [r["instance_type"] for r in rows] == ["p5.48xlarge"]
    assert rows[0]["price_per_hour_usd"]["us-east-1"] == load_catalog().instance("aws", "p5.48xlarge").price(
        "us-east-1"
    )


@pytest.mark.parametrize(
    ("args", "path"),
    [(["--cloud", "gpc"], "--cloud"), (["--gpu", "H10"], "--gpu"), (["--cloud", "oci", "--gpu", "X"], "--cloud")],
)
def test_offers_bad_filter_exits_2(args: list[str], path: str) -> None:
    result = invoke("offers", *args, "--json")

    assert result.exit_code == 2
    problems = one_json_document(result.stdout)["problems"]
    assert problems[0]["path"] == path
    assert len(problems) == len([a for a in args if a.startswith("--")])


def test_offers_human_table() -> None:
    result = invoke("offers", "--cloud", "gcp")

    assert result.exit_code == 0
    assert "a3-megagpu-8g" in result.stdout
    assert "p5.48xlarge" not in result.stdout


# ---------------------------------------------------------------------------------------- schema


@pytest.mark.parametrize("as_json", [False, True], ids=["plain", "json"])
def test_schema_is_one_json_schema_document(as_json: bool) -> None:
    result = invoke("schema", *(["--json"] if as_json else []))

    assert result.exit_code == 0
    schema = one_json_document(result.stdout)
    assert schema["additionalProperties"] is False
    assert {"name", "cloud", "region"} <= set(schema["required"])
    contract = {"name", "cloud", "region", "zone", "gpu", "gpus", "nodes", "instance_type", "fabric", "storage"}
    assert contract | {"image", "access", "capacity", "lifetime", "tags", "aws", "gcp", "azure", "alibaba"} <= set(
        schema["properties"]
    )


def test_schema_accepts_a_dumped_spec_and_refuses_a_bad_one() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = ClusterSpec.model_json_schema()
    spec = load_spec(mutate(BASES["gcp"], {"lifetime.ttl": "1d12h", "storage.shared.size_gib": "36TiB"}))

    jsonschema.validate(spec.model_dump(mode="json", exclude_none=True), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(CASES_BY_ID["field-top-regoin"].data, schema)


# ----------------------------------------------------------------------------- known CLI defects


def test_error_text_is_printed_verbatim(tmp_path: Path) -> None:
    path = write_spec(tmp_path, CASES_BY_ID["name-uppercase"].data)

    result = runner.invoke(app, ["plan", str(path)])

    assert "does not match ^[a-z][a-z0-9-]{0,38}[a-z0-9]$" in result.stderr


def test_markup_like_value_does_not_crash_the_cli(tmp_path: Path) -> None:
    path = write_spec(tmp_path, mutate(BASES["aws"], {"name": "[/x]"}))

    result = runner.invoke(app, ["plan", str(path)])

    assert result.exit_code == 2
    assert "[/x]" in result.stderr


def test_repo_stacks_resolve_by_name_or_report_target() -> None:
    stacks = sorted((ROOT / "stacks").glob("Pulumi.*.yaml"))
    name = stacks[0].name[len("Pulumi.") : -len(".yaml")] if stacks else "aws-p5-64"

    result = runner.invoke(app, ["plan", name + "x", "--json"])

    assert result.exit_code == 2
    (problem,) = one_json_document(result.stdout)["problems"]
    assert problem["path"] == "target"
    if stacks:
        assert name in problem["fix"]  # did-you-mean names the real stack


def test_an_unusable_provision_home_is_exit_1_with_a_message_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home-is-a-file"
    home.write_text("")
    monkeypatch.setenv("PROVISION_HOME", str(home))
    result = runner.invoke(app, ["status", "gcp-a3-64", "--mock", "--json"])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
    doc = json.loads(result.stdout)
    assert doc["error"] == "ProvisionError" and str(home) in doc["message"] and "To fix" in doc["message"]


def test_plan_of_a_stack_file_path_names_the_stack_as_up_would() -> None:
    by_name = json.loads(runner.invoke(app, ["plan", "gcp-a3-64", "--json"]).stdout)
    by_path = json.loads(runner.invoke(app, ["plan", str(ROOT / "stacks" / "Pulumi.gcp-a3-64.yaml"), "--json"]).stdout)
    assert by_name["tags"]["provision-stack"] == by_path["tags"]["provision-stack"] == "gcp-a3-64"
