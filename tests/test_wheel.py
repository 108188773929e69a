"""provision as a user installs it: a wheel built from this checkout, used from a folder outside it.

The wheel is built once per session (``pip wheel --no-build-isolation``: no network) from a copy
of the files the build reads, and installed with ``pip install --no-deps --target SITE``. Each run
then has ``PYTHONPATH=SITE`` (its dependencies come from this virtual environment), a working
directory, ``HOME`` and ``PROVISION_HOME`` in a temporary folder, and an audit hook that records
every file opened under the checkout: an installed provision must find its images, stacks and
data inside the package, never beside the code it was built from.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import ROOT

#: One wheel build and a few subprocess runs (about a minute of wall time): part of the default run.
pytestmark = pytest.mark.slow

#: What the build reads: pyproject.toml, setup.py (the package list), README.md (the long description),
#: the package, and the two top-level folders the wheel ships as package data.
BUILD_INPUTS = ("pyproject.toml", "setup.py", "README.md", "provision", "images", "stacks")

#: Runs ``python RUNNER module args...`` as ``python -m module args...`` with an audit hook: every file
#: opened under $CHECKOUT (outside the virtual environment), and every provision module loaded from
#: outside $SITE, is written to $REPORT.
RUNNER = textwrap.dedent(
    """
    import atexit, json, os, runpy, sys

    checkout = os.path.realpath(os.environ["CHECKOUT"]) + os.sep
    site = os.path.realpath(os.environ["SITE"]) + os.sep
    venv = os.path.realpath(sys.prefix) + os.sep  # the dependencies (CI keeps its .venv inside the checkout)
    opened = []

    def hook(event, args):
        if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
            path = os.path.abspath(os.fsdecode(args[0]))
            if path.startswith(checkout) and not path.startswith(venv):
                opened.append(path)

    def report():
        foreign = sorted(
            f"{name}: {module.__file__}"
            for name, module in list(sys.modules.items())
            if (name == "provision" or name.startswith("provision."))
            and getattr(module, "__file__", None)
            and not os.path.realpath(module.__file__).startswith(site)
        )
        with open(os.environ["REPORT"], "w") as f:
            json.dump({"opened": sorted(set(opened)), "foreign_modules": foreign}, f)

    sys.addaudithook(hook)
    atexit.register(report)
    module = sys.argv[1]
    sys.argv = [module, *sys.argv[2:]]
    runpy.run_module(module, run_name="__main__", alter_sys=True)
    """
)


@dataclass(frozen=True)
class Installed:
    wheel: Path
    site: Path
    runner: Path


def _copy_build_inputs(dest: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build")
    for name in BUILD_INPUTS:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, dest / name, ignore=ignore)
        else:
            shutil.copy2(source, dest / name)


@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    base = tmp_path_factory.mktemp("wheel")
    source, dist, site = base / "source", base / "dist", base / "site"
    source.mkdir()
    _copy_build_inputs(source)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    built = subprocess.run(
        [*pip, "wheel", str(source), "--no-deps", "--no-build-isolation", "--no-index", "-w", str(dist)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    (wheel,) = dist.glob("provision-*.whl")
    done = subprocess.run(
        [*pip, "install", "--no-deps", "--no-index", "--target", str(site), str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    runner = base / "runner.py"
    runner.write_text(RUNNER, encoding="utf-8")
    return Installed(wheel, site, runner)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A working folder outside the checkout, with its own HOME and PROVISION_HOME."""
    (tmp_path / "work").mkdir()
    (tmp_path / "home").mkdir(mode=0o700)
    return tmp_path


def _run(installed: Installed, outside: Path, module: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m module args`` in ``outside/work`` against the installed wheel; fails on any read of the checkout."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "PROVISION_HOME", "COLUMNS") and not k.startswith(("PULUMI_", "PYTEST_"))
    }
    report = outside / f"report-{len(list(outside.glob('report-*')))}.json"
    env.update(
        PYTHONPATH=str(installed.site),
        HOME=str(outside / "home"),
        PROVISION_HOME=str(outside / "home" / ".provision"),
        CHECKOUT=str(ROOT),
        SITE=str(installed.site),
        REPORT=str(report),
    )
    proc = subprocess.run(
        [sys.executable, str(installed.runner), module, *args],
        cwd=outside / "work",
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    seen = json.loads(report.read_text(encoding="utf-8"))
    assert seen == {"opened": [], "foreign_modules": []}, seen
    return proc


def test_the_wheel_carries_every_module_image_file_and_shipped_stack(installed: Installed) -> None:
    names = set(zipfile.ZipFile(installed.wheel).namelist())

    def files(folder: Path) -> set[Path]:
        return {p.relative_to(folder) for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts}

    package = {f"provision/{p.as_posix()}" for p in files(ROOT / "provision") if p.suffix != ".pyc"}
    images = {f"provision/_images/{p.as_posix()}" for p in files(ROOT / "images")}
    stacks = {f"provision/_stacks/{p.name}" for p in (ROOT / "stacks").glob("Pulumi.*.yaml")}
    assert images and stacks
    assert sorted((package | images | stacks) - names) == []


def test_installed_cli_plans_previews_and_brings_up_a_shipped_stack(installed: Installed, outside: Path) -> None:
    plan = _run(installed, outside, "provision", "plan", "aws-p5-ci", "--json")
    assert plan.returncode == 0, plan.stderr
    summary = json.loads(plan.stdout)
    assert (summary["cloud"], summary["instance_type"]) == ("aws", "p5.48xlarge")
    assert summary["image"]["source"].startswith("images/aws.yaml#")  # the shipped images/ was read

    preview = _run(installed, outside, "provision", "preview", "gcp-a3-ci", "--json")
    assert preview.returncode == 0, preview.stderr
    doc = json.loads(preview.stdout)
    assert doc["plan"]["cloud"] == "gcp" and doc["resources"]
    scripts = json.dumps(doc["resources"])
    assert "provision-bootstrap" in scripts  # node scripts rendered from the shipped images/common

    up = _run(installed, outside, "provision", "up", "azure-ndh100-ci", "--mock", "--yes", "--json")
    assert up.returncode == 0, up.stderr
    state = outside / "home" / ".provision" / "mock" / "azure-ndh100-ci.json"
    assert json.loads(state.read_text(encoding="utf-8"))["resources"]
    down = _run(installed, outside, "provision", "down", "azure-ndh100-ci", "--mock", "--yes", "--json")
    assert down.returncode == 0, down.stderr
    assert not state.exists() or not json.loads(state.read_text(encoding="utf-8"))["resources"]


def test_installed_pytest_plugin_runs_a_shipped_stack_on_the_mocked_cloud(installed: Installed, outside: Path) -> None:
    (outside / "work" / "test_users_suite.py").write_text(
        textwrap.dedent(
            """
            def test_the_ci_stack_builds(provision_mock_cloud):
                result = provision_mock_cloud("aws-p5-ci")
                assert result.plan.name == "aws-p5-ci"
                assert result.of_type("aws:ec2/launchTemplate:LaunchTemplate")
                assert result.outputs["hostfile"]
            """
        ),
        encoding="utf-8",
    )
    proc = _run(installed, outside, "pytest", "-q", "-p", "no:cacheprovider", "test_users_suite.py")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "1 passed" in proc.stdout


def test_an_install_without_its_images_says_to_reinstall(installed: Installed, outside: Path, tmp_path: Path) -> None:
    broken = Installed(installed.wheel, tmp_path / "broken-site", installed.runner)
    shutil.copytree(installed.site, broken.site)
    shutil.rmtree(broken.site / "provision" / "_images")

    proc = _run(broken, outside, "provision", "plan", "aws-p5-ci")

    assert proc.returncode == 1
    assert "images/ folder is missing" in proc.stderr and "reinstall provision" in proc.stderr
    assert "permissions" not in proc.stderr and "Traceback" not in proc.stderr
