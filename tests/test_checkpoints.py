"""Checkpoints under --mock: every rank gets one checkpoint folder on the shared filesystem, ``run --save-checkpoint``
copies the newest entry into the folder the bucket link exports, and ``down`` warns about recent files it deletes.
Mocked nodes are local folders (``mock-nodes/node-R``, the mount's stand-in ``mock-nodes/shared``)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import run_cli as cli

from tests.conftest import stack_spec

LINK = {"uri": "s3://my-train-data/llm", "import_path": "/data", "export_path": "/data/out"}


@pytest.fixture(autouse=True)
def _own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROVISION_HOME", str(tmp_path / "home"))


def cluster_file(tmp_path: Path, name: str, **shared: Any) -> str:
    data = stack_spec("aws-p5-ci").model_dump(mode="json", exclude_none=True)
    data["name"] = name
    data["storage"]["shared"].update(shared)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def up(tmp_path: Path, name: str, **shared: Any) -> Any:
    from provision.ops.cluster import Cluster

    assert cli("up", cluster_file(tmp_path, name, **shared), "--mock", "--yes")[0] == 0
    return Cluster(name, mock=True, display="none")


def test_launch_gives_every_rank_the_shared_checkpoint_folder(tmp_path: Path) -> None:
    from provision.ops.jobs.local import shared_dir

    cluster = up(tmp_path, "ck-launch")
    line = 'echo "$PROVISION_CHECKPOINT_DIR"; echo "$NODE_RANK" > "$PROVISION_CHECKPOINT_DIR/rank-$NODE_RANK"'
    code, out = cli("launch", "ck-launch", "--mock", "--cmd", "--json", "--", "bash", "-c", line)
    assert code == 0, out
    folder = shared_dir(cluster) / "checkpoints" / "ck-launch"
    seen = {n["stdout"].strip() for n in json.loads(out)["nodes"]}
    assert seen == {str(folder)}
    assert sorted(p.name for p in folder.iterdir()) == ["rank-0", "rank-1"]


def test_a_detached_job_resumes_from_the_shared_checkpoint_folder(tmp_path: Path) -> None:
    from provision.ops import jobs
    from provision.ops.checkpoints import checkpoint_dir

    cluster = up(tmp_path, "ck-jobs")
    folder = checkpoint_dir(cluster)
    assert folder is not None
    (Path(folder) / "step-7").mkdir(parents=True)
    say = 'echo "dir=$PROVISION_CHECKPOINT_DIR from=$PROVISION_RESUME_FROM"'
    spec = jobs.submit(cluster, "cmd", ["bash", "-c", say])
    assert spec.checkpoint_dir == folder
    lines: list[str] = []
    jobs.logs(cluster, spec.id, on_line=lambda _rank, text: lines.append(text), follow=True)
    assert f"dir={folder} from={folder}/step-7" in "\n".join(lines)


def test_save_checkpoint_copies_the_newest_into_the_exported_folder(tmp_path: Path) -> None:
    from provision.ops.checkpoint_nodes import save_checkpoint
    from provision.ops.checkpoints import checkpoint_dir
    from provision.ops.jobs.local import shared_dir

    cluster = up(tmp_path, "ck-save", object_store=LINK)
    folder = Path(str(checkpoint_dir(cluster)))
    for step, age in (("step-1", 600), ("step-2", 0)):
        (folder / step).mkdir(parents=True)
        (folder / step / "model.pt").write_text(step)
        when = time.time() - age
        os.utime(folder / step, (when, when))
    saved = save_checkpoint(cluster)
    copy = shared_dir(cluster) / "data" / "out" / "checkpoints" / "ck-save" / "step-2"
    assert saved == {"saved": str(copy), "uri": "s3://my-train-data/llm/out/checkpoints/ck-save/step-2", "error": None}
    assert (copy / "model.pt").read_text() == "step-2"


def test_save_checkpoint_with_nothing_to_save_says_so(tmp_path: Path) -> None:
    from provision.ops.checkpoint_nodes import save_checkpoint

    saved = save_checkpoint(up(tmp_path, "ck-empty", object_store=LINK))
    assert saved["saved"] is None and "no checkpoint in" in saved["error"]


def test_run_saves_the_checkpoint_before_the_teardown(tmp_path: Path) -> None:
    spec = cluster_file(tmp_path, "ck-run", object_store=LINK)
    write = 'mkdir -p "$PROVISION_CHECKPOINT_DIR/step-9" && echo w > "$PROVISION_CHECKPOINT_DIR/step-9/model.pt"'
    code, out = cli(
        "run", spec, "--mock", "--max-usd", "500", "--ttl", "1h", "--on-cluster", "--nodes", "head",
        "--save-checkpoint", "--", "bash", "-c", write,
    )  # fmt: skip
    assert code == 0, out
    assert "exported to s3://my-train-data/llm/out/checkpoints/" in out and "/step-9" in out
    assert "the cluster was torn down" in out


def test_run_save_checkpoint_refused_before_anything_exists(tmp_path: Path) -> None:
    code, out = cli(
        "run", cluster_file(tmp_path, "ck-nowhere"), "--mock", "--max-usd", "500", "--ttl", "1h",
        "--save-checkpoint", "--", "true",
    )  # fmt: skip
    assert code == 2, out
    assert "storage.shared.object_store" in out and "storage.shared.volume" in out
    no_export = cluster_file(tmp_path, "ck-noexport", object_store={"uri": "s3://my-train-data"})
    code, out = cli("run", no_export, "--mock", "--max-usd", "500", "--ttl", "1h", "--save-checkpoint", "--", "true")
    assert code == 2 and "export_path" in out, out
    assert json.loads(cli("list", "--mock", "--json")[1])["clusters"] == []


def down_json(name: str) -> dict[str, Any]:
    code, out = cli("down", name, "--mock", "--yes", "--json")
    assert code == 0, out
    return dict(json.loads(out))


def test_down_warns_about_recent_files_on_a_filesystem_it_deletes(tmp_path: Path) -> None:
    from provision.ops.checkpoints import checkpoint_dir

    cluster = up(tmp_path, "ck-down")
    folder = Path(str(checkpoint_dir(cluster)))
    (folder / "step-3").mkdir(parents=True)
    (folder / "step-3" / "model.pt").write_text("w")
    [warning] = down_json("ck-down")["warnings"]
    assert "1 file(s) written in the last 60 minutes" in warning
    assert str(folder / "step-3" / "model.pt") in warning
    assert "storage.shared.volume" in warning and "retain: true" in warning


def test_down_text_prints_the_warning(tmp_path: Path) -> None:
    from provision.ops.jobs.local import shared_dir

    cluster = up(tmp_path, "ck-text")
    (shared_dir(cluster) / "notes.txt").write_text("w")
    code, out = cli("down", "ck-text", "--mock", "--yes")
    assert code == 0 and "warning:" in out and "notes.txt" in out, out


def test_down_is_quiet_for_old_files_job_records_and_the_exported_folder(tmp_path: Path) -> None:
    from provision.ops.jobs.local import shared_dir

    cluster = up(tmp_path, "ck-quiet", object_store=LINK)
    root = shared_dir(cluster)
    old = root / "old.pt"
    old.write_text("w")
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    for kept in (root / "provision" / "jobs" / "j1" / "rank-0.log", root / "data" / "out" / "model.pt"):
        kept.parent.mkdir(parents=True)
        kept.write_text("w")
    assert down_json("ck-quiet")["warnings"] == []


def test_down_is_quiet_when_the_filesystem_is_kept(tmp_path: Path) -> None:
    from provision.ops.jobs.local import shared_dir

    cluster = up(tmp_path, "ck-kept", retain=True)
    (shared_dir(cluster) / "model.pt").write_text("w")
    assert down_json("ck-kept")["warnings"] == []
