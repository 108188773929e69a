"""GCP VM findings of the 2026-12-01b reviews: the gIB plugin reaches every process, not only login shells."""

from __future__ import annotations

from pathlib import Path

from nodekit import plan_of, run_bootstrap

from provision.ops.nodes import mock_user_data


def test_a3_ultra_puts_the_gib_plugin_on_the_loader_path_of_every_process(tmp_path: Path) -> None:
    plan = plan_of("gcp-a3ultra-64")
    assert plan.nccl_env["NCCL_NET"] == "gIB"
    run = run_bootstrap(tmp_path, mock_user_data(plan))
    assert run["state"]["steps"]["rdma"]["status"] == "ok", run["output"]
    conf = run["root"] / "etc/ld.so.conf.d/provision-gib.conf"
    assert conf.read_text().split() == ["/usr/local/gib/lib64"]
    assert "ldconfig" in run["log"]


def test_the_gib_tuner_config_of_the_machine_type_is_in_every_process_environment() -> None:
    env = plan_of("gcp-a3ultra-64").nccl_env
    assert env["NCCL_TUNER_CONFIG_PATH"] == "/usr/local/gib/configs/tuner_config_a3u.txtpb"
