"""examples/quickstart.ipynb runs headless, top to bottom, against the mocked cloud."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from conftest import ROOT

nbformat = pytest.importorskip("nbformat", reason="pip install 'provision[dev]' (nbformat, nbclient, ipykernel)")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("matplotlib", reason="pip install 'provision[notebook]' (the sizing figure cell)")

NOTEBOOK = ROOT / "examples" / "quickstart.ipynb"
#: Used only when the "python3" kernel found first belongs to another interpreter.
OWN_KERNEL = "provision-tests"


def _same_python(argv0: str) -> bool:
    try:
        return os.path.samefile(argv0, sys.executable)
    except OSError:
        return False


@pytest.fixture(scope="module")
def kernel_name() -> str:
    """A kernel that runs this interpreter: "python3" when it does, else one installed into sys.prefix (once)."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    manager = KernelSpecManager()
    for name in ("python3", OWN_KERNEL):
        try:
            if _same_python(manager.get_kernel_spec(name).argv[0]):
                return name
        except NoSuchKernel:
            pass
    from ipykernel.kernelspec import install

    install(kernel_name=OWN_KERNEL, display_name="Python (provision tests)", prefix=sys.prefix)
    assert _same_python(KernelSpecManager().get_kernel_spec(OWN_KERNEL).argv[0])
    return OWN_KERNEL


def _text(cell: object) -> str:
    parts = []
    for out in cell.get("outputs", []):  # type: ignore[attr-defined]
        parts.append(out.get("text", ""))
        parts.append(out.get("data", {}).get("text/plain", ""))
        parts.append(out.get("data", {}).get("text/html", ""))
    return "\n".join(parts)


def test_quickstart_notebook_runs_headless(kernel_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("PROVISION_HOME", str(home))  # the kernel inherits it: nothing in the real home
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), "commit the notebook without outputs"
    client = nbclient.NotebookClient(
        nb, kernel_name=kernel_name, timeout=300, resources={"metadata": {"path": str(ROOT)}}
    )
    client.execute()

    code = [c for c in nb.cells if c.cell_type == "code"]
    errors = [o for c in code for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, errors
    everything = "\n".join(_text(c) for c in code)
    assert "slots=8" in everything  # the hostfile
    assert "Host llm-train-0" in everything  # the ssh config
    assert "NCCL" in everything  # the fabric environment
    up = next(c for c in code if c.source.startswith("result = cluster.up()"))
    shown = [o for o in up.outputs if o.get("output_type") == "display_data"]  # the progress, updated in place
    assert len(shown) == 1 and " created, " in shown[0]["data"]["text/html"]
    assert (home / "mock").is_dir() and not list((home / "mock").glob("*.json"))  # torn down
    sizing = next(c for c in code if c.source.startswith("from provision.planning.sizing import size_training"))
    figures = [o for o in sizing.outputs if "image/png" in o.get("data", {})]  # SizingReport.figure() shows itself
    assert len(figures) == 1, sizing.outputs
