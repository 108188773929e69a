"""Model-FLOPs utilisation calibrated on published training runs, with its error.

The quantity fitted is the *effective* MFU of a whole run: ``6 * N_active * D / (reported GPU-hours *
3600 * dense BF16 peak)``. Reported GPU-hours include everything the run paid for (failures, restarts,
checkpoint stalls, evaluation), so the fit absorbs them; the planner splits it into a throughput MFU and a
goodput factor whose default comes from Llama 3 (see :data:`GOODPUT`).

Model: ``ln(effective MFU) = a_gen + b_gen * ln(N_active / 10B)``, one line per GPU generation (Ampere,
Hopper), fitted by least squares on the ``fit=True`` runs below. A GPU's generation is its catalog row's
(``catalog/data/gpus.yaml`` ``generation``); a generation with neither a line nor a borrowed one is an error
naming that row, never a silent default.

Each generation has its own error, validated by leave-one-out: every fitted run is left out in turn, the line
refitted on the others, and the left-out run's log error recorded. ``sigma`` is the root mean square of those
errors (not the in-sample residual, which understates what an unseen run does), and the printed range is the
80% normal interval ``exp(-/+ 1.2816 sigma)`` around the expectation; ``coverage`` is the share of
left-out runs that fell inside their own range. Runs with ``fit=False`` are held out entirely: tests check that
the expected GPU-hours land within 0.67x-1.5x of what each paper reports and that at least 80% of the reported
figures lie inside the printed range.

Adjustments, each from a published figure:

* FP8: achieved throughput x :data:`FP8_SPEEDUP` over BF16 (MFU stays quoted against the BF16 peak);
* cluster size above :data:`SCALE_KNEE_GPUS`: x (gpus / knee) ** :data:`SCALE_EXPONENT` (Llama 3 Table 4);
* Blackwell and AMD CDNA3: no published run in the fit, so the Hopper line is used and the range widened
  by :data:`UNFITTED_WIDENING` (Megatron-Bridge measures B200 at the same fraction of peak as H100).

Huawei's Da Vinci (Ascend 910B): no published run states the NPU-hours of a whole training, so there is nothing to
fit a run line on. Its line is an ASSUMPTION made from the vendor's own measured throughput (:data:`BENCHMARKS`):
each benchmark's throughput MFU ``6 * N * tokens/s / peak`` times the Llama 3 :data:`GOODPUT` stands in for an
effective MFU, a line is fitted through them the same way, and its range is the widest run-fitted generation's
error times :data:`UNFITTED_WIDENING` (short benchmarks on 8-64 NPUs say nothing about a long run's failures).
Every output that uses it says so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

#: Llama 3 (arXiv 2407.21783, section 3.3.4): "higher than 90% effective training time" over a 54-day
#: snapshot with 466 job interruptions (419 unexpected). Effective training time = useful / elapsed.
GOODPUT = 0.90
GOODPUT_SOURCE = (
    "Llama 3 herd paper (arXiv 2407.21783) s3.3.4: >90% effective training time, 419 unexpected interruptions "
    "in 54 days"
)

#: Megatron-Bridge 25.11 performance summary (NVIDIA-NeMo/Megatron-Bridge docs/performance-summary.md),
#: DeepSeekV3 pre-training on 256 GPUs of DGX-GB200: BF16 782 vs FP8-MX 1003 model TFLOP/s/GPU (1.28x);
#: on DGX-GB300 961 vs 1088 (1.13x). FP8 is not twice as fast: its efficiency is its own.
FP8_SPEEDUP = 1.28
FP8_SOURCE = "Megatron-Bridge 25.11 performance summary: DeepSeekV3 on 256 GB200, BF16 782 vs FP8-MX 1003 TFLOP/s/GPU"

#: Llama 3 Table 4 (405B, BF16): 430 TFLOP/s/GPU on 8,192 H100 and 400 on 16,384 (same TP/PP, DP 64 -> 128).
SCALE_KNEE_GPUS = 8192
SCALE_EXPONENT = math.log2(400 / 430)
#: No published run in the fit beyond this many GPUs: the planner warns above it.
LARGEST_FITTED_GPUS = 16_384
#: Range multiplier (in log space) for generations without a fitted run.
UNFITTED_WIDENING = 1.5
#: Effective MFU is never predicted above this (no published large run reports more).
MFU_CEILING = 0.60

#: Two-sided 80% interval of a normal error: the printed range is expected * exp(-/+ INTERVAL_Z * sigma).
INTERVAL_Z = 1.2816
#: When the runs below were read from their sources.
RUNS_RETRIEVED = "2026-12-01"

#: Generations with no published run in the fit borrow this line.
BORROWED = {"blackwell": "hopper", "cdna3": "hopper"}

_TABLE15 = "LLaMA paper (Touvron et al. 2023, arXiv 2302.13971) Table 15"


@dataclass(frozen=True)
class PublishedRun:
    """A training run whose paper or model card reports the GPU-hours it took."""

    name: str
    gpu: str
    params: float
    active_params: float
    tokens: float
    gpu_hours: float
    precision: str
    fit: bool
    source: str
    gpus: int | None = None  # the cluster size the source states, where it states one


RUNS: tuple[PublishedRun, ...] = (
    # ---- fit set: the runs the issue names
    PublishedRun(
        "Llama 2 7B",
        "A100-80GB",
        7e9,
        7e9,
        2.0e12,
        184_320,
        "bf16",
        True,
        "meta-llama/llama MODEL_CARD.md (2.0T tokens, A100-80GB GPU hours)",
    ),
    PublishedRun(
        "Llama 2 13B", "A100-80GB", 13e9, 13e9, 2.0e12, 368_640, "bf16", True, "meta-llama/llama MODEL_CARD.md"
    ),
    PublishedRun(
        "Llama 2 70B", "A100-80GB", 70e9, 70e9, 2.0e12, 1_720_320, "bf16", True, "meta-llama/llama MODEL_CARD.md"
    ),
    PublishedRun(
        "Llama 3 8B",
        "H100",
        8e9,
        8e9,
        15e12,
        1.3e6,
        "bf16",
        True,
        "meta-llama/llama3 MODEL_CARD.md (over 15T tokens, H100-80GB GPU hours)",
    ),
    PublishedRun("Llama 3 70B", "H100", 70e9, 70e9, 15e12, 6.4e6, "bf16", True, "meta-llama/llama3 MODEL_CARD.md"),
    PublishedRun(
        "OPT-175B",
        "A100-80GB",
        175e9,
        175e9,
        180e9,
        809_472,
        "bf16",
        True,
        f"{_TABLE15}; 180B tokens per the OPT paper (arXiv 2205.01068)",
    ),
    PublishedRun(
        "BLOOM-176B",
        "A100-80GB",
        176e9,
        176e9,
        366e9,
        1_082_880,
        "bf16",
        True,
        f"{_TABLE15}; 366B tokens per the BLOOM paper (arXiv 2211.05100)",
    ),
    # Hopper beyond Llama 3: other labs' runs, with the GPU count and days (or GPU-hours) their sources state.
    PublishedRun(
        "DeepSeek LLM 67B",
        "H800",
        67e9,
        67e9,
        1e12,
        300.6e3,
        "bf16",
        True,
        "DeepSeek-V2 paper (arXiv 2405.04434) s3.2.3: on the H800 cluster 'DeepSeek 67B requires 300.6K GPU hours' "
        "per trillion tokens",
    ),
    PublishedRun(
        "DeepSeek-V2",
        "H800",
        236e9,
        21e9,
        1e12,
        172.8e3,
        "bf16",
        True,
        "DeepSeek-V2 paper (arXiv 2405.04434) s3.2.3: 'DeepSeek-V2 needs only 172.8K GPU hours' per trillion tokens "
        "on H800 (236B total, 21B activated)",
    ),
    PublishedRun(
        "Phi-3-mini (Apr 2024)",
        "H100",
        3.8e9,
        3.8e9,
        3.3e12,
        512 * 7 * 24,
        "bf16",
        True,
        "huggingface.co/microsoft/Phi-3-mini-4k-instruct model card, first release: 'GPUs: 512 H100-80G', "
        "'Training time: 7 days', 'Training data: 3.3T tokens', 3.8B parameters",
        gpus=512,
    ),
    PublishedRun(
        "Phi-3-medium",
        "H100",
        14e9,
        14e9,
        4.8e12,
        512 * 42 * 24,
        "bf16",
        True,
        "huggingface.co/microsoft/Phi-3-medium-128k-instruct model card: 'GPUs: 512 H100-80G', 'Training time: "
        "42 days', 'Training data: 4.8T tokens', 14B parameters",
        gpus=512,
    ),
    # ---- held out: not used in the fit
    PublishedRun("LLaMA 7B", "A100-80GB", 6.7e9, 6.7e9, 1.0e12, 82_432, "bf16", False, _TABLE15),
    PublishedRun("LLaMA 13B", "A100-80GB", 13e9, 13e9, 1.0e12, 135_168, "bf16", False, _TABLE15),
    PublishedRun("LLaMA 33B", "A100-80GB", 32.5e9, 32.5e9, 1.4e12, 530_432, "bf16", False, _TABLE15),
    PublishedRun("LLaMA 65B", "A100-80GB", 65.2e9, 65.2e9, 1.4e12, 1_022_362, "bf16", False, _TABLE15),
    PublishedRun(
        "Llama 3.1 8B",
        "H100",
        8e9,
        8e9,
        15e12,
        1.46e6,
        "bf16",
        False,
        "meta-llama/llama-models models/llama3_1/MODEL_CARD.md (~15T tokens)",
    ),
    PublishedRun(
        "Llama 3.1 70B",
        "H100",
        70e9,
        70e9,
        15e12,
        7.0e6,
        "bf16",
        False,
        "meta-llama/llama-models models/llama3_1/MODEL_CARD.md",
    ),
    PublishedRun(
        "Llama 3.1 405B",
        "H100",
        405e9,
        405e9,
        15.6e12,
        30.84e6,
        "bf16",
        False,
        "llama3_1 MODEL_CARD.md (30.84M GPU-h); 15.6T tokens per arXiv 2407.21783",
        gpus=16_384,
    ),
    PublishedRun(
        "DeepSeek-V3",
        "H800",
        671e9,
        37e9,
        14.8e12,
        2.664e6,
        "fp8",
        False,
        "DeepSeek-V3 technical report (arXiv 2412.19437): 2664K H800 GPU-hours of pre-training on 14.8T tokens",
        gpus=2048,
    ),
    PublishedRun(
        "Phi-3-mini (Jun 2024)",
        "H100",
        3.8e9,
        3.8e9,
        4.9e12,
        512 * 10 * 24,
        "bf16",
        False,
        "huggingface.co/microsoft/Phi-3-mini-4k-instruct model card, June 2024 update: 'GPUs: 512 H100-80G', "
        "'Training time: 10 days', 'Training data: 4.9T tokens'",
        gpus=512,
    ),
    PublishedRun(
        "Phi-4",
        "H100",
        14e9,
        14e9,
        9.8e12,
        1920 * 21 * 24,
        "bf16",
        False,
        "huggingface.co/microsoft/phi-4 model card: '1920 H100-80G', '21 days', '9.8T tokens', 14B parameters",
        gpus=1920,
    ),
)


@dataclass(frozen=True)
class ThroughputBenchmark:
    """A vendor's measured training throughput (tokens/s per device) on a short benchmark, not a whole run."""

    name: str
    gpu: str
    params: float
    tokens_per_s_per_device: float
    devices: int
    source: str


_MODELLINK = (
    "Huawei Ascend ModelLink (now MindSpeed-LLM) examples/llama2/README.md throughput table "
    "(https://gitee.com/ascend/ModelLink/blob/master/examples/llama2/README.md)"
)

#: Architectures with no published whole-run figure: their line is an assumption fitted on these benchmarks.
BENCHMARKS: tuple[ThroughputBenchmark, ...] = (
    ThroughputBenchmark("ModelLink LLaMA2-7B", "Ascend-910B", 7e9, 2730, 8, f"{_MODELLINK}: 2730 tokens/s/p, 8 NPUs"),
    ThroughputBenchmark("ModelLink LLaMA2-13B", "Ascend-910B", 13e9, 1550, 8, f"{_MODELLINK}: 1550 tokens/s/p, 8 NPUs"),
    ThroughputBenchmark("ModelLink LLaMA2-34B", "Ascend-910B", 34e9, 690, 16, f"{_MODELLINK}: 690 tokens/s/p, 16 NPUs"),
    ThroughputBenchmark("ModelLink LLaMA2-70B", "Ascend-910B", 70e9, 350, 64, f"{_MODELLINK}: 350 tokens/s/p, 64 NPUs"),
)
BENCHMARKS_RETRIEVED = "2026-12-02"


@dataclass(frozen=True)
class LineFit:
    """``ln MFU = intercept + slope * ln(N_active / 10B)`` for one generation, with its leave-one-out error."""

    generation: str
    intercept: float
    slope: float
    runs: tuple[str, ...]
    sigma: float  # root mean square of the leave-one-out log errors
    coverage: float  # share of left-out runs inside their own printed range
    left_out: tuple[tuple[str, float], ...]  # (run, predicted / reported GPU-hours) with the run left out
    #: Where the line comes from: "runs" (published whole runs) or "benchmarks" (an assumption, see BENCHMARKS).
    basis: str = "runs"


@dataclass(frozen=True)
class Calibration:
    lines: dict[str, LineFit]
    #: Lines assumed from vendor throughput benchmarks, for generations without a published run (see BENCHMARKS).
    assumed: dict[str, LineFit] = field(default_factory=dict)

    def line(self, gpu: str, generation: str) -> tuple[LineFit, bool]:
        """The line a GPU of ``generation`` sizes with, and whether it is borrowed from another generation.

        Raises:
            ValueError: the generation has neither a fitted nor a borrowed line; names the catalog row.
        """
        if generation in self.lines:
            return self.lines[generation], False
        if generation in self.assumed:
            return self.assumed[generation], False
        if generation in BORROWED and BORROWED[generation] in self.lines:
            return self.lines[BORROWED[generation]], True
        raise ValueError(
            f"gpus.yaml row {gpu!r}: generation {generation!r} has no calibration line (fitted: "
            f"{', '.join(sorted(self.lines))}; assumed from benchmarks: {', '.join(sorted(self.assumed)) or 'none'}; "
            f"borrowed: {', '.join(sorted(BORROWED))}); add published runs on "
            "it to planning/sizing/calibration.py RUNS or a borrow to BORROWED"
        )

    def mfu(
        self,
        gpu: str,
        generation: str,
        active_params: float,
        precision: str = "bf16",
        gpus: int | None = None,
    ) -> tuple[float, float, float]:
        """(low, expected, high) *effective* MFU against the BF16 peak (goodput included)."""
        line, borrowed = self.line(gpu, generation)
        expected = math.exp(line.intercept + line.slope * math.log(active_params / 1e10)) * _adjustment(precision, gpus)
        expected = min(expected, MFU_CEILING)
        sigma = line.sigma * (UNFITTED_WIDENING if borrowed else 1.0)
        half = INTERVAL_Z * sigma
        return expected * math.exp(-half), expected, min(expected * math.exp(half), MFU_CEILING)


def _adjustment(precision: str, gpus: int | None) -> float:
    """The FP8 and cluster-size factors on the fitted BF16 line."""
    factor = FP8_SPEEDUP if precision == "fp8" else 1.0
    if gpus is not None and gpus > SCALE_KNEE_GPUS:
        factor *= (gpus / SCALE_KNEE_GPUS) ** SCALE_EXPONENT
    return factor


def effective_mfu(run: PublishedRun, bf16_peak_tflops: float) -> float:
    """What ``run`` achieved: 6 * N_active * D / (GPU-hours * 3600 * BF16 peak)."""
    return 6 * run.active_params * run.tokens / (run.gpu_hours * 3600 * bf16_peak_tflops * 1e12)


def _line(pts: list[tuple[float, float]]) -> tuple[float, float]:
    n = len(pts)
    mx = sum(p[0] for p in pts) / n
    my = sum(p[1] for p in pts) / n
    sxx = sum((p[0] - mx) ** 2 for p in pts)
    slope = sum((p[0] - mx) * (p[1] - my) for p in pts) / sxx if sxx > 0 else 0.0
    return my - slope * mx, slope


def fit(
    gpus: Mapping[str, tuple[float, str]],
    runs: tuple[PublishedRun, ...] = RUNS,
    benchmarks: tuple[ThroughputBenchmark, ...] = BENCHMARKS,
) -> Calibration:
    """Least-squares lines per generation on the ``fit=True`` runs, each with its leave-one-out error.

    ``gpus`` maps a GPU name to its catalog (dense BF16 TFLOPS, generation).

    Raises:
        ValueError: a run's GPU is not in ``gpus``, or a generation has fewer than three runs (no left-out error).
    """
    by_gen: dict[str, list[tuple[float, float, str]]] = {}
    for r in runs:
        if not r.fit:
            continue
        if r.gpu not in gpus:
            raise ValueError(f"published run {r.name!r}: GPU {r.gpu!r} is not a gpus.yaml row")
        peak, generation = gpus[r.gpu]
        x = math.log(r.active_params / 1e10)
        y = math.log(effective_mfu(r, peak) / _adjustment(r.precision, r.gpus))
        by_gen.setdefault(generation, []).append((x, y, r.name))
    lines = {}
    for gen, named in by_gen.items():
        if len(named) < 3:
            raise ValueError(f"generation {gen!r}: {len(named)} fitted runs; a line with an error needs three")
        pts = [(x, y) for x, y, _ in named]
        intercept, slope = _line(pts)
        errors = []
        for i, (x, y) in enumerate(pts):
            a, b = _line(pts[:i] + pts[i + 1 :])
            errors.append(y - a - b * x)  # ln(reported MFU / predicted) = ln(predicted hours / reported hours)
        sigma = math.sqrt(sum(e * e for e in errors) / len(errors))
        inside = sum(abs(e) < INTERVAL_Z * sigma for e in errors) / len(errors)
        left_out = tuple((name, math.exp(e)) for (_, _, name), e in zip(named, errors, strict=True))
        lines[gen] = LineFit(gen, intercept, slope, tuple(n for *_, n in named), sigma, inside, left_out)
    return Calibration(lines=lines, assumed=_assumed_lines(gpus, benchmarks, lines))


def benchmark_mfu(bench: ThroughputBenchmark, bf16_peak_tflops: float) -> float:
    """The benchmark's throughput MFU, ``6 * N * tokens/s / peak``, before any goodput."""
    return 6 * bench.params * bench.tokens_per_s_per_device / (bf16_peak_tflops * 1e12)


def _assumed_lines(
    gpus: Mapping[str, tuple[float, str]], benchmarks: tuple[ThroughputBenchmark, ...], lines: Mapping[str, LineFit]
) -> dict[str, LineFit]:
    """Lines for generations without published runs, fitted on benchmark MFU x GOODPUT, with a widened range."""
    by_gen: dict[str, list[tuple[float, float, str]]] = {}
    for b in benchmarks:
        if b.gpu not in gpus:
            raise ValueError(f"throughput benchmark {b.name!r}: GPU {b.gpu!r} is not a gpus.yaml row")
        peak, generation = gpus[b.gpu]
        if generation in lines:
            continue  # published runs win over benchmarks
        y = math.log(benchmark_mfu(b, peak) * GOODPUT)
        by_gen.setdefault(generation, []).append((math.log(b.params / 1e10), y, b.name))
    widest = max((line.sigma for line in lines.values()), default=0.0)
    out = {}
    for gen, named in by_gen.items():
        if len(named) < 3:
            raise ValueError(f"generation {gen!r}: {len(named)} benchmarks; an assumed line needs three")
        pts = [(x, y) for x, y, _ in named]
        intercept, slope = _line(pts)
        errors = []
        for i, (x, y) in enumerate(pts):
            a, slope_i = _line(pts[:i] + pts[i + 1 :])
            errors.append(y - a - slope_i * x)
        # The benchmarks agree with their own line closely; a whole run is another matter, so the range is the
        # widest run-fitted generation's error, widened as for generations without a run.
        loo = math.sqrt(sum(e * e for e in errors) / len(errors))
        sigma = max(loo, widest) * UNFITTED_WIDENING
        inside = sum(abs(e) < INTERVAL_Z * sigma for e in errors) / len(errors)
        left_out = tuple((name, math.exp(e)) for (_, _, name), e in zip(named, errors, strict=True))
        out[gen] = LineFit(
            gen, intercept, slope, tuple(n for *_, n in named), sigma, inside, left_out, basis="benchmarks"
        )
    return out
