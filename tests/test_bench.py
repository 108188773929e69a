"""``provision bench``: a training microbenchmark through the jobs layer, measured against the planner.

Bar: under --mock a 2-node cluster's bench prints measured vs planned MFU and the re-computed days and cost, and
names an injected slow node; ``size --mfu-from`` changes time and cost by exactly the measured ratio; the node
script runs for real on the CPU with a tiny model where PyTorch is importable.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import MINIMAL_SPEC, isolated_home
from typer.testing import CliRunner

from provision.cli.app import app

runner = CliRunner()
SCRIPT = Path(__file__).resolve().parents[1] / "images" / "bench" / "provision_bench.py"
PREFIX = "PROVISION_BENCH "


def _torch() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.fixture
def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(tmp_path)
    isolated_home(tmp_path, monkeypatch)
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump({**MINIMAL_SPEC, "name": "bench2"}), encoding="utf-8")
    up = runner.invoke(app, ["up", str(path), "--mock", "--yes"])
    assert up.exit_code == 0, up.output
    return "bench2"


def test_mock_bench_names_the_slow_node_and_recomputes_days_and_cost(cluster: str) -> None:
    out = runner.invoke(app, ["bench", cluster, "--mock", "--params", "7B", "--inject", "1:slow", "--json"])
    assert out.exit_code == 1, out.output  # a finding (the slow node) fails the bench
    doc = json.loads(out.stdout)
    m, p, r = doc["measured"], doc["planned"], doc["recomputed"]
    assert m["gpus"] == 16 and p["gpus"] == 16 and len(doc["ranks"]) == 2
    # The fake reports the plan's MFU, halved on node 1; the step waits for the slowest node.
    assert m["mfu"] == pytest.approx(p["mfu"] / 2, rel=1e-9)
    assert doc["mfu_ratio"] == pytest.approx(0.5, rel=1e-9)
    assert r["days"] == pytest.approx(p["days"] * 2, rel=1e-9)
    assert r["cost_usd"] == pytest.approx(p["cost_usd"] * 2, rel=1e-9)
    assert p["mfu_range"][0] < p["mfu"] < p["mfu_range"][1]
    assert any(f.startswith("node 1 (bench2-1") and "slow" in f for f in doc["findings"])
    assert not any(f.startswith("node 0") for f in doc["findings"])
    cpu = m["cpu_check"]
    if _torch():
        assert cpu["device"] == "cpu" and cpu["model_params"] > 0 and cpu["tokens_per_s"] > 0
    else:
        assert "PyTorch is not importable" in cpu["skipped"]
    # Every hint cites a source.
    assert doc["hints"] and all(h["source"] for h in doc["hints"])
    assert any("FP8" in h["hint"] for h in doc["hints"])  # H100 has FP8 tensor cores
    # Recorded with the cluster: status shows the last bench, in text and JSON.
    status = runner.invoke(app, ["status", cluster, "--mock", "--json"])
    assert json.loads(status.stdout)["bench"]["job_id"] == doc["job_id"]
    text = runner.invoke(app, ["status", cluster, "--mock"])
    assert "last bench" in text.stdout and doc["job_id"] in text.stdout
    # A new cluster of the same name starts without it.
    assert runner.invoke(app, ["down", cluster, "--mock", "--yes"]).exit_code == 0
    assert runner.invoke(app, ["up", "cluster.yaml", "--mock", "--yes"]).exit_code == 0
    assert json.loads(runner.invoke(app, ["status", cluster, "--mock", "--json"]).stdout)["bench"] is None


def test_mock_bench_text_report_and_memory_pressure(cluster: str) -> None:
    out = runner.invoke(
        app, ["bench", cluster, "--mock", "--params", "7B", "--inject", "0:memory", "--inject", "1:memory"]
    )
    assert out.exit_code == 1, out.output
    text = out.stdout
    assert "measured:" in text and "planned:  MFU" in text and "at the measured MFU" in text
    assert "likely memory pressure" not in text  # 0.8 x planned stays inside the planner's range here
    assert "peak memory 77.6 GiB" in text  # 97% of the H100's 80 GiB
    assert "node 0 (bench2-0) peaked at 77.6 GiB of 80 GiB" in text and "node 1 (bench2-1) peaked" in text
    assert "mocked nodes: figures from images/fake-node/bin/provision-bench" in text


def _report(cluster_name: str, mfus: list[float], memory_share: float = 0.2, env: Any = None) -> Any:
    from provision.ops.bench import BenchRequest, build_report, model_shape, planned
    from provision.ops.cluster import Cluster

    c = Cluster(cluster_name, mock=True, display="none")
    req = BenchRequest(params="7B")
    sizing, p = planned(c, req, 7e9)
    ranks = [
        {
            "rank": 8 * i,
            "node_rank": i,
            "node": f"n{i}",
            "gpus": 8,
            "strategy": "fsdp",
            "mfu": p["mfu"] * f,
            "tokens_per_s": 1000.0 * f,
            "achieved_tflops": 100.0 * f,
            "comm_share": 0.1,
            "peak_memory_bytes": memory_share * p["memory_capacity_bytes"],
            "step_s": [1.0],
            "fabric_env": dict(c.nccl_env) if env is None else env,
        }
        for i, f in enumerate(mfus)
    ]
    return build_report(c, req, "job", ranks, p, sizing, model_shape(7e9))


def test_below_the_range_names_the_likely_cause(cluster: str) -> None:
    fine = _report(cluster, [1.0, 1.0])
    assert fine.findings == []
    (nccl,) = [h["hint"] for h in fine.hints if "NCCL settings" in h["hint"]]
    assert "every rank ran with them (2 checked)" in nccl
    unset = _report(cluster, [1.0, 1.0], env={"FI_PROVIDER": "sockets"})
    (nccl,) = [h["hint"] for h in unset.hints if "NCCL settings" in h["hint"]]
    assert "FI_PROVIDER=efa planned, sockets on node 0" in nccl and "NCCL_BUFFSIZE=8388608 planned, unset" in nccl
    memory = _report(cluster, [0.3, 0.3], memory_share=0.95)
    assert "likely memory pressure" in memory.findings[-1] and "--checkpointing on" in memory.findings[-1]
    # A failed NCCL check recorded for the cluster points at the fabric first.
    from provision.engine.mockstate import MockStore

    store = MockStore()
    state = store.load(cluster)
    assert state is not None
    state.outputs["fabric_manifest"] = {
        "measured": {"ok": False, "all_reduce_busbw_gbps": 20.0, "floor_gbps": 100.0, "transports": {"failures": []}}
    }
    store.save(state)
    fabric = _report(cluster, [0.3, 0.3], memory_share=0.95)
    assert "likely the fabric transport" in fabric.findings[-1] and "20.0 GB/s below the 100.0" in fabric.findings[-1]


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["--layout", "2x1x8"], "--layout"),
        (["--layout", "1x1x4"], "--layout"),
        (["--inject", "5:slow", "--mock"], "--inject"),
        (["--inject", "0:fast", "--mock"], "--inject"),
        (["--precision", "fp16", "--mock"], "--precision"),
        (["--params", "70B", "--mock"], "does not fit this cluster (16 H100 GPUs)"),
    ],
)
def test_bad_bench_input_is_an_error_naming_the_option(cluster: str, args: list[str], flag: str) -> None:
    extra = [] if "--mock" in args else ["--mock"]
    params = [] if "--params" in args else ["--params", "7B"]
    out = runner.invoke(app, ["bench", cluster, *params, *extra, *args])
    assert out.exit_code == 2, out.output
    assert flag in out.output


def test_size_mfu_from_scales_time_and_cost_by_exactly_the_ratio(tmp_path: Path) -> None:
    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps({"mfu_ratio": 0.8, "planned": {"gpu": "H100"}}), encoding="utf-8")
    base = ["size", "--params", "7B", "--tokens", "140B", "--gpus", "16", "--json"]
    a = json.loads(runner.invoke(app, base).stdout)
    out = runner.invoke(app, [*base, "--mfu-from", str(bench)])
    assert out.exit_code == 0, out.output
    b = json.loads(out.stdout)
    assert b["compute"]["gpu_hours"] == pytest.approx(a["compute"]["gpu_hours"] / 0.8, rel=1e-12)
    assert b["cluster"]["wall_days"] == pytest.approx(a["cluster"]["wall_days"] / 0.8, rel=1e-12)
    priced = [(x, y) for x, y in zip(a["clouds"], b["clouds"], strict=True) if x["total_usd"] is not None]
    assert priced and all(y["total_usd"] == pytest.approx(x["total_usd"] / 0.8, rel=1e-12) for x, y in priced)
    assert "--mfu-from" in b["compute"]["mfu_basis"]
    # Errors name the option: another GPU, combined with --mfu, not a bench file.
    for extra in (["--gpu", "A100-80GB"], ["--mfu", "0.4"]):
        bad = runner.invoke(app, [*base, "--mfu-from", str(bench), *extra])
        assert bad.exit_code == 2 and "--mfu-from" in bad.output, bad.output
    (tmp_path / "x.json").write_text("{}", encoding="utf-8")
    bad = runner.invoke(app, [*base, "--mfu-from", str(tmp_path / "x.json")])
    assert bad.exit_code == 2 and "--mfu-from" in bad.output


def test_model_shape_is_the_planners() -> None:
    from provision.ops.bench import model_shape
    from provision.planning.sizing import size_training

    report = size_training("70B", "1T", gpus=64)
    shape = model_shape(70e9)
    assert shape["layers"] == report.memory.assumed_layers
    assert abs(shape["hidden"] - report.memory.assumed_hidden_size) < 128 and shape["hidden"] % 128 == 0
    assert shape["heads"] * 128 == shape["hidden"]


def _results(stdout: str) -> list[dict[str, Any]]:
    from provision.ops.bench import collect

    return collect([(0, line) for line in stdout.splitlines()])


def test_collect_reads_every_rank_even_when_two_share_a_line() -> None:
    a, b = json.dumps({"rank": 0, "mfu": 0.4}), json.dumps({"rank": 8, "mfu": 0.2})
    got = _results(f"noise\n{PREFIX}{a}{PREFIX}{b}\n{PREFIX}{{broken\n")
    assert [r["rank"] for r in got] == [0, 8] and got[1]["mfu"] == 0.2


TINY = ["--hidden", "64", "--layers", "2", "--heads", "4", "--seq-len", "32", "--warmup", "1", "--steps", "2"]


@pytest.mark.skipif(not _torch(), reason="PyTorch is not importable (pip install torch==2.13.0 for the CPU build)")
def test_the_benchmark_script_runs_for_real_on_the_cpu(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    one = subprocess.run(
        [sys.executable, str(SCRIPT), *TINY, "--device", "cpu"], capture_output=True, text=True, env=env
    )
    assert one.returncode == 0, one.stderr
    (r,) = _results(one.stdout)
    assert r["world_size"] == 1 and r["strategy"] == "single" and r["model_params"] > 12 * 2 * 64**2
    mean = sum(r["step_s"]) / len(r["step_s"])
    assert r["tokens_per_s"] == pytest.approx(32 / mean, rel=1e-3)  # step times are rounded to microseconds
    assert r["achieved_tflops"] == pytest.approx(6 * r["flops_params"] * r["tokens_per_s"] / 1e12)
    assert r["mfu"] is None and r["peak_memory_bytes"] > 0
    # Two ranks under the real torchrun (gloo): sharded (FSDP where it runs on the CPU, else DDP), with collectives.
    two = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc-per-node=2",
            str(SCRIPT),
            *TINY,
            "--device",
            "cpu",
            "--peak-tflops",
            "1",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert two.returncode == 0, two.stderr
    ranks = _results(two.stdout)
    assert sorted(x["rank"] for x in ranks) == [0, 1]
    assert all(x["world_size"] == 2 and x["strategy"] in ("fsdp", "ddp") and x["comm_s"] > 0 for x in ranks)
    assert all(x["mfu"] == pytest.approx(x["achieved_tflops"]) for x in ranks)


def test_the_real_nodes_line_writes_the_script_and_runs_it_under_torchrun(tmp_path: Path) -> None:
    from provision.ops.bench import BenchRequest, _script_line, model_shape
    from provision.planning.images import image_text

    stub = tmp_path / "bin"
    stub.mkdir()
    (stub / "torchrun").write_text('#!/bin/sh\nprintf "%s\\n" "$@" > "$HOME/argv"\n', encoding="utf-8")
    (stub / "torchrun").chmod(0o755)
    line = _script_line(model_shape(7e9), BenchRequest(params="7B", seq_len=2048), 7e9, 989.4)
    env = {
        "HOME": str(tmp_path),
        "PATH": f"{stub}:{os.environ['PATH']}",
        **{"NNODES": "2", "NPROC_PER_NODE": "8", "NODE_RANK": "1", "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500"},
    }
    done = subprocess.run(["bash", "-c", line], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    written = tmp_path / ".cache" / "provision" / "provision_bench.py"
    assert written.read_text(encoding="utf-8") == image_text("bench/provision_bench.py")
    argv = (tmp_path / "argv").read_text(encoding="utf-8").split()
    assert argv[:5] == [
        "--nnodes=2",
        "--nproc-per-node=8",
        "--node-rank=1",
        "--master-addr=10.0.0.1",
        "--master-port=29500",
    ]
    assert argv[5] == str(written) and "--seq-len=2048" in argv and "--peak-tflops=989.4" in argv
    assert f"--hidden={model_shape(7e9)['hidden']}" in argv


def test_fp8_is_refused_rather_than_measured_as_bf16() -> None:
    """The script is torch-only: an FP8 request must not come back as a bf16 figure labelled fp8."""
    from provision.ops import bench
    from provision.spec.errors import SpecError

    with pytest.raises(SpecError) as err:
        bench._check(bench.BenchRequest(params="7B", precision="fp8"), gpus=16, nodes=2, mock=True)
    assert any(p.path == "--precision" and "Transformer Engine" in p.rule for p in err.value.problems)


def test_a_cluster_recreated_within_the_same_second_starts_without_the_last_bench(
    cluster: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Creation times have one-second resolution: ``down`` then ``up`` inside one second gives the new cluster
    the old one's stamp, so ``down`` itself must drop the bench report (CI saw this race)."""
    from datetime import datetime, timezone

    import provision.engine.mockrun as mockrun
    from provision.engine.automation import stack_bench_path

    created = json.loads(runner.invoke(app, ["status", cluster, "--mock", "--json"]).stdout)["created_at"]
    # A bench recorded for this cluster, as `provision bench` writes it (the bench itself is tested above).
    record = {"cluster": cluster, "cluster_created_at": created, "job_id": "j1", "measured": {}, "planned": {}}
    stack_bench_path(cluster).write_text(json.dumps(record), encoding="utf-8")
    assert json.loads(runner.invoke(app, ["status", cluster, "--mock", "--json"]).stdout)["bench"]["job_id"] == "j1"
    frozen = datetime.strptime(created, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)

    class _Clock(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> datetime:  # type: ignore[override]
            return frozen

    monkeypatch.setattr(mockrun, "datetime", _Clock)
    assert runner.invoke(app, ["down", cluster, "--mock", "--yes"]).exit_code == 0
    assert runner.invoke(app, ["up", "cluster.yaml", "--mock", "--yes"]).exit_code == 0
    status = json.loads(runner.invoke(app, ["status", cluster, "--mock", "--json"]).stdout)
    assert status["created_at"] == created  # the same second, as in the race
    assert status["bench"] is None
