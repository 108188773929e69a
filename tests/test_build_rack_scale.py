"""Rack-scale systems in the self-build: a GB200 NVL72 is 18 compute trays of 4 GPUs joined into one 72-GPU NVLink
domain, bought and cabled as whole liquid-cooled racks at the rack's published power; and an accelerator the planner
knows but does not size (Cambricon MLU370) is named with the reason instead of called unknown (Ascend 910B is sized:
tests/test_ascend_build.py)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from provision.catalog import load_catalog
from provision.catalog.onprem import load_onprem
from provision.cli.app import app
from provision.planning.onprem import plan_build
from provision.planning.sizing import size_training
from provision.spec.errors import SpecError


@pytest.fixture(scope="module")
def nvl72():
    return next(s for s in load_onprem().servers if s.id == "nvidia-gb200-nvl72")


def test_the_nvl72_row_is_a_sourced_rack_scale_system(nvl72) -> None:
    assert (nvl72.accelerators, nvl72.rack_scale_units, nvl72.nvlink_domain_gpus) == (4, 18, 72)
    assert nvl72.accelerators * nvl72.rack_scale_units == nvl72.nvlink_domain_gpus
    assert nvl72.cooling == ("liquid",) and nvl72.rack_power_kw
    for field in ("rack_scale_units", "nvlink_domain_gpus", "rack_power_kw", "compute_nics", "power_max_kw"):
        assert nvl72.source_urls(field), field


def test_a_gb200_build_buys_whole_liquid_cooled_racks_at_the_racks_power(nvl72) -> None:
    b = plan_build(size_training("405B", "15T", gpu="GB200"))

    assert b.server.id == "nvidia-gb200-nvl72"
    assert b.decision.servers % 18 == 0 and b.decision.gpus == b.decision.servers * 4
    assert "whole racks of 18" in b.decision.reason and "72 GPUs in one NVLink domain" in b.decision.reason
    racks = b.decision.servers // 18
    p = b.power
    assert (p.servers_per_rack, p.compute_racks, p.rack_kw, p.liquid_cooling) == (18, racks, nvl72.rack_power_kw, True)
    others = p.it_kw_max - racks * nvl72.rack_power_kw  # fabric, storage and management on top of the racks
    assert 0 < others < 0.2 * p.it_kw_max
    assert b.fabric.rails == 4 and b.fabric.node_links == b.decision.servers * 4


def test_a_small_model_on_gb200_still_gets_one_whole_rack() -> None:
    b = plan_build(size_training("7B", "1T", gpu="GB200"))

    assert b.decision.servers == 18 and b.power.compute_racks == 1


def test_8_gpu_servers_are_unchanged_by_the_rack_scale_rules() -> None:
    b = plan_build(size_training("70B", "2T"))

    assert b.server.rack_scale_units is None and b.power.servers_per_rack <= 4


@pytest.mark.parametrize(
    ("gpu", "name", "server"),
    [("cambricon", "MLU370-X8", "cambricon-mlu370-x8-server")],
)
def test_known_accelerators_are_named_with_why_they_are_not_sized(gpu: str, name: str, server: str) -> None:
    known = load_catalog().known_accelerator(gpu)
    assert known is not None and known.name == name and known.onprem_server == server
    assert any(s.id == server for s in load_onprem().servers)  # the build catalog row it points at exists
    with pytest.raises(SpecError) as e:
        size_training("7B", "1T", gpu=gpu)
    (p,) = [p for p in e.value.problems if p.path == "--gpu"]
    assert "known accelerator" in p.rule and "unpriced" in p.rule and "not sized" in p.rule
    assert server in p.fix and "--gpu" in p.fix


def test_the_cli_says_so_with_exit_2() -> None:
    out = CliRunner().invoke(app, ["size", "--params", "7B", "--tokens", "1T", "--gpu", "cambricon", "--build"])
    assert out.exit_code == 2 and "known accelerator" in out.output and "Traceback" not in out.output
