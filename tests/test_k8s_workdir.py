"""``k8s-launch --workdir`` / ``launch --k8s --workdir``: the local folder (git-ignored files left out) reaches every
pod of the TrainJob through a ConfigMap applied with it, unpacked by an init container into /workspace."""

from __future__ import annotations

import base64
import gzip
import io
import json
import os
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import isolated_home
from typer.testing import CliRunner

from provision.cli.app import app
from provision.ops.cluster import Cluster
from provision.ops.k8s import launch

runner = CliRunner()
STACK = "aws-p5-64-eks"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Cluster:
    home = tmp_path_factory.mktemp("k8s-workdir")
    mp = pytest.MonkeyPatch()
    isolated_home(home, mp)
    c = Cluster(STACK, mock=True, display="none")
    c.up()
    yield c
    c.down()
    mp.undo()


def _code(tmp_path: Path) -> Path:
    src = tmp_path / "code"
    (src / "pkg").mkdir(parents=True)
    (src / "train.py").write_text("print('train')\n")
    (src / "pkg" / "model.py").write_text("X = 1\n")
    (src / ".gitignore").write_text("data/\n*.ckpt\n")
    (src / "data").mkdir()
    (src / "data" / "big.bin").write_bytes(b"x" * 1000)
    (src / "last.ckpt").write_bytes(b"y")
    return src


def _members(config_map: dict[str, Any]) -> list[str]:
    blob = base64.b64decode(config_map["binaryData"]["workdir.tar.gz"])
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(blob))) as tar:
        return sorted(tar.getnames())


def test_the_workdir_rides_with_the_job_and_every_pod_starts_in_it(cluster: Cluster, tmp_path: Path) -> None:
    seen: dict[str, Any] = {}

    def fake_run(argv: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
        seen["docs"] = list(yaml.safe_load_all(kw["input"]))
        return subprocess.CompletedProcess(argv, 0, "applied\n", "")

    cluster.mock = False  # submit through the fake kubectl (the kubeconfig is the mocked cluster's)
    try:
        out = launch(cluster, "train.py", ["--lr", "1"], name="wd-1", workdir=str(_code(tmp_path)), run=fake_run)
    finally:
        cluster.mock = True
    config_map, job = seen["docs"]
    assert (config_map["kind"], config_map["metadata"]["name"], job["kind"]) == (
        "ConfigMap",
        "wd-1-workdir",
        "TrainJob",
    )
    assert config_map["metadata"]["labels"] == {"provision.dev/trainjob": "wd-1"}
    assert _members(config_map) == [".gitignore", "pkg/model.py", "train.py"]  # data/ and *.ckpt left out
    patch = job["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]
    pod = patch["template"]["spec"]["template"]["spec"]
    assert pod["initContainers"][0]["command"] == [
        "tar",
        "-xzf",
        "/provision/workdir-src/workdir.tar.gz",
        "-C",
        "/workspace",
    ]
    assert pod["initContainers"][0]["image"] == job["spec"]["trainer"]["image"]
    assert pod["containers"] == [
        {
            "name": "node",
            "workingDir": "/workspace",
            "volumeMounts": [{"name": "provision-workdir", "mountPath": "/workspace"}],
        }
    ]
    assert {v["name"] for v in pod["volumes"]} == {"provision-workdir-src", "provision-workdir"}
    assert out["submitted"] and job["spec"]["trainer"]["args"] == ["train.py", "--lr", "1"]


def test_the_cli_prints_both_objects_and_refuses_a_tree_too_big_for_a_config_map(
    cluster: Cluster, tmp_path: Path
) -> None:
    src = _code(tmp_path)
    printed = runner.invoke(
        app, ["launch", STACK, "--mock", "--k8s", "--workdir", str(src), "--print", "--", "train.py"]
    )
    assert printed.exit_code == 0, printed.output
    assert [d["kind"] for d in yaml.safe_load_all(printed.stdout) if d] == ["ConfigMap", "TrainJob"]
    as_json = runner.invoke(app, ["k8s-launch", STACK, "--mock", "--json", "--workdir", str(src), "--", "train.py"])
    assert json.loads(as_json.stdout)["objects"][0].startswith("ConfigMap/")
    (src / "weights.bin").write_bytes(os.urandom(800 * 1024))  # incompressible, not ignored
    big = runner.invoke(app, ["k8s-launch", STACK, "--mock", "--workdir", str(src), "--", "train.py"])
    assert big.exit_code == 2, big.output
    text = " ".join(big.output.split())
    assert "over the 700 KiB a ConfigMap can carry" in text and "--image" in text and "Traceback" not in big.output
