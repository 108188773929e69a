"""The sizing planner (provision/sizing.py) and `provision size`, against hand-computed cases.

Figures come from the catalog's gpus.yaml: H100 dense BF16 989.4 TFLOPS, FP8 1978.9, 80 GiB,
8-GPU server $270,000 and 10.2 kW maximum. The buy-versus-rent case pins its prices in a small
catalog so a price update in the data files cannot move the hand-computed answer.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from provision.catalog import load_catalog
from provision.catalog.models import RegionOffer
from provision.cli.app import app
from provision.planning.sizing import parse_count, size_training
from provision.spec.errors import SpecError

GIB = 1024**3


#: The hand-computed cases pin MFU 0.4 and goodput 1 so their arithmetic stays checkable by hand; the calibrated
#: default MFU has its own tests (tests/test_sizing_calibration.py).
PINNED = {"mfu": 0.4, "goodput": 1.0}


@pytest.fixture(scope="module")
def big():
    """70B parameters x 2T tokens on H100 at MFU 0.4, goodput 1."""
    return size_training("70B", "2T", **PINNED)


@pytest.fixture(scope="module")
def small():
    """7B parameters x 100B tokens on H100 at MFU 0.4, goodput 1."""
    return size_training("7B", "100B", **PINNED)


# --------------------------------------------------------------------------------------------- shorthands


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("70B", 70e9),
        ("70b", 70e9),
        ("7e9", 7e9),
        ("500M", 500e6),
        ("2T", 2e12),
        ("1.5T", 1.5e12),
        ("300G", 300e9),
        ("70_000_000_000", 70e9),
        (1e9, 1e9),
        (125_000_000, 125e6),
    ],
)
def test_parse_count_reads_shorthands(text, value) -> None:
    assert parse_count(text) == pytest.approx(value)


@pytest.mark.parametrize("text", ["abc", "70X", "", "-3", "0", "inf", True, None, "7B5"])
def test_parse_count_rejects_non_counts(text) -> None:
    with pytest.raises(ValueError):
        parse_count(text)


# --------------------------------------------------------------------------------------------- compute


def test_70b_on_2t_tokens_needs_8_4e23_flops_and_589_583_gpu_hours(big) -> None:
    # FLOPs = 6 * N * D = 6 * 70e9 * 2e12 = 840e21 = 8.4e23.
    assert big.compute.training_flops == pytest.approx(8.4e23)
    # Achieved per GPU = 0.4 * 989.4e12 = 3.9576e14 FLOP/s.
    # GPU-seconds = 8.4e23 / 3.9576e14 = 2.12250e9; / 3600 = 589,583 GPU-hours
    # (the brief's ~589,800 uses a rounded 989 TFLOPS).
    assert big.compute.peak_tflops_per_gpu == 989.4
    assert big.compute.achieved_tflops_per_gpu == pytest.approx(395.76)
    assert big.compute.gpu_hours == pytest.approx(589_583, rel=1e-5)
    assert "6 * N_active * D" in big.compute.formula


def test_fp8_runs_at_its_measured_speedup_not_at_double_the_peak() -> None:
    bf16 = size_training("70B", "2T", gpus=512)
    fp8 = size_training("70B", "2T", gpus=512, precision="fp8")
    # MFU stays quoted against the BF16 peak; FP8 is 1.28x faster (Megatron-Bridge DeepSeekV3 on GB200), not 2x.
    assert fp8.compute.peak_tflops_per_gpu == bf16.compute.peak_tflops_per_gpu == 989.4
    assert bf16.compute.gpu_hours / fp8.compute.gpu_hours == pytest.approx(1.28)


# --------------------------------------------------------------------------------------------- memory


def test_memory_per_gpu_70b_adamw_on_64_gpus_is_16_bytes_per_param_sharded() -> None:
    r = size_training("70B", "2T", gpus=64)
    m = r.memory
    # AdamW mixed precision: 2 (bf16 weights) + 2 (bf16 grads) + 4 (fp32 master) + 4 (m) + 4 (v) = 16 bytes/param.
    assert m.bytes_per_param_total == 16
    assert m.model_states_bytes == pytest.approx(70e9 * 16)
    assert m.states_per_gpu_bytes == pytest.approx(70e9 * 16 / 64)  # 17.5e9 bytes
    assert m.weights_per_gpu_bytes == pytest.approx(70e9 * 2 / 64)
    assert m.gradients_per_gpu_bytes == pytest.approx(70e9 * 2 / 64)
    assert m.optimizer_per_gpu_bytes == pytest.approx(70e9 * 12 / 64)  # fp32 master + m + v
    assert m.gpus == 64 and m.fits


@pytest.mark.parametrize(
    ("optimizer", "state", "checkpoint"), [("adamw", 16, 14), ("adafactor", 8, 6), ("sgd", 12, 10)]
)
def test_optimizer_sets_bytes_per_param_and_checkpoint_size(optimizer, state, checkpoint) -> None:
    # Checkpoint = everything but the gradients: adamw 2 + 4 + 8; adafactor 2 + 4 + 0; sgd 2 + 4 + 4.
    r = size_training("7B", "100B", optimizer=optimizer)
    assert r.memory.bytes_per_param_total == state
    assert r.storage.checkpoint_bytes_per_param == checkpoint
    assert r.storage.checkpoint_bytes == pytest.approx(7e9 * checkpoint)


def test_activation_allowance_and_minimum_gpus_for_7b(small) -> None:
    m = small.memory
    # hidden = round((128 * 7e9 / 12) ** (1/3)) = round(4211.1) = 4211; layers = round(4211 / 128) = 33.
    assert (m.assumed_hidden_size, m.assumed_layers) == (4211, 33)
    # Checkpointed activations: seq * hidden * (2 * layers + 34) = 4096 * 4211 * 100 = 1,724,825,600 bytes.
    assert m.allowance_per_gpu["checkpointed_activations"] == 1_724_825_600
    # FSDP gathered layers: 3 * 12 * 4211^2 * 2 = 72 * 17,732,521 = 1,276,741,512 bytes; reserve 4 GiB.
    assert m.allowance_per_gpu["fsdp_gathered_layers"] == 1_276_741_512
    assert m.allowance_per_gpu["runtime_reserve"] == 4 * GIB
    # Free per GPU: 80 GiB - 7,296,534,408 = 78,602,811,512 bytes; 7e9 * 16 = 112e9 / that = 1.42 -> 2 GPUs.
    assert m.min_gpus == 2 and m.min_nodes == 1


def test_a_sequence_too_long_for_pure_fsdp_warns_instead_of_claiming_a_fit() -> None:
    # 7B at 262,144 tokens: activations 262144 * 4211 * 100 = 110.4e9 bytes alone exceed 80 GiB (85.9e9).
    r = size_training("7B", "10B", seq_len=262_144)
    assert r.memory.min_gpus is None and not r.memory.fits
    assert any("tensor/sequence parallelism" in w for w in r.warnings)
    assert "cannot hold the model" in r.cluster.recommendation


# --------------------------------------------------------------------------------------------- GPUs and topology


def test_7b_fits_one_node_so_the_plan_is_single_node(small) -> None:
    # 7B x 100B: 4.2e21 / 3.9576e14 / 3600 = 2,948 GPU-hours; on 8 GPUs 368.5 h = 15.35 days < 30.
    c = small.cluster
    assert (c.topology, c.nodes, c.gpus) == ("single-node", 1, 8)
    assert c.wall_days == pytest.approx(15.35, abs=0.01)
    assert "single node" in c.recommendation and "no inter-node fabric" in c.recommendation
    cat = load_catalog()
    for option in small.clouds:
        if option.node_hourly_usd is None:
            continue
        prices = [
            p
            for o in cat.instances_for(cloud=option.cloud, gpu="H100")
            if "on-demand" in o.consumption
            for p in (o.price(r) for r in o.regions)
            if p is not None
        ]
        assert option.node_hourly_usd == min(prices), option.cloud  # a single node takes the cheapest offer


def test_70b_is_multi_node_and_names_each_clouds_fabric(big) -> None:
    c = big.cluster
    assert c.topology == "multi-node"
    for fabric in ("EFA", "TCPXO", "InfiniBand", "eRDMA"):
        assert fabric in c.recommendation
    by_cloud = {o.cloud: o for o in big.clouds}
    assert by_cloud["aws"].fabric == "efa"
    assert by_cloud["gcp"].instance_type == "a3-megagpu-8g"  # the fastest H100 fabric on GCP, not the cheapest
    assert by_cloud["azure"].fabric == "infiniband"


def test_default_gpu_count_meets_the_30_day_deadline_in_whole_nodes(big) -> None:
    # 589,583 GPU-hours / 720 h = 818.9 GPUs -> 102.4 nodes -> 103 nodes = 824 GPUs; 589,583 / 824 = 715.5 h.
    c = big.cluster
    assert (c.nodes, c.gpus) == (103, 824)
    assert c.wall_hours == pytest.approx(715.51, abs=0.01)
    assert c.meets_deadline and "default 30-day deadline" in c.basis


def test_deadline_days_is_met_with_whole_nodes() -> None:
    # 589,583 / (60 * 24) = 409.4 GPUs -> 51.2 nodes -> 52 nodes = 416 GPUs; 589,583 / 416 / 24 = 59.05 days.
    c = size_training("70B", "2T", deadline_days=60, **PINNED).cluster
    assert (c.nodes, c.gpus) == (52, 416)
    assert c.wall_days == pytest.approx(59.05, abs=0.01)


def test_given_gpus_are_used_and_a_missed_deadline_warns() -> None:
    # 7B x 1T on 16 GPUs: 29,479 GPU-hours / 16 / 24 = 76.8 days, beyond the 30-day default.
    r = size_training("7B", "1T", gpus=16, **PINNED)
    assert (r.cluster.gpus, r.cluster.nodes, r.cluster.meets_deadline) == (16, 2, False)
    assert any("76.8 days" in w for w in r.warnings)


def test_cloud_without_the_gpu_gets_the_closest_one_resized(big) -> None:
    alibaba = next(o for o in big.clouds if o.cloud == "alibaba")
    # Alibaba sells no H100 in the catalog; A100-80GB is nearest (|ln(989.4/312)| + |ln(80/80)| = 1.15).
    assert alibaba.substitute and alibaba.gpu == "A100-80GB"
    assert alibaba.gpus > big.cluster.gpus  # a slower GPU needs more of them for the same deadline
    assert "no H100 on alibaba" in alibaba.notes[0]
    assert alibaba.total_usd is None and any(n.startswith("unpriced") for n in alibaba.notes)


# --------------------------------------------------------------------------------------------- storage


def test_checkpoint_dataset_and_filesystem_throughput(big) -> None:
    s = big.storage
    # Checkpoint 70e9 * 14 = 980 GB; written in 5 min: 980e9 / 300 s = 3.267 GB/s.
    assert s.checkpoint_bytes == pytest.approx(980e9)
    assert s.required_write_gbps == pytest.approx(3.2667, abs=1e-4)
    # Dataset: 2e12 tokens * 4 bytes raw = 8 TB; * 2 bytes (uint16) = 4 TB. Capacity 4e12 + 3 * 980e9 = 6.94e12.
    assert (s.dataset_raw_text_bytes, s.dataset_tokenized_bytes) == (8e12, 4e12)
    assert s.shared_capacity_bytes == pytest.approx(6.94e12)
    # FSx PERSISTENT_2: capacity 6.94e12 B = 6,464 GiB; 3,267 MB/s at 500 MB/s/TiB needs 6,691 GiB; the
    # 2,400 GiB step gives 7,200 GiB -> 7200 / 1024 * 500 = 3,516 MB/s. (1000 MB/s/TiB also lands on 7,200.)
    fsx = next(f for f in s.filesystems if f.cloud == "aws")
    assert (fsx.kind, fsx.tier, fsx.size_gib, fsx.throughput_mbps_per_tib) == ("fsx-lustre", "PERSISTENT_2", 7200, 500)
    assert fsx.write_gbps == pytest.approx(3.5156, abs=1e-4)
    assert all(f.write_gbps is None or f.write_gbps >= s.required_write_gbps for f in s.filesystems)


# --------------------------------------------------------------------------------------------- buy versus rent


@pytest.fixture(scope="module")
def pinned():
    """The catalog cut to one H100 offer at $50.00/node-hour, H100 server $270,000 at 10.2 kW max."""
    cat = load_catalog()
    h100 = cat.gpu("H100").model_copy(update={"server_price_usd": 270_000.0, "server_power_kw": 10.2})
    p5 = cat.instance("aws", "p5.48xlarge").model_copy(
        update={"regions": {"us-east-1": RegionOffer(zones=("us-east-1a",), price_per_hour_usd=50.0)}}
    )
    gpus = tuple(h100 if g.name == "H100" else g for g in cat.gpus)
    return dataclasses.replace(cat, gpus=gpus, instances=(p5,))


def test_buy_versus_rent_break_even_by_hand(pinned) -> None:
    b = size_training("7B", "100B", catalog=pinned).buy_vs_rent
    # Typical draw 10.2 kW * 7/10.2 = 7 kW; at PUE 1.3 and $0.12/kWh: 7 * 1.3 * 0.12 = $1.092 per node-hour.
    assert b.typical_power_kw == pytest.approx(7.0)
    assert b.energy_usd_per_node_hour == pytest.approx(1.092)
    assert b.rent_usd_per_node_hour == 50.0
    # Owned per busy hour, 3 years at 80%: 270,000 / (3 * 8760 * 0.8) + 1.092 = 12.842 + 1.092 = 13.934.
    three = next(a for a in b.amortisation if a.years == 3)
    assert three.owned_usd_per_node_hour == pytest.approx(13.934, abs=1e-3)
    assert three.cheaper == "buy"
    # Break-even: 270,000 / ((50 - 1.092) * 730 h * 0.8) = 270,000 / 28,562.27 = 9.453 months.
    assert b.break_even_months == pytest.approx(9.453, abs=1e-3)


def test_buy_versus_rent_is_unknown_without_a_server_price() -> None:
    b = size_training("7B", "100B", gpu="A100-80GB").buy_vs_rent  # gpus.yaml: server_price_usd null
    assert b.server_price_usd is None and b.break_even_months is None
    assert b.verdict.startswith("unknown") and "server price" in b.verdict


def test_pinned_catalog_clouds_without_any_offer_say_so(pinned) -> None:
    r = size_training("7B", "100B", catalog=pinned)
    gcp = next(o for o in r.clouds if o.cloud == "gcp")
    assert gcp.instance_type is None and gcp.total_usd is None and gcp.notes
    aws = next(o for o in r.clouds if o.cloud == "aws")
    # 2,948.3 GPU-hours / 8 GPUs = 368.5 h * $50 = $18,427.
    assert aws.total_usd == pytest.approx(50.0 * r.compute.gpu_hours / 8)


# --------------------------------------------------------------------------------------------- the report


def test_report_states_its_assumptions_and_is_json(big) -> None:
    text = " ".join(big.assumptions)
    needles = (
        "6 * N_active * D",
        "16 bytes/param",
        "activation checkpointing",
        "10.2 kW",
        "~7 kW",
        "PUE 1.3",
        "uint16",
    )
    for needle in needles:
        assert needle in text
    doc = json.loads(json.dumps(big.as_dict()))
    assert doc["cluster"]["topology"] == "multi-node"
    with pytest.raises(ValidationError):  # frozen
        big.cluster.gpus = 1


# --------------------------------------------------------------------------------------------- bad input


def test_bad_inputs_report_every_problem_at_once() -> None:
    with pytest.raises(SpecError) as info:
        size_training(
            "lots",
            "-2T",
            gpu="H1000",
            mfu=1.5,
            precision="fp16",
            optimizer="lion",
            seq_len="4k",
            gpus=12,
            deadline_days=0,
            checkpoint_minutes="x",
            electricity_usd_per_kwh=-1,
            pue=0.9,
            utilisation=0,
        )
    problems = {p.path: p for p in info.value.problems}
    assert set(problems) == {
        "--params",
        "--tokens",
        "--gpu",
        "--mfu",
        "--precision",
        "--optimizer",
        "--seq-len",
        "--gpus",
        "--deadline-days",
        "--checkpoint-minutes",
        "--electricity-usd-per-kwh",
        "--pue",
        "--utilisation",
    }
    mfu = problems["--mfu"]
    assert (mfu.value, mfu.rule) == (1.5, "must be in (0, 1]") and "0.35-0.5" in mfu.fix
    assert problems["--gpus"].fix == "use 8 or 16"
    assert "H100" in problems["--gpu"].fix


def test_too_few_gpus_for_the_model_is_an_input_error() -> None:
    # 70B * 16 bytes = 1.12e12 over 8 GPUs = 130 GiB of states alone, above 80 GiB; the minimum is 17 -> 24 GPUs.
    with pytest.raises(SpecError) as info:
        size_training("70B", "2T", gpus=8)
    (problem,) = info.value.problems
    assert problem.path == "--gpus" and "use at least 24 GPUs" in problem.fix


def test_fp8_on_a_gpu_without_fp8_is_an_input_error() -> None:
    with pytest.raises(SpecError) as info:
        size_training("7B", "100B", gpu="A100-80GB", precision="fp8")
    assert [p.path for p in info.value.problems] == ["--precision"]


# --------------------------------------------------------------------------------------------- CLI


def test_cli_json_prints_one_document() -> None:
    result = CliRunner().invoke(app, ["size", "--params", "70B", "--tokens", "2T", "--gpus", "64", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["memory"]["states_per_gpu_bytes"] == pytest.approx(70e9 * 16 / 64)
    assert doc["cluster"]["gpus"] == 64 and doc["assumptions"]


def test_cli_bad_input_exits_2_with_every_problem_and_no_traceback() -> None:
    args = ["size", "--params", "70B", "--tokens", "2T", "--mfu", "1.5", "--pue", "x"]
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 2
    doc = json.loads(result.stdout)
    assert [p["path"] for p in doc["problems"]] == ["--mfu", "--pue"]
    plain = CliRunner().invoke(app, args)
    assert plain.exit_code == 2
    assert "--mfu" in plain.stderr and "must be in (0, 1]" in plain.stderr
    assert "Traceback" not in plain.output and "Traceback" not in plain.stderr


def test_cli_missing_params_is_an_input_error_in_json() -> None:
    result = CliRunner().invoke(app, ["size", "--tokens", "2T", "--json"])
    assert result.exit_code == 2
    assert json.loads(result.stdout)["problems"][0]["path"] == "--params"


def test_cli_readable_output_shows_each_section() -> None:
    result = CliRunner().invoke(app, ["size", "--params", "7B", "--tokens", "100B", "--mfu", "0.4", "--goodput", "1"])
    assert result.exit_code == 0, result.output
    for needle in ("training FLOPs", "memory per GPU", "cluster: single-node", "p5.48xlarge", "checkpoint", "break"):
        assert needle in result.stdout
