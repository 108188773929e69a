"""GCP VM findings of the 2026-12-01b reviews: the gIB plugin reaches every process, not only login shells."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import preview, stack_spec
from nodekit import plan_of, run_bootstrap

from provision.clouds.gcp import storage
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


@pytest.mark.parametrize(
    ("stack", "kind"), [("gcp-a3ultra-64", "lustre"), ("gcp-a3-ci", "nfs"), ("gcp-a3high-16", "daos")]
)
def test_nodes_wait_for_the_filesystem_address_the_program_publishes(stack: str, kind: str, tmp_path: Path) -> None:
    result = preview(stack_spec(stack))
    (item,) = result.of_type("gcp:compute/projectMetadataItem:ProjectMetadataItem")
    assert item.inputs["key"] == storage.shared_source_key(result.plan)
    template = result.one("gcp:compute/regionInstanceTemplate:RegionInstanceTemplate").inputs["metadata"]["user-data"]
    assert item.inputs["value"] not in template  # the template holds no filesystem output
    lookup = storage._lookup(result.plan, kind)
    assert all(line in template for line in lookup.splitlines())  # the storage-mount step starts with it
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in {"curl": 'cat "$ANSWER"', "sleep": "exit 0"}.items():
        (bin_dir / name).write_text(f"#!/bin/bash\n{body}\n")
        (bin_dir / name).chmod(0o755)
    script = tmp_path / "lookup.sh"
    script.write_text('pv_log() { echo "$*" >&2; }\n' + lookup + '\nprintf "%s" "$src"\n')
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "ANSWER": str(tmp_path / "answer")}
    (tmp_path / "answer").write_text(item.inputs["value"])
    found = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert (found.returncode, found.stdout) == (0, item.inputs["value"])
    (tmp_path / "answer").write_text("10.0.0.1; reboot")  # not an address: never used, the step fails
    bad = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and "no filesystem address" in bad.stderr


def test_a_gke_stockout_is_a_capacity_error_that_failover_retries() -> None:
    from provision.clouds.failover import capacity_error
    from provision.spec.errors import CapacityError, QuotaError

    text = (
        "Error waiting for creating GKE NodePool: All cluster resources were brought up, but: Current errors: "
        "[GCE_STOCKOUT]: Instance 'gke-x-gpu-1' creation failed: The zone 'projects/p/zones/us-central1-a' does "
        "not have enough resources available to fulfill the request."
    )
    err = capacity_error(text, "node pool")
    assert isinstance(err, CapacityError) and not isinstance(err, QuotaError) and err.code == "GCE_STOCKOUT"
