"""The README's "Train something" walkthrough runs as written, in a fresh clone, under --mock."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT


def _walkthrough() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("### Train something")
    body = text.index("```bash\n", start) + len("```bash\n")
    return text[body : text.index("```\n", body)]


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="needs a git checkout")
def test_train_something_walkthrough_runs_as_written(tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    venv_bin = clone / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    # The quick start's .venv/bin/provision: this interpreter's CLI with this checkout's code (PYTHONPATH; a script,
    # not `-m`, so the clone's own folder does not come first on sys.path).
    entry = tmp_path / "provision_cli.py"
    entry.write_text("from provision.cli import main\n\nmain()\n")
    (venv_bin / "provision").write_text(f'#!/bin/sh\nexec {sys.executable} {entry} "$@"\n')
    (venv_bin / "provision").chmod(0o755)
    env = {
        **os.environ,
        "PROVISION_HOME": str(tmp_path / "home"),
        "PYTHONPATH": str(ROOT),
        "COLUMNS": "80",
    }
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", _walkthrough()], cwd=clone, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    out = done.stdout
    assert "rank 0 of 16 step 2" in out and "rank 8 of 16 step 2" in out  # logs -f followed both nodes to the end
    top = out[out.index("aws-p5-16: job ") :]
    assert top.split("\n", 1)[0].split()[3] == "succeeded" and "aws-p5-16-1" in top
    assert not (tmp_path / "home" / "ssh" / "aws-p5-16").exists()  # down removed the nodes' folders


def test_the_readme_spec_example_validates_and_plans() -> None:
    """The spec under "The cluster spec" is accepted as written (its key is the documented example key)."""
    import yaml

    from provision.clouds.base import plan_spec
    from provision.spec import load_spec

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("## The cluster spec")
    body = text.index("```yaml\n", start) + len("```yaml\n")
    doc = yaml.safe_load(text[body : text.index("```\n", body)])
    plan = plan_spec(load_spec(doc))
    assert plan.nodes == 8 and plan.runtime is not None
