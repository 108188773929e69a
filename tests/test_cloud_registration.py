"""Every registered cloud declares every piece, once, in its own places (docs/adding-a-cloud.md).

:func:`registration_gaps` names what a cloud lacks. It runs for every cloud of ``catalog.models.CLOUDS``, and on
a fake fifth cloud to show that each missing piece is named (a forgotten piece used to fail silently: no tag
policy, no strict mocks, a cloud missing from ``provision offers``).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
import types
from pathlib import Path
from typing import Any, ClassVar

import pytest
import tomllib
import yaml

from provision.catalog.models import CLOUDS, CloudFacts

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "provision"
DOC = ROOT / "docs" / "adding-a-cloud.md"

#: Each piece a cloud declares, as ``docs/adding-a-cloud.md`` names it (the doc must list every one).
PIECES = (
    "adapter",
    "options model",
    "catalog facts",
    "filesystem preference",
    "tag field",
    "provider region key",
    "SDK modules",
    "way in",
    "images file",
    "preflight hook",
    "sweeper hook",
    "strict rules",
    "mocks",
    "pyproject extra",
    "import contracts",
)


def _module_exists(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def _facts(cloud: str) -> CloudFacts | None:
    path = PACKAGE / "catalog" / "data" / f"{cloud}.yaml"
    if not path.exists():
        return None
    doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    try:
        return CloudFacts.model_validate(doc.get("facts"))
    except ValueError:
        return None


def registration_gaps(cloud: str) -> list[str]:
    """What ``cloud`` lacks, one line per piece (empty when it is fully registered)."""
    from provision.clouds.base import Adapter, adapter_class
    from provision.planning.images import images_dir
    from provision.spec.errors import UnsupportedError
    from provision.spec.models import ClusterSpec

    gaps: list[str] = []
    cls: type[Adapter] | None
    try:
        cls = adapter_class(cloud)
    except (UnsupportedError, ImportError) as e:
        cls = None
        gaps.append(f"adapter: provision/clouds/{cloud}/adapter.py with one Adapter subclass ({e})")
    if cloud not in ClusterSpec.model_fields or not _module_exists(f"provision.spec.options.{cloud}"):
        gaps.append(f"options model: provision/spec/options/{cloud}.py and a `{cloud}:` field of ClusterSpec")
    facts = _facts(cloud)
    if facts is None:
        gaps.append(f"catalog facts: a valid `facts:` header in provision/catalog/data/{cloud}.yaml")
        gaps += [
            f"{piece}: no catalog facts to read it from"
            for piece in ("filesystem preference", "tag field", "provider region key", "way in")
        ]
    else:
        from provision.catalog import load_catalog

        sold = {f.kind for f in load_catalog().filesystems_for(cloud)} if cloud in CLOUDS else set()
        if not set(facts.filesystems) <= sold:
            gaps.append(f"filesystem preference: {sorted(set(facts.filesystems) - sold)} have no catalog row")
        if facts.tag_field not in ("tags", "labels"):  # pragma: no cover - the model refuses it
            gaps.append("tag field: tags or labels")
        if not facts.provider_region_key.startswith(f"{facts.pulumi_package}:"):
            gaps.append(f"provider region key: {facts.provider_region_key} is not a {facts.pulumi_package} key")
        option = facts.private_path.option if facts.private_path else None
        field = ClusterSpec.model_fields.get(cloud)
        models = [a for a in getattr(field.annotation, "__args__", ()) if a is not type(None)] if field else []
        if option is not None and not any(option in m.model_fields for m in models):
            gaps.append(f"way in: facts.private_path.option {option!r} is not an option of the {cloud} section")
    if cls is not None and facts is not None and facts.pulumi_module not in cls.sdk_modules:
        gaps.append(f"SDK modules: the adapter's sdk_modules lack {facts.pulumi_module}")
    elif cls is None or facts is None:
        gaps.append("SDK modules: no adapter or facts to compare")
    if not (images_dir() / f"{cloud}.yaml").exists():
        gaps.append(f"images file: images/{cloud}.yaml")
    for piece, attr, module, function in (
        ("preflight hook", "preflight_asks", "preflight", "preflight"),
        ("sweeper hook", "sweeper", "sweeper", "sweep"),
    ):
        if cls is None or attr not in vars(cls):
            gaps.append(f"{piece}: the adapter class must declare `{attr}` (None when the cloud has none)")
        elif getattr(cls, attr) is not None:
            name = f"provision.clouds.{cloud}.{module}"
            if not _module_exists(name) or not callable(getattr(importlib.import_module(name), function, None)):
                gaps.append(f"{piece}: provision/clouds/{cloud}/{module}.py must define `{function}`")
    for piece, module in (("strict rules", "strict"), ("mocks", "mocks")):
        if not _module_exists(f"provision.clouds.{cloud}.{module}"):
            gaps.append(f"{piece}: provision/clouds/{cloud}/{module}.py")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    extras = project["project"]["optional-dependencies"]
    extra = cls.extra if cls is not None else cloud
    if extra not in extras or not any(extra in e for e in extras["all"]):
        gaps.append(f"pyproject extra: [project.optional-dependencies] {extra} = [...], and in `all`")
    contracts = {c["id"]: c for c in project["tool"]["importlinter"]["contracts"]}
    folder = f"provision.clouds.{cloud}"
    if (
        folder not in contracts["clouds-independent"]["modules"]
        or folder not in (contracts["k8s-cloud-free"]["forbidden_modules"])
    ):
        gaps.append(f"import contracts: {folder} in clouds-independent and k8s-cloud-free (pyproject.toml)")
    return gaps


@pytest.mark.parametrize("cloud", CLOUDS)
def test_every_registered_cloud_declares_every_piece(cloud: str) -> None:
    assert registration_gaps(cloud) == []


def test_a_fifth_cloud_with_only_a_folder_and_an_adapter_is_told_every_missing_piece(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from provision.clouds.base import Adapter

    assert {g.split(":", 1)[0] for g in registration_gaps("oracle")} == set(PIECES)

    # An adapter alone: everything else is still named.
    class OracleAdapter(Adapter):
        cloud: ClassVar[str] = "oracle"
        extra: ClassVar[str] = "oracle"
        sdk_modules: ClassVar[tuple[str, ...]] = ("pulumi_oci",)

        def nccl_env(self, offer: Any, fabric: str) -> dict[str, str]:
            return {}

    module = types.ModuleType("provision.clouds.oracle.adapter")
    OracleAdapter.__module__ = module.__name__
    module.OracleAdapter = OracleAdapter  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setattr("provision.clouds.base.ADAPTERS", {"oracle": module.__name__})
    gaps = registration_gaps("oracle")
    named = {g.split(":", 1)[0] for g in gaps}
    assert named == set(PIECES) - {"adapter"}
    assert any("declare `preflight_asks`" in g for g in gaps) and any("declare `sweeper`" in g for g in gaps)
    assert "images file: images/oracle.yaml" in gaps

    # Declared but not written: the hook's module is named.
    monkeypatch.setattr(OracleAdapter, "preflight_asks", ("OCI tenancy", "service limits"), raising=False)
    assert "preflight hook: provision/clouds/oracle/preflight.py must define `preflight`" in (
        registration_gaps("oracle")
    )


def test_the_guide_names_every_piece_the_registration_test_checks() -> None:
    text = DOC.read_text(encoding="utf-8")
    missing = [piece for piece in PIECES if f"**{piece}**" not in text]
    assert missing == [], f"docs/adding-a-cloud.md does not walk through: {missing}"


def _golden_types() -> dict[str, set[str]]:
    """Pulumi type tokens of every golden graph, by package prefix."""
    out: dict[str, set[str]] = {}
    for path in sorted((ROOT / "tests" / "golden").glob("*.json")):
        for r in json.loads(path.read_text(encoding="utf-8"))["resources"]:
            out.setdefault(r["type"].split(":", 1)[0], set()).add(r["type"])
    return out


@pytest.mark.parametrize("cloud", CLOUDS)
def test_every_resource_type_in_the_goldens_is_known_to_the_cloud_sweeper(cloud: str) -> None:
    """A type the sweeper does not know is left behind when the state is lost (EKS had no rows): each type of
    the shipped graphs is deleted by a row of the sweeper, or goes with a named parent, or is kept on purpose."""
    from provision.catalog import cloud_facts
    from provision.clouds.base import adapter_class

    if adapter_class(cloud).sweeper is None:
        pytest.skip(f"{cloud} declares no tag sweeper (reaped through its stacks)")
    sweeper = importlib.import_module(f"provision.clouds.{cloud}.sweeper")
    found = _golden_types()
    tokens = found.get(cloud_facts(cloud).pulumi_package, set()) | (
        found.get("time", set()) if cloud == "aws" else set()
    )
    assert tokens, f"no golden graph of {cloud}"
    unknown = sorted(t for t in tokens if sweeper.coverage(t) is None)
    assert unknown == [], f"the {cloud} sweeper does not know: {unknown}"
