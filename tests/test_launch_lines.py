"""Launch helpers: each node's /etc/provision/env and the launcher lines per fabric (pure)."""

from __future__ import annotations

import shlex
import subprocess

import pytest
from conftest import shipped_preview

from provision.planning.launch import (
    LAUNCHERS,
    ClusterFacts,
    export_lines,
    launch_argv,
    launch_line,
    node_env,
    render_env_file,
)

EFA = ClusterFacts(
    "t", ("10.0.0.5", "10.0.0.6", "10.0.0.7"), 8, "efa", {"FI_PROVIDER": "efa", "NCCL_BUFFSIZE": "8388608"}
)


def test_node_env_carries_rendezvous_sizes_and_fabric() -> None:
    env = node_env(EFA, 2)
    assert env["MASTER_ADDR"] == "10.0.0.5" and env["MASTER_PORT"] == "29500"
    assert (env["NODE_RANK"], env["NNODES"], env["NPROC_PER_NODE"], env["WORLD_SIZE"]) == ("2", "3", "8", "24")
    assert env["PROVISION_HOSTFILE"] == "/etc/provision/hostfile"
    assert env["PROVISION_NODE_IPS"] == "10.0.0.5,10.0.0.6,10.0.0.7"
    assert env["FI_PROVIDER"] == "efa"
    with pytest.raises(IndexError):
        node_env(EFA, 3)


def test_env_file_is_sourceable_and_keeps_tcpx_bindings_intact(tmp_path) -> None:
    tcpx = {
        "NCCL_GPUDIRECTTCPX_TX_BINDINGS": "enp6s0:8-21,112-125;enp12s0:8-21,112-125;",
        "NCCL_SOCKET_IFNAME": "^lo,docker",
    }
    facts = ClusterFacts("g", ("a.internal", "b.internal"), 8, "tcpx", tcpx)
    path = tmp_path / "env"
    path.write_text(render_env_file(node_env(facts, 1)))
    out = subprocess.run(
        ["bash", "-c", f"set -a; . {shlex.quote(str(path))}; set +a; env"], capture_output=True, text=True, check=True
    ).stdout
    seen = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    assert seen["NCCL_GPUDIRECTTCPX_TX_BINDINGS"] == tcpx["NCCL_GPUDIRECTTCPX_TX_BINDINGS"]
    assert (
        seen["NCCL_SOCKET_IFNAME"] == "^lo,docker" and seen["NODE_RANK"] == "1" and seen["MASTER_ADDR"] == "a.internal"
    )


def test_env_file_refuses_line_breaks() -> None:
    with pytest.raises(ValueError, match="line break"):
        render_env_file({"X": "a\nrm -rf /"})


def test_export_lines_are_shell_ready() -> None:
    text = export_lines({"NCCL_X": "a;b", "FI_PROVIDER": "efa"})
    assert text == "export FI_PROVIDER=efa\nexport NCCL_X='a;b'\n"


def test_torchrun_is_a_static_rendezvous_on_the_head_node() -> None:
    argv = launch_argv("torchrun", EFA, "train.py", ["--lr", "3e-4"])
    assert argv[:6] == [
        "torchrun",
        "--nnodes=$NNODES",
        "--nproc-per-node=$NPROC_PER_NODE",
        "--node-rank=$NODE_RANK",
        "--master-addr=$MASTER_ADDR",
        "--master-port=$MASTER_PORT",
    ]
    assert argv[-3:] == ["train.py", "--lr", "3e-4"]


def test_mpirun_forwards_the_fabric_env_and_uses_efa_settings() -> None:
    argv = launch_argv("mpirun", EFA, "all_reduce_perf", ["-b", "8"])
    forwarded = {argv[i + 1] for i, w in enumerate(argv) if w == "-x"}
    assert {"FI_PROVIDER", "NCCL_BUFFSIZE", "MASTER_ADDR", "LD_LIBRARY_PATH"} <= forwarded
    assert "pml" in argv and argv[argv.index("pml") + 1] == "^cm,ucx"
    ib = ClusterFacts("z", ("10.0.0.4",), 8, "infiniband", {"NCCL_IB_PCI_RELAXED_ORDERING": "1"})
    ib_argv = launch_argv("mpirun", ib, "x")
    assert "UCX_NET_DEVICES=mlx5_ib0:1" in ib_argv and "UCX_TLS=rc" in ib_argv


def test_deepspeed_uses_the_hostfile_and_pdsh() -> None:
    argv = launch_argv("deepspeed", EFA, "train.py")
    assert "--hostfile=$PROVISION_HOSTFILE" in argv and "--launcher=pdsh" in argv


def test_launch_line_quotes_user_words_but_keeps_env_references() -> None:
    line = launch_line("accelerate", EFA, "train.py", ["--name", "a b; rm -rf /"])
    assert "--num_processes=$WORLD_SIZE" in line and "'a b; rm -rf /'" in line
    assert line.startswith('set -a && . "${PROVISION_ENV_FILE:-/etc/provision/env}" && set +a && accelerate launch')


def test_unknown_launcher_is_refused() -> None:
    with pytest.raises(ValueError, match="not a launcher"):
        launch_argv("srun", EFA, "x")


@pytest.mark.parametrize("stack", ["aws-p5-16", "gcp-a3-64"])
def test_outputs_carry_launch_lines_and_the_spec(stack: str) -> None:
    run = shipped_preview(stack, stack=stack)
    launch = run.outputs["launch"]
    assert set(launch) == set(LAUNCHERS)
    assert launch["torchrun"]["runs_on"] == "all" and launch["mpirun"]["runs_on"] == "head"
    assert run.outputs["spec"]["name"] == run.plan.name
