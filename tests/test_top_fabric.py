"""``provision top``: the fabric's byte counters per node (EFA hw_counters, InfiniBand port counters) and the job's
progress (state, restarts, last log line)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from test_jobs_mock import _detach, _wait, cluster, runner  # noqa: F401  # the 2-node mock fixture

from provision.cli.app import app
from provision.ops.top import FABRIC_SCRIPT, add_rates, parse_fabric, rows


def _sysfs(root: Path) -> None:
    efa = root / "sys/class/infiniband/rdmap0s0/ports/1/hw_counters"
    efa.mkdir(parents=True)
    (efa / "rx_bytes").write_text("1000\n")
    (efa / "tx_bytes").write_text("3000\n")
    ib = root / "sys/class/infiniband/mlx5_0/ports/1/counters"
    ib.mkdir(parents=True)
    (ib / "port_rcv_data").write_text("250\n")  # octets divided by 4
    (ib / "port_xmit_data").write_text("500\n")


def test_the_node_script_reads_efa_bytes_and_infiniband_words(tmp_path: Path) -> None:
    _sysfs(tmp_path)
    out = subprocess.run(
        ["bash", "-c", FABRIC_SCRIPT],
        env={"PROVISION_ROOT": str(tmp_path), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert sorted(out.splitlines()) == ["FABRIC mlx5_0/1 1000 2000", "FABRIC rdmap0s0/1 1000 3000"]
    assert parse_fabric(out) == {"ports": 2, "rx_bytes": 2000, "tx_bytes": 5000}
    assert parse_fabric("0, 1, 2, 3, 4, 5\n") is None  # no counters (TCPX, or no RDMA device)


def test_two_samples_give_rates_and_the_row_shows_them() -> None:
    node = {"rank": 0, "gpus": 0, "util_pct": None, "mem_used_gib": None, "mem_total_gib": None}
    node |= {"power_w": None, "temp_max_c": None}
    first = {"cluster": "c", "time": 100.0, "nodes": [{**node, "fabric": {"ports": 1, "rx_bytes": 0, "tx_bytes": 0}}]}
    second = {
        "cluster": "c",
        "time": 102.0,
        "nodes": [{**node, "fabric": {"ports": 1, "rx_bytes": 50 * 10**9, "tx_bytes": 25 * 10**9}}],
    }
    add_rates(second, first)
    assert (second["nodes"][0]["fabric"]["rx_gbps"], second["nodes"][0]["fabric"]["tx_gbps"]) == (200.0, 100.0)
    assert rows(second)[0][-1] == "200/100 Gb/s"
    assert rows(first)[0][-1] == "0.0/0.0 GB"


def test_top_shows_each_node_fabric_counters_and_the_job_last_line(cluster: str) -> None:  # noqa: F811
    job_id = _detach(cluster, "--cmd", "--", "echo step 1; echo 'step 2 loss=3.1'")
    _wait(cluster, job_id, {"succeeded", "failed"})
    doc = json.loads(runner.invoke(app, ["top", cluster, "--mock", "--json"]).stdout)
    assert all(n["fabric"] and n["fabric"]["ports"] > 0 and n["fabric"]["rx_bytes"] > 0 for n in doc["nodes"])
    assert doc["job"]["last_line"] == "step 2 loss=3.1" and doc["job"]["restarts"] == 0
    screen = runner.invoke(app, ["top", cluster, "--mock", "--once"], env={"COLUMNS": "80"})
    assert "fabric rx/tx" in screen.stdout and "last: step 2 loss=3.1" in screen.stdout
    assert max(len(line) for line in screen.stdout.splitlines()) <= 80
