"""Launch lines on a cluster whose InfiniBand fabric is split into islands (Azure: one scale set each).

InfiniBand does not cross scale sets, so a whole-cluster line must run NCCL and MPI over TCP, and each island gets
its own full-speed ``mpirun`` line on its slice of the hostfile.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from conftest import shipped_preview

from provision.planning.launch import ClusterFacts, island_lines, launch_argv, launch_line

IB = {"NCCL_IB_PCI_RELAXED_ORDERING": "1"}


def test_the_256_node_stack_spans_islands_over_tcp_and_runs_each_island_over_infiniband() -> None:
    run = shipped_preview("azure-ndh100-256", stack="azure-ndh100-256")
    launch = run.outputs["launch"]
    assert [i["nodes"] for i in run.outputs["fabric"]["islands"]] == [86, 85, 85]
    mpirun = launch["mpirun"]["line"]
    assert "UCX_TLS=rc" not in mpirun and "mlx5_ib0" not in mpirun
    assert "-x UCX_TLS=tcp -x UCX_NET_DEVICES=eth0" in mpirun and "-x NCCL_IB_DISABLE=1" in mpirun
    for kind in ("torchrun", "accelerate", "deepspeed"):
        assert "&& NCCL_IB_DISABLE=1 " in launch[kind]["line"], kind
    islands = launch["islands"]
    assert [(i["first_rank"], i["nodes"]) for i in islands] == [(0, 86), (86, 85), (171, 85)]
    assert "sed -n '87,171p'" in islands[1]["line"] and "-np 680 " in islands[1]["line"]
    assert all("UCX_TLS=rc" in i["line"] and "NCCL_IB_DISABLE" not in i["line"] for i in islands)


def test_a_single_island_keeps_infiniband_and_has_no_island_lines() -> None:
    launch = shipped_preview("azure-ndh100-64", stack="azure-ndh100-64").outputs["launch"]
    assert "UCX_TLS=rc" in launch["mpirun"]["line"] and "NCCL_IB_DISABLE" not in launch["torchrun"]["line"]
    assert "islands" not in launch


def test_facts_from_stored_outputs_know_the_islands() -> None:
    outputs = {
        "cluster": "c",
        "hosts": ["h0", "h1", "h2"],
        "gpus": 24,
        "fabric": {"kind": "infiniband", "islands": [{"first_rank": 0, "nodes": 2}, {"first_rank": 2, "nodes": 1}]},
        "nccl_env": IB,
    }
    facts = ClusterFacts.from_outputs(outputs)
    assert facts.islands == (2, 1) and facts.split_fabric
    assert "UCX_TLS=tcp" in launch_argv("mpirun", facts, "x")
    # A pair of nodes (provision nccl-test measures inside one island) keeps InfiniBand.
    assert "UCX_TLS=rc" in launch_argv("mpirun", facts, "x", hosts=["h0", "h1"])


def test_an_island_line_starts_ranks_only_on_its_own_nodes(tmp_path: Path) -> None:
    facts = ClusterFacts("c", ("h0", "h1", "h2", "h3", "h4"), 8, "infiniband", IB, islands=(3, 2))
    hostfile = tmp_path / "hostfile"
    hostfile.write_text("".join(f"h{i} slots=8\n" for i in range(5)))
    env = tmp_path / "env"
    env.write_text(f"PROVISION_HOSTFILE={hostfile}\nNPROC_PER_NODE=8\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "mpirun").write_text('#!/bin/bash\nprintf "%s\\n" "$*" >"$HOME/mpirun.args"\n')
    (bin_dir / "mpirun").chmod(0o755)
    line = island_lines(facts, "all_reduce_perf")[1]["line"]
    shell_env = {**os.environ, "HOME": str(tmp_path), "PROVISION_ENV_FILE": str(env)}
    shell_env["PATH"] = f"{bin_dir}:{shell_env['PATH']}"
    subprocess.run(["bash", "-c", line], env=shell_env, check=True)
    args = (tmp_path / "mpirun.args").read_text()
    assert args.startswith(f"-np 16 --hostfile {tmp_path}/.provision-island1-hostfile ")
    assert (tmp_path / ".provision-island1-hostfile").read_text() == "h3 slots=8\nh4 slots=8\n"
    assert launch_line("mpirun", facts, "x").count("NCCL_IB_DISABLE=1") == 1  # forwarded once, with -x
