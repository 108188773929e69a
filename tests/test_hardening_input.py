"""No echoed secrets, bounded input, and rules a user cannot slip past (issue 12 items 3, 4, 5).

CLI tests go through the real command (``--json`` and text), never assert wall-clock times:
every hostile input here is refused by a structural bound (bytes, depth, expanded nodes,
digits), so it ends with exit 2 at once or not at all.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import (
    CANARY_BODY_LINE,
    CANARY_PRIVATE_KEY,
    CANARY_TOKEN,
    MINIMAL_SPEC,
    TEST_KEY,
    isolated_home,
    leaked_canary,
    set_dotted,
)
from typer.testing import CliRunner

from provision.cli.app import app
from provision.spec.errors import Problem, SpecError
from provision.spec.loading import load_spec
from provision.spec.models import ClusterSpec

runner = CliRunner()
BASE: dict[str, Any] = MINIMAL_SPEC


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolated_home(tmp_path, monkeypatch)


def _write(tmp_path: Path, doc: Any, name: str = "spec.yaml") -> Path:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc), encoding="utf-8")
    return path


def _plan(path: Path, *extra: str) -> Any:
    return runner.invoke(app, ["plan", str(path), *extra])


# ---------------------------------------------------------------------- 3. no echoed secrets


def _string_paths(schema: dict[str, Any]) -> list[str]:
    """Dotted paths of every string field of the spec (and one key of each mapping of strings)."""
    defs = schema.get("$defs", {})

    def resolve(node: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in node:
            node = defs[node["$ref"].rsplit("/", 1)[-1]]
        return node

    out: list[str] = []

    def walk(node: dict[str, Any], path: str) -> None:
        node = resolve(node)
        options = [resolve(o) for o in node.get("anyOf", [node])]
        for opt in options:
            if opt.get("type") == "object" and "properties" in opt:
                for key, sub in opt["properties"].items():
                    walk(sub, f"{path}.{key}" if path else key)
            elif opt.get("type") == "object" and (
                isinstance(opt.get("additionalProperties"), dict) or opt.get("patternProperties")
            ):
                out.append(f"{path}.canary")
            elif opt.get("type") == "string" and path not in out:
                out.append(path)

    walk(schema, "")
    return [p for p in out if not p.startswith("access.ssh_public_keys")]


STRING_PATHS = _string_paths(ClusterSpec.model_json_schema())
SECRETS = {"private-key": CANARY_PRIVATE_KEY, "body-line": CANARY_BODY_LINE, "token": CANARY_TOKEN}


def test_the_string_fields_are_found_from_the_schema() -> None:
    assert {"name", "owner", "region", "image.id", "tags.canary", "image.versions.canary"} <= set(STRING_PATHS)


@pytest.mark.parametrize("field", STRING_PATHS)
@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_a_secret_in_any_field_is_refused_and_never_echoed(tmp_path: Path, field: str, kind: str) -> None:
    doc = set_dotted(BASE, field, SECRETS[kind])
    if field.startswith(("gcp.", "azure.", "alibaba.")):
        doc.pop(field.split(".")[0])  # the wrong cloud's options: refused for that too, still no echo
        doc = set_dotted(doc, field, SECRETS[kind])
    path = _write(tmp_path, doc)
    results = {extra: _plan(path, *extra) for extra in (("--json",), ())}
    for result in results.values():
        assert result.exit_code == 2, (field, result.stdout)
        assert leaked_canary(result.stdout) is None and leaked_canary(result.stderr) is None
    problems = json.loads(results["--json",].stdout)["problems"]
    assert any(p["path"] == field.replace(".canary", ".canary") for p in problems)


def test_a_private_key_under_an_unknown_key_or_as_a_key_is_not_echoed(tmp_path: Path) -> None:
    for doc in ({**BASE, "ssh_key": CANARY_PRIVATE_KEY}, {**BASE, "tags": {CANARY_TOKEN: "x"}}):
        result = _plan(_write(tmp_path, doc), "--json")
        assert result.exit_code == 2 and leaked_canary(result.stdout) is None


def test_problem_values_rules_and_messages_never_hold_a_secret() -> None:
    p = Problem("x", CANARY_PRIVATE_KEY, f"rule quoting {CANARY_TOKEN}", f"fix quoting {CANARY_BODY_LINE}")
    err = SpecError(f"message quoting {CANARY_TOKEN}", [p])
    for text in (str(p), str(err), json.dumps(err.as_dict())):
        assert leaked_canary(text) is None


def test_mock_state_never_stores_a_secret(home: Path) -> None:
    from datetime import datetime, timezone

    from provision.engine.mockstate import MockResource, MockState, MockStore

    now = datetime(2026, 11, 29, tzinfo=timezone.utc)
    state = MockState(
        "s", {"name": "s"}, "h", [MockResource("t", "n", {"userData": CANARY_PRIVATE_KEY, "k": CANARY_TOKEN}, "i")],
        {"key": CANARY_TOKEN}, now, now,
    )  # fmt: skip
    path = MockStore().save(state)
    assert leaked_canary(path.read_text()) is None


def test_json_output_is_scrubbed_at_the_boundary(capsys: pytest.CaptureFixture[str]) -> None:
    from provision.cli.common import emit_json

    emit_json({"outputs": {"note": f"key {CANARY_PRIVATE_KEY}", "list": [CANARY_TOKEN]}})
    out = capsys.readouterr().out
    assert leaked_canary(out) is None and "<redacted: private key>" in out


# ---------------------------------------------------------------------- 4. bounded input


def _bomb(field: str) -> str:
    lines = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        prev, cur = chr(96 + i), chr(97 + i)
        lines.append(f"{cur}: &{cur} [{', '.join(['*' + prev] * 9)}]")
    spec = yaml.safe_dump({k: v for k, v in BASE.items() if k != field.split(".")[0]}).strip()
    leaf = field.split(".")
    body = f"{leaf[0]}: *i" if len(leaf) == 1 else f"{leaf[0]}:\n  {leaf[1]}: *i"
    return "\n".join(lines) + "\n" + spec + "\n" + body + "\n"


HOSTILE = {
    "alias-bomb-name": _bomb("name"),
    "alias-bomb-nodes": _bomb("nodes"),
    "alias-bomb-tags": _bomb("tags.team"),
    "alias-bomb-cidrs": _bomb("access.allowed_cidrs"),
    "alias-bomb-versions": _bomb("image.versions"),
    "recursive-alias": "a: &a [*a]\nname: *a\n",
    "deep-flow": "name: " + "[" * 10_000 + "]" * 10_000,
    "deep-block": "".join(" " * i + f"k{i}:\n" for i in range(3000)),
    "huge-int-field": yaml.safe_dump(BASE).replace("nodes: 2", "nodes: " + "9" * 5000),
    "huge-int-unknown-key": yaml.safe_dump(BASE) + "x: " + "7" * 5000 + "\n",
    "duplicate-key": yaml.safe_dump(BASE) + "nodes: 64\n",
    "too-large": yaml.safe_dump(BASE) + "#" * (1024 * 1024 + 10) + "\n",
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_yaml_exits_2_with_a_clear_error(tmp_path: Path, case: str) -> None:
    path = _write(tmp_path, HOSTILE[case])
    result = _plan(path, "--json")
    assert result.exit_code == 2, result.stdout[:500]
    doc = json.loads(result.stdout)
    assert doc["error"] == "SpecError" and doc["problems"][0]["fix"]
    assert len(result.stdout) < 5000  # the value was cut before it was formatted


def test_duplicate_key_names_both_lines(tmp_path: Path) -> None:
    doc = json.loads(_plan(_write(tmp_path, HOSTILE["duplicate-key"]), "--json").stdout)
    assert "'nodes' appears twice" in doc["problems"][0]["rule"]


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "symlink-to-dev-zero", "folder"])
def test_special_files_are_refused_before_they_are_read(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "spec.yaml"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path = Path("/dev/zero")
    elif kind == "symlink-to-dev-zero":
        path.symlink_to("/dev/zero")
    else:
        path.mkdir()
    result = _plan(path, "--json")
    assert result.exit_code == 2
    assert "not a regular file" in json.loads(result.stdout)["problems"][0]["rule"]


def test_an_alias_bomb_value_is_formatted_without_expanding_it() -> None:
    level: Any = ["x"] * 9
    for _ in range(9):
        level = [level] * 9  # 9^10 leaves, 10 distinct lists: str() of it would never finish
    with pytest.raises(SpecError) as err:
        load_spec({**BASE, "name": level, "tags": {"team": level}})
    assert len(str(err.value)) < 2000 and len(json.dumps(err.value.as_dict())) < 5000


# ---------------------------------------------------------------------- 5. rules a user cannot slip past


@pytest.mark.parametrize(
    "mount",
    [
        "/",
        "/etc",
        "/usr/local",
        "/boot",
        "/proc",
        "/sys",
        "/dev",
        "/var",
        "/root",
        "/home/ubuntu/.ssh",
        "/../etc",
        "//",
        "//etc",
        "///usr/lib",
    ],
)
@pytest.mark.parametrize("which", ["scratch", "shared"])
def test_mounts_over_system_folders_are_refused(tmp_path: Path, mount: str, which: str) -> None:
    storage = {"scratch": {"mount": "/scratch"}, "shared": {"kind": "fsx-lustre", "size_gib": 1200}}
    storage[which]["mount"] = mount
    doc = json.loads(_plan(_write(tmp_path, {**BASE, "storage": storage}), "--json").stdout)
    assert doc["error"] == "SpecError"
    assert any(p["path"] == f"storage.{which}.mount" for p in doc["problems"])


def test_the_same_folder_for_shared_and_scratch_is_refused() -> None:
    with pytest.raises(SpecError, match="overlap"):
        load_spec({**BASE, "storage": {"shared": {"mount": "/data"}, "scratch": {"mount": "/data"}}})


@pytest.mark.parametrize(
    "cidrs", [["0.0.0.0/1", "128.0.0.0/1"], ["::/1", "8000::/1"], ["0.0.0.0/2", "64.0.0.0/2", "128.0.0.0/1"]]
)
def test_cidrs_that_together_cover_the_internet_need_the_opt_in(cidrs: list[str]) -> None:
    access = {"ssh_public_keys": [TEST_KEY], "allowed_cidrs": cidrs}
    with pytest.raises(SpecError, match="cover the whole internet"):
        load_spec({**BASE, "access": access})
    assert load_spec({**BASE, "access": {**access, "allow_world_ssh": True}}).access.allowed_cidrs


def test_duplicate_and_contained_cidrs_are_merged() -> None:
    cidrs = ["203.0.113.0/24", "198.51.100.0/24", "203.0.113.0/24", "203.0.113.128/25"]
    spec = load_spec({**BASE, "access": {"ssh_public_keys": [TEST_KEY], "allowed_cidrs": cidrs}})
    assert spec.access.allowed_cidrs == ("203.0.113.0/24", "198.51.100.0/24")


def test_a_price_override_below_the_catalog_is_refused_with_exit_3(tmp_path: Path) -> None:
    doc = {**BASE, "gpus": 65536, "aws": {"allocation": "asg"}}
    doc.pop("nodes")
    doc["lifetime"] = {"ttl": "12h", "max_cost_usd": 1, "hourly_price_usd": 1e-9}
    result = _plan(_write(tmp_path, doc), "--json")
    assert result.exit_code == 3
    assert json.loads(result.stdout)["problems"][0]["path"] == "lifetime.hourly_price_usd"


def test_a_discounted_override_is_taken_for_spot_down_to_the_deepest_documented_discount() -> None:
    from provision.clouds.validate import load_and_plan

    spot = {**BASE, "capacity": {"type": "spot"}, "lifetime": {"hourly_price_usd": 20.0}}
    assert load_and_plan(spot).cost.compute_hourly_usd == 40.0
    with pytest.raises(Exception, match="deepest documented spot discount"):
        load_and_plan({**spot, "lifetime": {"hourly_price_usd": 1.0}})


def test_an_expensive_plan_with_no_cap_warns_loudly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path, BASE)
    monkeypatch.setenv("PROVISION_WARN_HOURLY_USD", "50")
    warnings = json.loads(_plan(path, "--json").stdout)["warnings"]
    assert any(w.startswith("NO COST CAP") for w in warnings)
    assert "WARNING:" in _plan(path).stdout
    monkeypatch.setenv("PROVISION_WARN_HOURLY_USD", "100000")
    assert not any(w.startswith("NO COST CAP") for w in json.loads(_plan(path, "--json").stdout)["warnings"])
    capped = _write(tmp_path, {**BASE, "lifetime": {"max_cost_usd": 5000}}, "capped.yaml")
    monkeypatch.setenv("PROVISION_WARN_HOURLY_USD", "50")
    assert not any(w.startswith("NO COST CAP") for w in json.loads(_plan(capped, "--json").stdout)["warnings"])


def test_an_interrupted_command_exits_130_with_a_json_error_document(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from provision.ops.cluster import Cluster

    def interrupted(self: Any, yes: bool = True) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(Cluster, "up", interrupted)
    result = runner.invoke(app, ["up", str(_write(tmp_path, BASE)), "--mock", "--yes", "--json"])
    assert result.exit_code == 130
    assert json.loads(result.stdout)["error"] == "Interrupted"


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["plan", "--json"], 2),
        (["plan", "x.yaml", "--bogus", "--json"], 2),
        (["size", "--params", "1e300", "--tokens", "1e300", "--json"], 2),
        (["size", "--params", "1e155", "--tokens", "1e155", "--json"], 2),
        (["offers", "--cloud", "mars", "--json"], 2),
    ],
)
def test_bad_command_lines_give_one_json_document_and_the_contract_exit_code(args: list[str], code: int) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == code
    assert "error" in json.loads(result.stdout)


def test_an_unexpected_failure_is_exit_1_and_one_json_document(monkeypatch: pytest.MonkeyPatch) -> None:
    import provision.catalog as catalog

    def broken() -> Any:
        raise RuntimeError(f"boom {CANARY_TOKEN}")

    monkeypatch.setattr(catalog, "load_catalog", broken)
    result = runner.invoke(app, ["offers", "--json"])
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["error"] == "InternalError" and leaked_canary(result.stdout) is None


def test_a_password_file_given_as_target_has_its_hashes_redacted(tmp_path: Path) -> None:
    shadow = "root:$6$Zx9sAlt0$K1x9Jv0aLmE3pQ7sT2uVwXyZabcdefghijkLMNOPQRS0123456789:19000:0:99999:7:::\n"
    result = _plan(_write(tmp_path, shadow, "shadow"), "--json")
    assert result.exit_code == 2
    assert "K1x9Jv0aLmE3pQ7sT2uVwXyZ" not in result.stdout and "password hash" in result.stdout


def test_a_target_name_too_long_for_the_filesystem_is_bad_input(tmp_path: Path) -> None:
    result = runner.invoke(app, ["plan", str(tmp_path / ("a" * 300)), "--json"])
    assert result.exit_code == 2 and json.loads(result.stdout)["error"] == "SpecError"


@pytest.mark.parametrize(
    "doc",
    [
        {**BASE, "tags": [CANARY_PRIVATE_KEY]},
        {**BASE, "image": {"versions": [CANARY_TOKEN]}},
        {**BASE, "access": {"allowed_cidrs": {"a": CANARY_BODY_LINE}}},
        {**BASE, "name": {"k": [CANARY_PRIVATE_KEY]}},
    ],
    ids=["list-in-tags", "list-in-versions", "mapping-in-cidrs", "nested-in-name"],
)
def test_a_secret_inside_a_wrongly_shaped_value_is_not_echoed(tmp_path: Path, doc: dict[str, Any]) -> None:
    for extra in (("--json",), ()):
        result = _plan(_write(tmp_path, doc), *extra)
        assert result.exit_code == 2 and leaked_canary(result.stdout + result.stderr) is None


def test_a_leading_double_slash_mount_is_stored_as_the_path_the_kernel_uses() -> None:
    spec = load_spec({**BASE, "storage": {"scratch": {"mount": "//data/scratch"}}})
    assert spec.storage.scratch is not None and spec.storage.scratch.mount == "/data/scratch"
