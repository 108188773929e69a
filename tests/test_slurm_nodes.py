"""The Slurm node side: the munge key and rendered files reach a node on stdin (never user data or a command
line) and land with munged's required owner and mode; the node steps get only pinned, checked values."""

from __future__ import annotations

import base64
import os
import pwd
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import MINIMAL_SPEC

from provision.clouds.base import plan_spec
from provision.ops.slurm import MUNGE_KEY, munge_key, slurm_payload, slurm_prepare_script
from provision.planning.bootstrap import Values, base_values, parse, render
from provision.planning.slurm import layout_from_plan, node_steps, render_all, slurm_pins
from provision.spec.models import ClusterSpec


def _cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    monkeypatch.setenv("PROVISION_HOME", str(tmp_path / "home"))
    return SimpleNamespace(spec=SimpleNamespace(name="sl2"), stack="sl2", mock=False, outputs={})


def test_munge_key_is_made_once_private_and_random(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    c = _cluster(tmp_path, monkeypatch)
    first = munge_key(c)
    assert first.stat().st_mode & 0o777 == 0o600 and len(first.read_bytes()) == 1024
    assert munge_key(c).read_bytes() == first.read_bytes()
    other = SimpleNamespace(spec=SimpleNamespace(name="sl3"), stack="sl3", mock=False, outputs={})
    assert munge_key(other).read_bytes() != first.read_bytes()


@pytest.mark.skipif(os.geteuid() != 0, reason="installs files owned by munge, as root does on a node")
def test_the_prepare_script_installs_the_key_for_munged_and_the_files(tmp_path: Path) -> None:
    try:
        pwd.getpwnam("munge")
    except KeyError:
        pytest.skip("no munge user (apt-get install munge)")
    key = os.urandom(1024)
    files = {"slurm.conf": "ClusterName=x\n", "gres.conf": "NodeName=x-0 Name=gpu File=/dev/nvidia[0-7]\n"}
    payload = slurm_payload(files, key, "x-3")
    script = slurm_prepare_script()
    assert base64.b64encode(key).decode()[:40] not in script  # the key travels on stdin only
    root = tmp_path / "root"
    done = subprocess.run(
        ["bash", "-c", script],
        input=payload,
        text=True,
        env={**os.environ, "PROVISION_ROOT": str(root)},
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    k = root / MUNGE_KEY.lstrip("/")
    assert k.read_bytes() == key
    assert k.stat().st_mode & 0o777 == 0o400 and pwd.getpwuid(k.stat().st_uid).pw_name == "munge"
    assert (root / "etc/slurm/gres.conf").read_text() == files["gres.conf"]
    assert (root / "etc/default/slurmd").read_text() == 'SLURMD_OPTIONS="-N x-3"\n'
    assert (root / "etc/provision/slurm-node").read_text() == "x-3\n"


def test_node_user_data_carries_the_pins_and_steps_but_no_key_or_node_name() -> None:
    plan = plan_spec(ClusterSpec.model_validate({**MINIMAL_SPEC, "nodes": 2}))
    values: Values = base_values(plan)
    steps = node_steps(values, slurm_pins("ubuntu-22.04"), role="node", accounting=False, containers=True)
    doc = parse(render(plan, values=values, steps=steps))
    env = next(f["content"] for f in doc["write_files"] if f["path"] == "/etc/provision/bootstrap.env")
    assert "SLURM_VERSION=21.08.5" in env and "ENROOT_VERSION=3.5.0" in env and "SLURM_ROLE=node" in env
    paths = [f["path"] for f in doc["write_files"]]
    assert any(p.endswith("-slurm.sh") for p in paths) and any(p.endswith("-enroot-pyxis.sh") for p in paths)
    assert not any("munge" in p for p in paths) and "t1-1" not in env
    files = render_all(layout_from_plan(plan, slurm_version="21.08.5"))
    assert "HealthCheckProgram=/usr/local/sbin/provision-slurm-health" in files["slurm.conf"]


def test_controller_user_data_is_valid_cloud_config_with_the_controller_step_and_lifetime(tmp_path: Path) -> None:
    import shutil

    from provision.planning.slurm import controller_user_data

    spec = {**MINIMAL_SPEC, "lifetime": {"ttl": "6h"}, "scheduler": {"kind": "none"}}
    plan = plan_spec(ClusterSpec.model_validate(spec))
    slurm = {"kind": "slurm", "slurm": {"accounting": True}}
    plan = plan.model_copy(
        update={
            "spec": plan.spec.model_copy(
                update={"scheduler": ClusterSpec.model_validate({**MINIMAL_SPEC, "scheduler": slurm}).scheduler}
            )
        }
    )
    text = controller_user_data(plan, slurm_pins("ubuntu-22.04"), login_keys=plan.access.ssh_public_keys)
    doc = parse(text)
    env = next(f["content"] for f in doc["write_files"] if f["path"] == "/etc/provision/bootstrap.env")
    assert "SLURM_ROLE=controller" in env and "SLURM_ACCOUNTING=1" in env and "ENROOT_VERSION" not in env
    steps = next(f["content"] for f in doc["write_files"] if f["path"] == "/etc/provision/steps.json")
    import json

    assert [s["name"] for s in json.loads(steps)["steps"]] == ["apt-guard", "login-user", "slurm", "lifetime"]
    assert "munge.key" not in text
    cloud_init = shutil.which("cloud-init")
    if cloud_init:
        path = tmp_path / "controller.yaml"
        path.write_text(text)
        assert subprocess.run([cloud_init, "schema", "--config-file", str(path)], capture_output=True).returncode == 0
    elif os.environ.get("CI"):
        pytest.fail("cloud-init is missing; .ci/run installs it")
