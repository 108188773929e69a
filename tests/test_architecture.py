"""The package's shape: layers that only import downwards, no import circles, a thin CLI app.

The layers, the independence of the four cloud folders and the pure layers' freedom from Pulumi and
cloud SDKs are import-linter contracts in pyproject.toml (ARCHITECTURE.md draws them); these tests run
them in the suite, so a new back-import fails here as well as in ``lint-imports``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import grimp
import pytest
from importlinter.cli import lint_imports

try:
    import tomllib
except ImportError:  # Python 3.10: import-linter depends on tomli there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("cli", "testing", "ops", "engine", "clouds", "planning", "spec", "catalog")


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("provision", cache_dir=None)


def test_import_linter_contracts_are_kept() -> None:
    cwd = os.getcwd()
    os.chdir(ROOT)  # import-linter reads pyproject.toml from the working directory
    try:
        assert lint_imports(no_cache=True) == 0
    finally:
        os.chdir(cwd)


def _contract(contract_id: str) -> dict[str, Any]:
    doc = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (found,) = [c for c in doc["tool"]["importlinter"]["contracts"] if c["id"] == contract_id]
    return found


#: Top-level names of Pulumi and its providers, the cloud SDKs and SSH: what the pure layers must not import.
_CLOUD_PACKAGE = re.compile(r"^(pulumi\w*|boto3|botocore|azure|google\w*|alibabacloud\w*|aliyun\w*|asyncssh)$")


def test_the_pure_layers_contract_lists_every_cloud_package_the_code_imports() -> None:
    """A new Pulumi provider or SDK imported anywhere in ``provision`` must also be forbidden in the pure layers.

    import-linter matches external packages by their exact top-level name, so ``pulumi_*`` cannot be written
    as a pattern; this keeps the contract's list complete.
    """
    contract = _contract("pure-layers")
    assert set(contract["source_modules"]) == {"provision.planning", "provision.spec", "provision.catalog"}
    full = grimp.build_graph("provision", include_external_packages=True, cache_dir=None)
    imported = {m for m in full.modules if "." not in m and _CLOUD_PACKAGE.match(m)}
    assert {"pulumi", "pulumi_aws", "boto3"} <= imported  # the scan sees the lazy imports inside functions
    assert imported - set(contract["forbidden_modules"]) == set()


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    component.append(m)
                    if m == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_circles_among_provision_modules(graph: grimp.ImportGraph) -> None:
    assert _cycles(graph) == []


def test_the_cycle_finder_sees_a_circle() -> None:
    g = grimp.ImportGraph()
    for m in ("p", "p.a", "p.b", "p.c"):
        g.add_module(m)
    g.add_import(importer="p.a", imported="p.b")
    g.add_import(importer="p.b", imported="p.a")
    g.add_import(importer="p.c", imported="p.a")
    assert _cycles(g) == [["p.a", "p.b"]]


def test_every_module_belongs_to_a_layer(graph: grimp.ImportGraph) -> None:
    loose = [m for m in graph.modules if m not in ("provision", "provision.__main__") and m.split(".")[1] not in LAYERS]
    assert loose == []


def test_command_modules_never_import_the_app(graph: grimp.ImportGraph) -> None:
    importers = graph.find_modules_that_directly_import("provision.cli.app")
    assert importers <= {"provision.cli", "provision.cli.__main__"}


def test_cloud_folders_have_the_same_files() -> None:
    clouds = ROOT / "provision" / "clouds"
    shapes = {
        d.name: {p.name for p in d.glob("*.py")}
        for d in clouds.iterdir()
        # k8s/ is not a cloud: the Kubernetes pieces GKE and EKS share (it imports no cloud folder).
        if d.is_dir() and d.name not in ("__pycache__", "k8s")
    }
    common = {"__init__.py", "adapter.py", "components.py", "mocks.py", "network.py", "storage.py"}
    assert set(shapes) == {"aws", "gcp", "azure", "alibaba"}
    for cloud, files in shapes.items():
        assert common <= files, (cloud, common - files)
