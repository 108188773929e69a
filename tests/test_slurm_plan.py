"""Slurm's configuration rendered from a cluster plan (provision/planning/slurm.py) and the spec's
``scheduler: slurm`` rules: node names in rank order, 8 GPUs per node, the instance type as a feature,
one block (or leaf switch) per placement island."""

from __future__ import annotations

import re
from typing import Any

import pytest
from conftest import MINIMAL_SPEC

from provision.clouds.base import plan_spec
from provision.planning.slurm import (
    NodeGroup,
    SlurmLayout,
    SlurmNode,
    hostlist,
    layout_from_plan,
    render_all,
    topology_kind,
)
from provision.spec.errors import SpecError
from provision.spec.models import ClusterSpec

AZURE_256: dict[str, Any] = {
    "name": "az256",
    "cloud": "azure",
    "region": "eastus",
    "zone": "1",
    "gpu": "H100",
    "nodes": 256,
    "instance_type": "Standard_ND96isr_H100_v5",
    "access": MINIMAL_SPEC["access"],
    "azure": {"split_islands": True},
}


def _conf_nodes(conf: str) -> dict[str, str]:
    return {m.group(1): line for line in conf.splitlines() if (m := re.match(r"NodeName=(\S+) ", line))}


def _expand(hosts: str) -> list[str]:
    out = []
    for part in re.findall(r"[^,\[]+(?:\[[^\]]*\])?", hosts):
        m = re.fullmatch(r"(.*)\[(\d+)-(\d+)\]", part)
        out += [f"{m.group(1)}{i}" for i in range(int(m.group(2)), int(m.group(3)) + 1)] if m else [part]
    return out


def test_three_azure_islands_become_three_blocks_of_the_planned_nodes() -> None:
    plan = plan_spec(ClusterSpec.model_validate(AZURE_256))
    assert plan.islands == (86, 85, 85)
    layout = layout_from_plan(
        plan, slurm_version="23.11.4", node_addrs=[f"10.0.{i // 250}.{i % 250}" for i in range(256)]
    )
    files = render_all(layout)
    nodes = _conf_nodes(files["slurm.conf"])
    assert list(nodes) == [f"az256-{r}" for r in range(256)]
    assert all("Gres=gpu:h100:8 " in line for line in nodes.values())
    assert "Feature=Standard_ND96isr_H100_v5,h100,infiniband" in nodes["az256-0"]
    assert "NodeAddr=10.0.1.5 " in nodes["az256-255"]
    assert "TopologyPlugin=topology/block" in files["slurm.conf"]
    blocks = [line for line in files["topology.conf"].splitlines() if line.startswith("BlockName=")]
    members = [_expand(b.split("Nodes=")[1]) for b in blocks]
    assert [len(m) for m in members] == [86, 85, 85]
    assert members[1][0] == "az256-86" and members[2][-1] == "az256-255"
    assert files["gres.conf"].splitlines()[-1] == "NodeName=az256-[0-255] Name=gpu Type=h100 File=/dev/nvidia[0-7]"
    assert "PartitionName=gpu Nodes=az256-[0-255] Default=YES" in files["slurm.conf"]


def test_before_slurm_23_11_the_islands_are_leaf_switches_under_one_top() -> None:
    plan = plan_spec(ClusterSpec.model_validate(AZURE_256))
    topo = render_all(layout_from_plan(plan, slurm_version="22.05.8"))["topology.conf"].splitlines()
    assert topo[1:] == [
        "SwitchName=island0 Nodes=az256-[0-85]",
        "SwitchName=island1 Nodes=az256-[86-170]",
        "SwitchName=island2 Nodes=az256-[171-255]",
        "SwitchName=top Switches=island[0-2]",
    ]


def test_one_island_aws_plan_is_one_switch_and_memory_leaves_room_for_the_os() -> None:
    plan = plan_spec(ClusterSpec.model_validate({**MINIMAL_SPEC, "nodes": 16}))
    files = render_all(layout_from_plan(plan, slurm_version="22.05.8"))
    assert files["topology.conf"].splitlines()[1:] == ["SwitchName=island0 Nodes=t1-[0-15]"]
    node = _conf_nodes(files["slurm.conf"])["t1-0"]
    memory = int(re.search(r"RealMemory=(\d+)", node).group(1))  # type: ignore[union-attr]
    assert 0 < memory < plan.offer.memory_gib * 1024
    assert f"CPUs={plan.offer.vcpus} " in node and "Feature=p5.48xlarge," in node


def test_hostlist_compresses_runs_and_keeps_the_rest() -> None:
    assert hostlist(["a-0", "a-1", "a-2", "a-4", "b", "c-07", "c-08"]) == "a-[0-2],a-4,b,c-[07-08]"


def test_islands_must_add_up() -> None:
    group = NodeGroup("gpu", (SlurmNode("x-0"), SlurmNode("x-1")), 8, None, 8, 1024, islands=(3,))
    with pytest.raises(ValueError, match="do not add up"):
        render_all(SlurmLayout("x", SlurmNode("c"), (group,)))


def test_block_is_refused_on_a_slurm_without_it() -> None:
    assert topology_kind("auto", "22.05.8") == "tree"
    assert topology_kind("auto", "24.05.1") == "block"
    with pytest.raises(ValueError, match="23.11"):
        topology_kind("block", "22.05.8")


def test_slurm_options_need_kind_slurm_and_clouds_without_a_controller_refuse_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(ValueError, match="scheduler.slurm applies to kind slurm only"):
        ClusterSpec.model_validate({**MINIMAL_SPEC, "scheduler": {"slurm": {"accounting": True}}})
    spec = ClusterSpec.model_validate({**MINIMAL_SPEC, "scheduler": {"kind": "slurm", "slurm": {"partition": "h100"}}})
    assert spec.scheduler.slurm is not None and spec.scheduler.slurm.partition == "h100"
    assert plan_spec(spec).extra.slurm is not None  # AWS builds the controller (clouds/aws/slurm.py)
    from provision.clouds.aws.adapter import AwsAdapter

    monkeypatch.setattr(AwsAdapter, "slurm_controller", False)  # a cloud whose build has no controller
    with pytest.raises(SpecError) as err:
        plan_spec(spec)
    assert any(p.path == "scheduler.kind" and "Slurm controller" in p.rule for p in err.value.problems)


def test_pins_come_from_compat_with_sources_and_block_follows_the_pin() -> None:
    from provision.planning.images import compat_rules
    from provision.planning.slurm import BLOCK_MIN_VERSION, parse_version, slurm_pins

    jammy = slurm_pins("ubuntu-22.04")
    assert jammy.slurm.startswith("21.08") and all(s.startswith("https://") for s in jammy.sources)
    assert topology_kind("auto", jammy.slurm) == "tree"
    assert topology_kind("auto", slurm_pins("ubuntu-24.04").slurm) == "block"
    assert parse_version(compat_rules()["slurm"]["topology_block_min_slurm"]) == BLOCK_MIN_VERSION
    with pytest.raises(ValueError, match="no Slurm pin for 'rocky-9'"):
        slurm_pins("rocky-9")


def test_the_ci_machine_runs_the_pinned_debian_slurm() -> None:
    import shutil
    import subprocess

    from provision.planning.slurm import slurm_pins

    slurmd = shutil.which("slurmd") or shutil.which("slurmd", path="/usr/sbin")
    if slurmd is None:
        pytest.skip("no Slurm installed here (.ci/run installs Debian's slurm-wlm)")
    out = subprocess.run([slurmd, "-V"], capture_output=True, text=True, check=True).stdout.split()
    assert out[1] == slurm_pins("debian-12").slurm


def test_nccl_test_on_a_slurm_cluster_is_srun_of_one_task_per_gpu_on_the_chosen_nodes() -> None:
    from provision.ops.nccl import allreduce_command
    from provision.spec.models import SchedulerSpec

    plan = plan_spec(ClusterSpec.model_validate({**MINIMAL_SPEC, "nodes": 4}))
    hosts = ["10.0.0.10", "10.0.0.11", "10.0.0.12", "10.0.0.13"]
    assert "mpirun" in allreduce_command(plan, hosts)  # plain VMs: unchanged
    slurm = plan.model_copy(update={"spec": plan.spec.model_copy(update={"scheduler": SchedulerSpec(kind="slurm")})})
    line = allreduce_command(slurm, hosts, [hosts[1], hosts[2]])
    assert "mpirun" not in line
    assert "srun '--nodelist=t1-[1-2]' --nodes=2 --ntasks-per-node=8 --gpus-per-node=8 --mpi=pmix" in line
    assert line.rstrip().endswith("all_reduce_perf -b 512M -e 8G -f 2 -g 1")
    assert "NCCL_DEBUG=INFO" in line and '. "${PROVISION_ENV_FILE:-/etc/provision/env}"' in line
