"""The build planner behind ``provision size --build``: fabric arithmetic, single server vs cluster, storage,
power, costs, own versus rent and the software checklist. Expectations are derived from the inputs (node count,
radix, catalog figures), not copied from a run."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from provision.catalog.onprem import load_onprem
from provision.planning.onprem import plan_build, sized_run
from provision.planning.onprem.costs import HOURS_PER_YEAR, YEARS
from provision.planning.onprem.export import cost_chart_svg, cost_chart_text, csv_text
from provision.planning.onprem.fabric import FabricTooLarge, design_fabric
from provision.planning.onprem.facility import Powered, plan_power
from provision.planning.sizing import size_training
from provision.spec.errors import SpecError


@pytest.fixture(scope="module")
def cat():
    return load_onprem()


@pytest.fixture(scope="module")
def r70():
    return size_training("70B", "2T")


@pytest.fixture(scope="module")
def b70(r70):
    return plan_build(r70)


# --------------------------------------------------------------------------------------------- fabric


@pytest.mark.parametrize(
    ("nodes", "leaves", "spines"),
    [(32, 8, 4), (64, 16, 8), (96, 24, 16), (128, 32, 16)],  # DGX SuperPOD H100 RA, 1-4 scalable units
)
def test_fabric_matches_the_superpod_reference_counts(nodes: int, leaves: int, spines: int) -> None:
    fab = design_fabric(nodes, 8, 64, kind="infiniband", switch="nvidia-qm9700")
    assert (fab.tiers, fab.leaves, fab.spines, fab.cores) == (2, leaves, spines, 0)
    assert fab.node_links == nodes * 8 and fab.leaf_spine_links == leaves * 32


def test_fabric_tiers_follow_the_radix() -> None:
    assert design_fabric(1, 8, 64, kind="infiniband", switch="x").tiers == 0
    one = design_fabric(8, 8, 64, kind="infiniband", switch="x")
    assert (one.tiers, one.leaves, one.spines) == (1, 1, 0)
    assert design_fabric(9, 8, 64, kind="infiniband", switch="x").tiers == 2
    assert design_fabric(256, 8, 64, kind="infiniband", switch="x").tiers == 2  # 2048 = 64^2/2 endpoints
    three = design_fabric(257, 8, 64, kind="infiniband", switch="x")
    assert three.tiers == 3 and three.cores == math.ceil(three.spines * 32 / 64)
    with pytest.raises(FabricTooLarge):
        design_fabric(64 * 32 * 32 // 8 + 1, 8, 64, kind="infiniband", switch="x")


@settings(max_examples=300, deadline=None)
@given(
    nodes=st.integers(1, 9000),
    rails=st.sampled_from([1, 2, 4, 8]),
    radix=st.sampled_from([16, 32, 40, 64, 128]),
)
def test_fabric_is_non_blocking_and_fits_its_switches(nodes: int, rails: int, radix: int) -> None:
    half = radix // 2
    try:
        fab = design_fabric(nodes, rails, radix, kind="infiniband", switch="x")
    except FabricTooLarge:
        assert nodes * rails > radix * half * half
        return
    ep = nodes * rails
    if nodes == 1:
        assert fab.tiers == 0 and fab.leaves == 0
        return
    assert fab.node_links == ep
    if fab.tiers == 1:
        assert ep <= radix and fab.leaves == 1
        return
    # every leaf: at most half its ports face nodes, the other half face spines (non-blocking)
    assert fab.leaves * half >= ep
    assert fab.leaf_spine_links == fab.leaves * half
    assert fab.spines * radix >= fab.leaf_spine_links
    assert fab.leaves % rails == 0  # rail-optimized: one leaf per rail per group
    if fab.tiers == 2:
        assert radix < ep <= radix * half
        assert half % fab.spines == 0 and fab.leaves <= radix
    else:
        assert ep > radix * half
        assert fab.spine_core_links == fab.spines * half and fab.cores * radix >= fab.spine_core_links


# --------------------------------------------------------------------------------------------- the bar


def test_70b_on_2t_tokens_gives_a_full_bill_of_materials(r70, b70) -> None:
    d = b70.as_dict()
    assert d["decision"]["topology"] == "cluster" and d["decision"]["servers"] == r70.cluster.nodes
    cats = {li["category"] for li in d["lines"]}
    assert {"servers", "compute fabric", "fabric links", "storage", "management network", "head nodes"} <= cats
    fabric = next(li for li in d["lines"] if li["category"] == "compute fabric")
    assert fabric["quantity"] == d["fabric"]["leaves"] + d["fabric"]["spines"] + d["fabric"]["cores"] > 0
    links = next(li for li in d["lines"] if li["category"] == "fabric links" and li["priced_in"] is None)
    assert links["quantity"] == d["fabric"]["node_links"] + d["fabric"]["leaf_spine_links"]
    assert d["storage"]["chosen"]["blocks"] >= 1
    assert d["power"]["it_kw_max"] > 0 and d["power"]["facility_kw"] == pytest.approx(
        d["power"]["it_kw_max"] * r70.inputs.pue
    )
    assert d["power"]["racks"] >= math.ceil(d["decision"]["servers"] / d["power"]["servers_per_rack"])
    assert d["costs"]["capex_priced_usd"] > 0
    assert d["costs"]["three_year_own_priced_usd"] > d["costs"]["capex_priced_usd"]
    assert len(d["assumptions"]) >= 10 and any("rack" in a for a in d["assumptions"])


def test_7b_with_default_options_builds_a_cluster_that_meets_the_default_deadline() -> None:
    report = size_training("7B", "2T")
    b = plan_build(report)
    assert b.decision.topology == "cluster" and b.decision.servers == report.cluster.nodes
    assert b.decision.cluster_days <= report.cluster.deadline_days == 30
    assert "default deadline" in b.decision.reason


def test_7b_that_one_server_trains_within_the_deadline_gives_a_single_server_and_says_why() -> None:
    b = plan_build(size_training("7B", "50B"))
    assert b.decision.topology == "single-server" and b.decision.servers == 1
    assert "10B" in b.decision.reason and "days" in b.decision.reason
    assert b.fabric.tiers == 0 and not [li for li in b.lines if li.category == "compute fabric"]
    assert [li.quantity for li in b.lines if li.category == "servers"] == [1]


def test_7b_with_gpus_or_a_deadline_one_server_misses_becomes_a_cluster() -> None:
    by_gpus = plan_build(size_training("7B", "2T", gpus="64"))
    assert by_gpus.decision.topology == "cluster" and by_gpus.decision.servers == 8
    by_deadline = plan_build(size_training("7B", "2T", deadline_days="30"))
    assert by_deadline.decision.topology == "cluster" and "deadline" in by_deadline.decision.reason


def test_175b_on_infiniband_is_two_tier_with_counts_from_nodes_and_radix(cat) -> None:
    report = size_training("175B", "300B")
    b = plan_build(report, fabric="infiniband")
    nodes = report.cluster.nodes
    radix = cat.switch(b.fabric.switch).radix(400)
    rails = b.server.compute_nics
    assert b.fabric.kind == "infiniband" and b.fabric.tiers == 2
    assert b.decision.servers == nodes and rails * nodes > radix
    assert b.fabric.leaves == rails * math.ceil(nodes / (radix // 2))
    need = math.ceil(b.fabric.leaves * (radix // 2) / radix)
    assert b.fabric.spines == min(d for d in range(need, radix // 2 + 1) if (radix // 2) % d == 0)


# --------------------------------------------------------------------------------------------- choices and errors


def test_vendor_picks_that_vendors_server(r70) -> None:
    assert plan_build(r70, vendor="dell").server.id == "dell-xe9680-h100"
    assert plan_build(r70, vendor="Supermicro").server.vendor == "supermicro"


def test_roce_picks_a_server_and_an_ethernet_switch(r70) -> None:
    b = plan_build(r70, fabric="roce")
    assert b.fabric.kind == "roce" and b.fabric.switch == "nvidia-sn5600"
    # A server whose NICs are listed as running it is preferred to one whose NICs are unknown.
    assert "roce" in next(s for s in load_onprem().servers if s.id == b.server.id).fabrics
    assert not any("SHARP plugin" in (i.version or "") for i in b.software)


@pytest.mark.parametrize(
    ("kwargs", "path", "text"),
    [
        ({"vendor": "acme"}, "--vendor", "is not a vendor"),
        ({"vendor": "huawei"}, "--vendor", "sells no H100 server"),
        ({"fabric": "ethernet"}, "--fabric", "infiniband or roce"),
        ({"vendor": "hpe", "fabric": "roce"}, "--fabric", "is not offered"),
    ],
)
def test_bad_build_options_name_the_option(r70, kwargs, path, text) -> None:
    with pytest.raises(SpecError) as err:
        plan_build(r70, **kwargs)
    assert [p.path for p in err.value.problems] == [path]
    assert text in str(err.value) and "to fix:" in str(err.value)


def test_a_blackwell_server_is_in_the_catalog_and_builds() -> None:
    b = plan_build(size_training("70B", "2T", gpu="B200"))
    assert b.server.id == "dgx-b200" and b.server.accelerators == 8
    assert b.decision.servers > 1 and b.fabric.kind == "infiniband"


def test_a_gpu_without_an_onprem_server_is_named() -> None:
    with pytest.raises(SpecError) as err:
        plan_build(size_training("70B", "2T", gpu="H20"))
    assert err.value.problems[0].path == "--gpu" and "H100" in err.value.problems[0].fix


# --------------------------------------------------------------------------------------------- storage, power, costs


def test_storage_blocks_cover_capacity_and_checkpoint_writes(cat, r70, b70) -> None:
    chosen = b70.storage.chosen
    block = next(b for b in cat.storage if b.id == chosen.block)
    need_tb = r70.storage.shared_capacity_bytes * 1.25 / 1e12
    write = block.write_gb_s or block.throughput_gb_s
    assert chosen.blocks == max(
        math.ceil(need_tb / block.usable_tb), math.ceil(r70.storage.required_write_gbps / write)
    )
    assert chosen.blocks * block.usable_tb >= need_tb and chosen.blocks * write >= r70.storage.required_write_gbps


def test_a_fast_checkpoint_needs_more_storage_blocks() -> None:
    slow = plan_build(size_training("175B", "300B", checkpoint_minutes="30")).storage.chosen
    fast = plan_build(size_training("175B", "300B", checkpoint_minutes="0.5")).storage.chosen
    assert fast.blocks > slow.blocks and fast.by == "write throughput"


def test_racks_and_liquid_cooling_follow_the_rack_budget(cat) -> None:
    budget = cat.assumption("rack_power_budget_kw").value
    air = cat.assumption("air_cooling_limit_kw").value
    light = plan_power(cat, 10, 10.2, 7.0, ("air",), [], 1.3)
    assert light.servers_per_rack == min(4, int(budget // 10.2)) and light.liquid_cooling is False
    heavy = plan_power(cat, 10, air + 5, air, ("air",), [], 1.3)
    assert heavy.servers_per_rack == 1 and heavy.liquid_cooling is True and heavy.compute_racks == 10
    liquid_only = plan_power(cat, 2, 5.0, 4.0, ("liquid",), [], 1.2)
    assert liquid_only.liquid_cooling is True
    single = plan_power(cat, 1, 10.2, 7.0, ("air",), [], 1.3)
    assert single.servers_per_rack == 1 and single.rack_kw == 10.2 and single.racks == 1
    unknown = plan_power(cat, 4, None, None, (), [Powered("switch", 2, 1, None)], 1.3)
    assert unknown.it_kw_max is None and "accelerator servers" in unknown.excluded and "switch" in unknown.excluded


def test_capital_counts_priced_lines_once_and_names_the_rest(b70) -> None:
    c = b70.costs
    priced = sum(li.total_usd or 0 for li in b70.lines if li.priced_in is None)
    assert c.capex_priced_usd == pytest.approx(priced)
    assert c.capex_usd is None and c.unpriced  # storage, management and racks have no published price
    assert all(li.total_usd is None for li in b70.lines if li.priced_in)
    assert c.support_usd_per_year == pytest.approx(priced * c.support_percent / 100)


def test_own_versus_rent_prices_the_same_gpu_hours(r70, b70, cat) -> None:
    c = b70.costs
    gpus = b70.decision.gpus
    assert c.busy_gpu_hours_3y == pytest.approx(gpus * HOURS_PER_YEAR * YEARS * r70.inputs.utilisation)
    aws = next(o for o in r70.clouds if o.cloud == "aws")
    per_gpu = aws.node_hourly_usd / (aws.gpus // aws.nodes)
    rows = {r.capacity: r for r in c.rent if r.cloud == "aws"}
    assert rows["on-demand"].three_year_usd == pytest.approx(c.busy_gpu_hours_3y * per_gpu)
    disc = cat.assumption("commit_discount_3y_aws").value
    assert rows["committed-3y"].three_year_usd == pytest.approx(gpus * HOURS_PER_YEAR * YEARS * per_gpu * (1 - disc))
    alibaba = [r for r in c.rent if r.cloud == "alibaba"]
    assert alibaba and all(r.three_year_usd is None or r.note for r in alibaba)


def test_cost_over_time_starts_at_capital_and_rentals_at_zero(b70) -> None:
    c = b70.costs
    own = "own, priced lines only (a floor)"  # the 70B build has unpriced lines
    assert c.series[own][0] == pytest.approx(c.capex_priced_usd)
    assert c.series[own][-1] == pytest.approx(c.three_year_own_priced_usd)
    rentals = [k for k in c.series if not k.startswith("own")]
    assert rentals and all(c.series[k][0] == 0 for k in rentals)
    svg = cost_chart_svg(c)
    assert svg.startswith("<svg") and svg.count("<polyline") == len(c.series)
    assert "<svg" in b70._repr_html_()
    assert any("after 3 year(s)" in line for line in cost_chart_text(c))


def test_csv_has_one_row_per_line_and_a_total(b70) -> None:
    import csv
    import io

    rows = list(csv.DictReader(io.StringIO(csv_text(b70))))
    assert len(rows) == len(b70.lines) + 1
    assert rows[-1]["category"] == "total" and float(rows[-1]["total_usd"]) == pytest.approx(b70.costs.capex_priced_usd)
    server = rows[0]
    assert server["category"] == "servers" and int(server["quantity"]) == b70.decision.servers


# --------------------------------------------------------------------------------------------- software


def test_software_checklist_comes_from_the_compatibility_data(b70) -> None:
    names = {i.item: i.version for i in b70.software}
    assert {"driver", "cuda", "cudnn", "nccl", "doca_ofed", "hpcx", "sharp"} <= set(names)
    assert names["cuda"] == "12.4" and names["nccl"] == "2.21.5"
    assert b70.software_source.startswith("images/onprem.yaml#nvidia-hopper-infiniband")
    assert {"Slurm", "Kubernetes + Kubeflow"} <= set(names)


def test_amd_gets_rocm_and_rccl_not_cuda() -> None:
    b = plan_build(size_training("70B", "2T", gpu="MI300X"))
    names = {i.item for i in b.software}
    assert {"rocm", "rccl"} <= names and not {"cuda", "cudnn", "nccl"} & names
    assert any("ROCM" in w for w in b.warnings)


def test_sized_run_reads_the_sizing_report(r70) -> None:
    run = sized_run(r70)
    assert run.nodes == r70.cluster.nodes and run.gpu == "H100" and not run.gpus_given
    assert run.required_write_gb_s == r70.storage.required_write_gbps


# --------------------------------------------------------------------------------------------- robustness


@pytest.mark.parametrize(
    ("gpu", "params", "tokens"), [("H100", "405B", "15T"), ("MI300X", "70B", "2T"), ("A100-80GB", "70B", "2T")]
)
def test_every_vendor_and_fabric_either_builds_or_names_the_problem(cat, gpu, params, tokens) -> None:
    report = size_training(params, tokens, gpu=gpu)
    built = 0
    for vendor in [None, *cat.vendors()]:
        for fabric in (None, "infiniband", "roce"):
            try:
                b = plan_build(report, vendor=vendor, fabric=fabric)
            except SpecError as e:
                assert e.problems and all(p.path in ("--vendor", "--fabric", "--gpu") for p in e.problems)
                continue
            built += 1
            assert b.decision.servers * b.server.accelerators >= report.cluster.gpus
            assert b.power.racks >= b.power.compute_racks >= 1
            json_doc = b.as_dict()
            assert json_doc["fabric"]["node_links"] == b.decision.servers * b.server.compute_nics
    assert built


def test_a_frontier_run_needs_three_tiers_with_core_switches() -> None:
    b = plan_build(size_training("405B", "15T"))
    f = b.fabric
    assert f.tiers == 3 and f.cores == math.ceil(f.spines * (f.radix // 2) / f.radix) > 0
    assert f.endpoints > f.radix * (f.radix // 2)


def test_200g_ndr_nics_split_the_ndr_switch_and_hdr_nics_use_the_hdr_switch(cat, r70) -> None:
    hpe = plan_build(r70, vendor="hpe")  # XD670 as submitted: 8 x 200 Gb InfiniBand
    assert hpe.fabric.switch == "nvidia-qm9700" and hpe.fabric.radix == cat.switch("nvidia-qm9700").radix(200)
    a100 = plan_build(size_training("70B", "2T", gpu="A100-80GB"))  # DGX A100: ConnectX-6 HDR
    assert a100.fabric.switch == "nvidia-qm8700" and a100.fabric.radix == 40
    links = next(li for li in a100.lines if li.category == "fabric links" and li.priced_in is None)
    assert links.total_usd is None  # the catalog's priced link is a 400G one


def _costs_of(cat, build, run, lines):
    from provision.planning.onprem.costs import plan_costs

    return plan_costs(
        cat,
        lines,
        gpus=build.decision.gpus,
        sized_gpu=run.inputs.gpu,
        run_gpu_hours=run.compute.gpu_hours,
        server_typical_kw_total=build.power.it_kw_typical,
        infra_kw=0.0,
        utilisation=run.inputs.utilisation,
        clouds=tuple(c.model_dump(mode="json") for c in run.clouds),
        tco=build.costs.tco,
        it_kw_max=build.power.it_kw_max,
    )


def test_an_unpriced_line_makes_own_versus_rent_unknown_and_names_it(r70, b70, cat) -> None:
    c = b70.costs
    assert c.unpriced and c.three_year_own_usd is None
    own = next(r for r in c.rent if r.capacity == "own")
    assert own.usd_per_gpu_hour is None and own.three_year_usd is None and own.vs_own is None
    assert all(line in own.note for line in c.unpriced) and "unknown" in own.note
    assert all(r.vs_own is None for r in c.rent)  # no ratio against the priced lines alone

    server = next(li for li in b70.lines if li.category == "servers")
    unpriced_server = tuple(
        li.model_copy(update={"unit_usd": None, "total_usd": None}) if li is server else li for li in b70.lines
    )
    nothing = _costs_of(cat, b70, r70, unpriced_server)
    assert nothing.three_year_own_usd is None and any(server.item in u for u in nothing.unpriced)


def test_a_fully_priced_build_is_compared_with_renting(r70, b70, cat) -> None:
    priced = tuple(li for li in b70.lines if li.total_usd is not None)
    c = _costs_of(cat, b70, r70, priced)
    assert not c.unpriced and c.three_year_own_usd == pytest.approx(c.three_year_own_priced_usd)
    rows = {r.capacity: r for r in c.rent if r.cloud == "aws"}
    assert rows["on-demand"].vs_own == pytest.approx(rows["on-demand"].three_year_usd / c.three_year_own_usd)


@pytest.mark.parametrize(("vendor", "server"), [("nvidia", "dgx-h100"), ("dell", "dell-xe9680-h100")])
def test_roce_builds_on_hgx_h100_platforms_with_a_spectrum_x_fabric(r70, vendor: str, server: str) -> None:
    """NVIDIA's HGX AI Factory reference designs put HGX H100/H200 on Spectrum-X Ethernet: RoCE is not only for
    servers whose NICs are unknown."""
    b = plan_build(r70, vendor=vendor, fabric="roce")
    assert b.server.id == server
    assert b.fabric.kind == "roce" and b.fabric.switch == "nvidia-sn5600" and b.fabric.tiers == 2


def test_the_build_states_performance_per_watt(b70) -> None:
    s = next(s for s in load_onprem().servers if s.id == b70.server.id)
    peak = s.accelerator_bf16_dense_tflops * s.accelerators
    assert b70.power.server_bf16_tflops_per_watt == pytest.approx(peak / (s.power_max_kw * 1000))
    # the whole build draws more than its servers (fabric, storage, management): less per watt
    assert b70.power.bf16_tflops_per_watt == pytest.approx(peak * b70.decision.servers / (b70.power.it_kw_max * 1000))
    assert b70.power.bf16_tflops_per_watt < b70.power.server_bf16_tflops_per_watt


def test_renting_is_also_compared_with_neocloud_per_gpu_hour_prices(b70, cat) -> None:
    rows = {r.cloud: r for r in b70.costs.rent if r.note.startswith("neocloud")}
    assert {"runpod", "lambda", "vastai"} <= set(rows)
    runpod = cat.assumption("neocloud_runpod_on_demand_h100")
    assert rows["runpod"].usd_per_gpu_hour == runpod.value
    assert rows["runpod"].three_year_usd == pytest.approx(runpod.value * b70.costs.busy_gpu_hours_3y)
    every_hour = b70.decision.gpus * HOURS_PER_YEAR * YEARS
    assert rows["lambda"].three_year_usd == pytest.approx(rows["lambda"].usd_per_gpu_hour * every_hour)
    assert all("third-party figure read 2026-12-01" in r.note for r in rows.values())
    # a GPU with no neocloud figure gets no neocloud row
    a100 = plan_build(size_training("70B", "2T", gpu="A100-80GB"))
    assert not [r for r in a100.costs.rent if r.note.startswith("neocloud")]
